"""The console app as its screens see it, so no screen imports the app (the app imports the screens): what a screen
asks the app to do travels as a Textual message that bubbles up to it (`OpenEpisode`, `OpenReport`, `StartRun`,
`QuitAsked`, `SnapshotWanted`), and what a screen reads of it is the `ConsoleHost` protocol the app satisfies (its
clock, the live run's controls, the preflight, the annotator)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from textual.message import Message
from textual.signal import Signal

from om2w_tui.engine.control import RunControl
from om2w_tui.engine.launch import Check, Preflight
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.frontends.console.messages import EpisodeChange

Clock = Callable[[], float]
# the launch form's preflight: a config -> (the Preflight when every check passed, else None; [(what, ok, detail)])
ChecksFn = Callable[[Any], "tuple[Preflight | None, list[Check]]"]


class ConsoleHost(Protocol):
    """What the screens read of the console app (`ConsoleApp` is one; mypy checks it in app.py)."""

    clock: Clock                        # epoch seconds (tests freeze it)
    control: RunControl | None          # the live run's controls; None once it is over (or before it began)
    checks_fn: ChecksFn                 # the launch form's preflight
    annotator: str | None               # who labels from the report: asked once, then the console's
    episode_signal: Signal[EpisodeChange]   # a step or the end of an episode, for the views that follow them

    @property
    def stopping(self) -> bool:
        """The run is stopping for the console to quit."""
        ...

    @property
    def run_phase(self) -> str:
        """The dashboard's phase of the run (starting, running, stopping, finished ...); "" with no dashboard."""
        ...


@dataclass
class OpenEpisode(Message):
    """Open the view of `task_id`'s episode (`record`: its finished attempt; None while it runs; `lane`: a
    campaign's lane it ran in, "" in a plain run)."""

    task_id: str
    record: EpisodeRecord | None
    lane: str = ""


class OpenReport(Message):
    """Open the report of the run going on (or just ended)."""


@dataclass
class StartRun(Message):
    """The launch form's checks passed: open the dashboard on `pre` and start it (`values` are remembered)."""

    pre: Preflight
    values: dict[str, str]


class QuitAsked(Message):
    """Quit as `q` does (stop the run, asking first while episodes run; attached: detach)."""


class SnapshotWanted(Message):
    """Post the live run's snapshot to the dashboard now."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotWanted)
