"""The run's control socket: every run (console or headless) listens on a unix socket in its out folder
(`<out>/.om2w-control.sock`, a file, owner-only), so that `om2w-tui ctl` and `om2w-tui attach` can watch and steer
it. Both ends of the protocol are here: `ControlServer` (a sink of the run, started by `engine.launch.open_run`)
and the clients' `connect`/`request`.

The protocol is JSON lines, declared once (`protocol/control.py`: the commands and their answers; `engine/wire.py`:
what the run sends, its events and snapshots included) and read and written only through the one codec. A client
sends a command, `{"cmd": "kill", "task": "...", "id": 3}`; the server applies it (`engine.control.apply`) and
answers `{"type": "Done", "id": 3, "message": ..., ...}` or `{"type": "Refused", "id": 3, "error": ...}` (`status`:
a `StatusReply` with the run's snapshot). After `subscribe` (answered `Subscribed`) the same connection carries the
events that bring a console up to now, a snapshot, then every later event (`{"type": "EpisodeStep", ...}`), a
snapshot about once a second (`{"type": "RunSnapshot", ...}`), and a last one, after the run's last event, before
the run closes the connection. A client that falls behind is dropped, never waited for: each has a bounded queue,
and the run only ever puts into it.

Unix socket paths are limited to 107 bytes and out folders can be deeper: both ends reach the folder through an
open descriptor of it (`/proc/self/fd/N/<name>`).

A client talks only to the socket a held run lock names, served by the lock's holder (`engine/socket_trust.py`):
a socket someone else left in the folder is never talked to. Every line either end reads goes through the one JSON
decoder (`json_input`): a line nested thousands deep or not UTF-8 is answered as a bad line, never fatal."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import assert_never

from om2w_tui.campaign_folder import is_campaign, lane_of
from om2w_tui.engine.control import RunControl, apply
from om2w_tui.engine.events import (
    DispatchChanged,
    EpisodeFinished,
    EpisodeModelCall,
    EpisodePutBack,
    EpisodeStarted,
    EpisodeStep,
    Event,
    Log,
    RunFinished,
    RunStarted,
    SlotChanged,
)
from om2w_tui.engine.socket_trust import (
    Listener,
    Untrusted,
    check_peer,
    check_socket_file,
    held_without_socket,
    listeners,
)
from om2w_tui.engine.wire import Answer, Message, StatusReply, line, read
from om2w_tui.json_input import InputError, decode
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.control import (
    BadRequest,
    Command,
    Done,
    Kill,
    Pause,
    Refused,
    Requeue,
    Resume,
    RunInfo,
    Status,
    Steer,
    Subscribe,
    Subscribed,
    read_request,
    request_line,
)
from om2w_tui.run_folder import LOCK_NAME, RunFolder, Shard, folder_problem, run_holding, shard_named
from om2w_tui.run_folder import SOCKET_NAME as SOCKET_NAME  # re-exported: the clients' default socket

MAX_CLIENTS = 64            # connections served at once (a console, ctl, scripts): more are answered Refused and closed
REQUEST_LIMIT = 64 * 1024   # the longest line the run reads from a client (asyncio's default)
QUEUE_LIMIT = 2000          # messages waiting for one client; past it the client is dropped, the run goes on
SNAPSHOT_EVERY_S = 1.0
LINE_LIMIT = 64 * 1024 * 1024   # the longest line a client reads (a snapshot of a run with thousands of sites)
CLOSE_WAIT_S = 2.0          # how long the last messages (RunFinished) may take to reach the clients


class NoRunListening(RuntimeError):
    """No run answers on a control socket in the folder; the message names the folder and says what to do."""


class ControlSocketError(RuntimeError):
    """The run cannot listen on its control socket (something else has the name)."""


def _via_fd(dir_fd: int, out: Path, name: str) -> str:
    """A path to `name` in the folder `out`, open as `dir_fd`, that fits a unix socket address however deep the
    folder is (Linux; elsewhere the plain path, which must fit)."""
    if sys.platform.startswith("linux"):
        return f"/proc/self/fd/{dir_fd}/{name}"
    return str(out / name)


@dataclass(eq=False)
class _Client:
    writer: asyncio.StreamWriter
    queue: asyncio.Queue[bytes | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_LIMIT))
    subscribed: bool = False
    dropped: bool = False
    task: asyncio.Task[None] | None = None


_TOO_LONG = Refused(f"a line longer than {REQUEST_LIMIT // 1024} KiB; a command is one short JSON line")


async def _lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """The lines a client sends, each whole; None for a line past the reader's limit (read past to its end, never
    held: it is answered as refused, and the connection goes on). Ends at the client's end."""
    too_long = False
    while True:
        try:
            data = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:   # the end; a last line without its newline is a line
            if too_long or e.partial.strip():
                yield None if too_long else e.partial
            return
        except asyncio.LimitOverrunError as e:    # past the limit: drop what is buffered, read on to its newline
            await reader.readexactly(e.consumed)
            too_long = True
            continue
        if too_long:
            too_long = False
            yield None
        else:
            yield data


class ControlServer:
    """A sink of the run and the server of its control socket. `serving(control)` listens for the run's life and
    removes the socket on the way out; commands go to `control` (the scheduler) through `engine.control.apply`,
    events to every subscriber."""

    def __init__(self, folder: RunFolder | Path, lane: str = ""):
        folder = folder if isinstance(folder, RunFolder) else RunFolder(Path(folder))   # a plain folder: a whole run
        self.out = folder.out
        self.lane = lane                    # a campaign's lane whose folder this is ("": the run's or campaign's own)
        self.path = folder.socket           # the run's own socket: a shard's is named after its lock
        self.name = self.path.name
        self.info = RunInfo(pid=os.getpid(), out=str(self.out))
        self.clients: set[_Client] = set()
        self.dropped = 0                      # clients dropped for falling behind
        self._control: RunControl | None = None
        self._server: asyncio.Server | None = None
        self._dir_fd: int | None = None
        self._inode: int | None = None
        self._ticker: asyncio.Task[None] | None = None
        # what a console attaching late needs to draw the run: replayed to it first
        self._started: RunStarted | None = None
        self._running: dict[int, EpisodeStarted] = {}
        self._dispatch: DispatchChanged | None = None
        self._finished: RunFinished | None = None

    # ── the sink ───────────────────────────────────────────
    def handle(self, event: Event) -> None:
        self._remember(event)
        subscribers = [c for c in self.clients if c.subscribed and not c.dropped]
        if subscribers:
            data = line(event)
            for c in subscribers:
                self._offer(c, data)

    def _remember(self, ev: Event) -> None:
        """Keep what `replay` needs: the run's start, the running episodes, a paused dispatch, the run's end."""
        match ev:
            case RunStarted():
                self._started = ev
            case EpisodeStarted(slot=slot):
                self._running[slot] = ev
            case EpisodeFinished(slot=slot, record=record):
                self._episode_over(slot, record.task_id)
            case EpisodePutBack(slot=slot, task_id=task):
                self._episode_over(slot, task)
            case SlotChanged(slot=slot, state=state):
                if state in ("idle", "retired"):
                    self._running.pop(slot, None)
            case DispatchChanged():
                self._dispatch = ev
            case RunFinished():
                self._finished = ev
                self._running.clear()
            case EpisodeStep() | EpisodeModelCall() | Log():
                pass   # a console attaching later starts its steps and its log from then
            case _:
                assert_never(ev)

    def _episode_over(self, slot: int, task: str) -> None:
        if (started := self._running.get(slot)) is not None and started.task_id == task:
            del self._running[slot]

    def replay(self) -> list[Event]:
        """The events that bring a new console up to now (with the snapshot that follows them)."""
        out: list[Event] = [self._started] if self._started else []
        out += [self._running[s] for s in sorted(self._running)]
        if self._dispatch is not None and self._dispatch.paused:
            out.append(self._dispatch)
        if self._finished is not None:
            out.append(self._finished)
        return out

    # ── listening ──────────────────────────────────────────
    @contextlib.asynccontextmanager
    async def serving(self, control: RunControl) -> AsyncIterator[ControlServer]:
        await self.start(control)
        try:
            yield self
        finally:
            await self.close()

    async def start(self, control: RunControl) -> None:
        """Listen at `<out>/<name>`, owner-only. The caller holds the run's lock, so a socket already there was left
        by a run that died, and is replaced; anything else by that name is refused."""
        self._control = control
        fd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)
        self._dir_fd = fd
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                st = os.stat(self.name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                if not stat.S_ISSOCK(st.st_mode):
                    raise ControlSocketError(f"{self.path}: is not a socket; remove it so that the run can listen "
                                             f"there (om2w-tui ctl and attach use it)")
                os.unlink(self.name, dir_fd=fd)
            sock.bind(_via_fd(fd, self.out, self.name))
            # owner-only before listen(): until then a connect is refused, so nobody slips in under other modes
            os.chmod(self.name, 0o600, dir_fd=fd)
            self._inode = os.stat(self.name, dir_fd=fd, follow_symlinks=False).st_ino
            sock.listen(16)
            sock.setblocking(False)
            self._server = await asyncio.start_unix_server(self._serve, sock=sock, limit=REQUEST_LIMIT)
        except BaseException:
            sock.close()
            self._unlink()
            os.close(fd)
            self._dir_fd = None
            raise
        self._ticker = asyncio.ensure_future(self._tick())

    async def close(self) -> None:
        """Stop listening, remove the socket file, let each client have what is queued for it (the run's end and a
        last snapshot, taken after every event it emitted: a console attached ends showing what the run's own
        does), then close every connection."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
            self._push_snapshot()
        if self._server is not None:
            self._server.close()
        self._unlink()
        clients = list(self.clients)
        for c in clients:
            self._end(c)
        tasks = [c.task for c in clients if c.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
        for c in clients:
            c.writer.transport.abort()
        if self._server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), CLOSE_WAIT_S)
            self._server = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    def _unlink(self) -> None:
        """Remove the socket file if it is still the one this server made."""
        if self._dir_fd is None or self._inode is None:
            return
        with contextlib.suppress(OSError):
            if os.stat(self.name, dir_fd=self._dir_fd, follow_symlinks=False).st_ino == self._inode:
                os.unlink(self.name, dir_fd=self._dir_fd)
        self._inode = None

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(SNAPSHOT_EVERY_S)
            self._push_snapshot()

    def _push_snapshot(self) -> None:
        subscribers = [c for c in self.clients if c.subscribed and not c.dropped]
        if subscribers and self._control is not None:
            data = line(self._control.snapshot())
            for c in subscribers:
                self._offer(c, data)

    # ── one connection ─────────────────────────────────────
    def _offer(self, c: _Client, data: bytes) -> None:
        try:
            c.queue.put_nowait(data)
        except asyncio.QueueFull:   # it fell behind: it goes, the run does not wait for it
            self._drop(c)

    def _drop(self, c: _Client) -> None:
        if not c.dropped:
            c.dropped = True
            self.dropped += 1
            self.clients.discard(c)
            c.writer.transport.abort()

    def _end(self, c: _Client) -> None:
        """Close the connection once what is queued for it is written."""
        try:
            c.queue.put_nowait(None)
        except asyncio.QueueFull:
            self._drop(c)

    async def _write(self, c: _Client) -> None:
        try:
            while (data := await c.queue.get()) is not None:
                c.writer.write(data)
                await c.writer.drain()
            c.writer.close()
        except (ConnectionError, RuntimeError):   # gone: nothing to write to
            self._drop(c)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.clients) >= MAX_CLIENTS:
            # bounded: a thousand connections held must not take the descriptors the run writes its results with
            writer.write(line(Refused(f"the run serves at most {MAX_CLIENTS} connections at once; close one and "
                                      f"try again")))
            writer.close()   # after the answer is written; never waited on
            return
        c = _Client(writer)
        c.task = asyncio.ensure_future(self._write(c))
        self.clients.add(c)
        try:
            async for data in _lines(reader):
                if c.dropped:
                    break
                # the answer first; after subscribe, the replay and a snapshot
                for msg in self._answer(data, c) if data is not None else [_TOO_LONG]:
                    self._offer(c, line(msg))
        except ConnectionError:   # gone
            pass
        finally:
            self.clients.discard(c)
            if not c.dropped:
                self._end(c)

    def _answer(self, data: bytes, c: _Client | None) -> list[Message]:
        """What one line from a client is answered with (a bad line too: a refusal saying why)."""
        try:   # the one decoder: a line nested thousands deep, or not UTF-8, is answered like any bad line
            request = read_request(decode(data, "the line"))
        except InputError as e:
            return [Refused(f"not a JSON line ({e})")]
        except BadRequest as e:
            return [Refused(str(e), id=e.id)]
        answer = replace(self.execute(request.command, c), id=request.id)
        if isinstance(answer, Subscribed) and self._control is not None:
            return [answer, *self.replay(), self._control.snapshot()]
        return [answer]

    # ── commands ───────────────────────────────────────────
    def execute(self, command: Command, client: _Client | None = None) -> Answer | Subscribed:
        """One command -> its answer: `Done` (what it did), `Refused` (why not), `StatusReply`, or `Subscribed` (the
        client is a subscriber from now on; `_answer` sends it the replay)."""
        control = self._control
        if control is None:
            return Refused("the run is not started yet")
        if isinstance(command, Status):
            return StatusReply(self.run_info(), control.snapshot())
        if isinstance(command, Subscribe):
            if client is None:
                return Refused("subscribe needs a connection")
            client.subscribed = True
            return Subscribed(self.run_info())
        if self._finished is not None:
            return Refused("the run is over")
        if self.lane and isinstance(command, Pause | Resume | Kill | Requeue) and command.task is not None \
                and command.slot is None and command.lane is None:
            command = replace(command, lane=self.lane)   # a client naming no lane (an older ctl): this folder's lane
        reply = apply(control, command)
        if isinstance(reply, Done):
            self._push_snapshot()
        return reply

    def run_info(self) -> RunInfo:
        started = self._started
        end = self._finished.summary.end if self._finished is not None else None
        if started is None:
            return replace(self.info, end=end)
        return replace(self.info, total=started.total, settled=started.settled, started_at=started.started_at,
                       end=end)


# ── the clients' end ──────────────────────────────────────
def locate(out: Path, name: str | None = None) -> Listener:
    """The run listening in `out` (the only one there, or the one on socket `name`), as a held run lock names it
    (`engine/socket_trust.py`); raises NoRunListening."""
    out = Path(out)
    if problem := folder_problem(out, "give the --out folder of a running run"):
        raise NoRunListening(problem)
    found = listeners(out)
    if name is not None:
        found = [lst for lst in found if lst.socket == name]
        if not found:
            raise NoRunListening(f"{out}: no running run there names the control socket {name}")
    if len(found) > 1:
        raise NoRunListening(f"{out}: several runs listen there ({', '.join(lst.socket for lst in found)}); name "
                             f"one with --socket")
    if not found:
        if held_without_socket(out):
            raise NoRunListening(f"{out}: a run holds the folder (see {out / LOCK_NAME}) but has no control "
                                 f"socket; an om2w-tui from before `ctl` and `attach`?")
        stray = sorted(p.name for p in out.glob(".om2w-control*.sock"))
        left = f" ({', '.join(stray)} there is no running run's: left by one that ended, or not a run's)" if stray \
            else f" (no {SOCKET_NAME})"
        raise NoRunListening(f"{out}: no run is listening there{left}; {start_hint(out)}, or check the folder")
    return found[0]


def start_hint(out: Path) -> str:
    """How to start what runs in `out`: a campaign's folder (or one of its lanes) by its plan, else a run; a folder
    inside a run's (a task's folder) is no run's --out (`run_folder.run_holding`, the rule `run` refuses it by): the
    run folder holding it is named instead."""
    if (holder := run_holding(out, itself=False)) is not None:
        given = next((p for p in out.parents if os.path.abspath(p) == str(holder)), holder)   # as the user wrote it
        return f"it is inside the run folder {given}: give that folder ({start_hint(given)} if none runs there)"
    if is_campaign(out):
        return "start the campaign with `om2w-tui campaign PLAN.toml` (its plan's out is this folder)"
    if lane_of(out) is not None:   # a lane runs only as its campaign's
        return (f"it is a lane of the campaign in {out.parent}: start the campaign with "
                f"`om2w-tui campaign PLAN.toml`")
    return f"start one with `om2w-tui run ... --out {out}`"


@dataclass(frozen=True)
class ShardListening:
    """One shard of a run (or campaign) split across processes in one folder (`--shard K/N`): its name as its files
    say it (`shard-1-of-2`), and the process serving it (None: none runs now)."""

    label: str
    listener: Listener | None


def shards(out: Path) -> list[ShardListening]:
    """The shards of the split run in `out`, in shard order: each one a process listens for (a range once), and each
    other shard of the same split, named as not running; [] when no shard listens there (a whole run, or none)."""
    stem, suffix = SOCKET_NAME.removesuffix(".sock"), ".sock"
    live = [(shard, lst) for lst in listeners(out) if (shard := shard_named(lst.socket, stem, suffix)) is not None]
    covered = {(shard.n, k) for shard, _ in live for k in range(shard.lo, shard.hi)}
    idle: list[tuple[Shard, Listener | None]] = [(Shard(k, k + 1, n), None) for n in sorted({s.n for s, _ in live})
                                                 for k in range(n) if (n, k) not in covered]
    every: list[tuple[Shard, Listener | None]] = [*live, *idle]
    return [ShardListening(shard.label, lst) for shard, lst in sorted(every, key=lambda x: (x[0].n, x[0].lo))]


def _connect_error(out: Path, name: str, e: OSError) -> NoRunListening:
    if isinstance(e, PermissionError):
        return NoRunListening(f"{out / name}: permission denied; the socket is its owner's only: run this as the "
                              f"user who started the run")
    if isinstance(e, ConnectionRefusedError | FileNotFoundError):
        return NoRunListening(f"{out}: no run is listening there ({name} was left by a run that ended; the next run "
                              f"in the folder replaces it)")
    return NoRunListening(f"{out / name}: cannot connect: {e}")


def connect_sync(out: Path, name: str | None = None, timeout: float = 10.0) -> socket.socket:
    """A connected blocking socket to the run in `out`, checked to be served by the run that holds the folder's
    lock; raises NoRunListening."""
    lst = locate(out, name)
    try:
        check_socket_file(Path(out), lst)
    except Untrusted as e:
        raise NoRunListening(str(e)) from None
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(_via_fd(fd, Path(out), lst.socket))
        check_peer(sock, Path(out), lst)
    except Untrusted as e:
        sock.close()
        raise NoRunListening(str(e)) from None
    except OSError as e:
        sock.close()
        raise _connect_error(Path(out), lst.socket, e) from None
    finally:
        os.close(fd)
    return sock


def request(out: Path, command: Status | Steer, name: str | None = None, timeout: float = 10.0) -> Answer:
    """Send one command to the run in `out` and return its answer; raises NoRunListening."""
    with connect_sync(out, name, timeout) as sock, sock.makefile("rb") as f:
        sock.sendall(request_line(command))
        try:
            data = f.readline(LINE_LIMIT)
        except OSError as e:
            raise NoRunListening(f"{out}: the run did not answer ({e})") from None
    if not data:
        raise NoRunListening(f"{out}: the run ended before it answered")
    try:
        answer = read(data, f"{out}: the run's answer")
    except CodecError as e:
        raise NoRunListening(f"{out}: the run's answer was not understood ({e})") from None
    if not isinstance(answer, Done | Refused | StatusReply):
        raise NoRunListening(f"{out}: the run answered {type(answer).__name__}, not an answer to {command}")
    return answer


async def connect(out: Path, name: str | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """An asyncio connection to the run in `out` (for `attach`); raises NoRunListening."""
    sock = connect_sync(out, name)
    sock.setblocking(False)
    return await asyncio.open_unix_connection(sock=sock, limit=LINE_LIMIT)
