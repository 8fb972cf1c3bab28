"""The run's control socket, declared once: what a client (`om2w-tui ctl`, `attach`'s `RemoteRun`) asks a run
(`Command`, one JSON line each: `{"cmd": "<name>", "id": <int>, ...fields}`) and what the run answers (`Done`, what
it did; `Refused`, why not; `Subscribed`, the run it is), through the one codec (`COMMANDS`, `request_line`,
`read_request`). A new command is one declaration here: its fields are its wire format, its `USAGE` its `ctl` verb,
argument and help; the run applies it in one place (`engine/control.py: apply`).

What else the run sends, its events and snapshots (after `subscribe`) and the snapshot a status answer carries, are
the engine's own values (`engine/events.py`), so that side of the socket is put together in `engine/wire.py`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

from om2w_tui.protocol.codec import CodecError, Tagged
from om2w_tui.protocol.run_end import RunEnd

# what a ctl command takes after its name: nothing, a task id (or, `optional task`, maybe one), or a number whose
# parser and bounds are a run setting's (`Usage.setting`; it fills the command's field `n`)
ArgKind = Literal["none", "task", "optional task", "count"]


@dataclass(frozen=True)
class Usage:
    """How `om2w-tui ctl` spells a command: its argument and its help line."""
    arg: ArgKind
    help: str
    setting: str = ""      # for a count: the run setting (engine/settings.py) whose parser and bounds it has


# ── commands: a client -> the run ─────────────────────────
@dataclass(frozen=True)
class Status:
    """The run's state now: answered with the run's facts and its snapshot."""
    USAGE: ClassVar[Usage | None] = Usage("none", "progress, running episodes with their step, dispatch, breaker, "
                                                  "workers")


@dataclass(frozen=True)
class Subscribe:
    """Follow the run on this connection: answered `Subscribed`, then the events that bring a console up to now, a
    snapshot, and from then on every event and a snapshot about once a second."""
    USAGE: ClassVar[Usage | None] = None     # a console's (attach), not a ctl command


# `lane` on the commands below: the campaign's lane (its folder's name, `weak`, `weak-r2`) the command is addressed
# to, as `ctl OUT/<lane>` sends it (a lane's own socket fills it in for a client that names a task and no lane): a
# task's episode is that lane's unit of the task, never another lane's; pause or resume without a task holds (lets
# go) that lane's arm. None: the whole run, where a task that several lanes run is refused as ambiguous.
@dataclass(frozen=True)
class Pause:
    """Start no new episode (running ones go on; `reason` says why); with a task or a slot: pause that episode; with
    an arm (a campaign's arm or lane name): hold that arm's units (its running episodes go on)."""
    USAGE: ClassVar[Usage | None] = Usage("optional task", "start no new episode (running ones go on); with TASK: "
                                                           "pause that episode; --arm NAME: hold that arm's units")
    task: str | None = None
    slot: int | None = None
    reason: str = ""
    arm: str | None = None
    lane: str | None = None


@dataclass(frozen=True)
class Resume:
    """Start episodes again; with a task or a slot: resume that episode; with an arm: let that arm's units go on."""
    USAGE: ClassVar[Usage | None] = Usage("optional task", "start episodes again; with TASK: resume that episode; "
                                                           "--arm NAME: that arm's units go on")
    task: str | None = None
    slot: int | None = None
    arm: str | None = None
    lane: str | None = None


@dataclass(frozen=True)
class Kill:
    """End the episode of a task (or on a slot) now, keeping its steps: recorded as killed."""
    USAGE: ClassVar[Usage | None] = Usage("task", "end TASK's episode now, keeping its steps (recorded as killed)")
    task: str | None = None
    slot: int | None = None
    lane: str | None = None


@dataclass(frozen=True)
class Requeue:
    """End the episode of a task (or on a slot) now and put the task back in the queue."""
    USAGE: ClassVar[Usage | None] = Usage("task", "end TASK's episode now and put it back in the queue")
    task: str | None = None
    slot: int | None = None
    lane: str | None = None


@dataclass(frozen=True)
class Workers:
    """Run `n` episodes at once from now on."""
    USAGE: ClassVar[Usage | None] = Usage("count", "run N episodes at once from now on", setting="workers")
    n: int


@dataclass(frozen=True)
class Retry:
    """Queue again the tasks whose latest attempt ended in error."""
    USAGE: ClassVar[Usage | None] = Usage("none", "put the tasks that ended in error back in the queue")


@dataclass(frozen=True)
class Stop:
    """Stop the run gracefully (running episodes end keeping their steps), or with `force` end them now."""
    USAGE: ClassVar[Usage | None] = Usage("none", "stop the run gracefully (running episodes end keeping their "
                                                  "steps; --force: end them now)")
    force: bool = False


# what steers the run (applied to its RunControl), and what a client may send at all
Steer = Pause | Resume | Kill | Requeue | Workers | Retry | Stop
Command = Status | Subscribe | Steer
# each command on the wire by its name, which is its ctl verb too
COMMANDS: Tagged[Command] = Tagged("cmd", {cls.__name__.lower(): cls for cls in get_args(Command)})


# ── answers: the run -> a client ──────────────────────────
@dataclass(frozen=True)
class Done:
    """The run did it: `message` says what, for people; the other fields, set where the command has them, for
    scripts (`ctl --json` prints them)."""
    message: str
    id: int | None = None
    slot: int | None = None       # the episode's slot and task (and a campaign's lane), for a command on one episode
    task: str | None = None
    lane: str | None = None
    paused: bool | None = None    # pause, resume: dispatch (or, with an arm, that arm) is paused now
    arm: str | None = None        # pause, resume of an arm: the arm
    workers: int | None = None    # workers: the slots the run keeps from now on
    queued: int | None = None     # retry: tasks queued again


@dataclass(frozen=True)
class Refused:
    """The run did not do it (or could not read it); `error` says why and, where it can, what would work."""
    error: str
    id: int | None = None


@dataclass(frozen=True)
class RunInfo:
    """The run a socket belongs to: its process and folder, and its progress as it began (each episode's step budget
    comes with its `EpisodeStarted` and its snapshot row)."""
    pid: int
    out: str
    total: int | None = None        # tasks selected (None until the run has started)
    settled: int | None = None      # of those, already finished in the out folder when it started
    started_at: float | None = None
    end: RunEnd | None = None       # how the run ended (None: it has not)


@dataclass(frozen=True)
class Subscribed:
    """The answer to `subscribe`; the replay's events and a snapshot follow it on the connection."""
    run: RunInfo
    id: int | None = None


Reply = Done | Refused


# ── a command's line ──────────────────────────────────────
@dataclass(frozen=True)
class Request:
    """A command as a client sent it, with the id its answer will carry (None: the client gave none)."""
    command: Command
    id: int | None = None


class BadRequest(CodecError):
    """A line that is no command of this protocol; `id` is the one it carried, if any, for its refusal."""

    def __init__(self, error: str, id: int | None = None):
        super().__init__(error)
        self.id = id


def request_line(command: Command, id: int | None = None) -> bytes:
    """One command as its JSON line."""
    body = COMMANDS.encode(command)
    if id is not None:
        body["id"] = id
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n"


def read_request(data: Any) -> Request:
    """The command a decoded line holds; raises BadRequest, saying why (and what is known, for a name)."""
    if not isinstance(data, dict):
        raise BadRequest("expected a JSON object")
    ident = data.get("id")
    if ident is not None and (not isinstance(ident, int) or isinstance(ident, bool)):
        raise BadRequest(f"id: expected a whole number, got {type(ident).__name__}")
    name = data.get("cmd")
    if not isinstance(name, str) or name not in COMMANDS.types:
        raise BadRequest(f"unknown command {name!r:.40} (known: {', '.join(COMMANDS.types)})", ident)
    try:
        command = COMMANDS.decode({k: v for k, v in data.items() if k != "id"})
    except CodecError as e:
        raise BadRequest(f"{name}: {e}", ident) from None
    return Request(command, ident)
