"""The local executor: one long-lived worker process per slot, spoken to over its pipes in the worker protocol
(protocol/worker.py: one codec both ways; a line that is not of the protocol is logged and dropped).

Each worker leads a process group of its own (its Chromium included), so `kill()` ends everything it started. Its
environment is built from an allow-list (`worker_environment`): what Python, Chromium and the network need, never
the console's secrets (the run's keys travel in the episode's spec, to the model client alone), since a worker's
environment is its Chromium's, readable in /proc by the same user. A worker (and the preflight's probe) starts with
`python_module` (`-P`): the folder the user started from is never on its import path, so a `bisect.py` there is
never run inside a process that holds a key."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import om2w_tui
from om2w_tui.files import open_own, read_file
from om2w_tui.json_input import InputError
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.worker import (
    COMMANDS,
    EPISODE_SCRATCH,
    EPISODE_SCRATCH_PREFIX,
    EVENTS,
    SCRATCH_VAR,
    Command,
    Event,
    Exit,
    Exited,
    Ready,
    WorkerLog,
)
from om2w_tui.protocol.zygote import (
    REPLIES,
    REQUESTS,
    ZYGOTE_MODULE,
    ChildExited,
    Fork,
    Forked,
    ForkFailed,
    ZygoteReady,
)
from om2w_tui.run_folder import RunFolder

READY_TIMEOUT_S = 120.0   # import browser_use and answer `ready`; slow on a loaded machine, never minutes
EXIT_TIMEOUT_S = 15.0
# what a worker (Python, browser-use, Chromium, the model client) needs of the console's environment; all else,
# API keys and tokens above all, stays behind
_ALLOWED = re.compile(
    r"PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_[A-Z]+|TZ|TMPDIR|TEMP|TMP|DISPLAY|WAYLAND_DISPLAY|"
    r"XDG_[A-Z_]+|DBUS_SESSION_BUS_ADDRESS|FONTCONFIG_[A-Z_]+|LD_LIBRARY_PATH|"
    r"PYTHON(PATH|HOME|UNBUFFERED|HASHSEED|DONTWRITEBYTECODE|WARNINGS|FAULTHANDLER|UTF8)|VIRTUAL_ENV|"
    r"SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|"
    r"(HTTP|HTTPS|ALL|NO)_PROXY|(http|https|all|no)_proxy|"
    r"OM2W_CHROMIUM|CHROME_PATH|PLAYWRIGHT_BROWSERS_PATH|BROWSER_USE_[A-Z0-9_]+|ANONYMIZED_TELEMETRY|"
    r"COVERAGE_[A-Z_]+|RAY_[A-Z0-9_]+")
# a name the prefixes above let through that still reads as a credential's (BROWSER_USE_API_KEY, RAY_..._PASSWORD)
_CREDENTIAL = re.compile(r".*(KEY|TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL).*", re.I)
# the package's own folder (holding om2w_tui/): given on a worker's import path where the parent found the package
# only in the folder it was started from (a checkout run as `python -m om2w_tui`, not installed)
_PACKAGE_ROOT = Path(om2w_tui.__file__).resolve().parent.parent


def python_module(module: str) -> tuple[str, ...]:
    """The command that runs one of the package's modules in a child: `-P`, so the folder the user started from is
    not on its import path (`-I` would also drop PYTHONPATH, which a source checkout's run may need)."""
    return (sys.executable, "-P", "-m", module)


def _import_path(base: Mapping[str, str]) -> dict[str, str]:
    """PYTHONPATH for a `python_module` child: the parent's, with the package's folder added where the parent found
    the package only through its first sys.path entry (the folder it started in), which `-P` leaves out."""
    def same(entry: str) -> bool:
        try:
            return Path(entry or ".").resolve() == _PACKAGE_ROOT
        except OSError:
            return False

    started_in = not sys.flags.safe_path and sys.path   # under -P, sys.path[0] is no started-from folder
    if started_in and same(sys.path[0]) and not any(same(p) for p in sys.path[1:]):
        return {"PYTHONPATH": os.pathsep.join(x for x in (str(_PACKAGE_ROOT), base.get("PYTHONPATH")) if x)}
    return {}


def worker_environment(base: Mapping[str, str], extra: Mapping[str, str] | None = None,
                       withhold: Iterable[str] = ()) -> dict[str, str]:
    """The environment a worker (or the preflight's probe) starts with: `base`'s allowed variables but those in
    `withhold` (the variables the run's keys are read from, whatever their names: `settings.key_variables`) and any
    whose name reads as a credential's, then `extra`."""
    held = set(withhold)
    env = {k: v for k, v in base.items() if _ALLOWED.fullmatch(k) and k not in held and not _CREDENTIAL.fullmatch(k)}
    return {**env, **_import_path(env), **(extra or {})}


class WorkerDied(RuntimeError):
    pass


class WorkerProcess:
    """One worker process. `events` yields its events; an `exit` event (with the return code) ends the stream."""

    command: tuple[str, ...] = python_module("om2w_tui.episode.worker")

    def __init__(self, slot: int, log_path: Path, env: dict[str, str] | None = None, withhold: Iterable[str] = (),
                 zygote: Zygote | None = None):
        self.slot = slot
        self.log_path = Path(log_path)
        self.env = env
        self.withhold = tuple(withhold)
        self.zygote = zygote   # forks this worker with its imports done; None, or one that failed: started plainly
        self.proc: asyncio.subprocess.Process | ForkedProcess | None = None
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self.exited = False
        self.killed = False     # its group was sent SIGKILL: never hand it work, though its exit is seen later
        self.scratch: Path | None = None   # its temp folder, made here and removed here once it has exited

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    async def start(self) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="om2w-worker-"))
        try:
            # the run's own file in its folder: never through a symlink planted there
            env = worker_environment(os.environ, {**(self.env or {}), SCRATCH_VAR: str(self.scratch)}, self.withhold)
            with os.fdopen(open_own(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as log:
                if self.zygote is not None:
                    self.proc = await self.zygote.fork(env, log.fileno())
                if self.proc is None:
                    self.proc = await asyncio.create_subprocess_exec(
                        *self.command,
                        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log,
                        start_new_session=True, limit=1 << 24, env=env)
        except BaseException:
            remove_scratch(self.scratch)
            raise
        self._reader = asyncio.create_task(self._read())
        try:
            ev = await asyncio.wait_for(self.next_event(), READY_TIMEOUT_S)
        except TimeoutError:
            await self.kill()
            raise WorkerDied(f"worker {self.slot} did not start within {READY_TIMEOUT_S:.0f} s "
                             f"(see {self.log_path})") from None
        if not isinstance(ev, Ready):
            await self.kill()
            raise WorkerDied(f"worker {self.slot} failed to start (see {self.log_path}): {ev}")

    async def _read(self) -> None:
        assert self.proc and self.proc.stdout
        while True:
            try:
                line = await self.proc.stdout.readline()
            except ValueError:   # a line past the reader's limit: not one of ours
                self.events.put_nowait(WorkerLog("error", "the worker wrote a line longer than the protocol allows"))
                continue
            if not line:
                break
            try:
                self.events.put_nowait(EVENTS.read(line))
            except CodecError as e:
                self.events.put_nowait(WorkerLog("error", f"worker {self.slot} said what the protocol does not: {e}"))
        rc = await self.proc.wait()
        # what it started goes with it (a worker that died alone left its Chromium), then its temp folders
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.scratch is not None:
            await asyncio.to_thread(remove_scratch, self.scratch)
        self.exited = True
        self.events.put_nowait(Exited(rc))

    async def next_event(self) -> Event:
        return await self.events.get()

    async def send(self, cmd: Command) -> bool:
        """Send a command; False when the worker is gone."""
        if self.exited or self.killed or not self.proc or not self.proc.stdin or self.proc.stdin.is_closing():
            return False
        try:
            self.proc.stdin.write(COMMANDS.line(cmd))
            await self.proc.stdin.drain()
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def kill_group(self) -> None:
        if self.proc is None:
            return
        self.killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def kill(self) -> None:
        """End the worker and everything in its process group, now."""
        self.kill_group()
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._reader), 5)

    async def close(self) -> None:
        """Ask the worker to exit (it stops an episode it runs, keeping its steps); kill it if it does not."""
        if self.proc is None:
            return
        if await self.send(Exit()):
            try:
                await asyncio.wait_for(self.proc.wait(), EXIT_TIMEOUT_S)
            except TimeoutError:
                pass
        await self.kill()   # the group too: nothing it started may outlive it


def remove_scratch(scratch: Path) -> None:
    """Remove a worker's temp folder and the episode's it names (Chromium's profile, outside it: a profile's path is
    kept short, for the socket Chromium makes in it); the worker has exited, so nothing writes them any more."""
    try:
        named = Path(read_file(scratch / EPISODE_SCRATCH, 4096, own=True).decode("utf-8").strip())
    except (OSError, ValueError, InputError):
        named = None
    # only what the worker's own episode makes: a temp folder of ours, never another path written there
    if named is not None and named.is_absolute() and named.name.startswith(EPISODE_SCRATCH_PREFIX):
        shutil.rmtree(named, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


def run_tag(out: Path) -> str:
    """A short name for a run's folder, carried in its Chromium profiles' paths (to find a run's processes)."""
    return hashlib.sha1(str(Path(out).resolve()).encode()).hexdigest()[:8]


class LocalExecutor:
    """Makes worker processes for slots, forked from the run's zygote (started with the first); the scheduler owns
    and replaces them. `close()` ends the zygote (the workers are the scheduler's to end)."""

    def __init__(self, log_dir: Path, env: dict[str, str] | None = None, withhold: Iterable[str] = (),
                 shard: str = "", fork: bool = True):
        self.log_dir = Path(log_dir)
        self.shard = shard   # the run's shard: its workers' logs are its own in a folder shards share
        self.env = {"OM2W_RUN_TAG": run_tag(self.log_dir), **(env or {})}
        self.withhold = tuple(withhold)   # variables never passed on (the key's): the key goes in the spec
        self.zygote = Zygote(self.env, self.withhold) if fork and Zygote.possible() else None

    async def start_worker(self, slot: int) -> WorkerProcess:
        log = RunFolder(self.log_dir, self.shard).worker_log(slot)
        if self.zygote is not None:
            await self.zygote.start(log)
        w = WorkerProcess(slot, log, self.env, self.withhold, self.zygote)
        await w.start()
        return w

    def close(self) -> None:
        """End the zygote (from any thread; the run's stack closes it): its workers go on until the scheduler ends
        them, their ends seen without it."""
        if self.zygote is not None:
            self.zygote.close()

    async def aclose(self) -> None:
        """`close()` from the loop, waiting until nothing of the zygote is left for it to finish."""
        if self.zygote is not None:
            await self.zygote.aclose()


class ForkedProcess:
    """A worker forked by the zygote, as the worker's side of `WorkerProcess` uses an asyncio `Process`: its pid,
    its pipes as streams, and `wait()`. Its end is seen by a pidfd (it is the zygote's child, not ours: this holds
    even if the zygote is gone); its exit code is the zygote's report, or None (lost) where the zygote said none."""

    def __init__(self, pid: int, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader,
                 code: asyncio.Future[int | None]):
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None
        self._code = code
        self._ended = asyncio.get_running_loop().create_future()
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:   # ended (and reaped) already
            self._pidfd = None
            self._ended.set_result(None)
        else:
            asyncio.get_running_loop().add_reader(self._pidfd, self._on_end)

    def _on_end(self) -> None:
        if self._pidfd is not None:
            asyncio.get_running_loop().remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if not self._ended.done():
            self._ended.set_result(None)

    async def wait(self) -> int | None:
        await asyncio.shield(self._ended)
        if self.returncode is None:
            try:   # the zygote reaps it at once: its report follows the end within moments
                self.returncode = await asyncio.wait_for(asyncio.shield(self._code), EXIT_REPORT_S)
            except TimeoutError:
                self.returncode = None
            self.stdin.close()
        return self.returncode


EXIT_REPORT_S = 5.0   # a forked worker's end seen, its code reported by the zygote within this, or it was lost


class Zygote:
    """The run's zygote process (episode/zygote.py, protocol/zygote.py): it imports the worker's libraries once and
    forks each worker. Started with the first worker; one that cannot start, or that dies, is given up and the
    workers after it are started plainly (`fork()` returns None)."""

    command: tuple[str, ...] = python_module(ZYGOTE_MODULE)

    def __init__(self, env: Mapping[str, str], withhold: tuple[str, ...]):
        self.env = dict(env)
        self.withhold = withhold
        self.proc: subprocess.Popen[bytes] | None = None
        self.replies: asyncio.StreamReader | None = None
        self.requests: socket.socket | None = None
        self.scratch: Path | None = None
        self.failed = False
        self._started: asyncio.Task[bool] | None = None
        self._ids = 0
        self._forks: dict[int, asyncio.Future[int | None]] = {}   # request id -> the pid forked (None: failed)
        self._codes: dict[int, asyncio.Future[int | None]] = {}   # pid -> its exit code
        self._reader: asyncio.Task[None] | None = None

    @staticmethod
    def possible() -> bool:
        """Forking needs fork, descriptors sent over a Unix socket and pidfds (Linux 5.3)."""
        return hasattr(os, "fork") and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")

    async def start(self, log_path: Path) -> bool:
        """Start it once (the first caller's log takes what it prints); True once it is ready to fork."""
        if self.failed:
            return False
        if self._started is None:
            self._started = asyncio.ensure_future(self._start(log_path))
        try:
            return await asyncio.shield(self._started)
        except Exception:
            return False

    async def _start(self, log_path: Path) -> bool:
        self.scratch = Path(tempfile.mkdtemp(prefix="om2w-worker-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:   # a plain Popen: `close()` reaps it from any thread, with or without a loop still running
            with os.fdopen(open_own(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as log:
                self.proc = subprocess.Popen(
                    self.command, stdin=theirs.fileno(), stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                    env=worker_environment(os.environ, {**self.env, SCRATCH_VAR: str(self.scratch)}, self.withhold))
        except BaseException:
            ours.close()
            self._give_up()
            raise
        finally:
            theirs.close()
        self.requests = ours
        assert self.proc.stdout is not None
        loop = asyncio.get_running_loop()
        self.replies = replies = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(replies), self.proc.stdout)
        try:
            first = await asyncio.wait_for(replies.readline(), READY_TIMEOUT_S)
            ready = isinstance(REPLIES.read(first), ZygoteReady)
        except (TimeoutError, CodecError, ValueError):
            ready = False
        if not ready:
            self._give_up()
            return False
        self._reader = asyncio.create_task(self._read())
        return True

    async def _read(self) -> None:
        assert self.replies is not None
        while line := await self.replies.readline():
            try:
                reply = REPLIES.read(line)
            except CodecError:
                continue
            match reply:
                case Forked(id=rid, pid=pid):
                    self._code_of(pid)
                    if (f := self._forks.pop(rid, None)) is not None and not f.done():
                        f.set_result(pid)
                case ForkFailed(id=rid):
                    if (f := self._forks.pop(rid, None)) is not None and not f.done():
                        f.set_result(None)
                case ChildExited(pid=pid, rc=rc):
                    if not (code := self._code_of(pid)).done():
                        code.set_result(rc)
        self._give_up()   # it is gone: what it forked ends unreported (lost), the next workers start plainly

    def _code_of(self, pid: int) -> asyncio.Future[int | None]:
        if pid not in self._codes:
            self._codes[pid] = asyncio.get_running_loop().create_future()
        return self._codes[pid]

    async def fork(self, env: Mapping[str, str], log_fd: int) -> ForkedProcess | None:
        """A worker forked with `env`, its stderr on `log_fd`; None when the zygote cannot (start it plainly)."""
        if self.failed or self.requests is None:
            return None
        loop = asyncio.get_running_loop()
        self._ids += 1
        rid = self._ids
        forked: asyncio.Future[int | None] = loop.create_future()
        self._forks[rid] = forked
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        try:
            socket.send_fds(self.requests, [REQUESTS.line(Fork(rid, dict(env)))], [stdin_r, stdout_w, log_fd])
            sent = True
        except OSError:
            sent = False
        os.close(stdin_r)    # the child's ends: the zygote holds them now, or nobody does
        os.close(stdout_w)
        if not sent:
            os.close(stdin_w)
            os.close(stdout_r)
            self._forks.pop(rid, None)
            self._give_up()
            return None
        reader = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdout_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                            os.fdopen(stdin_w, "wb", 0))
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        try:
            pid = await asyncio.wait_for(forked, READY_TIMEOUT_S)
        except TimeoutError:
            pid = None
        if pid is None:   # not forked: its pipes closed, the worker started plainly
            writer.close()
            reader.feed_eof()
            transport.close()
            return None
        return ForkedProcess(pid, writer, reader, self._code_of(pid))

    def _give_up(self) -> None:
        self.failed = True
        for f in self._forks.values():
            if not f.done():
                f.set_result(None)
        self._forks.clear()
        self.close()

    def close(self) -> None:
        """End it: its socket closed (it exits on that), its group killed and reaped, its temp folder removed. Safe
        from any thread and more than once; the workers it forked go on (they are the scheduler's to end)."""
        if self.requests is not None:
            with contextlib.suppress(OSError):
                self.requests.close()
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(EXIT_TIMEOUT_S)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    async def aclose(self) -> None:
        """`close()`, then until its replies' pipe has closed (nothing of it left for the loop to finish)."""
        self.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._reader), EXIT_TIMEOUT_S)
