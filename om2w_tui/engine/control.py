"""What a front end may ask of a run: `RunControl`. The scheduler implements it; the console, the headless log and
the control socket hold it. Commands are called on the run's event loop and return at once; what they change
arrives as events and in the next snapshot."""

from __future__ import annotations

from typing import Literal, Protocol

from om2w_tui.engine.events import RunSnapshot

# what an interrupt (Ctrl-C, SIGTERM, `ctl stop`) did: the first stops the run gracefully (running episodes end
# keeping their steps and run again next time), the next ends every episode's processes at once
Interrupt = Literal["stopping", "forced"]


class RunControl(Protocol):
    def snapshot(self) -> RunSnapshot:
        """The run's state now."""
        ...

    def pause_dispatch(self, paused: bool = True, reason: str = "") -> None:
        """Start no new episode (or start again); running ones go on."""
        ...

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        """Pause or resume the episode on a slot (its timeout stops meanwhile); False when there is none to."""
        ...

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        """End the episode on a slot now, keeping its steps: recorded as killed, or queued to run again."""
        ...

    def set_workers(self, n: int) -> None:
        """Run `n` slots: new ones start at once, surplus ones retire when their episode ends."""
        ...

    def retry_errors(self) -> int:
        """Queue again the tasks whose latest attempt ended in error; -> how many."""
        ...

    def stop(self, force: bool = False) -> None:
        """Stop the run: gracefully, or (`force`) ending every episode's processes now."""
        ...

    def interrupt(self) -> Interrupt:
        """Ctrl-C: stop gracefully; when the run is already stopping, end every episode's processes now."""
        ...


class Run(RunControl, Protocol):
    """A run a front end opened (`engine.launch.open_run`): it drives it to its end and controls it meanwhile; what
    the run did reaches it as events (the last, `RunFinished`, carries the summary)."""

    async def run(self) -> object:
        """Run to the end: every task settled, or stopped (the return value is the engine's own; front ends read
        `RunFinished`)."""
        ...
