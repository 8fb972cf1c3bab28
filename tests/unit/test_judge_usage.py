"""`om2w-tui judge` refuses, before any call and writing nothing, what its run's files already say is wrong: a
`--task-ids` naming no task folder of the run (exit 2, as `label --task nope`), and a resume that would mix two readings
of the replies in one judge file (`--parsing` other than the file's lines were read under: QA found `--parsing
lenient` resuming 19 verdicts read the official way and reporting them as lenient); the live judge stops on such a
file too. Run folders written on disk, judged by the oracle's judge mode over HTTP."""

from __future__ import annotations

import asyncio
import json

from openai import AsyncOpenAI

from om2w_tui.cli.main import main as cli_main
from om2w_tui.evaluation.judge_files import output_path, read_judged
from om2w_tui.evaluation.judge_settings import Settings
from om2w_tui.evaluation.live_judge import LiveJudge
from om2w_tui.offline.oracle import OracleServer
from tests.unit.helpers import make_run, record


def judge(out, server: OracleServer, *extra: str) -> int:
    return cli_main(["judge", str(out), "--judge-model", "oracle-judge", "--judge-url", server.url, "--backoff", "0",
                     "--retries", "0", *extra])


async def live_start(out, server: OracleServer) -> tuple[str, list[str]]:
    """The run's live judge started on `out` (official parsing, as a run's is): why it stopped, and its log lines."""
    logs: list[str] = []
    client = AsyncOpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=30)
    live = LiveJudge(out, Settings(model="oracle-judge", retries=0, backoff=0.0), client,
                     emit=lambda e: logs.append(getattr(e, "message", "")))
    try:
        await live.start()
        assert not live._queued
        return live.fatal, logs
    finally:
        await live.close()
        await client.close()


def run(tmp_path):
    return make_run(tmp_path / "run", [record("a", answer="It costs $12."), record("b", answer="It costs $9.")])


def test_task_ids_naming_no_task_folder_exit_2_before_any_call_and_write_nothing(tmp_path, judge_server, capsys):
    out = run(tmp_path)
    before = sorted(p.name for p in out.iterdir())
    calls = judge_server.calls
    assert judge(out, judge_server, "--task-ids", "nope,a") == 2
    err = capsys.readouterr().err
    assert f"--task-ids: no task folder nope in {out} (2 task folders, e.g. a, b); nothing judged" in err
    assert judge_server.calls == calls and sorted(p.name for p in out.iterdir()) == before
    assert judge(out, judge_server, "--task-ids", "a") == 0                  # a task the run has: judged
    assert sorted(read_judged(output_path(out, Settings(model="oracle-judge")))) == ["a"]


def test_a_resume_never_mixes_two_readings_of_the_replies(tmp_path, judge_server, capsys):
    out = run(tmp_path)
    assert judge(out, judge_server, "--task-ids", "a") == 0                  # read the official way (the default)
    path = output_path(out, Settings(model="oracle-judge"))
    first = path.read_bytes()
    assert read_judged(path)["a"]["parsing"] == "official"
    capsys.readouterr()
    calls = judge_server.calls
    assert judge(out, judge_server, "--parsing", "lenient") == 2
    err = capsys.readouterr().err
    assert f"{path.name} holds 1 verdict(s) whose replies were read the official way (e.g. a)" in err
    assert "Judge with --parsing official to resume it, or move that file out of the run's folder" in err
    assert judge_server.calls == calls and path.read_bytes() == first        # no call, the file as it was
    # the same file's lines read leniently (an earlier `judge --parsing lenient`): the live judge stops on it too
    lenient = [dict(json.loads(x), parsing="lenient") for x in first.decode().splitlines()]
    path.write_text("".join(json.dumps(x) + "\n" for x in lenient))
    fatal, logs = asyncio.run(live_start(out, judge_server))
    assert "read the lenient way" in fatal
    assert any(x.startswith("judge: the judge stops: ") and "read the lenient way" in x for x in logs)
    assert judge_server.calls == calls
    # moved aside, the lenient reading judges anew; resumed the same way, nothing is judged twice
    path.rename(tmp_path / path.name)
    assert judge(out, judge_server, "--parsing", "lenient") == 0
    assert {t: r["parsing"] for t, r in read_judged(path).items()} == {"a": "lenient", "b": "lenient"}
    assert judge(out, judge_server, "--parsing", "lenient") == 0
    assert "resuming: 2 task(s) already judged" in capsys.readouterr().out


def test_judge_reads_the_runs_records_once(tmp_path, judge_server, monkeypatch):
    """The checks before the network read the run's records, and the judging takes them: a long run's log is read
    once a call, not twice (as the run's own preflight reads it once)."""
    from om2w_tui.evaluation import verdicts

    out = run(tmp_path)
    reads: list[object] = []
    real = verdicts.read_results
    monkeypatch.setattr(verdicts, "read_results", lambda *a, **kw: reads.append(a) or real(*a, **kw))
    assert judge(out, judge_server) == 0
    assert len(reads) == 1
    assert sorted(read_judged(output_path(out, Settings(model="oracle-judge")))) == ["a", "b"]
