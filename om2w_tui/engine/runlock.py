"""One run per out folder: a lock file (`<out>/.om2w-run.lock`, a file, so the evaluator never takes it for a
task) held with flock for the run's life. A second run over the same folder (the console and a headless run, two
terminals) is refused, naming the holder's pid and host. The kernel drops the lock when its holder dies, so a
killed run leaves nothing stale behind.

The lock file is opened without following a symlink and only as a regular file (`files.open_own`): a symlink
planted in its place (`ln -s ~/precious OUT/.om2w-run.lock`) is refused, never truncated. It names its holder
(pid, host, start) and the control socket the holder listens on (`socket`), which is how `ctl` and `attach` find the
run: they talk only to a socket a held lock names, served by the process that holds it
(`engine/control_socket.py`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from om2w_tui.files import open_own
from om2w_tui.json_input import InputError, decode, read_bytes
from om2w_tui.run_folder import LOCK_NAME as LOCK_NAME  # re-exported: the folder's lock's name

LOCK_LIMIT = 64 << 10   # bytes of a lock file read back (its holder's pid, host and socket)


class OutFolderBusy(RuntimeError):
    """Another run holds the out folder; the message names it and says what to do."""


class LockRefused(OutFolderBusy):
    """The lock file cannot be taken: it is a symlink, a folder or a device, or the folder takes no file."""


def holder(path: Path) -> dict[str, Any]:
    """What a lock file says of its holder ({} when it says nothing readable); never through a symlink."""
    with contextlib.suppress(InputError):
        info = decode(read_bytes(path, LOCK_LIMIT, follow_symlinks=False), str(path))
        if isinstance(info, dict):
            return info
    return {}



def _busy(out: Path, path: Path) -> OutFolderBusy:
    h = holder(path)
    # shards of one run hold the folder's lock shared and write their names in their own lock files
    who = f"pid {h.get('pid', '?')} on {h.get('host', '?')}" if h else "shards of a run: see .om2w-run.shard-*.lock"
    return OutFolderBusy(f"--out {out}: another run is using this folder ({who}, see {path}); wait for it to end, "
                         f"stop it, or give another --out")


class RunLock:
    """Held from `acquire()` to `release()` (or the process's end)."""

    def __init__(self, out: Path, name: str = LOCK_NAME, info: dict[str, Any] | None = None):
        self.out = Path(out)
        self.path = self.out / name
        self.info = dict(info or {})   # said in the lock beside the holder (the control socket's name)
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        fd = take_file(self.out, self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _busy(self.out, self.path) from None
        except OSError:
            os.close(fd)
            raise
        info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
                           **self.info}).encode()
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


def take_file(out: Path, path: Path) -> int:
    """An fd of the lock file `path` (created 0644 if need be), never through a symlink; raises LockRefused."""
    try:
        return open_own(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise LockRefused(f"--out {out}: cannot take the run's lock: {e}; choose another --out") from None


def check_free(out: Path, name: str = LOCK_NAME) -> str:
    """'' when no run holds `out` (its lock `name`), else the message a second run would get (for the preflight
    checks)."""
    path = Path(out) / name
    if not os.path.lexists(path):
        return ""
    try:
        fd = open_own(path, os.O_RDONLY)
    except OSError as e:
        return f"--out {out}: cannot take the run's lock: {e}"
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return ""
    except BlockingIOError:
        return str(_busy(Path(out), path))
    finally:
        os.close(fd)
