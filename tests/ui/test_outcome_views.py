"""What the views show of how an episode ended, driven with Pilot on a run's folder written by the real trajectory
writer: an answer only where the agent gave one ("no answer (out of steps)", "no answer (killed)" otherwise, also
for a folder and record written before that rule), `out_of_steps` counted and shown as a status, and each
screenshot beside its own step, however alike the steps' thoughts are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.engine.events import EpisodeFinished
from om2w_tui.frontends.console.screens.episode import EpisodeScreen
from om2w_tui.frontends.console.widgets.panels import EpisodesTable
from om2w_tui.frontends.console.widgets.report_tables import FailuresTable

from . import recorded as R
from .pilots import build, feed, labeller, report_app, row_keys, screen_of, settle_label, settle_report, text

LOOPING = "offline_longpage_loop_01"     # four scroll steps with one thought, then out of steps
KILLED = "offline_shop_killed_02"        # killed; written before answers were only the agent's
RAN_OUT = "offline_wiki_ran_out_03"      # out of steps, written before: `done` with agent_done false
SCROLLS = 4
THOUGHT = "Scroll down to find the opening hours."
LEFTOVER = 'Clicked button "Apply filters" id=apply-filters'


def shot(i: int) -> bytes:
    return R.png(32, 18, (250, 250, 245), (30, 20 + 20 * i, 160))


def record(task_id: str, status: str, answer: str, steps: int, finished: float) -> dict[str, Any]:
    """A record as the run writes it (an older run's where the answer is not "")."""
    return {"task_id": task_id, "arm": "base", "website": "http://127.0.0.1:8000/", "level": "easy", "model": "m",
            "status": status, "error": "killed by user" if status == "killed" else None, "error_kind": None,
            "steps": steps, "actions": steps, "screenshots": steps + 1, "answer": answer, "agent_done": False,
            "duration_s": 30.0, "started_at": finished - 30, "finished_at": finished, "attempt": 1, "slot": 0}


def looping_run(tmp_path: Path) -> Path:
    """A run of two tasks: one looped on scrolls until its steps ran out (written by the writer as the worker does),
    one killed, its folder and record as written before (the last action's output as the answer)."""
    out = tmp_path / "run"
    out.mkdir()
    w = TrajectoryWriter(out / LOOPING, LOOPING, "When does the library open on Sundays?")
    for i in range(SCROLLS):
        w.add_plain_step(["SCROLL DOWN"], THOUGHT, shot(i), "http://127.0.0.1:8000/long")
    w.finish("", shot(9), cut_short="out_of_steps")
    folder = out / KILLED
    (folder / "trajectory").mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({
        "task_id": KILLED, "task": "Filter the shop by price.", "final_result_response": LEFTOVER,
        "action_history": ['<button id="apply-filters"> Apply filters -> CLICK'], "thoughts": ["apply"],
        "cut_short": "killed"}))
    for i in range(2):
        (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(shot(i))
    old = TrajectoryWriter(out / RAN_OUT, RAN_OUT, "Find the article's first sentence.")
    old.add_plain_step(["SCROLL DOWN"], "read on", shot(0))
    old.finish(LEFTOVER, shot(1))       # as the runner wrote it before: the last action's output, not cut short
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        record(LOOPING, "out_of_steps", "", SCROLLS, R.T0 - 100), record(KILLED, "killed", LEFTOVER, 1, R.T0 - 50),
        record(RAN_OUT, "done", LEFTOVER, 1, R.T0 - 20))))
    (out / "run.json").write_text(json.dumps({"config": {"arm": "base", "model": "m", "bench": "offline"}}))
    return out


async def test_the_episode_view_shows_each_screenshot_beside_its_own_step_and_why_there_is_no_answer(tmp_path):
    out = looping_run(tmp_path)
    app = report_app(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle_report(pilot)
        statuses = str(app.screen.query_one("#report-summary").render())
        assert "out_of_steps" in statuses
        failures = app.screen.query_one(FailuresTable)
        rows = {k: [str(c) for c in failures.get_row(k)] for k in row_keys(failures)}
        assert rows[LOOPING][2] == "out_of_steps" and rows[LOOPING][5] == "no answer (out of steps)"
        assert rows[KILLED][5] == "no answer (killed)"          # not the last action's output of an older run
        assert rows[LOOPING][3] == "loop" and rows[KILLED][3] == "stopped"     # why: the failure class

        for task, words in ((LOOPING, "no answer (out of steps)"), (KILLED, "no answer (killed)")):
            app.open_episode(task, next(f.record for f in app.screen.data.failures if f.task_id == task))
            await settle_report(pilot)
            view = app.screen
            assert isinstance(view, EpisodeScreen) and view.task_id == task
            answer = str(view.query_one("#ep-answer").render())
            assert words in answer and LEFTOVER not in answer
            if task == LOOPING:
                assert len(view.files.shots) == SCROLLS + 1
                for i in range(SCROLLS):
                    current = str(view.query_one("#ep-current").render())
                    assert current.count("action: SCROLL DOWN") == 1, (i, current)
                    assert f"Step {i + 1} of {SCROLLS + 1}" in current and "no action recorded" not in current
                    await pilot.press("right")
                    await settle_report(pilot)
                assert "The final state" in str(view.query_one("#ep-current").render())
            await pilot.press("escape")
            await pilot.pause()
        app.open_episode(RAN_OUT, app.screen.data.latest[RAN_OUT])
        await settle_report(pilot)
        answer = str(app.screen.query_one("#ep-answer").render())
        assert "no answer" in answer and LEFTOVER not in answer


async def test_the_label_screen_shows_each_screenshot_beside_its_own_step_and_why_there_is_no_answer(tmp_path):
    out = looping_run(tmp_path)
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle_label(pilot)
        screen = screen_of(app)
        assert screen.session.current == LOOPING      # the tasks in order
        await pilot.press("j")
        await settle_label(pilot)
        assert screen.session.current == KILLED
        assert "no answer (killed)" in text(screen, "#label-answer") and LEFTOVER not in text(screen, "#label-answer")
        await pilot.press("j")
        await settle_label(pilot)
        assert screen.session.current == RAN_OUT
        assert "no answer" in text(screen, "#label-answer") and LEFTOVER not in text(screen, "#label-answer")
        await pilot.press("k", "k")
        await settle_label(pilot)
        assert "no answer (out of steps)" in text(screen, "#label-answer")
        assert "out_of_steps" in text(screen, "#label-task")
        for i in range(SCROLLS):
            marked = [line for line in text(screen, "#label-actions").splitlines() if line.startswith("▶")]
            assert marked == [f"▶ {i + 1}. SCROLL DOWN"], (i, text(screen, "#label-actions"))
            await pilot.press("right")
            await settle_label(pilot)


async def test_the_episodes_table_shows_why_there_is_no_answer_never_the_error(tmp_path):
    """The dashboard's answer column is the agent's answer or `no answer (why)`, as every other view: a killed
    episode's `killed by user` and a crash's message stay in the record, not in the answer column."""
    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        for slot, rec in enumerate((R.record(KILLED, R.SHOP, "killed", error="killed by user", correct=False),
                                    R.record(RAN_OUT, R.WIKI, "error", error="Chromium crashed", correct=False))):
            app.sink.handle(EpisodeFinished(slot, rec))
        await pilot.pause()
        app.screen.render_all()
        await pilot.pause()
        table = app.screen.query_one(EpisodesTable)
        answers = {r.task_id: str(table.get_row(k)[-1]) for k, r in table.records.items()}
        assert answers[KILLED] == "no answer (killed)" and answers[RAN_OUT] == "no answer (error)"
        assert answers["offline_shop_search_01"] == "The Copper Pour-Over Kettle costs $42.50."
