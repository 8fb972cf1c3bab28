"""A worker process stand-in for unit tests of the scheduler alone: it speaks the worker protocol's typed commands
and events (protocol/worker.py) on queues, takes `step_s` seconds of loop time per step, and writes what a real
worker writes (result.json, screenshots).

It is as slow and racy as a real process: a start takes time, a killed worker's exit is seen late, and its last
events may arrive after the kill. Where the real `WorkerProcess` refuses, so does it (tests/unit/test_worker_contract.py
runs one suite against both): a command sent after a kill is not taken (False), a killed worker says nothing more
(no `Finished`), a second `Run` while one runs is refused with a log line. Never used to claim a feature works end
to end; tests/e2e does that with real workers."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

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
    behaviour: dict[str, Behaviour] = field(default_factory=dict)   # by task id; default Behaviour()
    started: list[int] = field(default_factory=list)               # slots a worker was started for
    runs: list[tuple[str, float]] = field(default_factory=list)    # (task_id, loop time) of each run command
    workers: list[FakeWorker] = field(default_factory=list)
    start_s: float = 1.0                                           # how long a worker takes to start
    exit_seen_s: float = 0.5                                       # how late a killed worker's exit is seen
    endpoint_down: bool = False                                    # every run ends as a model endpoint error
    fail_starts: int = 0                                           # this many starts fail (as WorkerDied does)

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
                b = self.executor.behaviour.get(self._task_id, Behaviour())
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
        b = self.executor.behaviour.get(self._task_id, Behaviour())
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
