"""The dashboard's top line: run name, progress, running, errors, elapsed, ETA, pace; and what dispatch is doing."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar

from om2w_tui.frontends.formatting import clock_text, eta_seconds, per_hour
from om2w_tui.frontends.run_state import RunState


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

    def __init__(self, name: str, total: int, **kw):
        super().__init__(**kw)
        self._name, self._total = name, total
        self._shown: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Label(self._name, id="run-name")
        yield ProgressBar(total=max(1, self._total), show_eta=False, id="run-progress")
        yield Label("", id="run-stats")
        yield Label("", id="run-badge")

    def show(self, state: RunState, now: float, wide: bool) -> None:
        total = state.total or self._total
        done = state.done
        self.query_one(ProgressBar).update(total=max(1, total), progress=min(done, total))
        elapsed = state.elapsed(now)
        finished = state.finished_this_run
        eta = eta_seconds(finished, max(0, total - done), elapsed) if state.phase == "running" else None
        rate = per_hour(finished, elapsed)
        rate_text = f"{rate:.0f}/h" if rate is not None else "-/h"
        eta_text = "-" if eta is None else clock_text(eta)
        if wide:
            stats = (f"{done}/{total} done · {state.running} running · {state.errors} errors · "
                     f"elapsed {clock_text(elapsed)} · ETA {eta_text} · {rate_text}")
            if state.judged:
                stats += f" · correct {state.correct}/{state.judged}"
        else:
            stats = (f"{done}/{total} · {state.running} run · {state.errors} err · {clock_text(elapsed)} · "
                     f"ETA {eta_text} · {rate_text}")
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

    def _set(self, selector: str, text: str) -> None:
        """Update a label only when its text changes (the header is redrawn every second)."""
        if self._shown.get(selector) != text:
            self._shown[selector] = text
            self.query_one(selector, Label).update(text)
