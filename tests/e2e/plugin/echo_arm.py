"""A plugin arm for tests, installed by the test through an entry point: it reads the page's heading, scrolls
once, and answers with the heading. It uses the browser session directly, not a browser-use Agent."""

from __future__ import annotations

from om2w_tui.episode.arms.interface import ArmContext, ArmResult


class EchoArm:
    def __init__(self, ctx: ArmContext):
        self.ctx = ctx
        self.answer = ""

    async def run(self) -> ArmResult:
        session = self.ctx.session
        page = await session.get_current_page()
        heading = await page.evaluate("() => (document.querySelector('h1') || {}).textContent || document.title")
        await self.ctx.record_step([], f"read the heading {heading!r}", await session.take_screenshot(),
                                   await session.get_current_page_url())
        await page.evaluate("() => window.scrollBy(0, 600)")
        await self.ctx.record_step(["SCROLL DOWN"], "scrolled once", await session.take_screenshot())
        self.answer = f"echo: {heading.strip()}"
        return ArmResult(answer=self.answer, agent_done=True)

    async def partial(self) -> ArmResult:
        return ArmResult(answer=self.answer)

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass
