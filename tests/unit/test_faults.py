"""Fault kinds declared once (protocol/faults.py) and typed end to end: a worker's outcome over the pipe, a record
written and read back (an old run's string kinds too), and a kind this version does not know, which the report reads
past instead of failing on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from om2w_tui.engine.records import endpoint_fault, retried_fault, storage_fault
from om2w_tui.engine.results import EpisodeRecord, ResultsStore, read_results, settles
from om2w_tui.evaluation.failure import classify
from om2w_tui.evaluation.outcomes import run_outcome
from om2w_tui.evaluation.report import summarize
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.faults import FaultKind, fault_kind
from om2w_tui.protocol.worker import EVENTS, Finished, Outcome


def test_each_kind_says_whose_fault_it_is_and_whether_it_is_retried():
    assert {k for k in FaultKind if k.harness} == {FaultKind.INFRA, FaultKind.ENDPOINT, FaultKind.STORAGE}
    assert {k for k in FaultKind if k.retried} == {FaultKind.INFRA, FaultKind.ENDPOINT}
    assert all(k.label for k in FaultKind)
    assert fault_kind("endpoint") is FaultKind.ENDPOINT and fault_kind(FaultKind.MODEL) is FaultKind.MODEL
    assert fault_kind("gremlin") is None and fault_kind(None) is None and fault_kind(3) is None


def test_a_workers_fault_crosses_the_pipe_as_its_kind_and_nothing_else_does():
    line = EVENTS.line(Finished(Outcome("error", "HTTP 502", FaultKind.ENDPOINT)))
    assert json.loads(line)["outcome"]["fault"] == "endpoint"
    got = EVENTS.read(line)
    assert isinstance(got, Finished) and got.outcome.fault is FaultKind.ENDPOINT
    with pytest.raises(CodecError, match="fault"):
        EVENTS.read(line.replace(b'"endpoint"', b'"gremlin"'))


def old_line(tid: str, kind: str | None, status: str = "error", **kw: object) -> dict[str, object]:
    """A record as an older om2w-tui wrote it: the kind a plain string."""
    return {"task_id": tid, "status": status, "error": f"{kind} failed", "error_kind": kind, "finished_at": 1.0, **kw}


def test_an_old_runs_string_kinds_read_back_as_kinds_and_are_written_as_they_were(tmp_path: Path):
    lines = [old_line(k.value, k.value) for k in FaultKind]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    latest = read_results(tmp_path).latest_records()
    assert {tid: r.error_kind for tid, r in latest.items()} == {k.value: k for k in FaultKind}
    for line in lines:
        rec = latest[str(line["task_id"])]
        assert rec.to_json() == {**EpisodeRecord(task_id="x").to_json(), **line}   # the same line again
        assert rec.settles == settles(line)
    assert storage_fault(latest["storage"]) and retried_fault(latest["infra"]) and endpoint_fault(latest["endpoint"])
    assert not retried_fault(latest["storage"]) and not retried_fault(latest["model"])


def test_a_record_written_now_holds_its_kind_as_the_same_string(tmp_path: Path):
    ResultsStore(tmp_path).append(EpisodeRecord(task_id="a", status="error", error_kind=FaultKind.STORAGE))
    assert json.loads((tmp_path / "results.jsonl").read_text())["error_kind"] == "storage"
    assert read_results(tmp_path).latest_records()["a"].error_kind is FaultKind.STORAGE


def test_an_unknown_kind_reads_as_no_kind_settled_as_the_agents_and_the_report_reads_past_it(tmp_path: Path):
    (tmp_path / "t1").mkdir()
    lines = [old_line("t1", "gremlin", correct=False), old_line("t2", "infra")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    rec = read_results(tmp_path).latest_records()["t1"]
    assert rec.error_kind is None and rec.settles                     # a newer writer's kind: its fault unknown
    assert rec.error_kind_as_read == "gremlin" and rec.to_json()["error_kind"] == "gremlin"   # kept as written
    assert run_outcome(rec, None, keeps_records=True) == "failure"   # an error not the harness's: the agent's failure
    failed = classify(rec, None, "failure")
    assert failed is not None and failed.cls != "harness_error"
    report = summarize(tmp_path)
    assert report.tasks == 2 and report.status["error"] == 2
    assert {(g.kind, g.tasks) for g in report.errors} == {("gremlin", ("t1",)), ("infra", ("t2",))}


def test_a_record_without_a_number_takes_the_folders_and_leaves_the_others_out(tmp_path: Path):
    """An older writer's record may lack steps, durations, tokens: the report does not read them as zeros."""
    (tmp_path / "results.jsonl").write_text(json.dumps({"task_id": "t", "status": "done"}) + "\n")
    rec = read_results(tmp_path).latest_records()["t"]
    assert not rec.recorded("steps") and not rec.recorded("duration_s") and rec.recorded("status")
    assert EpisodeRecord(task_id="t").recorded("steps")               # a record built here holds every field
    report = summarize(tmp_path)
    assert report.per_task["t"].duration_s is None and report.per_task["t"].steps is None
    assert report.metrics["duration_s"].n == 0
