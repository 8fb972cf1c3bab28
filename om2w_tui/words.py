"""Counts said in words, one rule for every layer's messages: `1 worker`, `2 workers`, `1 repeat`."""

from __future__ import annotations


def plural(n: int, word: str, many: str = "") -> str:
    """`n word`, the word in the plural (`many`, else the word and an s) unless n is 1."""
    return f"{n} {word if n == 1 else many or word + 's'}"


__all__ = ["plural"]
