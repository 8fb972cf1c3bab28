"""The dashboard's model line: how the run's model answers (calls a minute, latency p50/p95, tokens a second, failures
by kind, the last error), from the snapshot's `ModelStats`; and, when the model guard holds dispatch, a banner that
says why, the server's words and the remedy, and which key goes on."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from om2w_tui.engine.events import ModelStats
from om2w_tui.frontends.formatting import clip
from om2w_tui.frontends.run_state import counted
from om2w_tui.protocol.model import kind_short


def _tokens(per_s: float) -> str:
    return f"{per_s / 1000:.1f}k" if per_s >= 1000 else f"{per_s:.0f}"


def model_text(stats: ModelStats | None, wide: bool) -> str:
    """The model line's text (a plain string: the bar styles it as a whole)."""
    if stats is None or stats.calls == 0:
        return "model · no calls yet"
    failed = sum(stats.failures.values())
    if not wide:   # a narrow terminal: the rate, the latency, what failed
        short = ", ".join(f"{kind_short(k)} {n}" for k, n in sorted(stats.failures.items(), key=lambda kv: -kv[1]))
        p50 = f" p50 {stats.latency_p50_s:.1f}s" if stats.latency_p50_s is not None else ""
        return f"model {stats.calls_per_min:g}/min{p50} · " + (f"{failed}/{stats.calls} failed: {short}" if failed
                                                                else f"{stats.calls} calls ok")
    parts = [f"model · {stats.calls_per_min:g} calls/min"]
    if stats.latency_p50_s is not None:
        parts.append(f"p50 {stats.latency_p50_s:.1f}s p95 {stats.latency_p95_s or 0:.1f}s")
    parts.append(f"tok/s in {_tokens(stats.tokens_in_per_s)} out {_tokens(stats.tokens_out_per_s)}")
    if failed:
        parts.append(f"{failed} of {stats.calls} failed: {counted(stats.failures)}")
    else:
        parts.append(f"{stats.calls} calls, none failed")
    if stats.ended_on:
        parts.append(f"episodes ended on it: {counted(stats.ended_on)}")
    if stats.last_error:
        parts.append(f"last: {clip(stats.last_error, 80)}")
    return " · ".join(parts)


class ModelBar(Static):
    DEFAULT_CSS = """
    ModelBar { height: 1; padding: 0 1; color: $text-muted; }
    ModelBar.-failing { color: $text-warning; }
    ModelBar.-guard { height: auto; max-height: 4; background: $error; color: $text; text-style: bold; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__("model · no calls yet", **kw)
        self._shown = ""

    def show(self, stats: ModelStats | None, wide: bool) -> None:
        if stats is not None and stats.guard:
            text, kind = f"MODEL GUARD · {stats.guard} · p: go on · r: run the errored tasks again", "-guard"
        else:
            text = model_text(stats, wide)
            kind = "-failing" if stats is not None and stats.failures else ""
        if text != self._shown:
            self._shown = text
            self.update(text)
            self.set_classes(kind)
