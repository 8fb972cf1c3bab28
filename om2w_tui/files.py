"""Files written whole or not at all: `write_atomic` and `write_json_atomic`, for every file that a reader (another
process, the official evaluator, a later run) may open while it is written or after a crash: an episode's
`result.json`, screenshots and histories, a run's manifest, the launch form's remembered values, task files fetched
or with their dates moved, the official evaluator's output kept.

The new content goes to a temporary file in the same folder (or in `tmp_dir`, on the same file system), is flushed
to disk, and replaces the old with one `os.replace`; a failure midway leaves the old content and no temporary file.

Files a run keeps in its folder and opens by name (its lock, its results, the judge's output) go through `open_own`
(`append_own` for a file of lines): never through a symlink, never a FIFO, a device or a folder; `unsafe_entry`
says the same before a run, for its preflight.

Every file the package reads goes through `read_file` (json_input's `read_bytes`): a regular file only (a FIFO is
never waited on, `/dev/zero` never read), at most `limit` bytes, never through a symlink where the file is the
run's own (`own=True`: in a run folder, in the config folder); a given path (`--tasks`, `--labels`, ...) may be a
link to a regular file. `tests/unit/test_hardened_round2.py` holds the package to it: no plain `open` elsewhere.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from om2w_tui.json_input import read_bytes, read_head

SCREENSHOT_LIMIT = 64 << 20   # bytes of one screenshot read back (a full page of 1280 x 20,000 pixels is ~10 MiB)


def write_atomic(path: Path, data: bytes | str, tmp_dir: Path | None = None, mode: int = 0o666,
                 final_mode: int | None = None) -> None:
    """Write a file so that a reader (or a crash) sees the old content or the new, never a part. `tmp_dir` (on the
    same file system) keeps the half-written file out of a folder whose every file is read, like `trajectory/`.
    `mode` (less the umask) is the file's from its first byte: 0o600 for a file only its owner may read;
    `final_mode`, given, is set on the whole file just before it takes its place (written owner-only, then readable
    by others once complete). A symlink at `path` is replaced, never followed; the temporary file has a name no one
    can guess and is created exclusively."""
    path = Path(path)
    # text that cannot be UTF-8 (a lone surrogate from a model's reply) goes as its escape: the file is always written
    raw = data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data
    # not tempfile.mkstemp: its 0600 would make result.json and the screenshots unreadable to others (the evaluator
    # run by another user); 0666 less the umask, as for any file written plainly
    tmp = Path(tmp_dir or path.parent) / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            if final_mode is not None:
                os.fchmod(f.fileno(), final_mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any, mode: int = 0o666) -> None:
    write_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, default=str), mode=mode)


def write_new(path: Path, data: bytes | str) -> None:
    """A new file in a folder this process has just made and owns (a web report being built beside its place):
    created exclusively, so never through a symlink nor over another file, and not synced one by one (the folder
    takes its place whole, by one rename, once every file is in it)."""
    raw = data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)


class UnsafeFile(OSError):
    """A file the run would write in its folder is a symlink, a folder, a FIFO or a device; the message says which."""


def open_own(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open a file the run owns in its folder (its lock, its results, a stamp): never through a symlink, and only a
    regular file (a FIFO or a device is not opened to wait on, a folder is refused). Raises UnsafeFile naming the
    path, or the OSError the open met."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError:
        if os.path.islink(path):
            raise UnsafeFile(f"{path}: is a symbolic link; the run never writes through one (remove it)") from None
        if os.path.isdir(path):
            raise UnsafeFile(f"{path}: is a folder where the run keeps a file (move it away)") from None
        raise
    kind = _kind(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise UnsafeFile(f"{path}: is {kind} where the run keeps a file (move it away)")
    return fd


def append_own(path: Path, data: bytes) -> None:
    """Append `data` (whole lines) to a file of lines the run owns, in one write, synced, under a lock every appender
    takes: never through a symlink, never to a FIFO or a device (UnsafeFile). A torn last line (a crash mid-write)
    is ended first, so the new line starts on its own."""
    fd = open_own(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        # the look at the last byte and the write are one step for every appender (threads, a node's shards): another
        # line half-written when looked at would read as torn, and its end be doubled into an empty line
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


def read_file(path: Path | str, limit: int, *, own: bool, what: str = "") -> bytes:
    """A regular file's bytes, at most `limit`; `own`: the run's own file (in its folder, the config folder), never
    read through a symlink. Raises InputError naming the path (and `what` it is: `--labels`, ...)."""
    return read_bytes(path, limit, follow_symlinks=not own, what=what)


def read_start(path: Path | str, n: int, *, own: bool) -> bytes:
    """The first `n` bytes of a regular file (a screenshot's magic number), as `read_file` opens it."""
    return read_head(path, n, follow_symlinks=not own)


def given_file(path: Path | str, what: str, limit: int) -> str:
    """'' when a path the user gave (`--labels FILE`) names a regular file of at most `limit` bytes, or nothing yet;
    else what is wrong, naming `what` and the path (for exit 2 before anything is done)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ""
    except OSError as e:
        return f"{what} {path}: cannot be read ({e.strerror or e})"
    kind = _kind(st.st_mode)
    if kind:
        return f"{what} {path}: is {kind}, not a file; give a file"
    if st.st_size > limit:
        return f"{what} {path}: is {st.st_size} bytes, more than the {limit} it may be"
    return ""


def _kind(mode: int) -> str:
    """'' for a regular file, else what it is."""
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a FIFO, a device or a socket"


def unsafe_entry(path: Path) -> str:
    """'' when `path` is absent or a regular file (not a symlink), else what is wrong (for the preflight)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError as e:
        return f"{path}: cannot be read ({e.strerror or e})"
    if stat.S_ISLNK(st.st_mode):
        return f"{path}: is a symbolic link; the run never writes through one (remove it)"
    kind = _kind(st.st_mode)
    return f"{path}: is {kind} where the run keeps a file (move it away)" if kind else ""


def holds_no_files(folder: Path) -> bool:
    """Whether `folder` is on a filesystem of no blocks (`/proc`, `/sys`): it takes no file a run writes, whatever
    its modes say (root may "write" there, and every create fails)."""
    try:
        return os.statvfs(folder).f_blocks == 0
    except OSError:
        return False
