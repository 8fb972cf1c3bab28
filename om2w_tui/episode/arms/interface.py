"""What an arm is given and what it returns. A plugin arm is a class taking an `ArmContext`, with
`async run() -> ArmResult`, `async partial() -> ArmResult` (what it did before a stop), `pause()` and `resume()`."""

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
    vision: bool = True
    llm_timeout: float = 120.0
    llm_retries: int = 2
    agent_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class ArmResult:
    histories: list[Any] = field(default_factory=list)   # browser-use AgentHistoryList objects, in order
    answer: str | None = None
    agent_done: bool = False
    prompt_tokens: int = 0        # as the endpoint reported them, over every model call of the episode
    completion_tokens: int = 0
