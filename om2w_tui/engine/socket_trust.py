"""Which control socket a client (`ctl`, `attach`) may talk to in an out folder: only one a run's lock names, served
by the process that holds that lock.

Anyone who can write the folder can leave a file named `.om2w-control*.sock` there; a client that connected to
whatever it found would show that process's answers as the run's (a false status, a false dashboard). So a client
reads the folder's run locks (`.om2w-run*.lock`, regular files, never through a symlink) that are held right now
(a probe of their flock fails), and takes the socket each names (`socket`, a plain name inside the folder). Before
connecting, the socket must be a socket (not a symlink) owned by the lock file's owner; once connected, the kernel's
word on the peer (SO_PEERCRED, Linux) must be that owner and the lock's pid. A run on another host (a shared
filesystem) is named, not reached."""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from om2w_tui.campaign_folder import LOCK_FILE as CAMPAIGN_LOCK
from om2w_tui.engine.runlock import holder
from om2w_tui.files import open_own
from om2w_tui.run_folder import SOCKET_NAMES, run_locks


@dataclass(frozen=True)
class Listener:
    """A run that listens in a folder, as its lock says: its socket's name, its pid and host, its lock's owner."""

    socket: str
    pid: int
    host: str
    lock: Path
    uid: int


class Untrusted(RuntimeError):
    """A socket that is not the run's; the message says what was found and why it is not talked to."""


def _held(path: Path) -> int | None:
    """The owner's uid of the lock file `path` when a run holds it exclusively now, else None."""
    try:
        fd = open_own(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None   # nobody holds it (or only shards share it: each names its socket in its own lock)
    except BlockingIOError:
        return os.fstat(fd).st_uid
    finally:
        os.close(fd)


def _locks(out: Path) -> list[Path]:
    """The locks that may name a socket in `out`: every run's and shard's, and a campaign's in its folder (ctl OUT
    and attach OUT reach a campaign by its folder)."""
    campaign = Path(out) / CAMPAIGN_LOCK
    return run_locks(out) + ([campaign] if campaign.is_file() else [])


def listeners(out: Path) -> list[Listener]:
    """The runs listening in `out`, one per socket, as their held locks name them (a shard's range holds several
    locks naming one socket)."""
    found: dict[str, Listener] = {}
    for path in _locks(out):
        uid = _held(path)
        if uid is None:
            continue
        info = holder(path)
        name, pid = info.get("socket"), info.get("pid")
        if isinstance(name, str) and SOCKET_NAMES.fullmatch(name) and isinstance(pid, int):
            found.setdefault(name, Listener(name, pid, str(info.get("host", "")), path, uid))
    return list(found.values())


def held_without_socket(out: Path) -> bool:
    """Whether a run holds the folder but names no socket (an om2w-tui from before `ctl` and `attach`)."""
    return any(_held(p) is not None and "socket" not in holder(p) for p in _locks(out))


def check_socket_file(out: Path, lst: Listener) -> None:
    """Raise Untrusted unless `<out>/<socket>` is a socket (not a symlink) owned by the lock's owner, on this host."""
    if lst.host and lst.host != socket.gethostname():
        raise Untrusted(f"{out}: the run listening there is on host {lst.host} (pid {lst.pid}); run this there")
    try:
        st = os.lstat(Path(out) / lst.socket)
    except FileNotFoundError:
        raise Untrusted(f"{out}: no run is listening there (the run holding it, pid {lst.pid}, has no {lst.socket}: "
                        f"it could not listen, or it is ending)") from None
    if not stat.S_ISSOCK(st.st_mode):
        raise Untrusted(f"{out / lst.socket}: is not a socket; not talked to")
    if st.st_uid != lst.uid:
        raise Untrusted(f"{out / lst.socket}: is owned by uid {st.st_uid}, not by the run's user (uid {lst.uid}); "
                        f"not talked to")


def check_peer(sock: socket.socket, out: Path, lst: Listener) -> None:
    """Raise Untrusted unless the process at the other end is the lock's holder (Linux: SO_PEERCRED)."""
    if not sys.platform.startswith("linux"):
        return
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", raw)
    if uid != lst.uid or pid != lst.pid:
        raise Untrusted(f"{out / lst.socket}: is served by pid {pid} (uid {uid}), not by the run holding "
                        f"{lst.lock.name} (pid {lst.pid}, uid {lst.uid}); not talked to")
