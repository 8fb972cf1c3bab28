"""The dashboard's top line: run name, progress, running, errors, elapsed, ETA, pace, the success rate so far with
its 95% interval wherever verdicts exist (the reference answers' `correct`, a judge's file in the run's folder:
the run's own judge with --judge-url, or `om2w-tui judge` run beside it); and what dispatch is doing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar

from om2w_tui.evaluation.live_judge import VerdictTail
from om2w_tui.evaluation.summary import Rate
from om2w_tui.frontends.formatting import clock_text, per_hour
from om2w_tui.frontends.run_state import RunState


def rate_text(label: str, successes: int, judged: int, wide: bool) -> str:
    """`judge 12/20 60% [39-78]` (wide) or `judge 60% [39-78]`: a rate so far and its 95% Wilson interval."""
    r = Rate.of(successes, judged)
    if r.rate is None or r.interval is None:
        return ""
    ci = f"[{100 * r.interval[0]:.0f}-{100 * r.interval[1]:.0f}]"
    return f"{label} {successes}/{judged} {100 * r.rate:.0f}% {ci}" if wide else f"{label} {100 * r.rate:.0f}% {ci}"


def run_folder(app: Any) -> Path | None:
    """The folder of the run the console shows: its own run's, or the attached one's."""
    pre = getattr(app, "pre", None)
    if pre is not None:
        return Path(pre.config.out)
    attach = getattr(app, "attach", None)
    return Path(attach.out) if attach is not None else None


class RunHeader(Horizontal):
    DEFAULT_CSS = """
    RunHeader {
        height: 1;
        background: $panel;
        #run-name { width: auto; max-width: 24; text-style: bold; padding: 0 1; color: $text-accent; }
        #run-progress { width: auto; }
        #run-progress Bar { width: 20; }
        #run-stats { width: 1fr; padding: 0 1; }
        #run-badge { width: auto; padding: 0 1; display: none; text-style: bold; }
        #run-badge.-paused { display: block; background: $warning; color: $text; }
        #run-badge.-stopping { display: block; background: $error; color: $text; }
        #run-badge.-finished { display: block; background: $success; color: $text; }
        #run-badge.-failed { display: block; background: $error; color: $text; }
    }
    """

    def __init__(self, name: str, total: int, **kw: Any):
        super().__init__(**kw)
        self._run_name, self._total = name, total   # not `_name`: a Widget's own
        self._shown: dict[str, str] = {}
        self._verdicts: VerdictTail | None = None
        self._state: RunState | None = None

    def compose(self) -> ComposeResult:
        yield Label(self._run_name, id="run-name")
        yield ProgressBar(total=max(1, self._total), show_eta=False, id="run-progress")
        yield Label("", id="run-stats")
        yield Label("", id="run-badge")

    def show(self, state: RunState, now: float, wide: bool, campaign: bool = False) -> None:
        """`campaign`: the run's lanes are shown under it, each with its own rate (the arms' verdicts are not summed
        into one rate here)."""
        self._state = state
        total = state.total or self._total
        done = state.done
        self.query_one(ProgressBar).update(total=max(1, total), progress=min(done, total))
        elapsed = state.elapsed(now)
        finished = state.finished_this_run
        eta = state.eta(now) if state.phase == "running" else None   # as the run's pacing allows
        rate = per_hour(finished, elapsed)
        rate_text = f"{rate:.0f}/h" if rate is not None else "-/h"
        eta_text = state.waits() or ("-" if eta is None else clock_text(eta))   # no count while its end waits
        # the rates so far before the clock: where the line is cut, the verdicts stay
        success = "" if campaign else "".join(f"{part} · " for part in self.success_text(wide))
        eta_part = f"ETA {eta_text} · " if state.phase in ("starting", "running") else ""
        if wide:
            stats = (f"{done}/{total} done · {state.running} running · {state.errors} errors · {success}"
                     f"elapsed {clock_text(elapsed)} · {eta_part}{rate_text}")
        else:
            stats = (f"{done}/{total} · {state.running} run · {state.errors} err · {success}"
                     f"{clock_text(elapsed)} · {eta_part}{rate_text}")
        self._set("#run-stats", stats)
        badge = self.query_one("#run-badge", Label)
        if state.phase == "stopping":
            kind, text = "stopping", "STOPPING"
        elif state.phase in ("finished", "failed"):
            kind, text = state.phase, state.phase.upper()
        elif state.paused:
            kind, text = "paused", "PAUSED" + (f": {state.pause_reason}" if state.pause_reason and wide else "")
        else:
            kind, text = "", ""
        badge.set_classes(f"-{kind}" if kind else "")
        self._set("#run-badge", text)

    def success_text(self, wide: bool) -> list[str]:
        """The success rates so far: the reference answers' (the records' `correct`) and a judge file's."""
        state = self._state
        parts = []
        if state is not None and state.judged:
            parts.append(rate_text("correct", state.correct, state.judged, wide))
        if self._verdicts is None:
            out = run_folder(self.app)
            self._verdicts = VerdictTail(out) if out is not None else None
        if self._verdicts is not None:
            successes, judged = self._verdicts.poll(time.monotonic())
            if judged:
                parts.append(rate_text("judge", successes, judged, wide))
        return [p for p in parts if p]

    def _set(self, selector: str, text: str) -> None:
        """Update a label only when its text changes (the header is redrawn every second)."""
        if self._shown.get(selector) != text:
            self._shown[selector] = text
            self.query_one(selector, Label).update(text)
