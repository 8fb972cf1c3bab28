"""What an arm is given and what it returns.

A plugin arm is a class registered under the entry point group `om2w_tui.arms`, constructed with an `ArmContext`,
with `async run() -> ArmResult`, `async partial() -> ArmResult` (what it did before a stop: the runner calls it
after cancelling `run`), `pause()` and `resume()`. It reports steps as they happen, either browser-use history
steps (`ctx.step_done(step)`) or plain ones (`await ctx.record_step(["SCROLL DOWN"], thought, png)`); each lands
on disk at once, so a timeout or a kill keeps it. Its models come from `ctx.chat_model(name)` (browser-use's
ChatOpenAI) or `ctx.openai_client()` (a bare client: send each call `**ctx.llm.sampling()`): every call of those is
counted, mended and recorded (episode/model_watch.py), and an episode that ended on its model's failures says so in
its record. The run's model settings are `ctx.llm`, a `ModelSettings`, whole."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from om2w_tui.episode.browser import grant_clipboard
from om2w_tui.episode.model_watch import ModelWatch
from om2w_tui.episode.tools import agent_kwargs, use_coordinates
from om2w_tui.protocol.model_settings import ModelSettings

# consecutive failed steps after which browser-use's Agent gives up (then one last try with only `done` allowed)
MAX_FAILURES = 3


@dataclass
class ArmContext:
    task: dict[str, Any]          # the task row (task_id, confirmed_task, website, level and any extra fields)
    instruction: str              # what the agent is asked to do
    session: Any                  # the live browser_use.BrowserSession, already on the task's website
    llm: ModelSettings            # the run's model settings, whole (protocol/model_settings.py)
    base_url: str                 # the run's endpoint, as the client opens it
    api_key: str
    max_steps: int
    step_done: Callable[[Any], Awaitable[None]]   # report one finished browser-use history step
    record_step: Callable[..., Awaitable[None]] | None = None   # (actions, thought="", png=None, url="")
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)     # the arm's own settings (planner name, adapters ...)
    call_log: Any = None          # with --record-rows: a rows.CallLog every model call is recorded into
    watch: ModelWatch | None = None   # sees every call of the models below (None: calls go unwatched)

    def chat_model(self, model: str | None = None) -> Any:
        """browser-use's ChatOpenAI for `model` (the run's, by default) on the run's endpoint, its calls watched."""
        llm = chat_openai(self.llm, self.base_url, self.api_key, model)
        return self.watch.watch(llm) if self.watch is not None else llm

    def openai_client(self) -> Any:
        """A bare OpenAI client on the run's endpoint (`chat.completions.create`, sent `**ctx.llm.sampling()`), its
        calls watched."""
        from om2w_tui.endpoint import MODEL_REPLY_BYTES, openai_client  # only when an arm asks for one

        client = openai_client(self.base_url, self.api_key, self.llm.llm_timeout, MODEL_REPLY_BYTES,
                               max_retries=self.llm.llm_retries)
        return self.watch.client(client) if self.watch is not None else client


def chat_openai(llm: ModelSettings, base_url: str, api_key: str, model: str | None = None,
                event_hooks: dict[str, list[Any]] | None = None) -> Any:
    """browser-use's ChatOpenAI as every step of the run asks the model (the run's sampling, cap, timeout and
    retries; every call within its deadline and reply cap); `event_hooks` for its HTTP client (the probe's)."""
    from browser_use import ChatOpenAI  # browser-use (slow to import) only inside a worker or the probe

    from om2w_tui.endpoint import MODEL_REPLY_BYTES, bounded_client  # loaded with the client it bounds

    return ChatOpenAI(model=model or llm.model, base_url=base_url, api_key=api_key or "EMPTY",
                      timeout=llm.llm_timeout, max_retries=llm.llm_retries,
                      max_completion_tokens=llm.max_completion_tokens, **llm.sampling(),
                      http_client=bounded_client(llm.llm_timeout, MODEL_REPLY_BYTES, event_hooks=event_hooks))


@dataclass
class ArmResult:
    histories: list[Any] = field(default_factory=list)   # browser-use AgentHistoryList objects, in order
    answer: str | None = None     # the agent's answer, read only when it said `done` (agent_done)
    agent_done: bool = False
    out_of_steps: bool = False    # the arm's own budget (turns, steps) was spent without `done`
    prompt_tokens: int = 0        # as the endpoint reported them, over every model call of the episode
    completion_tokens: int = 0
    files: dict[str, Any] = field(default_factory=dict)   # more JSON files for the episode's folder, by name


def is_step(entry: Any) -> bool:
    """Whether a browser-use history entry is a step of the agent's budget. Not every entry is: after a budget used
    up without `done`, `Agent.run` appends a marker ("Failed to complete task in maximum steps": no model output, no
    metadata), and initial actions are a step 0; each step it ran has metadata numbered from 1."""
    return getattr(getattr(entry, "metadata", None), "step_number", 0) >= 1


def agent_steps(history: Any) -> int:
    """The steps a browser-use Agent took (its history's steps; never more than the `max_steps` it ran under)."""
    return sum(is_step(e) for e in getattr(history, "history", []))


class StepReporter:
    """Reports each step of a browser-use Agent's history once, as it lands (use `report` as `on_step_end`)."""

    def __init__(self, ctx: ArmContext):
        self.ctx = ctx
        self.agent: Any = None
        self.reported = 0

    def follow(self, agent: Any) -> Any:
        self.agent, self.reported = agent, 0
        return agent

    async def report(self, _agent: Any = None) -> None:
        if self.agent is None:
            return
        steps = self.agent.history.history
        while self.reported < len(steps):
            if is_step(steps[self.reported]):   # browser-use's end-of-budget marker is no step of the trajectory
                await self.ctx.step_done(steps[self.reported])
            self.reported += 1


async def agent_usage(agent: Any) -> tuple[int, int]:
    """(prompt, completion) tokens of an Agent's model calls; (0, 0) when they cannot be read (usage is a nicety:
    an episode's record must not fail on it)."""
    try:
        usage = await agent.token_cost_service.get_usage_summary()
        return usage.total_prompt_tokens, usage.total_completion_tokens
    except Exception:
        return 0, 0


def new_agent(ctx: ArmContext, task: str, llm: Any) -> Any:
    """A browser-use Agent in the episode's browser, set up for a harness: no judge call, no signal handlers, no
    synthetic first step for a URL in the task text; the seed's tools (drag, coordinates as asked)."""
    from browser_use import Agent  # browser-use (slow to import) only inside a worker

    agent = Agent(task=task, llm=llm, browser_session=ctx.session, use_vision=ctx.llm.vision, use_judge=False,
                  enable_signal_handler=False, directly_open_url=False, max_failures=MAX_FAILURES,
                  **{**agent_kwargs(ctx.llm.coordinates), **ctx.agent_kwargs})
    use_coordinates(ctx.session, ctx.llm.coordinates)
    return agent


async def run_agent(ctx: ArmContext, agent: Any, max_steps: int, on_step_end: Any) -> Any:
    """`agent.run` with the clipboard granted again at every step's start, as the seed does (a new tab, a
    navigation to another origin: pages keep their copy and paste)."""
    async def step_start(_agent: Any) -> None:
        await grant_clipboard(ctx.session)

    return await agent.run(max_steps=max_steps, on_step_start=step_start, on_step_end=on_step_end)
