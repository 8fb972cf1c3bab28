"""Every offline task solved by a real browser-use Agent on Chromium, driven by the oracle over HTTP."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from om2w_tui.episode.browser import browser_use_env  # noqa: E402

# browser-use reads these at import: no network, no logging takeover, its leftovers in a folder of ours.
_BROWSER_USE_DIR = Path(tempfile.gettempdir()) / f"om2w-offline-oracle-{os.getpid()}"  # made by the fixture
for _name, _value in browser_use_env(_BROWSER_USE_DIR / "config").items():
    os.environ.setdefault(_name, _value)

from om2w_tui.offline import OfflineSuite, OracleServer, judge_answer  # noqa: E402
from om2w_tui.offline.suite import load_task_templates  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]
CHROMIUM = os.environ.get("CHROME_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
TASK_IDS = [task["task_id"] for task in load_task_templates()]
MAX_STEPS = 15


@pytest.fixture(scope="module")
def offline():
    """The sites and the oracle, shared by every episode; browser-use's and Chromium's temp files go to our folder."""
    _BROWSER_USE_DIR.mkdir(parents=True, exist_ok=True)
    saved_tempdir, saved_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(_BROWSER_USE_DIR)
    try:
        with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
            yield {task["task_id"]: task for task in suite.tasks()}, oracle
    finally:
        tempfile.tempdir = saved_tempdir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        shutil.rmtree(_BROWSER_USE_DIR, ignore_errors=True)


def _chromium_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "chrom" in p.name().lower()]


async def run_episode(task: dict, oracle: OracleServer, model: str = "oracle", max_steps: int = MAX_STEPS):
    """One fresh browser per episode (the shop's cart lives in a cookie), killed whatever happens; the browser and
    the tools as an episode has them (pinned viewport, clipboard, coordinates on the 0-1000 grid, drag)."""
    from browser_use import Agent, ChatOpenAI

    from om2w_tui.episode.browser import grant_clipboard, make_session, start_session
    from om2w_tui.episode.tools import agent_kwargs, use_coordinates

    session = make_session(CHROMIUM, _BROWSER_USE_DIR / "downloads", _BROWSER_USE_DIR / f"profile-{task['task_id']}")
    try:
        await start_session(session)
        agent = Agent(
            task=task["confirmed_task"],
            llm=ChatOpenAI(model=model, base_url=oracle.url, api_key="x", max_retries=0, timeout=30),
            browser_session=session,
            initial_actions=[{"navigate": {"url": task["website"]}}],
            use_vision=True,    # the oracle finds a canvas target in the screenshot, as a vision model would
            use_judge=False,
            enable_signal_handler=False,
            directly_open_url=False,
            **agent_kwargs("normalized"),
        )
        use_coordinates(session, "normalized")
        return await agent.run(max_steps=max_steps, on_step_start=lambda _a: grant_clipboard(session))
    finally:
        await session.kill()


async def _assert_no_chromium_left() -> None:
    deadline = time.monotonic() + 5
    while _chromium_children() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert not _chromium_children()


@pytest.mark.parametrize("task_id", TASK_IDS)
async def test_oracle_solves_the_task_through_a_real_agent(offline, task_id):
    tasks, oracle = offline
    task = tasks[task_id]
    calls_before = oracle.calls
    history = await run_episode(task, oracle)
    answer = history.final_result()
    assert history.is_done(), [step.model_output for step in history.history]
    assert history.is_successful(), answer
    assert judge_answer(task, answer), answer
    assert not any(history.errors()), history.errors()
    # one model call a step, after the initial navigation
    assert oracle.calls - calls_before == len(history.history) - 1
    await _assert_no_chromium_left()


async def test_nodone_oracle_never_finishes(offline):
    """oracle-nodone-unguided never says done; oracle-nodone says a failed `done` only where nothing else is allowed
    (the last step), every reply within the schema."""
    tasks, oracle = offline
    history = await run_episode(tasks["offline_booking_rates_11"], oracle, model="oracle-nodone-unguided",
                                max_steps=3)
    assert not history.is_done()
    history = await run_episode(tasks["offline_booking_rates_11"], oracle, model="oracle-nodone", max_steps=3)
    assert history.is_done() and not history.is_successful()
    assert not any(history.errors()), history.errors()
    await _assert_no_chromium_left()
