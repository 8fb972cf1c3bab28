"""Subcommands that work on task files and finished runs (not on a live run): registered into the CLI's parser.

Each entry of COMMANDS is a name -> (add_arguments(subparsers), run(args) -> exit code)."""

from __future__ import annotations

import argparse
from typing import Callable

COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], None], Callable[[argparse.Namespace], int]]] = {}


def register(sub: argparse._SubParsersAction) -> None:
    for add, _ in COMMANDS.values():
        add(sub)


def run(args: argparse.Namespace) -> int | None:
    """The exit code of a tools command, or None when `args` is not one."""
    entry = COMMANDS.get(args.command)
    return entry[1](args) if entry else None
