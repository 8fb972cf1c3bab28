"""Judging as the run goes: the background judge (a sink of the run's events) against the oracle's judge mode on
127.0.0.1 (a real OpenAI-compatible HTTP server) on run folders built by hand; every settled episode judged once
into the file `om2w-tui judge` writes, in the order they end, never twice on resume nor by two shards of one
folder, a retried one again; its failures cost neither the run nor the other tasks; the run it wraps stops it. And
the header's reading of that file as it grows. The same with a real run and Chromium is tests/e2e/test_live_judge.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from openai import AsyncOpenAI

from om2w_tui.engine.events import EpisodeFinished, Log
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.judge_files import output_path, read_judged
from om2w_tui.evaluation.judge_settings import Settings
from om2w_tui.evaluation.live_judge import JudgedRun, LaneJudges, LiveJudge, VerdictTail
from om2w_tui.offline.oracle import OracleServer
from om2w_tui.protocol.faults import FaultKind
from om2w_tui.run_folder import RunFolder
from tests.fakes import FakeRun

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def folder(out: Path, tid: str, shots: int = 2) -> None:
    (out / tid / "trajectory").mkdir(parents=True, exist_ok=True)
    (out / tid / "result.json").write_text(json.dumps({
        "task_id": tid, "task": f"Find the price of item {tid}.", "final_result_response": "$3",
        "action_history": ["SCROLL DOWN"] * (shots - 1), "thoughts": ["look"] * (shots - 1)}))
    for i in range(shots):
        (out / tid / "trajectory" / f"{i}_full_screenshot.png").write_bytes(PNG)


def record(tid: str, status: str = "done", attempt: int = 1, **kw: object) -> EpisodeRecord:
    return EpisodeRecord(task_id=tid, status=status, attempt=attempt, finished_at=float(attempt), **kw)  # type: ignore[arg-type]


def finished(rec: EpisodeRecord, requeued: bool = False) -> EpisodeFinished:
    return EpisodeFinished(0, rec, requeued)


class Logs:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, event: object) -> None:
        if isinstance(event, Log):
            self.lines.append(f"{event.level}: {event.message}")


def live(out: Path, server: OracleServer, model: str = "oracle-judge", workers: int = 2) -> tuple[LiveJudge, Logs]:
    logs = Logs()
    client = AsyncOpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=30)
    s = Settings(model=model, workers=workers, retries=1, backoff=0.0)
    return LiveJudge(out, s, client, logs), logs


async def test_each_settled_episode_is_judged_once_into_the_judges_file(tmp_path, judge_server):
    out = tmp_path / "run"
    for t in ("a", "b", "c", "d"):
        folder(out, t)
    judge, logs = live(out, judge_server)
    await judge.start()
    calls = judge_server.calls
    judge.handle(finished(record("a")))
    judge.handle(finished(record("b", "timeout", error="timeout")))
    judge.handle(finished(record("c", "killed", error="interrupted")))   # stopped under it: runs again, not judged
    judge.handle(finished(record("d", "error", error="browser crashed", error_kind=FaultKind.INFRA), requeued=True))
    judge.handle(finished(record("a")))                                  # the same attempt again: once
    assert await judge.drain(lambda: False)
    await judge.close()
    lines = read_judged(output_path(out, judge.s))
    assert sorted(lines) == ["a", "b"] and all(r["attempt"] == 1 for r in lines.values())
    assert lines["a"]["judge_model"] == "oracle-judge" and lines["a"]["parsing"] == "official"
    assert judge.counts.judged == 2 and judge_server.calls - calls == 2 * (1 + 2 + 1)   # key points, 2 shots, verdict
    assert any("judged 2 episode(s) during the run" in x for x in logs.lines)


async def test_a_resumed_run_judges_what_was_left_and_nothing_twice(tmp_path, judge_server):
    out = tmp_path / "run"
    for t in ("a", "b", "c"):
        folder(out, t)
    (out / "results.jsonl").write_text("".join(json.dumps(record(t).to_json()) + "\n" for t in ("a", "b", "c")))
    # the last run judged a, then stopped before it reached b and c
    first, _ = live(out, judge_server)
    await first.start()
    assert first.counts.skipped == 0 and first.queue.qsize() + first._busy() == 3
    await first.close()
    path = output_path(out, first.s)
    path.write_text(json.dumps({"task_id": "a", "predicted_label": 1, "attempt": 1, "judge_model": "oracle-judge",
                                "parsing": "official"})
                    + "\n")
    calls = judge_server.calls
    second, logs = live(out, judge_server)
    await second.start()
    assert second.counts.skipped == 1 and second.queue.qsize() + second._busy() == 2
    assert any("2 settled before, not judged yet, first; 1 already judged" in x for x in logs.lines)
    assert await second.drain(lambda: False)
    await second.close()
    assert sorted(read_judged(path)) == ["a", "b", "c"]
    assert judge_server.calls - calls == 2 * 4                          # only the two left
    assert len(path.read_text().splitlines()) == 3                        # never a task twice
    third, _ = live(out, judge_server)
    await third.start()
    assert third.queue.qsize() == 0 and third._busy() == 0
    third.handle(finished(record("b", attempt=2)))                        # b retried in this run: judged again
    assert await third.drain(lambda: False)
    await third.close()
    assert read_judged(path)["b"]["attempt"] == 2 and len(path.read_text().splitlines()) == 4


async def _until(cond, poll: float = 0.05) -> None:
    while not cond():
        await asyncio.sleep(poll)


async def test_a_failing_endpoint_costs_the_task_not_the_run(tmp_path, judge_server):
    out = tmp_path / "run"
    folder(out, "a")
    judge, logs = live(out, judge_server, model="oracle-500")
    await judge.start()
    judge.handle(finished(record("a")))
    assert await judge.drain(lambda: False)
    await judge.close()
    assert judge.counts.failed == 1 and not output_path(out, judge.s).exists()
    assert any(x.startswith("warning: judge: a: not judged") for x in logs.lines)
    assert any("om2w-tui judge" in x for x in logs.lines)                 # how to judge it later


async def test_an_unknown_judge_model_stops_the_judge_not_the_run(tmp_path, judge_server):
    out = tmp_path / "run"
    for t in ("a", "b"):
        folder(out, t)
    judge, logs = live(out, judge_server, model="no-such-model", workers=1)
    await judge.start()
    judge.handle(finished(record("a")))
    judge.handle(finished(record("b")))
    assert await judge.drain(lambda: False)
    await judge.close()
    assert "does not serve --judge-model no-such-model" in judge.fatal
    assert any(x.startswith("error: judge: the judge stops") for x in logs.lines)
    judge.handle(finished(record("c")))                                   # nothing more is queued
    assert judge.queue.qsize() == 0


async def test_the_judged_run_waits_for_its_judge_until_it_is_stopped(tmp_path, judge_server):
    out = tmp_path / "run"
    for t in ("a", "b", "c", "d", "e", "f"):
        folder(out, t, shots=4)
    judge, logs = live(out, judge_server, workers=1)
    await judge.start()
    for t in "abcdef":
        judge.handle(finished(record(t)))
    inner = FakeRun()                          # the scheduler: its run ends at once
    run = JudgedRun(inner, judge)               # type: ignore[arg-type]
    going = asyncio.ensure_future(run.run())
    await asyncio.wait_for(_until(lambda: judge.counts.judged >= 1), 30)
    assert not going.done()                    # the scheduler is done; the judge is not
    run.stop()                                 # the console's quit (or Ctrl-C, or ctl stop)
    assert await asyncio.wait_for(going, 10) == "stats" and inner.commands == [("stop",)]
    await judge.close()
    left = 6 - judge.counts.judged
    assert left > 0 and any(f"stopped judging; {left} episode(s)" in x for x in logs.lines)


def test_the_header_reads_the_judge_file_as_it_grows(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    tail = VerdictTail(out, every_s=0.0, background=False)
    assert tail.poll(0.0) == (0, 0)
    path = out / "om2w-tui_WebJudge_Online_Mind2Web_eval_m_score_threshold_3_auto_eval_results.json"
    path.write_text(json.dumps({"task_id": "a", "predicted_label": 1}) + "\n"
                    + json.dumps({"task_id": "b", "predicted_label": 0}) + "\n" + '{"task_id": "c", "pre')
    assert tail.poll(1.0) == (1, 2)                                        # the torn last line waits
    with open(path, "a") as f:
        f.write('dicted_label": 1}\n' + json.dumps({"task_id": "b", "predicted_label": 1}) + "\n")
    assert tail.poll(2.0) == (3, 3)                                        # b judged again: its last line counts
    offset = tail._offset
    assert tail.poll(3.0) == (3, 3) and tail._offset == offset             # nothing new: nothing read
    path.write_text(json.dumps({"task_id": "z", "predicted_label": 0}) + "\n")   # rewritten from scratch
    assert tail.poll(4.0) == (0, 1)


def test_the_headers_judge_rate_counts_each_tasks_verdict_of_its_settling_episode_as_report_does(tmp_path):
    """One verdict per task, of the episode that settled it: a verdict of an attempt run again since, or of a task
    now running again, does not count; a task judged twice counts once (its last line); the header's rate is the
    report's."""
    from om2w_tui.evaluation.report import summarize

    out = tmp_path / "run"
    for t in "abc":
        folder(out, t)
    recs = [record("a", started_at=0.5), record("a", attempt=2, started_at=1.5),   # a: run again, not judged yet
            record("b", started_at=0.5),
            record("c", started_at=0.5), record("c", "killed", attempt=2, started_at=1.5, error="requeued")]
    (out / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in recs))
    path = out / "om2w-tui_WebJudge_Online_Mind2Web_eval_m_score_threshold_3_auto_eval_results.json"
    path.write_text("".join(json.dumps({"task_id": t, "predicted_label": v, "attempt": 1, "episode_started_at": 0.5})
                            + "\n" for t, v in (("a", 1), ("b", 0), ("c", 1), ("b", 1))))
    tail = VerdictTail(out, every_s=0.0, background=False)
    overall = summarize(out).success.overall
    assert (overall.successes, overall.tasks) == (1, 1)          # b only: a's verdict is of attempt 1, c runs again
    assert tail.poll(0.0) == (1, 1)
    with open(path, "a") as f:                                    # a's attempt 2 judged: it counts now
        f.write(json.dumps({"task_id": "a", "predicted_label": 0, "attempt": 2, "episode_started_at": 1.5}) + "\n")
    overall = summarize(out).success.overall
    assert tail.poll(1.0) == (overall.successes, overall.tasks) == (1, 2)
    with open(out / "results.jsonl", "a") as f:                   # b run again: its verdict no longer counts
        f.write(json.dumps(record("b", attempt=3, started_at=2.5).to_json()) + "\n")
    overall = summarize(out).success.overall
    assert tail.poll(2.0) == (overall.successes, overall.tasks) == (0, 1)

    # the console's tail reads the records again in a thread: the poll that starts the read says the last count, a
    # poll after the read ended counts with it (a long run's log never holds the drawing)
    console = VerdictTail(out, every_s=0.0)
    assert console.poll(3.0) == (0, 1)                             # the first read at once
    with open(out / "results.jsonl", "a") as f:                   # a run again: its attempt 2 verdict no longer counts
        f.write(json.dumps(record("a", attempt=3, started_at=3.5).to_json()) + "\n")
    assert console.poll(4.0) == (0, 1) and console._reading is not None   # the read under way; the count as it was
    console.wait()
    assert console.poll(5.0) == (summarize(out).success.overall.successes, summarize(out).success.overall.tasks)
    assert console.poll(5.0) == (0, 0)


def test_the_judges_settings_are_checked_and_its_key_never_recorded(tmp_path, monkeypatch):
    from om2w_tui.engine.config import RunConfig
    from om2w_tui.engine.launch import run_checks

    monkeypatch.setenv("OM2W_TEST_JUDGE_KEY", "sk-judge-secret")
    cfg = RunConfig(out=tmp_path / "run", bench="offline", model="oracle", judge_url="http://user:pw@127.0.0.1:9/v1",
                    judge_model="m", judge_api_key_env="OM2W_TEST_JUDGE_KEY")
    recorded = json.dumps(cfg.to_json())
    assert "pw@" not in recorded and "sk-judge-secret" not in recorded and cfg.judge_api_key() == "sk-judge-secret"
    _, checks = run_checks(RunConfig(out=tmp_path / "run", bench="offline", model="oracle", judge_model="m"),
                           check_model=False)
    settings = dict((name, detail) for name, _, detail in checks)["settings"]
    assert settings == "--judge-model needs --judge-url too (the judge's endpoint and its served model)"


async def test_a_verdict_of_an_earlier_attempt_is_judged_again_at_the_start(tmp_path, judge_server):
    out = tmp_path / "run"
    for t in ("a", "b", "c"):
        folder(out, t)
    # a: judged by `om2w-tui judge` (no attempt known); b: attempt 1 judged, then retried and its attempt 2 never
    # judged (the run stopped); c: attempt 2 judged
    (out / "results.jsonl").write_text(json.dumps(record("a").to_json()) + "\n"
                                       + json.dumps(record("b", attempt=2).to_json()) + "\n"
                                       + json.dumps(record("c", attempt=2).to_json()) + "\n")
    judge, _ = live(out, judge_server)
    path = output_path(out, judge.s)
    path.write_text("".join(json.dumps({"task_id": t, "predicted_label": 0, **extra}) + "\n"
                            for t, extra in (("a", {}), ("b", {"attempt": 1}), ("c", {"attempt": 2}))))
    await judge.start()
    assert [key[:2] for key in judge._queued] == [("b", 2)]   # (task, attempt, start)
    assert await judge.drain(lambda: False)
    await judge.close()
    assert read_judged(path)["b"]["attempt"] == 2 and len(path.read_text().splitlines()) == 4


async def test_a_campaigns_judge_judges_each_lane_into_its_own_folder_with_one_caller_and_resumes_per_lane(
        tmp_path, judge_server):
    lanes = {"base": tmp_path / "study" / "base", "agent": tmp_path / "study" / "agent"}
    for out in lanes.values():
        for t in ("a", "b"):
            folder(out, t)
    # agent settled a and b before: a judged then, b not (the campaign was stopped before its judge caught up)
    (lanes["agent"] / "results.jsonl").write_text("".join(json.dumps(record(t).to_json()) + "\n" for t in "ab"))
    logs = Logs()
    client = AsyncOpenAI(base_url=judge_server.url, api_key="EMPTY", max_retries=0, timeout=30)
    s = Settings(model="oracle-judge", workers=2, retries=1, backoff=0.0)
    path = {name: output_path(out, s) for name, out in lanes.items()}
    path["agent"].write_text(json.dumps({"task_id": "a", "predicted_label": 1, "attempt": 1}) + "\n")
    judges = LaneJudges(list(lanes.items()), s, client, logs)
    assert judges.lanes["base"]._caller is judges.lanes["agent"]._caller   # --judge-workers over every lane
    await judges.start()
    assert [k[:2] for k in judges.lanes["agent"]._queued] == [("b", 1)] and not judges.lanes["base"]._queued
    judges.handle(EpisodeFinished(0, record("a"), lane="base"))
    judges.handle(EpisodeFinished(1, record("b"), lane="base"))
    judges.handle(EpisodeFinished(0, record("a"), lane="agent"))       # judged before: not again
    judges.handle(EpisodeFinished(0, record("a"), lane="other"))       # no lane of this judge's
    assert await judges.drain(lambda: False)
    await judges.close()
    assert sorted(read_judged(path["base"])) == ["a", "b"] and sorted(read_judged(path["agent"])) == ["a", "b"]
    assert len(path["agent"].read_text().splitlines()) == 2
    assert any(x.startswith("info: judge [agent]: judging each episode") and "1 settled before" in x
               for x in logs.lines)
    assert any(x.startswith("info: judge [base]: judged 2 episode(s)") for x in logs.lines)


async def test_each_shards_judge_catches_up_on_its_own_share_only_so_each_task_is_judged_once(tmp_path, judge_server):
    # two shards of one run (shard 0: a and b; shard 1: c and d) and of a campaign (each lane alike) settled their
    # tasks in one folder, then were stopped before their judges caught up; each shard starts again with its judge
    shares = {"0/2": ["a", "b"], "1/2": ["c", "d"]}
    run, study = tmp_path / "run", tmp_path / "study"
    lanes = [("base", study / "base"), ("agent", study / "agent")]
    for out in (run, *(out for _, out in lanes)):
        for shard, ids in shares.items():
            for t in ids:
                folder(out, t)
            RunFolder(out, shard).results.write_text("".join(json.dumps(record(t).to_json()) + "\n" for t in ids))
    client = AsyncOpenAI(base_url=judge_server.url, api_key="EMPTY", max_retries=0, timeout=30)
    s = Settings(model="oracle-judge", workers=2, retries=1, backoff=0.0)
    calls = judge_server.calls
    judges: list[LiveJudge | LaneJudges] = [
        *(LiveJudge(run, s, client, selection=ids) for ids in shares.values()),
        *(LaneJudges(lanes, s, client, selection=ids) for ids in shares.values())]
    await asyncio.gather(*(judge.start() for judge in judges))          # at once, as the shards' processes start
    assert all(await asyncio.gather(*(judge.drain(lambda: False) for judge in judges)))
    for judge in judges:
        await judge.close()
    for out in (run, *(out for _, out in lanes)):
        lines = output_path(out, s).read_text().splitlines()
        assert sorted(json.loads(x)["task_id"] for x in lines) == ["a", "b", "c", "d"], out   # one line each
    assert judge_server.calls - calls == 3 * 4 * 4                       # each task of each folder judged once


@pytest.mark.parametrize(("mode", "file_mode", "success"), [
    ("webjudge", "WebJudge_Online_Mind2Web_eval", False),           # the answer is not shown: the oracle sees no pixels
    ("webjudge-answer", "WebJudge_Online_Mind2Web_eval_answer", True),
    ("webvoyager", "WebVoyager_eval", True)])
async def test_a_runs_judge_judges_by_its_judge_mode_into_that_modes_file(tmp_path, judge_server, mode, file_mode,
                                                                        success):
    """--judge-mode picks the live judge's method, and so its file (the one `om2w-tui judge --mode ...` writes, the
    one the console and the comparison read): an offline task answered rightly, its answer seen by the judge only
    where the method shows it."""
    from om2w_tui.engine.config import RunConfig
    from om2w_tui.evaluation.live_judge import LIVE_JUDGE, live_judge_file

    out = tmp_path / "run"
    folder(out, "offline_shop_search_01")
    result = json.loads((out / "offline_shop_search_01" / "result.json").read_text())
    result.update(task='Search Northwind Market for "kettle" and tell me the price of the Copper Pour-Over Kettle.',
                  final_result_response="The Copper Pour-Over Kettle costs $42.50.")
    (out / "offline_shop_search_01" / "result.json").write_text(json.dumps(result))
    cfg = RunConfig(out=out, bench="offline", model="oracle", judge_url=judge_server.url, judge_model="oracle-judge",
                    judge_mode=mode)
    judge = LIVE_JUDGE.open(cfg, lambda e: None, ["offline_shop_search_01"])
    assert judge is not None and live_judge_file(cfg) == judge.path.name and file_mode in judge.path.name
    await judge.start()
    judge.handle(finished(record("offline_shop_search_01")))
    assert await judge.drain(lambda: False)
    await judge.close()
    assert read_judged(judge.path)["offline_shop_search_01"]["predicted_label"] == int(success)
