"""A worker process stand-in for unit tests of the scheduler alone: it speaks the worker protocol on queues,
takes `step_s` seconds of loop time per step, and writes what a real worker writes (result.json, screenshots).

It is as slow and racy as a real process: a start takes time, a killed worker's exit is seen late (a command sent
to it meanwhile is swallowed, as a pipe buffer would), and its last events may arrive after the kill.
Never used to claim a feature works end to end; tests/e2e does that with real workers."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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


@dataclass
class FakeExecutor:
    behaviour: dict[str, Behaviour] = field(default_factory=dict)   # by task id; default Behaviour()
    started: list[int] = field(default_factory=list)               # slots a worker was started for
    runs: list[tuple[str, float]] = field(default_factory=list)    # (task_id, loop time) of each run command
    workers: list[FakeWorker] = field(default_factory=list)
    start_s: float = 1.0                                           # how long a worker takes to start
    exit_seen_s: float = 0.5                                       # how late a killed worker's exit is seen
    endpoint_down: bool = False                                    # every run ends as a model endpoint error

    async def start_worker(self, slot: int) -> FakeWorker:
        await asyncio.sleep(self.start_s)
        self.started.append(slot)
        w = FakeWorker(self, slot)
        self.workers.append(w)
        return w


class FakeWorker:
    def __init__(self, executor: FakeExecutor, slot: int):
        self.executor, self.slot = executor, slot
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.exited = False
        self.killed = False
        self.closed = False
        self.paused = asyncio.Event()
        self.paused.set()
        self.job: asyncio.Task[None] | None = None
        self.stop_reason: str | None = None
        self._task_id = ""

    async def send(self, cmd: dict[str, Any]) -> bool:
        if self.exited:
            return False
        if self.killed:   # the process is dying: the pipe still takes the line, nobody reads it
            return True
        kind = cmd["cmd"]
        if kind == "run":
            self._task_id = cmd["task"]["task_id"]
            self.executor.runs.append((self._task_id, asyncio.get_running_loop().time()))
            self.events.put_nowait({"ev": "started", "task_id": self._task_id})
            self.job = asyncio.create_task(self._run(cmd["task"], Path(cmd["spec"]["folder"])))
        elif kind == "pause":
            self.paused.clear()
        elif kind == "resume":
            self.paused.set()
        elif kind == "stop":
            b = self.executor.behaviour.get(self._task_id, Behaviour())
            job = self.job    # a stop is for the episode running now, never a later one
            if not b.ignore_stop and job and not job.done():
                self.stop_reason = cmd.get("reason")
                if b.stop_delay_s:
                    await asyncio.sleep(b.stop_delay_s)
                job.cancel()
        return True

    async def _run(self, task: dict[str, Any], folder: Path) -> None:
        self._task_id = task["task_id"]
        b = self.executor.behaviour.get(self._task_id, Behaviour())
        self.stop_reason = None
        actions: list[str] = []
        (folder / "trajectory").mkdir(parents=True, exist_ok=True)
        status = "done"
        try:
            self.events.put_nowait({"ev": "running"})
            for i in range(b.steps):
                await self.paused.wait()
                await asyncio.sleep(b.step_s)
                if b.die_at_step is not None and i == b.die_at_step:
                    self.exited = True
                    self.events.put_nowait({"ev": "exit", "rc": -9})
                    return
                actions.append(f"SCROLL DOWN {i}")
                (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(b"png")
                (folder / "result.json").write_text(json.dumps({"action_history": actions}))
                self.events.put_nowait({"ev": "step", "step": i + 1, "actions": [actions[-1]], "url": "u"})
        except asyncio.CancelledError:
            status = self.stop_reason or "killed"
        if status == "done" and b.blocked:
            self.events.put_nowait({"ev": "finished", "record": {
                "status": "blocked", "error": "bot wall", "steps": len(actions), "actions": len(actions),
                "screenshots": len(actions), "answer": "", "agent_done": False}})
            return
        if status == "done" and (self.executor.endpoint_down or b.infra_failures > 0):
            b.infra_failures = max(0, b.infra_failures - 1)
            self.events.put_nowait({"ev": "finished", "record": {
                "status": "error", "error": "model endpoint: Connection error.", "error_kind": "infra",
                "steps": 0, "actions": 0, "screenshots": 1, "answer": "", "agent_done": False}})
            return
        self.events.put_nowait({"ev": "finished", "record": {
            "status": status, "steps": len(actions), "actions": len(actions), "screenshots": len(actions),
            "answer": b.answer if status == "done" else "", "agent_done": status == "done"}})

    async def next_event(self) -> dict[str, Any]:
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
        self.events.put_nowait({"ev": "exit", "rc": -9})

    async def close(self) -> None:
        self.closed = True
        self.kill_group()
        while not self.exited:
            await asyncio.sleep(self.executor.exit_seen_s)
