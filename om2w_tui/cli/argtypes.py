"""Argument types for the command line: numbers with bounds and comma lists, with messages naming the flag."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number(flag: str, kind: type = int, minimum: float = 0, above: bool = False) -> Callable[[str], float]:
    """A parser for `flag`: an int or float at least `minimum` (more than it with `above`)."""
    noun = "whole number" if kind is int else "number"

    def parse(s: str) -> float:
        try:
            v: float = kind(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} {s}: not a {noun}") from None
        if v < minimum or (above and v == minimum):
            bound = f"more than {minimum:g}" if above else (
                "at least 1" if (kind is int and minimum == 1) else f"{minimum:g} or more")
            raise argparse.ArgumentTypeError(f"{flag} {s}: must be {bound}")
        return v
    return parse


def positive_int(flag: str) -> Callable[[str], float]:
    return number(flag, int, 1)


def count(flag: str) -> Callable[[str], float]:
    return number(flag, int, 0)


def seconds(flag: str, allow_zero: bool) -> Callable[[str], float]:
    return number(flag, float, 0, above=not allow_zero)


def csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]
