"""What a front end may ask of a run: `RunControl`. The scheduler implements it; the console, the headless log and
the control socket hold it. Commands are called on the run's event loop and return at once; what they change
arrives as events and in the next snapshot.

`apply` is the one place the control socket's commands (`protocol/control.py`) become RunControl calls: the
socket's server calls it for every client, and `RemoteRun` (attach) is a RunControl that sends those commands."""

from __future__ import annotations

from typing import Literal, Protocol, assert_never

from om2w_tui.engine.events import LaneRow, RunSnapshot
from om2w_tui.engine.settings import BY_KEY
from om2w_tui.protocol.control import Done, Kill, Pause, Refused, Reply, Requeue, Resume, Retry, Steer, Stop, Workers

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

    def pause_lane(self, name: str, paused: bool = True) -> bool:
        """Hold or let go a campaign's arm (a lane's name, or an arm: all its repeats): its queued units wait, its
        running episodes go on; False when the run has no such lane (a plain run has none)."""
        ...

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        """Pause or resume the episode on a slot (its timeout stops meanwhile); False when there is none to."""
        ...

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        """End the episode on a slot now, keeping its steps: recorded as killed, or queued to run again."""
        ...

    def set_workers(self, n: int) -> str:
        """Run `n` slots: new ones start at once, surplus ones retire when their episode ends; -> why fewer were
        kept than asked (no more than the machine's memory holds), '' when as asked."""
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


# ── the control socket's commands, applied ────────────────
def apply(control: RunControl, command: Steer) -> Reply:
    """One command of the control socket done on `control` -> what it did, or why not (a refused command never
    reaches the run). The server calls it for every client: `ctl`, an attached console (`RemoteRun`), a script.
    A command addressed to a campaign's lane (`lane`) acts on that lane only (`running_episode`, `_lane_arm`)."""
    match command:
        case Pause(arm=str() as arm) | Resume(arm=str() as arm):
            return _pause_lane(control, arm, isinstance(command, Pause), command.lane)
        case Pause(task=None, slot=None, lane=str() as lane) | Resume(task=None, slot=None, lane=str() as lane):
            return _pause_lane(control, None, isinstance(command, Pause), lane)
        case Pause(task=None, slot=None, reason=reason):
            return _pause_dispatch(control, True, reason)
        case Resume(task=None, slot=None):
            return _pause_dispatch(control, False, "")
        case Pause() | Resume():
            return _pause_episode(control, command)
        case Kill() | Requeue():
            return _kill(control, command)
        case Workers(n=n):
            return _set_workers(control, n)
        case Retry():
            queued = control.retry_errors()
            return Done(f"{queued} errored task(s) back in the queue", queued=queued)
        case Stop(force=force):
            control.stop(force)
            return Done("stopping: running episodes end keeping their steps and run again next time"
                        + (" (their processes ended now)" if force else ""))
        case _:
            assert_never(command)


def _pause_dispatch(control: RunControl, paused: bool, reason: str) -> Reply:
    control.pause_dispatch(paused, reason)
    return Done("dispatch paused (running episodes go on)" if paused else "dispatch resumed", paused=paused)


def _lanes_text(snap: RunSnapshot) -> str:
    lanes = ", ".join(lane.name for lane in snap.lanes)
    return f" (its lanes: {lanes})" if lanes else " (it is no campaign)"


def _lane(snap: RunSnapshot, lane: str) -> LaneRow | Refused:
    """The campaign's lane a command was addressed to, or why none is."""
    row = next((x for x in snap.lanes if x.name == lane), None)
    return row if row is not None else Refused(f"no lane {lane!r:.60} in this run" + _lanes_text(snap))


def _lane_arm(snap: RunSnapshot, lane: str, arm: str | None) -> str | Refused:
    """The arm a pause addressed to `lane` holds: `arm` where it names the lane's own (its arm's name or the lane's),
    else the lane's arm; or why not (no such lane, or `arm` another's)."""
    row = _lane(snap, lane)
    if isinstance(row, Refused):
        return row
    if arm is not None and arm not in (row.arm, row.name):
        return Refused(f"addressed to lane {lane} (arm {row.arm}), it holds no other arm ({arm!r:.60}); give the "
                       f"campaign's folder to hold another")
    return arm if arm is not None else row.arm


def _pause_lane(control: RunControl, arm: str | None, paused: bool, lane: str | None) -> Reply:
    """Hold or let go an arm: `arm`, or the arm of the lane the command was addressed to (every repeat of it, as the
    console's `a` holds one)."""
    snap = control.snapshot()
    if lane is not None:
        found = _lane_arm(snap, lane, arm)
        if isinstance(found, Refused):
            return found
        arm = found
    assert arm is not None   # apply: an arm, a lane, or both
    if not control.pause_lane(arm, paused):
        return Refused(f"no arm {arm!r:.60} in this run" + _lanes_text(snap))
    repeats = [x.name for x in snap.lanes if x.arm == arm]
    lanes = f" (lanes {', '.join(repeats)})" if len(repeats) > 1 else ""
    return Done(f"arm {arm}{lanes}: " + ("held (its running episodes go on)" if paused else "goes on"), paused=paused,
                arm=arm)


def _named(task: str, lane: str) -> str:
    """An episode's task as `status` lists it: a campaign's under its lane (`weak/TASK`)."""
    return f"{lane}/{task}" if lane else task


def _pause_episode(control: RunControl, command: Pause | Resume) -> Reply:
    found = running_episode(control.snapshot(), command.task, command.slot, command.lane)
    if isinstance(found, str):
        return Refused(found)
    slot, task, lane = found
    paused = isinstance(command, Pause)
    verb = "pause" if paused else "resume"
    if not control.pause_episode(slot, paused):
        return Refused(f"{_named(task, lane)} on slot {slot} cannot be {verb}d now (it is starting, stopping, or "
                       f"already {'paused' if paused else 'running'})")
    return Done(f"{_named(task, lane)} on slot {slot}: {verb}d", slot=slot, task=task, lane=lane or None)


def _kill(control: RunControl, command: Kill | Requeue) -> Reply:
    found = running_episode(control.snapshot(), command.task, command.slot, command.lane)
    if isinstance(found, str):
        return Refused(found)
    slot, task, lane = found
    requeue = isinstance(command, Requeue)
    if not control.kill(slot, requeue=requeue):
        return Refused(f"{_named(task, lane)} on slot {slot} is already stopping")
    then = "it goes back in the queue" if requeue else "recorded as killed, its steps kept"
    return Done(f"killing {_named(task, lane)} on slot {slot}: {then}", slot=slot, task=task, lane=lane or None)


def _set_workers(control: RunControl, n: int) -> Reply:
    problem = BY_KEY["workers"].kind.check(n)   # the --workers setting's bounds
    if problem:
        return Refused(f"workers {str(n)[:40]}: {problem}")
    note = control.set_workers(n)
    if note:   # capped at what the machine holds: the reply says how many and why
        return Done(note, workers=control.snapshot().target_workers)
    return Done(f"workers: {n}", workers=n)


def running_episode(snap: RunSnapshot, task: str | None, slot: int | None,
                    lane: str | None = None) -> tuple[int, str, str] | str:
    """(slot, task, lane) of the running episode named by `slot` (or else by `task`), in `lane` when the command was
    addressed to one (a campaign's; "" in a plain run), or why there is none. Without a lane, a task that several
    lanes run is ambiguous: refused, naming them; a slot names one episode whichever lane it is."""
    if task is None and slot is None:
        return "name the episode: a task (or a slot)"
    if lane is not None and isinstance(no := _lane(snap, lane), Refused):
        return no.error
    running = [r for r in snap.slots if r.task_id is not None]
    mine = [r for r in running if lane is None or r.lane == lane]
    if slot is not None:
        rows = [r for r in mine if r.slot == slot]
        what = f"slot {slot}"
    else:
        rows = [r for r in mine if r.task_id == task]
        what = f"task {task!r}"
    if len(rows) > 1:   # by task, with no lane named
        which = ", ".join(f"{r.lane} (slot {r.slot})" for r in rows)
        return (f"{what} is running in {len(rows)} lanes: {which}; name one by its lane's folder: `om2w-tui ctl "
                f"<the campaign's folder>/<lane> ...`")
    if not rows or rows[0].task_id is None:
        now = ", ".join(f"{_named(r.task_id, r.lane)} on slot {r.slot}" for r in running if r.task_id) or "nothing"
        if lane is None:
            return f"no episode of {what} is running (running: {now})"
        none = f"nothing on {what}" if slot is not None else f"no episode of {what}"
        return f"lane {lane} runs {none} now (running: {now})"
    return rows[0].slot, rows[0].task_id, rows[0].lane
