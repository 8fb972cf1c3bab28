"""Following a real run through its control socket from a test: wait for the run to listen, then see its events
as they come (a subscriber in a thread), so that tests wait for what happened rather than sleep."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from om2w_tui.engine.control_socket import SOCKET_NAME, connect_sync
from om2w_tui.engine.events import Event
from om2w_tui.engine.wire import read
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.control import Subscribe, Subscribed, request_line


def wait_listening(out: Path, proc: subprocess.Popen[str], timeout: float = 90.0) -> Path:
    """The run's socket once it is there (the run is starting its sites and the oracle meanwhile)."""
    path = out / SOCKET_NAME
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended with {proc.returncode} before it listened: {proc.stderr.read()}")
        assert time.monotonic() < deadline, "the run never listened on its control socket"
        time.sleep(0.1)
    return path


class Follower:
    """Every event the run emits from now on (after the replay of what it was doing), as typed values."""

    def __init__(self, out: Path):
        self.events: list[Any] = []
        self.closed = False
        self._cond = threading.Condition()
        self._sock = connect_sync(out, timeout=None)   # type: ignore[arg-type]
        self._sock.sendall(request_line(Subscribe()))
        self._file = self._sock.makefile("rb")
        hello = read(self._file.readline())
        assert isinstance(hello, Subscribed), hello
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self._file:   # the replay's events, then every later one (snapshots passed over)
                msg = read(line)
                if isinstance(msg, Event):
                    with self._cond:
                        self.events.append(msg)
                        self._cond.notify_all()
        except (OSError, CodecError):
            pass
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def of(self, kind: type, **match: Any) -> list[Any]:
        with self._cond:
            return [e for e in self.events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]

    def wait(self, what: str, cond: Callable[[], Any], timeout: float = 120.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not (value := cond()):
                left = deadline - time.monotonic()
                assert left > 0 and not self.closed, f"no {what} (the run {'closed' if self.closed else 'went on'})"
                self._cond.wait(left)
        return value

    def close(self) -> None:
        self._sock.close()
