"""Argument types for the command line, with messages naming the flag: every number through the settings' one
parser (`engine.settings.parse_number`: NaN, infinities and out-of-range values refused), a declared setting
through its own kind, comma lists, endpoint URLs (kept redacted), a key's variable (never shown when refused)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

from om2w_tui.engine.settings import Setting, parse_number
from om2w_tui.secret import EndpointURL, check_key_variable

T = TypeVar("T")


def _named(flag: str, parse: Callable[[str], T]) -> Callable[[str], T]:
    """`parse` as an argparse type: its ValueError (URLError is one) becomes a message that starts with the flag."""
    def named(s: str) -> T:
        try:
            return parse(s)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{flag} {e}") from None
    return named


def number(flag: str, kind: type = int, minimum: float = 0, above: bool = False,
           maximum: float | None = None) -> Callable[[str], float]:
    """A parser for `flag`: a whole number (`kind` int) or a number, at least `minimum` (more than it with `above`)
    and at most `maximum`."""
    return _named(flag, lambda s: parse_number(s, whole=kind is int, low=minimum, high=maximum, above=above))


def positive_int(flag: str, maximum: int | None = None) -> Callable[[str], float]:
    return number(flag, int, 1, maximum=maximum)


def count(flag: str, maximum: int | None = None) -> Callable[[str], float]:
    return number(flag, int, 0, maximum=maximum)


def seconds(flag: str, allow_zero: bool, maximum: float | None = None) -> Callable[[str], float]:
    return number(flag, float, 0, above=not allow_zero, maximum=maximum)


def setting_type(st: Setting, flag: str = "") -> Callable[[str], Any]:
    """How a declared setting's flag text becomes its value (its kind's parser), naming the flag when it cannot:
    its own, or `flag`, another command's name for the same setting (`judge --workers`, a run's --judge-workers)."""
    return _named(flag or st.flag, st.parse)


def key_variable(flag: str) -> Callable[[str], str]:
    """The name of the environment variable holding a key (`judge --api-key-env`): the one check every such setting
    gets (`secret.check_key_variable`), which never shows what was given (it may be the key)."""
    def parse(s: str) -> str:
        if problem := check_key_variable(s):
            raise ValueError(problem)
        return s
    return _named(flag, parse)


def endpoint(flag: str) -> Callable[[str], EndpointURL]:
    """An endpoint URL flag (`--judge-url`): checked, and shown redacted wherever it is printed."""
    return _named(flag, EndpointURL.parse)


def csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]
