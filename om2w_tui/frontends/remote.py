"""A run going on in another process, held through its control socket (`om2w-tui attach`): `RemoteRun` is a `Run`
like the scheduler, so the console's dashboard drives it unchanged. Its events reach the sinks as the run emits
them, `snapshot()` is the latest one the run sent (its clock moved on by the time since), and commands are sent
without waiting: they return at once, optimistically, and a refusal arrives later as an error `Log` event (which
the console shows as a notification). Closing the connection (`detach()`) leaves the run going."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from om2w_tui.engine.control import Interrupt
from om2w_tui.engine.control_socket import NoRunListening, connect, request
from om2w_tui.engine.events import Event, Log, RunFinished, RunSnapshot, Sink
from om2w_tui.engine.wire import Message, StatusReply, read
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.control import (
    Command,
    Done,
    Kill,
    Pause,
    Refused,
    Requeue,
    Resume,
    Retry,
    RunInfo,
    Status,
    Stop,
    Subscribe,
    Subscribed,
    Workers,
    request_line,
)
from om2w_tui.protocol.run_end import RunEnd


class RemoteRun:
    def __init__(self, out: Path, socket_name: str | None = None, sinks: Iterable[Sink] = ()):
        self.out = Path(out)
        self.socket_name = socket_name
        self.sinks = list(sinks)
        self.info = RunInfo(pid=0, out=str(self.out))   # the run's pid, out folder, progress (once connected)
        self.end: RunEnd | None = None        # how the run said it ended (its RunFinished), once it has
        self._snapshot = RunSnapshot()
        self._snapshot_at = time.monotonic()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)
        self._asked: dict[int, str] = {}      # commands sent and not answered yet: id -> what, for a refusal
        self._stop_sent = False

    # ── the connection ─────────────────────────────────────
    def check(self) -> StatusReply:
        """Ask the run for its status, once, on a connection of its own (is a run there?); raises NoRunListening."""
        answer = request(self.out, Status(), name=self.socket_name)
        if isinstance(answer, Refused):
            raise NoRunListening(f"{self.out}: the run refused to say its status: {answer.error}")
        if not isinstance(answer, StatusReply):
            raise NoRunListening(f"{self.out}: the run answered a status with {type(answer).__name__}")
        return answer

    async def connect(self) -> None:
        """Subscribe to the run: its state so far (the replay and a snapshot) reaches the sinks at once. Raises
        NoRunListening."""
        self._reader, self._writer = await connect(self.out, self.socket_name)
        self._writer.write(request_line(Subscribe()))
        try:
            hello = read(await self._reader.readline(), f"{self.out}: the run's answer")
            if not isinstance(hello, Subscribed):
                why = hello.error if isinstance(hello, Refused) else f"it answered {type(hello).__name__}"
                raise NoRunListening(f"{self.out}: the run did not take this console ({why})")
            self.info = hello.run
            while not isinstance(msg := read(await self._reader.readline()), RunSnapshot):   # the replay
                self._take(msg)
            self._set_snapshot(msg)
        except (CodecError, ConnectionError) as e:   # an empty line (the run went) is a CodecError too
            self.detach()
            raise NoRunListening(f"{self.out}: the run's answer was not understood ({e})") from None

    async def run(self) -> None:
        """Follow the run until it ends or the connection closes (detached, or the run's process ended)."""
        reader = self._reader
        if reader is None:
            raise RuntimeError("RemoteRun.run() before connect()")
        try:
            while data := await reader.readline():
                with contextlib.suppress(CodecError):   # a line of no message this version knows: passed over
                    self._take(read(data))
        except (ConnectionError, ValueError):   # the run went, or sent a line past the reader's limit
            pass
        finally:
            self.detach()

    def detach(self) -> None:
        """Close the connection; the run goes on."""
        if self._writer is not None:
            with contextlib.suppress(RuntimeError):   # the loop already closed
                self._writer.close()
            self._writer = None

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    def _take(self, msg: Message) -> None:
        match msg:
            case RunSnapshot():
                self._set_snapshot(msg)
            case Done(id=ident):
                self._asked.pop(ident or -1, None)
            case Refused(id=ident, error=error):
                what = self._asked.pop(ident or -1, "a command")
                self._emit(Log("error", f"the run refused {what}: {error}"))
            case Subscribed() | StatusReply():
                pass   # answers to what this connection asked only once, in `connect`
            case _:
                self._emit(msg)
                if isinstance(msg, RunFinished):
                    self.end = msg.summary.end

    def _emit(self, ev: Event) -> None:
        for sink in self.sinks:
            sink.handle(ev)

    def _set_snapshot(self, snap: RunSnapshot) -> None:
        self._snapshot, self._snapshot_at = snap, time.monotonic()

    def _send(self, what: str, command: Command) -> None:
        if not self.connected:
            self._emit(Log("error", f"not sent ({what}): this console is no longer connected to the run"))
            return
        assert self._writer is not None
        ident = next(self._ids)
        self._asked[ident] = what
        self._writer.write(request_line(command, ident))

    # ── RunControl ─────────────────────────────────────────
    def snapshot(self) -> RunSnapshot:
        return replace(self._snapshot, now=self._snapshot.now + time.monotonic() - self._snapshot_at)

    def pause_dispatch(self, paused: bool = True, reason: str = "") -> None:
        self._send("to pause" if paused else "to resume", Pause(reason=reason) if paused else Resume())

    def pause_lane(self, name: str, paused: bool = True) -> bool:
        self._send(f"to {'pause' if paused else 'resume'} arm {name}", Pause(arm=name) if paused else Resume(arm=name))
        return True

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        verb = "pause" if paused else "resume"
        self._send(f"to {verb} slot {slot_id}", Pause(slot=slot_id) if paused else Resume(slot=slot_id))
        return True

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        self._send(f"to {'requeue' if requeue else 'kill'} slot {slot_id}",
                   Requeue(slot=slot_id) if requeue else Kill(slot=slot_id))
        return True

    def set_workers(self, n: int) -> str:
        self._send(f"{n} workers", Workers(n))
        return ""   # the run's reply says it, when it kept fewer (its memory)

    def retry_errors(self) -> int:
        self._send("to retry the errored tasks", Retry())
        return self._snapshot.errors

    def stop(self, force: bool = False) -> None:
        self._stop_sent = True
        self._send("to stop", Stop(force=force))

    def interrupt(self) -> Interrupt:
        if not self._stop_sent:
            self.stop()
            return "stopping"
        self.stop(force=True)
        return "forced"
