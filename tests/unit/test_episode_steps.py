"""An episode's step count against its budget: browser-use's history, as `Agent.run` leaves it after a budget used
up without `done` (its steps, then a marker that is no step), counted and reported step by step as the worker does.
Real browser-use history objects, no browser."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("browser_use")


def _history(steps: int, marker: bool) -> Any:
    """A history of `steps` steps (metadata numbered from 1, as `Agent._finalize` writes them), then browser-use's
    end-of-budget marker when `marker` (as `Agent.run` appends it: no model output, no metadata)."""
    from browser_use.agent.views import ActionResult, AgentHistory, AgentHistoryList, StepMetadata
    from browser_use.browser.views import BrowserStateHistory

    def state(url: str) -> BrowserStateHistory:
        return BrowserStateHistory(url=url, title="", tabs=[], interacted_element=[], screenshot_path=None)

    items = [AgentHistory(model_output=None, result=[ActionResult(extracted_content="scrolled")],
                          state=state("http://127.0.0.1/"),
                          metadata=StepMetadata(step_start_time=0.0, step_end_time=1.0, step_number=n))
             for n in range(1, steps + 1)]
    if marker:
        items.append(AgentHistory(model_output=None, result=[ActionResult(
            error="Failed to complete task in maximum steps", include_in_memory=True)], state=state(""),
            metadata=None))
    return AgentHistoryList(history=items)


def test_a_budget_used_up_counts_its_steps_not_browser_use_s_marker_after_them():
    from om2w_tui.episode.arms.interface import ArmResult, agent_steps
    from om2w_tui.episode.runner import _steps_of

    class Writer:
        n_steps = 99   # the arm's own count, used only when there is no history

    used_up = _history(5, marker=True)   # --max-steps 5, no `done`: browser-use's history holds 6 entries (QA)
    assert len(used_up.history) == 6 and agent_steps(used_up) == 5
    assert _steps_of(ArmResult(histories=[used_up]), Writer()) == 5   # type: ignore[arg-type]
    assert _steps_of(ArmResult(histories=[_history(2, False), used_up]), Writer()) == 7   # type: ignore[arg-type]


def test_the_marker_is_no_step_of_the_trajectory():
    from om2w_tui.episode.arms.interface import StepReporter

    reported: list[Any] = []

    async def step_done(step: Any) -> None:
        reported.append(step)

    class Ctx:
        pass

    ctx = Ctx()
    ctx.step_done = step_done   # type: ignore[attr-defined]

    class Agent:
        history = _history(3, marker=True)

    reporter = StepReporter(ctx)   # type: ignore[arg-type]
    reporter.follow(Agent())
    asyncio.run(reporter.report())
    asyncio.run(reporter.report())   # reported once each, the marker never
    assert [s.metadata.step_number for s in reported] == [1, 2, 3]
