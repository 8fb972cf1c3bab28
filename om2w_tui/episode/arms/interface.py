"""What an arm is given and what it returns.

A plugin arm is a class registered under the entry point group `om2w_tui.arms`, constructed with an `ArmContext`,
with `async run() -> ArmResult`, `async partial() -> ArmResult` (what it did before a stop: the runner calls it
after cancelling `run`), `pause()` and `resume()`. It reports steps as they happen, either browser-use history
steps (`ctx.step_done(step)`) or plain ones (`await ctx.record_step(["SCROLL DOWN"], thought, png)`); each lands
on disk at once, so a timeout or a kill keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable


@dataclass
class ArmContext:
    task: dict[str, Any]          # the task row (task_id, confirmed_task, website, level and any extra fields)
    instruction: str              # what the agent is asked to do
    session: Any                  # the live browser_use.BrowserSession, already on the task's website
    model: str
    base_url: str
    api_key: str
    temperature: float
    max_steps: int
    step_done: Callable[[Any], Awaitable[None]]   # report one finished browser-use history step
    record_step: Callable[..., Awaitable[None]] | None = None   # (actions, thought="", png=None, url="")
    vision: bool = True
    llm_timeout: float = 120.0
    llm_retries: int = 2
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)     # the arm's own settings (planner name, adapters ...)
    call_log: Any = None          # with --record-rows: a rows.CallLog every model call is recorded into


@dataclass
class ArmResult:
    histories: list[Any] = field(default_factory=list)   # browser-use AgentHistoryList objects, in order
    answer: str | None = None
    agent_done: bool = False
    prompt_tokens: int = 0        # as the endpoint reported them, over every model call of the episode
    completion_tokens: int = 0
    files: dict[str, Any] = field(default_factory=dict)   # more JSON files for the episode's folder, by name
