"""The stand-ins the tests share, one of each (docs/contributing.md says which is for what):

- `FakeExecutor` / `FakeWorker` / `Behaviour`: a worker process stand-in for unit tests of the scheduler alone. It
  speaks the worker protocol's typed commands and events (protocol/worker.py) on queues, takes `step_s` seconds of
  loop time per step, and writes what a real worker writes (result.json, screenshots). It is as slow and racy as a
  real process: a start takes time, a killed worker's exit is seen late, and its last events may arrive after the
  kill. Where the real `WorkerProcess` refuses, so does it (tests/e2e/test_worker_contract.py runs one suite against
  both): a command sent after a kill is not taken (False), a killed worker says nothing more (no `Finished`), a
  second `Run` while one runs is refused with a log line.
- `FakeRun`: a RunControl (engine/control.py) that records every command it gets, for the controls' tests (the
  control socket, `ctl`, the console's keys) and as the inner run a `JudgedRun` waits on.
- `Recorder`: an event sink (engine/events.py's `Sink`) that keeps every event in order, with its loop time.
- `StubServer`: an HTTP server on 127.0.0.1 (a free port) that answers with the replies a test gives it (status,
  headers, body, or a callable of the request) and records every request it got.

Never used to claim a feature works end to end; tests/e2e does that with real workers, Chromium and the oracle."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from om2w_tui.engine import events as engine
from om2w_tui.engine.control import Interrupt
from om2w_tui.engine.events import RunSnapshot, SlotRow
from om2w_tui.protocol.faults import FaultKind
from om2w_tui.protocol.model import ModelCalls
from om2w_tui.protocol.worker import (
    Command,
    Event,
    Exited,
    Finished,
    ModelCall,
    Outcome,
    Pause,
    Paused,
    Resume,
    Resumed,
    Run,
    Running,
    Started,
    Step,
    Stop,
    WorkerLog,
)


@dataclass
class Behaviour:
    steps: int = 3
    step_s: float = 10.0
    answer: str = "ok"
    ignore_stop: bool = False      # a stuck worker: only a kill ends it
    die_at_step: int | None = None  # the process exits mid-episode (a crash)
    infra_failures: int = 0         # this many runs end as the harness's fault (a model endpoint that is down)
    blocked: bool = False           # the site shows a bot wall: the episode ends `blocked`
    stop_delay_s: float = 0.0       # time the worker takes to act on a stop
    model_failure: str | None = None   # every model call fails with this kind: the episode ends on its model
    vanish_before_start: int = 0    # this many runs: the process dies having read the command, before `started`
    storage_failures: int = 0       # this many runs end unable to write their folder (the disk is full)
    out_of_steps: bool = False      # the agent uses its whole step budget without `done`: no answer


@dataclass
class FakeExecutor:
    behaviour: dict[str, Behaviour] = field(default_factory=dict)   # by task id (or LANE/id); default Behaviour()
    started: list[int] = field(default_factory=list)               # slots a worker was started for
    runs: list[tuple[str, float]] = field(default_factory=list)    # (task_id, loop time) of each run command
    lanes: list[str] = field(default_factory=list)                 # each run's folder's parent: its lane's name
    workers: list[FakeWorker] = field(default_factory=list)
    start_s: float = 1.0                                           # how long a worker takes to start
    exit_seen_s: float = 0.5                                       # how late a killed worker's exit is seen
    endpoint_down: bool = False                                    # every run ends as a model endpoint error
    fail_starts: int = 0                                           # this many starts fail (as WorkerDied does)

    def behaviour_for(self, task_id: str, folder: Path) -> Behaviour:
        """A task's behaviour: its lane's (`LANE/id`, the lane being its folder's parent) before its own."""
        return self.behaviour.get(f"{folder.parent.name}/{task_id}") or self.behaviour.get(task_id, Behaviour())

    async def start_worker(self, slot: int) -> FakeWorker:
        await asyncio.sleep(self.start_s)
        if self.fail_starts > 0:
            self.fail_starts -= 1
            raise RuntimeError(f"worker {slot} failed to start (injected)")
        self.started.append(slot)
        w = FakeWorker(self, slot)
        self.workers.append(w)
        return w


class FakeWorker:
    def __init__(self, executor: FakeExecutor, slot: int):
        self.executor, self.slot = executor, slot
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.exited = False
        self.killed = False
        self.closed = False
        self.paused = asyncio.Event()
        self.paused.set()
        self.job: asyncio.Task[None] | None = None
        self.stop_reason: str | None = None
        self._task_id = ""

    @property
    def pid(self) -> int | None:
        return None

    async def send(self, cmd: Command) -> bool:
        if self.exited or self.killed:   # as WorkerProcess: a killed worker takes no command
            return False
        match cmd:
            case Run(task=task, spec=spec):
                if self.job is not None and not self.job.done():
                    self.events.put_nowait(WorkerLog("error", "run refused: an episode is already running"))
                    return True
                self._task_id = task["task_id"]
                self.executor.runs.append((self._task_id, asyncio.get_running_loop().time()))
                self.executor.lanes.append(Path(spec.folder).parent.name)
                b = self.executor.behaviour_for(self._task_id, Path(spec.folder))
                if b.vanish_before_start > 0:   # gone before it said a word of the task
                    b.vanish_before_start -= 1
                    self.killed = True
                    asyncio.get_running_loop().call_later(self.executor.exit_seen_s, self._exit_seen)
                    return True
                self.events.put_nowait(Started(self._task_id))
                self.job = asyncio.create_task(self._run(task, Path(spec.folder)))
            case Pause():
                if self.job is not None and not self.job.done():
                    self.paused.clear()
                    self.events.put_nowait(Paused())
            case Resume():
                if self.job is not None and not self.job.done():
                    self.paused.set()
                    self.events.put_nowait(Resumed())
            case Stop(reason=reason):
                b = self.executor.behaviour.get(self._task_id, Behaviour())
                job = self.job    # a stop is for the episode running now, never a later one
                if not b.ignore_stop and job and not job.done():
                    self.stop_reason = reason
                    if b.stop_delay_s:
                        await asyncio.sleep(b.stop_delay_s)
                    job.cancel()
        return True

    def _say(self, event: Event) -> None:
        if not self.killed:   # a killed process says nothing more
            self.events.put_nowait(event)

    async def _run(self, task: dict, folder: Path) -> None:
        self._task_id = task["task_id"]
        b = self.executor.behaviour_for(self._task_id, folder)
        self.stop_reason = None
        actions: list[str] = []
        calls = ModelCalls()
        (folder / "trajectory").mkdir(parents=True, exist_ok=True)
        status = "done"
        try:
            self._say(Running())
            for i in range(b.steps):
                await self.paused.wait()
                await asyncio.sleep(b.step_s)
                if b.die_at_step is not None and i == b.die_at_step:
                    self.exited = True
                    self.events.put_nowait(Exited(-9))
                    return
                kind = b.model_failure or "ok"
                calls.add(kind, f"injected {kind}", 0.5)
                self._say(ModelCall(kind, 0.5, 100, 10, f"injected {kind}" if i == 0 and kind != "ok" else ""))
                actions.append(f"SCROLL DOWN {i}")
                (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(b"png")
                (folder / "result.json").write_text(json.dumps({"action_history": actions}))
                self._say(Step(i + 1, [actions[-1]], "u"))
        except asyncio.CancelledError:
            status = self.stop_reason or "killed"
        if self.killed:
            return
        self._say(Finished(self._outcome(b, status, actions, calls)))

    def _outcome(self, b: Behaviour, status: str, actions: list[str], calls: ModelCalls) -> Outcome:
        n = len(actions)
        if status == "done" and b.blocked:
            return Outcome("blocked", "bot wall", steps=n, actions=n, screenshots=n, model=calls)
        if status == "done" and (self.executor.endpoint_down or b.infra_failures > 0):
            b.infra_failures = max(0, b.infra_failures - 1)
            return Outcome("error", "model endpoint: unreachable: Connection error.", FaultKind.ENDPOINT, screenshots=1,
                           model=calls, model_fault="unreachable")
        if status == "done" and b.storage_failures > 0:
            b.storage_failures -= 1
            return Outcome("error", "OSError: [Errno 28] No space left on device", FaultKind.STORAGE, steps=n,
                           actions=n, screenshots=n, model=calls)
        if status == "done" and b.model_failure:
            return Outcome("error", f"model: {b.model_failure}: injected", FaultKind.MODEL, steps=n, actions=n,
                           screenshots=n, model=calls, model_fault=b.model_failure)
        if status == "done" and b.out_of_steps:
            return Outcome("out_of_steps", steps=n, actions=n, screenshots=n, model=calls)
        done = status == "done"
        return Outcome("done" if done else "timeout" if status == "timeout" else "killed", None, None, done, n, n, n,
                       b.answer if done else "", model=calls)

    async def next_event(self) -> Event:
        return await self.events.get()

    def kill_group(self) -> None:
        """SIGKILL: nothing more happens in the process, but its exit is seen only when the pipe closes."""
        if self.killed or self.exited:
            return
        self.killed = True
        if self.job:
            self.job.cancel()
            self.job = None
        asyncio.get_running_loop().call_later(self.executor.exit_seen_s, self._exit_seen)

    def _exit_seen(self) -> None:
        self.exited = True
        self.events.put_nowait(Exited(-9))

    async def kill(self) -> None:
        self.kill_group()
        while not self.exited:
            await asyncio.sleep(self.executor.exit_seen_s)

    async def close(self) -> None:
        self.closed = True
        await self.kill()


# ── a run, as the controls see it ─────────────────────────────────────────────────────────────────────────────
def one_running() -> RunSnapshot:
    """Two slots: slot 0 runs `t-a` (on a.com, at step 2), slot 1 is idle."""
    return RunSnapshot(now=1.0, slots=[SlotRow(0, "running", "t-a", "a.com", step=2), SlotRow(1, "idle")],
                       target_workers=2)


@dataclass
class FakeRun:
    """A RunControl (engine/control.py) that records every command it gets in `commands`, in the order it got
    them: ("pause_dispatch", paused), ("pause_episode", slot, paused), ("kill", slot, requeue), ("set_workers", n)
    (n as asked), ("retry_errors",), ("stop",) or ("stop", True) when forced, ("interrupt",). Its snapshot is `base`
    with what the commands changed (dispatch paused, target workers, errors) and what a test moved on (`steps`,
    `states` by slot; only the first `episodes` slots, where set). `run()` ends at once with `result`, as a
    scheduler whose work is done (what `JudgedRun` waits on)."""

    base: RunSnapshot = field(default_factory=one_running)
    dispatch_paused: bool = False
    target_workers: int = 2
    errored: dict[str, Any] = field(default_factory=lambda: {"t-b": "error", "t-c": "error", "t-d": "error"})
    commands: list[tuple[Any, ...]] = field(default_factory=list)
    episodes: int | None = None                            # how many of base's slots show; None: all
    steps: dict[int, int] = field(default_factory=dict)    # slot -> step, where a test moved an episode on
    states: dict[int, str] = field(default_factory=dict)   # slot -> state, where a test changed one
    stopping: bool = False
    result: object = "stats"

    async def run(self) -> object:
        return self.result

    def pause_dispatch(self, paused: bool = True, reason: str = "") -> None:
        self.dispatch_paused = paused
        self.commands.append(("pause_dispatch", paused))

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        self.commands.append(("pause_episode", slot_id, paused))
        return True

    def pause_lane(self, name: str, paused: bool = True) -> bool:
        self.commands.append(("pause_lane", name, paused))
        return True

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        self.commands.append(("kill", slot_id, requeue))
        return True

    def set_workers(self, n: int) -> str:
        self.target_workers = max(1, n)
        self.commands.append(("set_workers", n))
        return ""

    def retry_errors(self) -> int:
        n = len(self.errored)
        self.errored.clear()
        self.commands.append(("retry_errors",))
        return n

    def stop(self, force: bool = False) -> None:
        self.stopping = True
        self.commands.append(("stop", True) if force else ("stop",))

    def interrupt(self) -> Interrupt:
        self.commands.append(("interrupt",))
        self.stop()
        return "stopping"

    def snapshot(self) -> RunSnapshot:
        slots = [dataclasses.replace(s, step=self.steps.get(s.slot, s.step), state=self.states.get(s.slot, s.state))
                 for s in self.base.slots[: self.episodes]]
        return dataclasses.replace(self.base, paused=self.dispatch_paused, slots=slots, stopping=self.stopping,
                                   target_workers=self.target_workers, errors=len(self.errored))


# ── an event sink ──────────────────────────────────────────────────────────────────────────────────────────────
class Recorder:
    """A sink (engine/events.py's `Sink`): every engine event in order, and in `timed` with the loop's time where it
    was handed one inside a running loop (virtual under looptime)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.timed: list[tuple[float, Any]] = []

    def handle(self, event: engine.Event) -> None:
        self.events.append(event)
        try:
            self.timed.append((asyncio.get_running_loop().time(), event))
        except RuntimeError:   # fed by hand, outside a loop: no time to give it
            pass

    def of(self, kind: type, **match: Any) -> list[Any]:
        """The events of `kind` whose fields equal `match`."""
        return [e for e in self.events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]

    def after(self, event: Any, kind: type) -> list[Any]:
        """The events of `kind` that came after `event`."""
        return [e for e in self.events[self.events.index(event) + 1:] if isinstance(e, kind)]


# ── an HTTP server with the replies a test gives it ────────────────────────────────────────────────────────────
@dataclass
class Request:
    """One request a StubServer got."""

    method: str
    path: str                      # with its query, as sent
    headers: dict[str, str]
    body: bytes
    stopping: threading.Event      # set when the server stops: a reply that waits should wait on it

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Reply:
    """What a StubServer answers. `body`: bytes as they are, a str as UTF-8 (text/html unless `headers` say), any
    other value as JSON (application/json). `stream`: chunks written one by one after `body`, flushed, until they
    end, the client leaves or the server stops; with it (or `length=False`) no Content-Length is sent, so the body
    ends when the connection closes (HTTP/1.0)."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    stream: Callable[[threading.Event], Iterable[bytes]] | None = None
    length: bool = True

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        headers = dict(self.headers)
        if isinstance(self.body, bytes):
            data = self.body
        elif isinstance(self.body, str):
            data = self.body.encode()
            headers.setdefault("Content-Type", "text/html")
        else:
            data = json.dumps(self.body).encode()
            headers.setdefault("Content-Type", "application/json")
        if self.length and self.stream is None:
            headers["Content-Length"] = str(len(data))
        return data, headers


NOT_FOUND = Reply(404, b"not found")
# a reply, or what makes one from the request (None: answer nothing, the connection just closes)
Responder = Reply | Callable[[Request], "Reply | None"]


class StubServer:
    """`with StubServer({"/v1/models": Reply(200, {...}), "POST /v1/chat/completions": answer}) as server:` an HTTP
    server on 127.0.0.1 at a free port (`server.url`), answering each request by its route ("METHOD /path" first,
    then "/path", both with the query as sent), else `default`; a route may be changed while it serves. Every
    request is kept in `requests` before it is answered. Threads as a real server's: requests are answered at once
    and in parallel, a slow reply holds only its own connection."""

    def __init__(self, routes: Mapping[str, Responder] | None = None, default: Responder = NOT_FOUND):
        self.routes: dict[str, Responder] = dict(routes or {})
        self.default = default
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = Request(self.command, self.path, dict(self.headers.items()), body, stub.stopping)
                with stub._lock:
                    stub.requests.append(req)
                responder = stub.routes.get(f"{self.command} {self.path}", stub.routes.get(self.path, stub.default))
                reply = responder(req) if callable(responder) else responder
                if reply is not None:
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                data, headers = reply.encoded()
                self.send_response(reply.status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                    for chunk in reply.stream(stub.stopping) if reply.stream else ():
                        if stub.stopping.is_set():
                            break
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError:   # the client left: what a bounded client does
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port: int = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> StubServer:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]


def every(seconds: float, chunk: bytes) -> Callable[[threading.Event], Iterator[bytes]]:
    """A stream for Reply: `chunk` every `seconds` (0: as fast as the client takes it), until the server stops."""
    def chunks(stopping: threading.Event) -> Iterator[bytes]:
        while not stopping.wait(seconds):
            yield chunk
    return chunks
