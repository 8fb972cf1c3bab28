"""The zygote: imports what a worker needs once, then forks a worker per request (protocol/zygote.py says the pipe).

Importing browser-use, the model client and the episode's modules costs a worker seconds of a core (3.5 s on this
2-core machine, quiet); a worker forked from here has them already, and shares their memory with its siblings until
it writes to it. The zygote holds no thread and no event loop when it forks (it checks: a library that started a
thread would make forking unsafe, and the executor then starts workers the plain way).

The child becomes exactly a started worker: a session and process group of its own, its three descriptors on 0, 1
and 2 and no other, the environment it was sent (nothing of the zygote's), the random generator seeded afresh, and
`tempfile` asked again where its temp folder is. It then runs `worker.main` as `python -m om2w_tui.episode.worker`
would, and never returns here. The zygote reaps its children and says how each ended; it ends when its request
socket closes (the console closed the run, or died)."""

from __future__ import annotations

import contextlib
import os
import random
import select
import shutil
import signal
import socket
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable

from om2w_tui.episode.browser import browser_use_env
from om2w_tui.episode.worker import lower_priority
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.worker import SCRATCH_VAR
from om2w_tui.protocol.zygote import (
    FDS_PER_FORK,
    REPLIES,
    REQUEST_BYTES,
    REQUESTS,
    ChildExited,
    Fork,
    Forked,
    ForkFailed,
    Reply,
    ZygoteReady,
)


def preload() -> None:
    """What a worker's first episode would import: browser-use's agent, browser and model client (its package
    imports them lazily), the model client's HTTP library, and the episode's own modules."""
    from browser_use import Agent, BrowserProfile, BrowserSession, ChatOpenAI  # noqa: F401
    from browser_use.browser.profile import ViewportSize  # noqa: F401

    import om2w_tui.endpoint  # noqa: F401
    import om2w_tui.episode.arms  # noqa: F401
    import om2w_tui.episode.runner  # noqa: F401


def _child(request: Fork, fds: list[int]) -> None:
    """In the forked child: become the worker the request describes, run it, and exit with its code."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))   # the zygote's socket and pipes, the descriptors as received
        os.environ.clear()
        os.environ.update(request.env)
        tempfile.tempdir = None      # asked again: the worker's TMPDIR, not the zygote's
        random.seed()
        from om2w_tui.episode.worker import main

        main(forked=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


def serve(requests: socket.socket, write: Callable[[Reply], None]) -> None:
    """Fork a worker per request, report each child's end, until the socket closes."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)   # a handler, so the wakeup descriptor hears of each child
    while True:
        ready, _, _ = select.select([requests.fileno(), wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        _reap(write)
        if requests.fileno() not in ready:
            continue
        msg, fds, _, _ = socket.recv_fds(requests, REQUEST_BYTES, FDS_PER_FORK)
        if not msg:
            return   # the console closed the run or died: workers already forked go on alone
        try:
            request = REQUESTS.read(msg)
        except CodecError as e:
            for fd in fds:
                os.close(fd)
            print(f"zygote: a request that is not of this protocol was ignored: {e}", file=sys.stderr)
            continue
        if len(fds) != FDS_PER_FORK:
            for fd in fds:
                os.close(fd)
            write(ForkFailed(request.id, f"{len(fds)} descriptors sent, {FDS_PER_FORK} needed"))
            continue
        try:
            pid = os.fork()
        except OSError as e:
            write(ForkFailed(request.id, f"fork: {e}"))
        else:
            if pid == 0:
                _child(request, fds)
            write(Forked(request.id, pid))
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _reap(write: Callable[[Reply], None]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        write(ChildExited(pid, os.waitstatus_to_exitcode(status)))


def main() -> None:
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)                         # stray prints go to the log, not the replies
    sys.stdout = sys.stderr
    requests = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def say(reply: Reply) -> None:
        with contextlib.suppress(BrokenPipeError):
            replies.write(REPLIES.line(reply))

    # as a worker does before its first import (browser-use reads its settings as it loads), in the zygote's own
    # temp folder (made and removed by the executor)
    scratch = os.environ.get(SCRATCH_VAR) or tempfile.mkdtemp(prefix="om2w-worker-")
    os.environ.update(browser_use_env(os.path.join(scratch, "config")))
    os.environ["TMPDIR"] = scratch
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lower_priority()                      # inherited by every worker forked (its nice, its capability bounds)
    preload()
    if threading.active_count() != 1:     # a thread would be copied half-way through whatever it was doing
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.main_thread())
        print(f"zygote: the preloaded libraries started threads ({names}); forking is unsafe", file=sys.stderr)
        sys.exit(3)
    say(ZygoteReady(os.getpid()))
    try:
        serve(requests, say)
    finally:   # the console closed its end: it may have died, leaving the folder to nobody else
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
