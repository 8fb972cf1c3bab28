"""How numbers and text look on the console: durations, rates, truncation. Pure functions, no Textual."""

from __future__ import annotations

import math

from om2w_tui.evaluation.text_formats import whole_seconds


def clock_text(seconds: float | None) -> str:
    """m:ss, or h:mm:ss from an hour; '-' for nothing. Whole seconds rounded as every view rounds them
    (`text_formats.whole_seconds`: 56.8 s is 0:57 here and 57 s in a report)."""
    if seconds is None:
        return "-"
    s = whole_seconds(seconds)
    h, rem = divmod(s, 3600)
    return f"{h}:{rem // 60:02d}:{rem % 60:02d}" if h else f"{rem // 60}:{rem % 60:02d}"


def countdown_text(seconds: float) -> str:
    """A countdown shows the whole seconds still to wait, rounded up (0:01 until it is over)."""
    return clock_text(math.ceil(max(0.0, seconds)))


def clip(text: str | None, width: int) -> str:
    text = (text or "").replace("\n", " ").strip()
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def clip_left(text: str | None, width: int) -> str:
    """Keep the end: a site's port or domain tells sites apart better than its start."""
    text = (text or "").replace("\n", " ").strip()
    return text if len(text) <= width else "…" + text[len(text) - width + 1:]


def per_hour(count: int, seconds: float) -> float | None:
    return count * 3600.0 / seconds if count and seconds > 0 else None
