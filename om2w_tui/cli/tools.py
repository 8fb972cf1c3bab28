"""Subcommands that work on task files and finished runs, and on a live run through its control socket (ctl,
attach): registered into the CLI's parser.

Each entry of COMMANDS is a name -> (add_arguments(subparsers), run(args) -> exit code)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
                          Callable[[argparse.Namespace], int]]] = {}


_loaded = False


def _load() -> None:
    """Register the result-side tools; their modules import nothing heavy at import time (openai, httpx and rich
    are imported when a command runs), so `om2w-tui run` pays next to nothing for them."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from om2w_tui.cli import attach as attach_cli  # when the parser is built, not on import
    from om2w_tui.cli import check as check_cli  # when the parser is built, not on import
    from om2w_tui.cli import ctl as ctl_cli  # when the parser is built, not on import
    from om2w_tui.cli import judge as judge_cli  # when the parser is built, not on import
    from om2w_tui.cli import label as label_cli  # when the parser is built, not on import
    from om2w_tui.cli import report as report_cli  # when the parser is built, not on import
    from om2w_tui.cli import tasks as tasks_cli  # when the parser is built, not on import

    COMMANDS.setdefault("ctl", (ctl_cli.add_arguments, ctl_cli.run))
    COMMANDS.setdefault("attach", (attach_cli.add_arguments, attach_cli.run))
    COMMANDS.setdefault("judge", (judge_cli.add_arguments, judge_cli.run))
    COMMANDS.setdefault("report", (report_cli.add_arguments, report_cli.run))
    COMMANDS.setdefault("label", (label_cli.add_arguments, label_cli.run))
    COMMANDS.setdefault("tasks", (tasks_cli.add_arguments, tasks_cli.run))
    COMMANDS.setdefault("check", (check_cli.add_arguments, check_cli.run))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _load()
    for add, _ in COMMANDS.values():
        add(sub)


def run(args: argparse.Namespace) -> int | None:
    """The exit code of a tools command, or None when `args` is not one."""
    _load()
    entry = COMMANDS.get(args.command)
    return entry[1](args) if entry else None
