"""Judging and reporting finished runs.

The first part needs no browser: run folders built by hand, judged by the oracle's judge mode (`oracle-judge`)
served on 127.0.0.1. The second part (marked e2e) runs the real command line for every kind of episode (done,
timeout, killed, error, blocked), checks that the official evaluator would read each folder as written, then
judges and reports them."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import pytest

from om2w_tui.benchmarks.conformance import check_run
from om2w_tui.cli.main import main as cli_main
from om2w_tui.evaluation.compare import compare
from om2w_tui.evaluation.judge import Caller, Usage, select_kept
from om2w_tui.evaluation.judge_files import output_path, read_judged
from om2w_tui.evaluation.judge_replies import parse_score, parse_status, parse_webvoyager
from om2w_tui.evaluation.judge_settings import Settings
from om2w_tui.evaluation.report import summarize
from om2w_tui.evaluation.summary import Rate
from om2w_tui.offline.oracle import OracleServer
from tests.fakes import Reply, Request, StubServer

from .helpers import PNG, RIGHT, TEMPLATES, WRONG, cli, popen, records, steps_on_disk, write_task


@pytest.fixture
def run_dir(tmp_path) -> Path:
    out = tmp_path / "run"
    write_task(out, RIGHT, "A Deluxe room costs $189.00 per night.", shots=4)
    write_task(out, WRONG, "I could not find it.", shots=3)
    return out


def judge(out: Path, server: OracleServer, *extra: str, model: str = "oracle-judge") -> int:
    return cli_main(["judge", str(out), "--judge-model", model, "--judge-url", server.url, "--backoff", "0", *extra])


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


# ============================================================================================== no browser


def test_reply_parsing():
    assert parse_status("Thoughts: fine.\nStatus: **Success**") == 1
    assert parse_status("I think it worked.") == 0
    assert parse_score("Reasoning: x\nScore: 4") == 4 and parse_score("Score: 9") == 0 and parse_score("") == 0
    assert parse_webvoyager("Verdict: SUCCESS") == 1 and parse_webvoyager("Verdict: NOT SUCCESS") == 0
    assert select_kept([5, 1, 3, 2, 4], 3) == [0, 2, 4]
    assert select_kept([3] * 60 + [5], 3) == list(range(50))              # the first 50 kept, as the official
    assert len(select_kept([4] * 80, 3)) == 50


def test_the_output_file_is_a_file_in_the_run_folder_whatever_the_model_name(tmp_path):
    path = output_path(tmp_path, Settings(model="openai/o4-mini", score_threshold=3))
    assert path.parent == tmp_path
    assert path.name == ("om2w-tui_WebJudge_Online_Mind2Web_eval_openai-o4-mini_score_threshold_3_"
                         "auto_eval_results.json")
    assert output_path(tmp_path, Settings(model="../x", mode="webvoyager")).parent == tmp_path


def test_webjudge_scores_screenshots_keeps_the_relevant_ones_and_does_not_show_the_answer(run_dir, judge_server,
                                                                                          capsys):
    assert judge(run_dir, judge_server) == 0
    path = run_dir / "om2w-tui_WebJudge_Online_Mind2Web_eval_oracle-judge_score_threshold_3_auto_eval_results.json"
    got = {r["task_id"]: r for r in lines(path)}
    right = got[RIGHT]
    assert right["key_points"].startswith("1. What is the nightly rate")
    assert [x["Score"] for x in right["image_judge_record"]] == [2, 2, 4, 5]
    assert right["kept_screenshots"] == ["2_full_screenshot.png", "3_full_screenshot.png"]
    assert "189" not in right["input_text"]
    assert "Action history:\n1. <a id=\"nav\"> Next -> CLICK" in right["input_text"]
    assert right["predicted_label"] == 0 == got[WRONG]["predicted_label"]    # the oracle sees no pixels
    assert right["usage"]["calls"] == 1 + 4 + 1 and right["usage"]["prompt_tokens"] > 0
    assert check_run(run_dir) == []                                        # a file beside the tasks, never a folder
    out = capsys.readouterr().out
    assert "success: 0 of 2 task folders" in out


def test_with_the_answer_shown_the_verdict_follows_the_reference_answers(run_dir, judge_server):
    assert judge(run_dir, judge_server, "--include-answer", "--score-threshold", "5") == 0
    name = "om2w-tui_WebJudge_Online_Mind2Web_eval_answer_oracle-judge_score_threshold_5_auto_eval_results.json"
    got = {r["task_id"]: r for r in lines(run_dir / name)}
    assert (got[RIGHT]["predicted_label"], got[WRONG]["predicted_label"]) == (1, 0)
    assert got[RIGHT]["kept_screenshots"] == ["3_full_screenshot.png"]
    assert "Status: success" in got[RIGHT]["response"] and got[RIGHT]["mode"] == "webjudge-answer"
    s = summarize(run_dir)
    assert s.success.source == "judge" and s.success.overall is not None and s.success.overall.successes == 1


def test_webvoyager_mode_is_one_call_with_the_answer_and_the_last_screenshots(run_dir, judge_server):
    before = judge_server.calls
    assert judge(run_dir, judge_server, "--mode", "webvoyager", "--last-screenshots", "2") == 0
    assert judge_server.calls - before == 2
    name = "om2w-tui_WebVoyager_eval_oracle-judge_score_threshold_3_auto_eval_results.json"
    got = {r["task_id"]: r for r in lines(run_dir / name)}
    assert (got[RIGHT]["predicted_label"], got[WRONG]["predicted_label"]) == (1, 0)
    assert "The last 2 screenshots (of 4) follow." in got[RIGHT]["input_text"]


def test_judging_resumes_and_a_torn_line_is_judged_again(run_dir, judge_server, capsys):
    assert judge(run_dir, judge_server, "--mode", "webvoyager") == 0
    path = run_dir / "om2w-tui_WebVoyager_eval_oracle-judge_score_threshold_3_auto_eval_results.json"
    first = path.read_bytes()
    calls = judge_server.calls
    assert judge(run_dir, judge_server, "--mode", "webvoyager") == 0
    assert judge_server.calls == calls and path.read_bytes() == first
    assert "resuming: 2 task(s) already judged" in capsys.readouterr().out
    kept, torn = first.splitlines(keepends=True)
    path.write_bytes(kept + torn[:40])                                     # a crash in the middle of a line
    assert judge(run_dir, judge_server, "--mode", "webvoyager") == 0
    assert judge_server.calls == calls + 1
    assert sorted(read_judged(path)) == sorted([RIGHT, WRONG])


def test_server_errors_are_retried(run_dir, judge_server):
    assert judge(run_dir, judge_server, "--mode", "webvoyager", model="oracle-judge-flaky") == 0
    got = read_judged(run_dir / "om2w-tui_WebVoyager_eval_oracle-judge-flaky_score_threshold_3_"
                                "auto_eval_results.json")
    assert got[RIGHT]["predicted_label"] == 1


def test_a_server_that_keeps_failing_costs_the_task_not_the_file(run_dir, judge_server, capsys):
    assert judge(run_dir, judge_server, "--retries", "1", model="oracle-500") == 1
    out, err = capsys.readouterr()
    assert "not judged: gave up after 2 tries: InternalServerError" in out and "run the same command again" in err
    assert not (run_dir / ("om2w-tui_WebJudge_Online_Mind2Web_eval_oracle-500_score_threshold_3_"
                           "auto_eval_results.json")).exists()


def test_an_unknown_model_stops_the_run_at_once(run_dir, judge_server, capsys):
    assert judge(run_dir, judge_server, model="gpt-nope") == 2
    assert "--judge-model gpt-nope: not served by" in capsys.readouterr().err
    assert not list(run_dir.glob("*auto_eval_results.json"))


def test_a_folder_the_evaluator_cannot_read_is_reported_not_judged(run_dir, judge_server, capsys):
    (run_dir / "logs").mkdir()
    assert judge(run_dir, judge_server, "--mode", "webvoyager") == 1
    out = capsys.readouterr().out
    assert "cannot judge: logs: no result.json" in out and "success: 1 of 3 task folders" in out


def test_a_v2_folder_is_judged_from_its_steps(tmp_path, judge_server):
    out = tmp_path / "v2"
    folder = out / RIGHT
    (folder / "trajectory").mkdir(parents=True)
    steps = []
    for i, action in enumerate(["link -> CLICK", "TASK_COMPLETE -> ANSWER: $189.00 a night"]):
        (folder / "trajectory" / f"{i:04d}.png").write_bytes(PNG)
        steps.append({"step": i, "screenshot": f"{i:04d}.png", "url": "", "action": action, "thought": None})
    (folder / "result.json").write_text(json.dumps({
        "schema_version": "online-mind2web-v2", "task_id": RIGHT, "task": TEMPLATES[RIGHT]["confirmed_task"],
        "agent_final_answer": "$189.00 a night", "reference_length": 3, "action_history": steps}))
    assert check_run(out) == []
    assert judge(out, judge_server) == 0 and judge(out, judge_server, "--include-answer") == 0
    plain = read_judged(out / ("om2w-tui_WebJudge_Online_Mind2Web_eval_oracle-judge_score_threshold_3_"
                               "auto_eval_results.json"))[RIGHT]
    shown = read_judged(out / ("om2w-tui_WebJudge_Online_Mind2Web_eval_answer_oracle-judge_score_threshold_3_"
                               "auto_eval_results.json"))[RIGHT]
    assert plain["judged_actions"] == ["link -> CLICK"] and plain["schema"] == "v2"   # the answer step is dropped
    assert (plain["predicted_label"], shown["predicted_label"]) == (0, 1)
    assert plain["image_judge_screenshots"] == ["0000.png", "0001.png"]


def test_missing_folder_is_a_usage_error(tmp_path, judge_server, capsys):
    assert judge(tmp_path / "nope", judge_server) == 2


async def test_calls_are_bounded_by_workers():
    in_flight, peak, release = 0, 0, asyncio.Event()

    class Completions:
        async def create(self, **kw):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await release.wait()
            in_flight -= 1

            class R:
                usage = None
                choices = [type("C", (), {"message": type("M", (), {"content": "ok"})()})()]
            return R()

    client = type("Client", (), {"chat": type("Chat", (), {"completions": Completions()})()})()
    call = Caller(client, Settings(model="m", workers=2))
    jobs = [asyncio.ensure_future(call([], Usage())) for _ in range(6)]
    for _ in range(50):
        await asyncio.sleep(0)
    assert in_flight == 2
    release.set()
    assert await asyncio.gather(*jobs) == ["ok"] * 6 and peak == 2


# ============================================================================================== real runs


WALL = ("<html><head><title>Just a moment...</title></head><body>"
        "<div id='cf-challenge-running'>Checking your browser</div></body></html>")


@pytest.fixture
def wall(stub_server):
    return stub_server(default=Reply(200, WALL)).url


def offline(*args: str) -> list[str]:
    return ["run", "--no-ui", "--bench", "offline", "--pace-cooldown", "0", *args]


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_every_kind_of_episode_is_read_by_the_official_evaluator_then_judged_and_reported(tmp_path, wall,
                                                                                        judge_server):
    runs = {k: tmp_path / k for k in ("done", "timeout", "killed", "error", "blocked")}
    # the timeout run takes its 20 s while the others run
    slow = popen(*offline("--model", "oracle-nodone", "--task-ids", WRONG, "--timeout", "20", "--max-steps", "200",
                          "--out", str(runs["timeout"])))
    try:
        r = cli(*offline("--model", "oracle", "--task-ids", f"{RIGHT},{WRONG}", "--workers", "2",
                         "--out", str(runs["done"])))
        assert r.returncode == 0, r.stderr[-3000:]
        r = cli(*offline("--model", "oracle-500", "--task-ids", RIGHT, "--retries", "0", "--breaker-after", "99",
                         "--out", str(runs["error"])))
        assert r.returncode == 0, r.stderr[-3000:]
        tasks = tmp_path / "wall.json"
        tasks.write_text(json.dumps([{"task_id": "wall_cloudflare", "confirmed_task": "Find the price on the page",
                                      "website": f"{wall}/", "level": "easy"}]))
        r = cli("run", "--no-ui", "--tasks", str(tasks), "--model", "oracle", "--pace-cooldown", "0",
                "--out", str(runs["blocked"]))
        assert r.returncode == 0, r.stderr[-3000:]
        p = popen(*offline("--model", "oracle-slow-1", "--task-ids", WRONG, "--out", str(runs["killed"])))
        deadline = time.monotonic() + 120
        while not steps_on_disk(runs["killed"] / WRONG):
            assert p.poll() is None and time.monotonic() < deadline, "the killed run ended before its first step"
            time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 130, err[-3000:]
        _, err = slow.communicate(timeout=180)
        assert slow.returncode == 0, err[-3000:]
    finally:
        for proc in (slow,):
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    expected = {"done": {"done"}, "timeout": {"timeout"}, "killed": {"killed"}, "error": {"error"},
                "blocked": {"blocked"}}
    for kind, out in runs.items():
        assert {x["status"] for x in records(out)} == expected[kind], (kind, records(out))
        assert check_run(out) == [], kind

    # judge the finished runs (the oracle sees the answer only where it is shown): what each run settled
    for out in runs.values():
        assert judge(out, judge_server, "--include-answer") == 0, out
    s = {k: summarize(out) for k, out in runs.items()}
    assert s["done"].success.overall == Rate(successes=2, tasks=2, rate=1.0)
    for kind in ("timeout", "blocked"):
        assert s[kind].success.overall == Rate(0, 1, 0.0), kind
        assert s[kind].status[kind] == 1
    # the bot wall was not executable: left out of the executable rate
    assert [s[k].success.counts.not_executable for k in ("timeout", "blocked")] == [0, 1]
    # the endpoint's error and the run stopped under its episode (Ctrl-C) settle nothing: the task runs again next
    # time, so neither is judged (no judge file) and a measure there is counts it as neither
    for kind in ("error", "killed"):
        assert not list(runs[kind].glob("*_auto_eval_results.json")), kind
        assert s[kind].status[kind] == 1
    killed = s["killed"].success
    assert killed.source != "judge" and (killed.counts is None or killed.counts.pending == 1)
    assert s["error"].success.source != "judge"
    assert s["error"].errors[0].message == "model endpoint: server error (HTTP 5xx): oracle: injected server error"
    assert s["blocked"].errors[0].message == "Cloudflare challenge"
    assert s["done"].metrics["prompt_tokens"].n == 2
    c = compare([s["done"], s["timeout"]])
    assert c.runs == ("base/oracle", "base/oracle-nodone")
    overall = c.rows[0]
    assert overall.delta_pp[1] == pytest.approx(-100.0) and c.paired.tasks == 1

    # compared on the judge's measure: the runs it judged (the other two have no measure yet, and are refused)
    r = cli("report", *(str(runs[k]) for k in ("done", "timeout", "blocked")), "--format", "md")
    assert r.returncode == 0, r.stderr
    assert "| overall | 100.0% (2/2) [34.2, 100.0] | 100.0% (2/2) [34.2, 100.0] | 0 | 0 |" in r.stdout
    assert "## comparison" in r.stdout


def distinct_png(seed: int) -> bytes:
    """A real picture (Pillow decodes it), different for each seed: the judge re-encodes it as JPEG."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (64, 48), ((seed * 53) % 256, (seed * 97) % 256, (seed * 31) % 256)).save(buf, format="PNG")
    return buf.getvalue()


def test_what_is_sent_is_what_the_official_method_sends(tmp_path):
    """JPEG images with detail high, temperature 0, max_tokens 512, every kept screenshot's reasoning in the
    verdict, and the first 50 kept: judged by the stub, which says success only when each image shown comes with
    its reasoning."""
    from .judge_stub import StubJudge

    out = tmp_path / "run"
    folder = out / RIGHT
    (folder / "trajectory").mkdir(parents=True)
    for i in range(100):
        (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(distinct_png(i))
    (folder / "result.json").write_text(json.dumps({
        "task_id": RIGHT, "task": TEMPLATES[RIGHT]["confirmed_task"], "final_result_response": "x",
        "action_history": ["SCROLL DOWN"], "thoughts": ["a"]}))
    with StubJudge() as stub:
        assert cli_main(["judge", str(out), "--judge-model", "stub-judge", "--judge-url", stub.url]) == 0
        requests = list(stub.requests)
    rec = read_judged(out / ("om2w-tui_WebJudge_Online_Mind2Web_eval_stub-judge_score_threshold_3_"
                             "auto_eval_results.json"))[RIGHT]
    scores = [r for r in requests if r["kind"] == "score"]
    assert len(scores) == 100 and all(r["jpeg"] and r["detail"] == "high" for r in scores)
    assert all(r["temperature"] == 0 and r["max_tokens"] == 512 for r in requests)
    passing = [i for i, x in enumerate(rec["image_judge_record"]) if x["Score"] >= 3]
    assert len(passing) > 50
    assert rec["kept_screenshots"] == [f"{i}_full_screenshot.png" for i in passing[:50]]   # the first 50
    verdict, = [r for r in requests if r["kind"] == "verdict"]
    assert verdict["images"] == 50 and verdict["success"] and rec["predicted_label"] == 1
    assert set(rec["image_judge_record"][0]) == {"Response", "Score"}
    assert rec["task"] == TEMPLATES[RIGHT]["confirmed_task"] and rec["thoughts"] == ["a"]   # the result, judged


async def test_an_endpoint_that_refuses_the_sampling_settings_gets_the_call_without_them():
    """Reasoning models (o4-mini) refuse temperature 0 and max_tokens: the call goes again without them, and the
    later calls follow."""
    from openai import AsyncOpenAI

    seen: list[dict] = []

    def picky(req: Request) -> Reply:
        body = req.json()
        seen.append(body)
        if "temperature" in body or "max_tokens" in body:
            bad = "temperature" if "temperature" in body else "max_tokens"
            return Reply(400, {"error": {"message": f"Unsupported parameter: '{bad}' is not supported with this "
                                                    f"model.", "type": "invalid_request_error"}})
        return Reply(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "ok"}}]})

    with StubServer({"POST /v1/chat/completions": picky}) as server:
        client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
        logged: list[str] = []
        try:
            call = Caller(client, Settings(model="o4-mini"), log=logged.append)
            assert await call([{"role": "user", "content": "hi"}], Usage()) == "ok"
            assert await call([{"role": "user", "content": "again"}], Usage()) == "ok"
        finally:
            await client.close()
    assert seen[0]["temperature"] == 0 and seen[0]["max_tokens"] == 512
    assert "temperature" not in seen[-1] and seen[-1]["max_completion_tokens"] == 512
    assert len(seen) == 4                                   # two refusals, then each call once
    assert len(logged) == 2 and "temperature" in logged[0] and "max_completion_tokens" in logged[1]
