"""Standard output whose reader went away (`om2w-tui report | head`, a `tee` that died): how to tell, and how to
write on without it. Every command exits 1 then (exits.FAILED: its output was not all read)."""

from __future__ import annotations

import os
import select
from typing import IO


def gone(stream: IO[str]) -> bool:
    """Whether `stream` is a pipe (or socket) whose reader closed it: polled, it says an error or a hang-up."""
    try:
        poll = select.poll()
        poll.register(stream.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))
    except (OSError, ValueError):   # no file descriptor (a test's captured stdout), or closed
        return False


def to_devnull(stream: IO[str]) -> None:
    """Point `stream`'s file descriptor at /dev/null, so that what is still buffered, and the interpreter's last
    flush, fail no more (Python's recipe, the signal module's "Note on SIGPIPE"); a stream with none is left."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


__all__ = ["gone", "to_devnull"]
