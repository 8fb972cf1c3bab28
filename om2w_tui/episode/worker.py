"""A worker process: one per slot, long-lived, so the imports and browser-use's first-Agent cost are paid once.

It speaks the worker protocol (protocol/worker.py), one JSON line each way: commands on stdin (run, pause, resume,
stop, exit), events on stdout (ready, started, running, step, model_call, paused, resumed, log, finished with the
outcome). Anything else the libraries print goes to stderr (the slot's log file), never into the event stream.

The worker leads its own process group (Chromium included). When its stdin closes without an `exit` (the console
died), it ends the whole group, so no Chromium outlives the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from typing import IO

from om2w_tui.episode.browser import browser_use_env
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.faults import FaultKind
from om2w_tui.protocol.worker import (
    COMMANDS,
    EVENTS,
    SCRATCH_VAR,
    Command,
    Event,
    Exit,
    Finished,
    Outcome,
    Pause,
    Paused,
    Ready,
    Resume,
    Resumed,
    Run,
    Started,
    Stop,
    WorkerLog,
)

WORKER_NICE = 15         # well below the console: at 5 its loop lagged 100 ms (p99) on busy cores (bench/console_lag)
PR_CAPBSET_DROP, CAP_SYS_NICE = 24, 23   # <linux/prctl.h>, <linux/capability.h>
ORPHAN_GRACE_S = 3.0     # after the console's pipe closes, time for an orderly exit before the group is killed


def lower_priority(nice: int = WORKER_NICE) -> None:
    """Run this process, and every process it starts, at `nice`, below the console. Chromium sets its threads' nice
    values itself (0 for most, -8 for its display threads) when it may, i.e. as root (CAP_SYS_NICE), as in most
    containers: seen during bench/console_lag.py, a worker's Chromium at nice 15 came back at 0 and -8, above the
    console it was niced to leave the cores to. So the capability is dropped from this process's bounding set before
    any Chromium starts (a program started from here never gets it back), and the soft RLIMIT_NICE set to 0 (no
    raising the priority without the capability). tests/e2e/test_worker_priority.py reads every thread's nice."""
    with contextlib.suppress(OSError):
        os.nice(nice)
    with contextlib.suppress(OSError, ValueError):
        _, hard = resource.getrlimit(resource.RLIMIT_NICE)
        resource.setrlimit(resource.RLIMIT_NICE, (0, hard))
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0)   # fails harmlessly without CAP_SETPCAP (not root)


def event_stream(fd: int) -> IO[str]:
    """The events' text stream on `fd`. Model output is arbitrary text: a lone surrogate in it must not make a
    `finished` event unwritable (it would be dropped, and the episode end as a timeout), so it goes out as its JSON
    escape (backslashreplace writes exactly `\\udXXX`, which only occurs inside a JSON string)."""
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8", errors="backslashreplace")


class EventWriter:
    """Writes events to the console, one line each (the protocol's codec: a lone surrogate of model output goes out
    as its JSON escape, so a `finished` event is never unwritable)."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    def __call__(self, event: Event) -> None:
        try:
            self.stream.write(EVENTS.line(event).decode("utf-8"))
            self.stream.flush()
        except (BrokenPipeError, ValueError):   # the console is gone; the stdin watcher ends us
            pass


def _watch_stdin(loop: asyncio.AbstractEventLoop, commands: asyncio.Queue[Command], emit: EventWriter) -> None:
    """Reads commands in a thread, so that a worker whose event loop is stuck still notices the console's death."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            cmd = COMMANDS.read(line)
        except CodecError as e:   # another version's command, or not ours: said, never acted on
            emit(WorkerLog("error", f"a command that is not of this protocol was ignored: {e}"))
            continue
        loop.call_soon_threadsafe(commands.put_nowait, cmd)
        if isinstance(cmd, Exit):
            return
    loop.call_soon_threadsafe(commands.put_nowait, Exit())   # the console's pipe closed: it died
    time.sleep(ORPHAN_GRACE_S)
    os.killpg(0, signal.SIGKILL)


async def serve(emit: EventWriter) -> None:
    from om2w_tui.episode.runner import (  # the episode's modules once main() has set browser-use's env
        EpisodeControl,
        run_episode,
    )

    loop = asyncio.get_running_loop()
    commands: asyncio.Queue[Command] = asyncio.Queue()
    threading.Thread(target=_watch_stdin, args=(loop, commands, emit), daemon=True).start()

    import browser_use  # noqa: F401  (paid once, before the first episode)

    emit(Ready(os.getpid()))
    episode: asyncio.Task[Outcome] | None = None
    control = EpisodeControl()

    def finished(t: asyncio.Task[Outcome]) -> None:
        nonlocal episode
        episode = None
        if t.cancelled():
            outcome = Outcome("timeout" if control.stop_reason == "timeout" else "killed", "cancelled")
        elif (exc := t.exception()) is not None:
            outcome = Outcome("error", f"{type(exc).__name__}: {str(exc)[:300]}", FaultKind.INFRA)
            print("".join(traceback.format_exception(exc)), file=sys.stderr)
        else:
            outcome = t.result()
        emit(Finished(outcome))

    while True:
        cmd = await commands.get()
        match cmd:
            case Run(task=task, spec=spec):
                if episode is not None:
                    emit(WorkerLog("error", "run refused: an episode is already running"))
                    continue
                control = EpisodeControl()
                emit(Started(str(task["task_id"])))
                episode = asyncio.create_task(run_episode(task, spec, emit, control))
                episode.add_done_callback(finished)
            case Pause() | Resume():
                if episode is None:
                    continue
                verb = "pause" if isinstance(cmd, Pause) else "resume"
                control.paused = verb == "pause"
                if control.arm is not None:
                    getattr(control.arm, verb)()
                else:
                    control.pending.append(verb)
                emit(Paused() if verb == "pause" else Resumed())
            case Stop(reason=reason, error=error):
                if episode is not None and control.cancellable and control.stop_reason is None:
                    control.stop_reason, control.stop_error = reason, error
                    if control.paused and control.arm is not None:
                        control.arm.resume()   # a paused agent must wake to be cancelled cleanly
                    episode.cancel()
            case Exit():
                if episode is not None:
                    control.stop_reason = control.stop_reason or "killed"
                    control.stop_error = control.stop_error or "interrupted"
                    if control.cancellable:
                        episode.cancel()
                    try:
                        await episode
                    except BaseException:
                        pass
                return


def main(forked: bool = False) -> None:
    """The worker, started as `python -m om2w_tui.episode.worker`, or `forked` from the zygote (episode/zygote.py),
    whose priority and imports it has already."""
    events = event_stream(os.dup(1))
    os.dup2(2, 1)                        # stray prints (browser-use's pause banner) go to the log, not the events
    sys.stdout = sys.stderr
    # the parent's folder for it (removed by the parent however this process ends), else one of its own
    scratch = os.environ.get(SCRATCH_VAR) or tempfile.mkdtemp(prefix="om2w-worker-")
    os.environ.update(browser_use_env(os.path.join(scratch, "config")))
    os.environ["TMPDIR"] = scratch       # Chromium's and browser-use's temp files live and die with the worker
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not forked:
        lower_priority()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the console decides when a worker stops, not the terminal's ^C
    try:
        asyncio.run(serve(EventWriter(events)))
    finally:
        _end_group_but_me()
        shutil.rmtree(scratch, ignore_errors=True)


def _end_group_but_me() -> None:
    """Every other process of this worker's group (a Chromium that outlived its session) is ended with it."""
    import psutil  # browser-use's dependency, not ours: only as the worker ends

    me, group = os.getpid(), os.getpgid(0)
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.pid != me and os.getpgid(proc.pid) == group:
                proc.kill()
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue


if __name__ == "__main__":
    main()
