"""The engine's events as Textual messages. `EngineSink` is the scheduler's sink for the console: each event is
posted to the dashboard as it is, inside one message (`EngineEvent`), on the event loop, at once; the dashboard
matches over the engine's `Event` union itself, so an event is declared once (`engine/events.py`). The state
snapshot the console pulls every second travels the same way, so tests feed recorded events and a stub snapshot
through this path."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.message_pump import MessagePump

from om2w_tui.engine import events
from om2w_tui.engine.results import EpisodeRecord


@dataclass
class EngineEvent(Message):
    """One event of the run, as the engine (or, attached, the run's control socket) said it."""

    event: events.Event


@dataclass(frozen=True)
class EpisodeChange:
    """What the app's episode signal carries: a step of `task_id`'s episode (`record` None), or its end; `lane`: a
    campaign's lane it ran in ("" in a plain run)."""

    task_id: str
    record: EpisodeRecord | None = None
    lane: str = ""


@dataclass
class SnapshotTaken(Message):
    """The run's `snapshot()`, and the console clock's time when it was taken."""

    snapshot: events.RunSnapshot
    taken_at: float

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotTaken)


class EngineSink:
    """A sink (`handle(event)`) that posts each engine event to `target`; cheap, never blocks."""

    def __init__(self, target: MessagePump | None = None):
        self.target = target

    def handle(self, event: events.Event) -> None:
        if self.target is not None:
            self.target.post_message(EngineEvent(event))

    def snapshot(self, snapshot: events.RunSnapshot, taken_at: float) -> None:
        if self.target is not None:
            self.target.post_message(SnapshotTaken(snapshot, taken_at))
