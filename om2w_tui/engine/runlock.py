"""One run per out folder: a lock file (`<out>/.om2w-run.lock`, a file, so the evaluator never takes it for a
task) held with flock for the run's life. A second run over the same folder (the console and a headless run, two
terminals) is refused, naming the holder's pid and host. The kernel drops the lock when its holder dies, so a
killed run leaves nothing stale behind."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

LOCK_NAME = ".om2w-run.lock"


class OutFolderBusy(RuntimeError):
    """Another run holds the out folder; the message names it and says what to do."""


def _holder(path: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        info = json.loads(path.read_text())
        if isinstance(info, dict):
            return info
    return {}


def _busy(out: Path, path: Path) -> OutFolderBusy:
    h = _holder(path)
    # shards of one run hold the folder's lock shared and write their names in their own lock files
    who = f"pid {h.get('pid', '?')} on {h.get('host', '?')}" if h else "shards of a run: see .om2w-run.shard-*.lock"
    return OutFolderBusy(f"--out {out}: another run is using this folder ({who}, see {path}); wait for it to end, "
                         f"stop it, or give another --out")


class RunLock:
    """Held from `acquire()` to `release()` (or the process's end)."""

    def __init__(self, out: Path, name: str = LOCK_NAME):
        self.out = Path(out)
        self.path = self.out / name
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _busy(self.out, self.path) from None
        except OSError:
            os.close(fd)
            raise
        info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)   # closing drops the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_free(out: Path, name: str = LOCK_NAME) -> str:
    """'' when no run holds `out` (its lock `name`), else the message a second run would get (for the preflight
    checks)."""
    path = Path(out) / name
    if not path.exists():
        return ""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return ""
    except BlockingIOError:
        return str(_busy(Path(out), path))
    finally:
        os.close(fd)
