"""The `base` arm: one browser-use Agent with one model, in the episode's browser."""

from __future__ import annotations

from typing import Any

from om2w_tui.episode.arms.interface import ArmContext, ArmResult, StepReporter, agent_usage, new_agent, run_agent


class BaseArm:
    def __init__(self, ctx: ArmContext):
        self.ctx = ctx
        self.agent: Any = None
        self.steps = StepReporter(ctx)

    async def run(self) -> ArmResult:
        c = self.ctx
        self.agent = self.steps.follow(new_agent(c, c.instruction, c.chat_model()))
        history = await run_agent(c, self.agent, c.max_steps, self.steps.report)
        await self.steps.report()
        return await self._with_usage(self._of(history))

    @staticmethod
    def _of(history: Any) -> ArmResult:
        """browser-use's `final_result()` is the last action's output, done or not: an answer only when done."""
        done = bool(history.is_done())
        return ArmResult(histories=[history], answer=history.final_result() if done else None, agent_done=done)

    async def _with_usage(self, result: ArmResult) -> ArmResult:
        result.prompt_tokens, result.completion_tokens = await agent_usage(self.agent)
        return result

    async def partial(self) -> ArmResult:
        """What the agent did before it was stopped: every step it finished."""
        if self.agent is None:
            return ArmResult()
        await self.steps.report()
        return await self._with_usage(self._of(self.agent.history))

    def pause(self) -> None:
        if self.agent is not None:
            self.agent.pause()

    def resume(self) -> None:
        if self.agent is not None:
            self.agent.resume()
