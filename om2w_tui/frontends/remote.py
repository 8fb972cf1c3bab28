"""A run going on in another process, held through its control socket (`om2w-tui attach`): `RemoteRun` is a `Run`
like the scheduler, so the console's dashboard drives it unchanged. Its events reach the sinks as the run emits
them, `snapshot()` is the latest one the run sent (its clock moved on by the time since), and commands are sent
without waiting: they return at once, optimistically, and a refusal arrives later as an error `Log` event (which
the console shows as a notification). Closing the connection (`detach()`) leaves the run going."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from om2w_tui.engine.control import Interrupt
from om2w_tui.engine.control_socket import NoRunListening, connect
from om2w_tui.engine.events import Event, Log, RunFinished, RunSnapshot, Sink
from om2w_tui.engine.wire import WireError, from_wire


class RemoteRun:
    def __init__(self, out: Path, socket_name: str | None = None, sinks: Iterable[Sink] = ()):
        self.out = Path(out)
        self.socket_name = socket_name
        self.sinks = list(sinks)
        self.info: dict[str, Any] = {}        # the run's pid, out folder, max_steps, total ...
        self.finished = False                 # the run said it finished (RunFinished)
        self._snapshot = RunSnapshot()
        self._snapshot_at = time.monotonic()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)
        self._asked: dict[int, str] = {}      # commands sent and not answered yet: id -> what, for a refusal
        self._stop_sent = False

    # ── the connection ─────────────────────────────────────
    async def connect(self) -> None:
        """Subscribe to the run: its state so far reaches the sinks at once. Raises NoRunListening."""
        self._reader, self._writer = await connect(self.out, self.socket_name)
        self._writer.write(json.dumps({"cmd": "subscribe"}).encode() + b"\n")
        try:
            hello = json.loads(await self._reader.readline() or b"null")
            if not isinstance(hello, dict) or not hello.get("ok"):
                raise NoRunListening(f"{self.out}: the run did not take this console "
                                     f"({hello.get('error') if isinstance(hello, dict) else 'no answer'})")
            self.info = dict(hello.get("run") or {})
            for ev in hello.get("replay") or []:
                self._emit(from_wire(ev))
            self._set_snapshot(from_wire(hello["snapshot"]))
        except (ValueError, KeyError, ConnectionError) as e:   # WireError is a ValueError
            self.detach()
            raise NoRunListening(f"{self.out}: the run's answer was not understood ({e})") from None

    async def run(self) -> None:
        """Follow the run until it ends or the connection closes (detached, or the run's process ended)."""
        reader = self._reader
        if reader is None:
            raise RuntimeError("RemoteRun.run() before connect()")
        try:
            while line := await reader.readline():
                self._take(json.loads(line))
        except (ConnectionError, ValueError):   # the run went, or sent what is not a line of the protocol
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

    def _take(self, msg: dict[str, Any]) -> None:
        if "event" in msg:
            try:
                ev = from_wire(msg["event"])
            except WireError:
                return
            self._emit(ev)
            if isinstance(ev, RunFinished):
                self.finished = True
        elif "snapshot" in msg:
            with contextlib.suppress(WireError):
                self._set_snapshot(from_wire(msg["snapshot"]))
        elif "ok" in msg:
            what = self._asked.pop(msg.get("id", -1), "a command")
            if not msg["ok"]:
                self._emit(Log("error", f"the run refused {what}: {msg.get('error', '?')}"))

    def _emit(self, ev: Event) -> None:
        for sink in self.sinks:
            sink.handle(ev)

    def _set_snapshot(self, snap: Any) -> None:
        if isinstance(snap, RunSnapshot):
            self._snapshot, self._snapshot_at = snap, time.monotonic()

    def _send(self, what: str, **msg: Any) -> None:
        if not self.connected:
            self._emit(Log("error", f"not sent ({what}): this console is no longer connected to the run"))
            return
        assert self._writer is not None
        ident = next(self._ids)
        self._asked[ident] = what
        self._writer.write(json.dumps({**msg, "id": ident}).encode() + b"\n")

    # ── RunControl ─────────────────────────────────────────
    def snapshot(self) -> RunSnapshot:
        return replace(self._snapshot, now=self._snapshot.now + time.monotonic() - self._snapshot_at)

    def pause_dispatch(self, paused: bool = True, reason: str = "") -> None:
        self._send("to pause" if paused else "to resume", cmd="pause" if paused else "resume", reason=reason)

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        verb = "pause" if paused else "resume"
        self._send(f"to {verb} slot {slot_id}", cmd=verb, slot=slot_id)
        return True

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        cmd = "requeue" if requeue else "kill"
        self._send(f"to {cmd} slot {slot_id}", cmd=cmd, slot=slot_id)
        return True

    def set_workers(self, n: int) -> None:
        self._send(f"{n} workers", cmd="workers", n=n)

    def retry_errors(self) -> int:
        self._send("to retry the errored tasks", cmd="retry")
        return self._snapshot.errors

    def stop(self, force: bool = False) -> None:
        self._stop_sent = True
        self._send("to stop", cmd="stop", force=force)

    def interrupt(self) -> Interrupt:
        if not self._stop_sent:
            self.stop()
            return "stopping"
        self.stop(force=True)
        return "forced"
