"""om2w_tui.engine.results: the append-only record of attempts, resume from every results*.jsonl, torn lines."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from om2w_tui.engine.results import INTERRUPTED, REQUEUED, ResultsLog, ResultsStore, read_results, settles


def rec(tid: str, status: str | None = "done", finished_at: float | None = 100.0, **kw) -> dict:
    r = {"task_id": tid, **kw}
    if status is not None:
        r["status"] = status
    if finished_at is not None:
        r["finished_at"] = finished_at
    return r


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def test_append_writes_one_line_per_record(tmp_path):
    store = ResultsStore(tmp_path)
    assert store.path == tmp_path / "results.jsonl"
    assert not store.path.exists()   # nothing written until a record comes
    records = [rec("a"), rec("b", status="error", error="boom"), rec("c", answer="line1\nline2 é")]
    for r in records:
        store.append(r)
    raw = lines(store.path)
    assert raw[-1] == "" and len(raw) == 4   # three lines, each ended
    assert [json.loads(x) for x in raw[:-1]] == records
    assert read_results(tmp_path).records == records


def test_append_to_an_existing_file_keeps_it(tmp_path):
    ResultsStore(tmp_path).append(rec("a"))
    ResultsStore(tmp_path).append(rec("b"))
    assert [r["task_id"] for r in read_results(tmp_path).records] == ["a", "b"]


def test_values_that_are_not_json_are_written_as_text(tmp_path):
    ResultsStore(tmp_path).append(rec("a", path=Path("/x/y")))
    assert read_results(tmp_path).records[0]["path"] == "/x/y"


def test_reads_results_and_slot_files(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps(rec("a")) + "\n")
    (tmp_path / "results_0.jsonl").write_text(json.dumps({"task_id": "s0", "steps": 3}) + "\n")
    (tmp_path / "results_11.jsonl").write_text(json.dumps({"task_id": "s1", "error": "timeout"}) + "\n\n")
    (tmp_path / "other.jsonl").write_text(json.dumps(rec("not-read")) + "\n")
    (tmp_path / "results.json").write_text(json.dumps(rec("not-read-either")))
    log = read_results(tmp_path)
    assert sorted(r["task_id"] for r in log.records) == ["a", "s0", "s1"]
    assert log.warnings == []


def test_empty_or_missing_folder(tmp_path):
    assert read_results(tmp_path).records == []
    assert read_results(tmp_path / "nope").records == []


def test_lines_that_are_not_task_records_are_ignored(tmp_path):
    (tmp_path / "results.jsonl").write_text("[1, 2]\n42\n" + json.dumps({"status": "done"}) + "\n"
                                            + json.dumps(rec("a")) + "\n")
    log = read_results(tmp_path)
    assert [r["task_id"] for r in log.records] == ["a"]


def test_torn_last_line_is_skipped_with_a_warning_returned_not_logged(tmp_path, caplog):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(rec("a")) + "\n" + json.dumps(rec("b")) + "\n" + '{"task_id": "c", "sta')
    with caplog.at_level(logging.DEBUG):
        log = read_results(tmp_path)
    assert [r["task_id"] for r in log.records] == ["a", "b"]
    assert log.warnings == [f"{path}:3:18: invalid JSON: Unterminated string starting at; the line is skipped"]
    assert caplog.messages == []    # a command reads the log several times: the caller says it, once


BAD_BYTE = json.dumps(rec("b")).encode().replace(b'"b"', b'"b\xff"')


def test_a_line_that_is_not_utf8_is_named_as_a_result_json_that_is_not(tmp_path):
    """One fault, one wording: file, line and byte, as `check` names the same bytes in a result.json."""
    from om2w_tui.benchmarks.episode_folder import load_result

    path = tmp_path / "results.jsonl"
    path.write_bytes(json.dumps(rec("a")).encode() + b"\n" + BAD_BYTE + b"\n")
    log = read_results(tmp_path)
    assert [r["task_id"] for r in log.records] == ["a"]
    assert log.warnings == [f"{path}:2: not UTF-8 text (invalid start byte at byte 14 of the line); the line is "
                            f"skipped"]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "result.json").write_bytes(BAD_BYTE)
    assert load_result(tmp_path / "b").error == "result.json: not UTF-8 text (invalid start byte at byte 14)"


def test_each_command_says_a_skipped_line_once(tmp_path, work, capsys):
    """The run's resume (a real process), `tasks health` and `report` each read the log more than once."""
    from om2w_tui.cli.main import main as cli_main
    from tests.unit.helpers import make_run, record, run_cli

    out = tmp_path / "o"
    (out / "offline_shop_search_01").mkdir(parents=True)
    (out / "results.jsonl").write_bytes(json.dumps(rec("offline_shop_search_01")).encode() + b"\n" + BAD_BYTE
                                        + b"\n")
    said = f"{out / 'results.jsonl'}:2: not UTF-8 text"
    proc = run_cli(work, "--bench", "offline", "--task-ids", "offline_shop_search_01", out=out)
    assert proc.returncode == 0 and "resuming: 1 of 1 already done" in proc.stdout, proc.stderr
    assert (proc.stdout + proc.stderr).count(said) == 1, proc.stdout + proc.stderr
    run = make_run(tmp_path / "r", [record("t1"), record("t2")])
    (run / "results.jsonl").write_bytes((run / "results.jsonl").read_bytes() + BAD_BYTE + b"\n")
    said = f"{run / 'results.jsonl'}:3: not UTF-8 text"
    assert cli_main(["tasks", "health", str(run)]) == 0
    got = capsys.readouterr()
    assert got.err.count(said) == 1 and said not in got.out      # on stderr: the table stays whole
    assert cli_main(["tasks", "health", str(run), "--format", "json"]) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["warnings"] == [f"{said} (invalid start byte at byte 14 of the line); the line is "
                                               f"skipped"]
    assert cli_main(["report", str(run)]) == 0
    got = capsys.readouterr()
    assert (got.out + got.err).count(said) == 1


def test_torn_multibyte_character_is_skipped(tmp_path):
    path = tmp_path / "results_2.jsonl"
    whole = json.dumps(rec("b", answer="日本"), ensure_ascii=False).encode()
    path.write_bytes(json.dumps(rec("a")).encode() + b"\n" + whole[:-5])
    log = read_results(tmp_path)
    assert [r["task_id"] for r in log.records] == ["a"]
    assert log.warnings == [f"{path}:2:68: invalid JSON: Expecting ',' delimiter; the line is skipped"]


def test_append_after_a_torn_line_starts_a_new_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(rec("a")) + "\n" + '{"task_id": "b", "status": "do')
    store = ResultsStore(tmp_path)
    store.append(rec("c", finished_at=200.0))
    log = read_results(tmp_path)
    assert [r["task_id"] for r in log.records] == ["a", "c"]
    assert len(log.warnings) == 1 and f"{path}:2:" in log.warnings[0]
    assert log.latest_records()["c"].finished_at == 200.0
    # a second store on the repaired file adds no blank line
    size = path.stat().st_size
    ResultsStore(tmp_path)
    assert path.stat().st_size == size


def test_a_whole_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(rec("a")))   # whole record, only its newline lost
    ResultsStore(tmp_path).append(rec("b"))
    assert [r["task_id"] for r in read_results(tmp_path).records] == ["a", "b"]
    assert read_results(tmp_path).warnings == []


def test_latest_by_finish_time_not_file_order(tmp_path):
    store = ResultsStore(tmp_path)
    store.append(rec("a", status="error", finished_at=300.0, attempt=2))
    store.append(rec("a", status="done", finished_at=200.0, attempt=1))
    store.append(rec("b", status="timeout", finished_at=50.0))
    (tmp_path / "results_0.jsonl").write_text(json.dumps({"task_id": "b", "steps": 1}) + "\n")   # the seed's
    latest = read_results(tmp_path).latest_records()
    assert latest["a"].status == "error" and latest["a"].attempt == 2
    assert latest["b"].status == "timeout"   # a seed record (no finish time) is older than any of ours


def test_latest_ties_go_to_the_later_line():
    log = ResultsLog([rec("a", status="error", finished_at=5.0), rec("a", status="done", finished_at=5.0)])
    assert log.latest_records()["a"].status == "done"


def test_latest_with_odd_finish_times():
    log = ResultsLog([rec("a", status="done", finished_at="2026-01-01T00:00:00"),
                      rec("a", status="error", finished_at=10.0), rec("b", finished_at=None)])
    latest = log.latest_records()
    assert latest["a"].status == "error" and latest["b"].status == "done"


def test_settles():
    assert settles(rec("a", status="done"))
    assert settles({"task_id": "seed"})
    assert settles(rec("a", status="killed"))
    assert settles(rec("a", status="killed", error="user"))
    assert not settles(rec("a", status="killed", error=INTERRUPTED))
    assert not settles(rec("a", status="killed", error=REQUEUED))
    assert settles(rec("a", status="error", error=INTERRUPTED))


def test_settled():
    log = ResultsLog([
        rec("done", status="done"),
        rec("timeout", status="timeout"),
        rec("error", status="error", error="RuntimeError: x"),
        rec("blocked", status="blocked"),
        rec("killed", status="killed", error="killed by the user"),
        rec("interrupted", status="killed", error=INTERRUPTED),
        rec("requeued", status="killed", error=REQUEUED),
        {"task_id": "seed", "steps": 7},
        {"task_id": "seed-err", "error": "timeout"},
        rec("redone", status="killed", error=INTERRUPTED, finished_at=1.0),
        rec("redone", status="done", finished_at=2.0),
        rec("undone", status="done", finished_at=1.0),
        rec("undone", status="killed", error=REQUEUED, finished_at=2.0),
        rec("infra", status="error", error="worker process exited", error_kind="infra"),
    ])
    assert log.settled() == {"done", "timeout", "error", "blocked", "killed", "seed", "seed-err", "redone"}
    assert set(log.latest_records()) - log.settled() == {"interrupted", "requeued", "undone", "infra"}


def test_attempts():
    log = ResultsLog([
        rec("a", attempt=1), rec("a", attempt=3), rec("a", attempt=2),
        {"task_id": "seed"},
        rec("b", attempt=None), rec("c", attempt="2"), rec("d", attempt="x"), rec("e", attempt=0),
    ])
    assert log.attempts() == {"a": 3, "seed": 1, "b": 1, "c": 2, "d": 1, "e": 1}


def test_task_ids_are_text(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps({"task_id": 7, "status": "done"}) + "\n")
    log = read_results(tmp_path)
    assert set(log.latest_records()) == {"7"} and log.settled() == {"7"} and log.attempts() == {"7": 1}


# ── EpisodeRecord: the typed record, its line and its reading back ──
def test_a_record_writes_the_line_it_always_wrote_and_reads_it_back():
    from om2w_tui.engine.results import EpisodeRecord
    r = EpisodeRecord(task_id="t1", arm="base", website="https://a.com/", level="easy", model="m", status="done",
                      steps=3, actions=4, screenshots=4, answer="é", agent_done=True, duration_s=12.5,
                      started_at=1.0, finished_at=13.5, attempt=2, slot=0, correct=True)
    obj = r.to_json()
    assert list(obj)[:8] == ["task_id", "arm", "website", "level", "model", "status", "error", "error_kind"]
    assert "rows" not in obj and "hint_left" not in obj and obj["correct"] is True   # optional: only when set
    assert EpisodeRecord.from_json(json.loads(json.dumps(obj))) == r
    assert r.settles and not r.requeued


def test_a_record_of_another_writer_keeps_what_it_does_not_know_and_survives_bad_types():
    from om2w_tui.engine.results import EpisodeRecord
    seed = {"task_id": "t2", "arm": "agent", "website": "https://b.com", "level": "hard", "steps": "7",
            "actions": None, "screenshots": "many", "answer": "x", "duration_s": 3, "error": "timeout",
            "judge_notes": {"k": 1}}
    r = EpisodeRecord.from_json(seed)
    assert (r.status, r.steps, r.actions, r.screenshots, r.duration_s) == ("", 7, 0, 0, 3.0)
    assert r.extra == {"judge_notes": {"k": 1}} and r.to_json()["judge_notes"] == {"k": 1}
    assert r.settles     # the seed's records have no status: a record is a finished episode
    killed = EpisodeRecord.from_json(rec("t3", status="killed", error=REQUEUED))
    infra = EpisodeRecord.from_json(rec("t4", status="error", error="x", error_kind="infra"))
    assert killed.requeued and not killed.settles and not infra.settles
    assert all(EpisodeRecord.from_json(x).settles == settles(x)
               for x in (seed, rec("a"), rec("b", status="killed", error=INTERRUPTED), rec("c", status="error")))
