"""The engine's events as Textual messages. `EngineSink` is the scheduler's sink for the console: each event
becomes one small message posted to the dashboard, on the event loop, at once. The state snapshot the console
pulls every second travels the same way, so tests feed recorded events and a stub snapshot through this path."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.message_pump import MessagePump

from om2w_tui.engine import events
from om2w_tui.engine.results import EpisodeRecord


@dataclass
class RunBegan(Message):
    event: events.RunStarted


@dataclass
class SlotUpdated(Message):
    event: events.SlotChanged


@dataclass
class EpisodeBegan(Message):
    event: events.EpisodeStarted


@dataclass
class StepTaken(Message):
    event: events.EpisodeStep


@dataclass
class ModelCalled(Message):
    event: events.EpisodeModelCall


@dataclass
class EpisodeEnded(Message):
    event: events.EpisodeFinished


@dataclass
class TaskPutBack(Message):
    event: events.EpisodePutBack


@dataclass
class DispatchToggled(Message):
    event: events.DispatchChanged


@dataclass
class EngineLog(Message):
    event: events.Log


@dataclass
class RunEnded(Message):
    event: events.RunFinished


@dataclass(frozen=True)
class EpisodeChange:
    """What the app's episode signal carries: a step of `task_id`'s episode (`record` None), or its end."""

    task_id: str
    record: EpisodeRecord | None = None


@dataclass
class SnapshotTaken(Message):
    """The run's `snapshot()`, and the console clock's time when it was taken."""

    snapshot: events.RunSnapshot
    taken_at: float

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotTaken)


MESSAGE_FOR: dict[type, type[Message]] = {
    events.RunStarted: RunBegan, events.SlotChanged: SlotUpdated, events.EpisodeStarted: EpisodeBegan,
    events.EpisodeStep: StepTaken, events.EpisodeModelCall: ModelCalled, events.EpisodeFinished: EpisodeEnded,
    events.EpisodePutBack: TaskPutBack,
    events.DispatchChanged: DispatchToggled,
    events.Log: EngineLog, events.RunFinished: RunEnded,
}


class EngineSink:
    """A sink (`handle(event)`) that posts each engine event to `target` as its message; cheap, never blocks."""

    def __init__(self, target: MessagePump | None = None):
        self.target = target

    def handle(self, event: events.Event) -> None:
        cls = MESSAGE_FOR.get(type(event))
        if cls is not None and self.target is not None:
            self.target.post_message(cls(event))   # type: ignore[call-arg]

    def snapshot(self, snapshot: events.RunSnapshot, taken_at: float) -> None:
        if self.target is not None:
            self.target.post_message(SnapshotTaken(snapshot, taken_at))
