"""A verdict is tied to the episode it judged (evaluation/verdicts.py), by one rule for `om2w-tui judge`
(`judge_run`), the run's live judge and `report`: only what the run settled is judged, each task's settling episode;
a task run again since (resumed after a run killed under it, retried) is judged again and its new line wins; a
verdict of an episode that is no longer its task's settling one is not counted. Run folders written on disk as a run
leaves them (a folder cut short by a killed run, with no record), judged by the oracle's judge mode over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from openai import AsyncOpenAI

from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.evaluation.judge import judge_run
from om2w_tui.evaluation.judge_files import output_path, read_judged
from om2w_tui.evaluation.judge_settings import Settings
from om2w_tui.evaluation.live_judge import LiveJudge
from om2w_tui.evaluation.report import summarize
from om2w_tui.offline.oracle import OracleServer
from tests.unit.helpers import make_run, record, task_folder, web_png

SETTINGS = Settings(model="oracle-judge", workers=2, retries=1, backoff=0.0)


def client(server: OracleServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=30)


def killed_folder(out: Path, tid: str) -> None:
    """What a run SIGKILLed under an episode leaves: the writer's blank stand-in, cut short, and no record."""
    w = TrajectoryWriter(out / tid, tid, f"task {tid}")
    w.finish("", None, cut_short="killed")


def rerun(out: Path, tid: str, **kw: object) -> dict:
    """The task run again in the folder: a new episode's folder and its record appended."""
    import shutil

    shutil.rmtree(out / tid)
    w = TrajectoryWriter(out / tid, tid, f"task {tid}")
    w.add_plain_step(["SCROLL DOWN"], "look", png=web_png(90, (64, 48)))
    w.finish("It costs $3.", web_png(120, (64, 48)))
    rec = record(tid, answer="It costs $3.", **kw)
    with (out / "results.jsonl").open("a") as f:
        f.write(json.dumps(rec) + "\n")
    return rec


async def judge(out: Path, server: OracleServer, logs: list[str] | None = None):
    c = client(server)
    try:
        return await judge_run(out, SETTINGS, c, log=(logs if logs is not None else []).append)
    finally:
        await c.close()


async def test_judge_judges_what_the_run_settled_and_again_a_task_run_again_since(tmp_path, judge_server):
    out = tmp_path / "run"
    killed_folder(out, "cut")                         # killed with the run: no record
    killed_folder(out, "stopped")                     # stopped under it: a record that does not settle it
    make_run(out, [record("a", started_at=10.0, finished_at=20.0), record("b", started_at=10.0, finished_at=21.0),
                   record("stopped", "killed", error="interrupted", steps=0, started_at=10.0, finished_at=22.0,
                          blank_screenshot=True)])
    path = output_path(out, SETTINGS)
    logs: list[str] = []
    first = await judge(out, judge_server, logs)
    assert first.judged == 2 and first.unsettled == ["cut", "stopped"]          # never a folder still to run
    assert any("not settled yet, not judged: 2 task(s)" in x for x in logs)
    lines = read_judged(path)
    assert sorted(lines) == ["a", "b"]
    assert (lines["a"]["attempt"], lines["a"]["episode_started_at"]) == (1, 10.0)  # the episode it judged

    # the run resumed: both run again, each a new episode of its own (attempt 1 again for the one with no record)
    rerun(out, "cut", started_at=30.0, finished_at=40.0)
    rerun(out, "stopped", attempt=2, started_at=31.0, finished_at=41.0)
    # and a verdict of the killed folder, as `judge` wrote it before verdicts named their episode (judged at 25)
    with path.open("a") as f:
        f.write(json.dumps({"task_id": "cut", "predicted_label": 1, "judge_model": "oracle-judge",
                            "judged_at": 25.0}) + "\n")
    logs.clear()
    second = await judge(out, judge_server, logs)
    assert (second.judged, second.skipped, second.unsettled) == (2, 2, [])
    lines = read_judged(path)                                                  # the later line wins
    assert (lines["cut"]["attempt"], lines["cut"]["episode_started_at"]) == (1, 30.0)
    assert (lines["stopped"]["attempt"], lines["stopped"]["episode_started_at"]) == (2, 31.0)
    assert any("judged again: 1 task(s)" in x for x in logs)
    assert (await judge(out, judge_server)).judged == 0                          # resumes: nothing twice
    report = summarize(out, path)
    assert report.success.judge is not None and report.success.judge.judged == 4
    assert {t: r.outcome for t, r in report.per_task.items()} == {
        t: ("success" if lines[t]["predicted_label"] == 1 else "failure") for t in ("a", "b", "cut", "stopped")}


async def test_report_counts_no_verdict_of_an_episode_that_is_no_longer_its_tasks(tmp_path):
    out = make_run(tmp_path / "run", [
        record("new", started_at=30.0, finished_at=40.0),      # run again since its verdict
        record("old", started_at=10.0, finished_at=20.0),      # judged by a `judge` of before (judged after it)
        record("early", started_at=30.0, finished_at=40.0),    # a line of before, judged before this episode ended
        record("official", started_at=30.0, finished_at=40.0),  # the official evaluator's line: no time, no episode
    ])
    task_folder(out, "gone")                                    # a folder the run never recorded an end of
    path = out / "om2w-tui_WebJudge_Online_Mind2Web_eval_j_score_threshold_3_auto_eval_results.json"
    path.write_text("".join(json.dumps({"task_id": t, "predicted_label": 1, "judge_model": "j", "mode": "webjudge",
                                        **extra}) + "\n" for t, extra in (
        ("new", {"attempt": 1, "episode_started_at": 10.0, "judged_at": 25.0}),
        ("old", {"judged_at": 25.0}), ("early", {"judged_at": 25.0}), ("official", {}), ("gone", {}))))
    s = summarize(out, path)
    outcomes = {t: r.outcome for t, r in s.per_task.items()}
    assert outcomes == {"new": None, "old": "success", "early": None, "official": "success", "gone": None}
    assert s.success.judge is not None and s.success.judge.judged == 2
    assert any("3 verdict(s) not counted" in w for w in s.warnings)


async def test_the_live_judge_and_judge_read_each_others_lines_by_the_one_rule(tmp_path, judge_server):
    out = make_run(tmp_path / "run", [record("a", started_at=10.0, finished_at=20.0),
                                      record("b", started_at=10.0, finished_at=20.0)])
    await judge(out, judge_server)                                # `judge` judged both
    rerun(out, "b", started_at=30.0, finished_at=40.0)            # b resumed after a kill: attempt 1 again
    c = client(judge_server)
    live = LiveJudge(out, SETTINGS, c)
    await live.start()
    assert [k[0] for k in live._queued] == ["b"]                  # a's line names its episode; b's is of another
    assert await live.drain(lambda: False)
    await live.close()
    path = output_path(out, SETTINGS)
    assert read_judged(path)["b"]["episode_started_at"] == 30.0
    assert (await judge(out, judge_server)).judged == 0            # and `judge` takes the live judge's line
