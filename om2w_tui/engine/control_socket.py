"""The run's control socket: every run (console or headless) listens on a unix socket in its out folder
(`<out>/.om2w-control.sock`, a file, owner-only), so that `om2w-tui ctl` and `om2w-tui attach` can watch and steer
it. Both ends of the protocol are here: `ControlServer` (a sink of the run, started by `engine.launch.open_run`)
and the clients' `connect`/`request`.

The protocol is JSON lines. A client sends `{"cmd": ..., "id": ...}` (status, pause, resume, kill, requeue,
workers, retry, stop, subscribe); the server answers each with `{"ok": true, "id": ..., ...}` or `{"ok": false,
"id": ..., "error": "..."}`. After `subscribe` the same connection also carries every later event as
`{"event": <wire>}` and a snapshot about once a second as `{"snapshot": <wire>}` (`engine/wire.py`). A client that
falls behind is dropped, never waited for: each has a bounded queue, and the run only ever puts into it.

Unix socket paths are limited to 107 bytes and out folders can be deeper: both ends reach the folder through an
open descriptor of it (`/proc/self/fd/N/<name>`).

A client talks only to the socket a held run lock names, served by the lock's holder (`engine/socket_trust.py`):
a socket someone else left in the folder is never talked to. Every line either end reads goes through the one JSON
decoder (`json_input`): a line nested thousands deep or not UTF-8 is answered as a bad line, never fatal."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.engine.control import RunControl
from om2w_tui.engine.events import (
    DispatchChanged,
    EpisodeFinished,
    EpisodePutBack,
    EpisodeStarted,
    Event,
    RunFinished,
    RunSnapshot,
    RunStarted,
    SlotChanged,
)
from om2w_tui.engine.runlock import LOCK_NAME
from om2w_tui.engine.settings import BY_KEY
from om2w_tui.engine.socket_trust import (
    Listener,
    Untrusted,
    check_peer,
    check_socket_file,
    held_without_socket,
    listeners,
)
from om2w_tui.engine.wire import to_wire
from om2w_tui.json_input import InputError, decode

SOCKET_NAME = ".om2w-control.sock"
COMMANDS = ("status", "pause", "resume", "kill", "requeue", "workers", "retry", "stop", "subscribe")
QUEUE_LIMIT = 2000          # messages waiting for one client; past it the client is dropped, the run goes on
SNAPSHOT_EVERY_S = 1.0
LINE_LIMIT = 64 * 1024 * 1024   # the longest line a client reads (a snapshot of a run with thousands of sites)
CLOSE_WAIT_S = 2.0          # how long the last messages (RunFinished) may take to reach the clients


def socket_name(lock_name: str = LOCK_NAME) -> str:
    """The socket's file name for a run holding the lock file `lock_name`: `.om2w-run.lock` -> `.om2w-control.sock`,
    and a lock `.om2w-run<X>.lock` (a shard's) -> `.om2w-control<X>.sock`, so that each run has its own."""
    middle = lock_name.removeprefix(".om2w-run").removesuffix(".lock")
    return f".om2w-control{middle}.sock"


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


def _encode(msg: dict[str, Any]) -> bytes:
    return (json.dumps(msg, separators=(",", ":"), default=str) + "\n").encode()


@dataclass(eq=False)
class _Client:
    writer: asyncio.StreamWriter
    queue: asyncio.Queue[bytes | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_LIMIT))
    subscribed: bool = False
    dropped: bool = False
    task: asyncio.Task[None] | None = None


class ControlServer:
    """A sink of the run and the server of its control socket. `serving(control)` listens for the run's life and
    removes the socket on the way out; commands go to `control` (the scheduler), events to every subscriber."""

    def __init__(self, out: Path, lock_name: str = LOCK_NAME, info: dict[str, Any] | None = None):
        self.out = Path(out)
        self.name = socket_name(lock_name)
        self.path = self.out / self.name
        self.info = {"pid": os.getpid(), "out": str(self.out), **(info or {})}
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
            line = _encode({"event": to_wire(event)})
            for c in subscribers:
                self._offer(c, line)

    def _remember(self, ev: Event) -> None:
        if isinstance(ev, RunStarted):
            self._started = ev
        elif isinstance(ev, EpisodeStarted):
            self._running[ev.slot] = ev
        elif isinstance(ev, EpisodeFinished | EpisodePutBack):
            task = ev.record.task_id if isinstance(ev, EpisodeFinished) else ev.task_id
            if (started := self._running.get(ev.slot)) is not None and started.task_id == task:
                del self._running[ev.slot]
        elif isinstance(ev, SlotChanged) and ev.state in ("idle", "retired"):
            self._running.pop(ev.slot, None)
        elif isinstance(ev, DispatchChanged):
            self._dispatch = ev
        elif isinstance(ev, RunFinished):
            self._finished = ev
            self._running.clear()

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
            self._server = await asyncio.start_unix_server(self._serve, sock=sock)
        except BaseException:
            sock.close()
            self._unlink()
            os.close(fd)
            self._dir_fd = None
            raise
        self._ticker = asyncio.ensure_future(self._tick())

    async def close(self) -> None:
        """Stop listening, remove the socket file, let each client have what is queued for it (the run's end),
        then close every connection."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
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
            line = _encode({"snapshot": to_wire(self._control.snapshot())})
            for c in subscribers:
                self._offer(c, line)

    # ── one connection ─────────────────────────────────────
    def _offer(self, c: _Client, line: bytes) -> None:
        try:
            c.queue.put_nowait(line)
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
            while (line := await c.queue.get()) is not None:
                c.writer.write(line)
                await c.writer.drain()
            c.writer.close()
        except (ConnectionError, RuntimeError):   # gone: nothing to write to
            self._drop(c)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        c = _Client(writer)
        c.task = asyncio.ensure_future(self._write(c))
        self.clients.add(c)
        try:
            while not c.dropped:
                line = await reader.readline()
                if not line:
                    break
                self._offer(c, _encode(self._answer(line, c)))
        except (ConnectionError, ValueError):   # gone, or a line past the reader's limit
            pass
        finally:
            self.clients.discard(c)
            if not c.dropped:
                self._end(c)

    def _answer(self, line: bytes, c: _Client) -> dict[str, Any]:
        try:   # the one decoder: a line nested thousands deep, or not UTF-8, is answered like any bad line
            msg = decode(line, "the line")
        except InputError as e:
            return {"ok": False, "error": f"not a JSON line ({e})"}
        if not isinstance(msg, dict):
            return {"ok": False, "error": "expected a JSON object"}
        reply = self.execute(msg, c)
        if "id" in msg:
            reply["id"] = msg["id"]
        return reply

    # ── commands ───────────────────────────────────────────
    def execute(self, msg: dict[str, Any], client: _Client | None = None) -> dict[str, Any]:
        """One command -> its answer: {"ok": True, "message": what it did, ...} or {"ok": False, "error": why}."""
        cmd = msg.get("cmd")
        control = self._control
        if control is None:
            return {"ok": False, "error": "the run is not started yet"}
        if cmd == "status":
            return {"ok": True, "run": self.run_info(), "snapshot": to_wire(control.snapshot())}
        if cmd == "subscribe":
            if client is None:
                return {"ok": False, "error": "subscribe needs a connection"}
            client.subscribed = True
            return {"ok": True, "run": self.run_info(), "replay": [to_wire(e) for e in self.replay()],
                    "snapshot": to_wire(control.snapshot())}
        if self._finished is not None:
            return {"ok": False, "error": "the run is over"}
        reply = self._command(control, cmd, msg)
        if reply.get("ok"):
            self._push_snapshot()
        return reply

    def run_info(self) -> dict[str, Any]:
        info = dict(self.info)
        if self._started is not None:
            info.update(total=self._started.total, settled=self._started.settled, started_at=self._started.started_at)
        info["finished"] = self._finished is not None
        return info

    def _command(self, control: RunControl, cmd: Any, msg: dict[str, Any]) -> dict[str, Any]:
        if cmd in ("pause", "resume"):
            paused = cmd == "pause"
            if "task" in msg or "slot" in msg:
                found = self._episode(control.snapshot(), msg)
                if isinstance(found, str):
                    return {"ok": False, "error": found}
                slot, task = found
                if not control.pause_episode(slot, paused):
                    return {"ok": False, "error": f"{task} on slot {slot} cannot be {cmd}d now (it is starting, "
                                                  f"stopping, or already {'paused' if paused else 'running'})"}
                return {"ok": True, "slot": slot, "task": task, "message": f"{task} on slot {slot}: {cmd}d"}
            control.pause_dispatch(paused, str(msg.get("reason") or ""))
            return {"ok": True, "paused": paused,
                    "message": "dispatch paused (running episodes go on)" if paused else "dispatch resumed"}
        if cmd in ("kill", "requeue"):
            found = self._episode(control.snapshot(), msg)
            if isinstance(found, str):
                return {"ok": False, "error": found}
            slot, task = found
            if not control.kill(slot, requeue=cmd == "requeue"):
                return {"ok": False, "error": f"{task} on slot {slot} is already stopping"}
            then = "it goes back in the queue" if cmd == "requeue" else "recorded as killed, its steps kept"
            return {"ok": True, "slot": slot, "task": task, "message": f"killing {task} on slot {slot}: {then}"}
        if cmd == "workers":
            n = msg.get("n")
            problem = BY_KEY["workers"].kind.check(n)   # the --workers setting's bounds
            if problem or not isinstance(n, int):
                return {"ok": False, "error": f"workers {str(n)[:40]}: {problem}"}
            control.set_workers(n)
            return {"ok": True, "workers": n, "message": f"workers: {n}"}
        if cmd == "retry":
            n = control.retry_errors()
            return {"ok": True, "queued": n, "message": f"{n} errored task(s) back in the queue"}
        if cmd == "stop":
            force = bool(msg.get("force"))
            control.stop(force)
            return {"ok": True, "message": "stopping: running episodes end keeping their steps and run again next "
                                           "time" + (" (their processes ended now)" if force else "")}
        return {"ok": False, "error": f"unknown command {cmd!r} (known: {', '.join(COMMANDS)})"}

    @staticmethod
    def _episode(snap: RunSnapshot, msg: dict[str, Any]) -> tuple[int, str] | str:
        """(slot, task) of the running episode `msg` names by "task" (or "slot"), or why there is none."""
        running = [r for r in snap.slots if r.task_id is not None]
        if "slot" in msg:
            row = next((r for r in running if r.slot == msg["slot"]), None)
            what = f"slot {msg['slot']!r}"
        else:
            row = next((r for r in running if r.task_id == msg.get("task")), None)
            what = f"task {msg.get('task')!r}"
        if row is None or row.task_id is None:
            now = ", ".join(f"{r.task_id} on slot {r.slot}" for r in running) or "nothing"
            return f"no episode of {what} is running (running: {now})"
        return row.slot, row.task_id


# ── the clients' end ──────────────────────────────────────
def locate(out: Path, name: str | None = None) -> Listener:
    """The run listening in `out` (the only one there, or the one on socket `name`), as a held run lock names it
    (`engine/socket_trust.py`); raises NoRunListening."""
    out = Path(out)
    if not out.is_dir():
        raise NoRunListening(f"{out}: no such folder (give the --out folder of a running run)")
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
        raise NoRunListening(f"{out}: no run is listening there{left}; start one with "
                             f"`om2w-tui run ... --out {out}`, or check the folder")
    return found[0]


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


def request(out: Path, msg: dict[str, Any], name: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """Send one command to the run in `out` and return its answer; raises NoRunListening."""
    with connect_sync(out, name, timeout) as sock, sock.makefile("rb") as f:
        sock.sendall(_encode(msg))
        try:
            line = f.readline(LINE_LIMIT)
        except OSError as e:
            raise NoRunListening(f"{out}: the run did not answer ({e})") from None
    if not line:
        raise NoRunListening(f"{out}: the run ended before it answered")
    try:
        reply = decode(line, f"{out}: the run's answer")
    except InputError as e:
        raise NoRunListening(str(e)) from None
    if not isinstance(reply, dict):
        raise NoRunListening(f"{out}: the run answered {str(reply)[:80]!r}")
    return reply


async def connect(out: Path, name: str | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """An asyncio connection to the run in `out` (for `attach`); raises NoRunListening."""
    sock = connect_sync(out, name)
    sock.setblocking(False)
    return await asyncio.open_unix_connection(sock=sock, limit=LINE_LIMIT)
