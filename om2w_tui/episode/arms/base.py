"""The `base` arm: one browser-use Agent with one model, in the episode's browser."""

from __future__ import annotations

from typing import Any

from .interface import ArmContext, ArmResult


class BaseArm:
    def __init__(self, ctx: ArmContext):
        self.ctx = ctx
        self.agent: Any = None
        self._reported = 0

    def _llm(self) -> Any:
        from browser_use import ChatOpenAI

        c = self.ctx
        llm = ChatOpenAI(model=c.model, base_url=c.base_url, api_key=c.api_key, temperature=c.temperature,
                         timeout=c.llm_timeout, max_retries=c.llm_retries)
        if c.call_log is not None:   # --record-rows
            from ..rows import record_calls

            record_calls(llm, c.call_log)
        return llm

    async def _report_new_steps(self, agent: Any = None) -> None:
        steps = self.agent.history.history
        while self._reported < len(steps):
            await self.ctx.step_done(steps[self._reported])
            self._reported += 1

    async def run(self) -> ArmResult:
        from browser_use import Agent

        c = self.ctx
        self.agent = Agent(task=c.instruction, llm=self._llm(), browser_session=c.session, use_vision=c.vision,
                           use_judge=False, enable_signal_handler=False, directly_open_url=False,
                           max_failures=3, **c.agent_kwargs)
        history = await self.agent.run(max_steps=c.max_steps, on_step_end=self._report_new_steps)
        await self._report_new_steps()
        result = ArmResult(histories=[history], answer=history.final_result() if history.is_done() else None,
                           agent_done=history.is_done())
        return await self._with_usage(result)

    async def _with_usage(self, result: ArmResult) -> ArmResult:
        try:
            usage = await self.agent.token_cost_service.get_usage_summary()
            result.prompt_tokens, result.completion_tokens = usage.total_prompt_tokens, usage.total_completion_tokens
        except Exception:   # usage is a nicety: an episode's record must not fail on it
            pass
        return result

    async def partial(self) -> ArmResult:
        """What the agent did before it was stopped: every step it finished."""
        if self.agent is None:
            return ArmResult()
        await self._report_new_steps()
        return await self._with_usage(ArmResult(histories=[self.agent.history]))

    def pause(self) -> None:
        if self.agent is not None:
            self.agent.pause()

    def resume(self) -> None:
        if self.agent is not None:
            self.agent.resume()
