"""What a run measures (engine/measured.py), compared when a run resumes in its folder: a change of the model, its
decoding, the agent, the budget or the browser is found in every shard's manifest and named as its flag; how the run
goes and which tasks it selects may change; a change let through by --resume-changed is kept and said once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from om2w_tui.benchmarks.tasks import row_digest
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import live_offline_task, offline_tasks
from om2w_tui.engine.measured import (
    MEASURED,
    NOT_MEASURED,
    SELECTION,
    changes,
    changes_kept,
    changes_said,
    changes_when,
    earlier_task_files,
    folder_changes,
    measured,
    resumes_changed,
    run_changes,
    task_changes,
)
from om2w_tui.engine.results import EpisodeRecord, read_results
from om2w_tui.engine.settings import SETTINGS


def manifest(cfg: RunConfig, **more) -> dict:
    return {"config": cfg.to_json(), "measured": measured(cfg), **more}


def test_every_setting_is_declared_measured_or_not_and_none_is_both():
    keys = {s.key for s in SETTINGS} | {f.name for f in dataclasses.fields(RunConfig)}
    assert keys == set(MEASURED) | NOT_MEASURED
    assert not set(MEASURED) & NOT_MEASURED
    assert SELECTION <= set(MEASURED)
    # what an episode's outcome depends on is measured; where and how fast it runs is not
    assert {"model", "temperature", "top_p", "seed", "max_steps", "timeout", "arm", "viewport"} <= set(MEASURED)
    assert {"workers", "pace_cooldown", "vllm", "api_key_env", "retries", "judge_url", "executor"} <= NOT_MEASURED


@pytest.mark.parametrize("change, said", [
    ({"model": "other"}, "--model 'oracle' -> 'other'"),
    ({"temperature": 0.7}, "--temperature 0.0 -> 0.7"),
    ({"max_steps": 12}, "--max-steps 30 -> 12"),
    ({"viewport": "800x600"}, "--viewport '1280x1100' -> '800x600'"),
    ({"arm": "agent"}, "--arm 'base' -> 'agent'"),
    ({"levels": ["hard"]}, "--level [] -> ['hard']"),                  # the flag, not the field's name
    ({"vision": False}, "--no-vision now given"),                      # a switch in words, not True -> False
    ({"mend_thinking": False}, "--no-mend-thinking now given"),
    ({"top_p": 0.9}, "--top-p unset -> 0.9"),
])
def test_a_measured_change_is_named_as_its_flag(tmp_path, change, said):
    was = RunConfig(out=tmp_path, model="oracle", temperature=0.0, max_steps=30, viewport="1280x1100")
    now = dataclasses.replace(was, **change)
    assert changes(measured(was), measured(now), MEASURED, "--") == [said]   # as a campaign compares its lanes
    if "levels" not in change:                                          # a run's selection is no change
        assert run_changes(now, [manifest(was)]) == [said]
    if said.endswith("now given"):
        assert run_changes(was, [manifest(now)]) == [said.replace("now given", "no longer given")]


def test_how_the_run_goes_and_a_wider_selection_are_no_change(tmp_path):
    was = RunConfig(out=tmp_path, model="oracle", limit=10)
    now = dataclasses.replace(was, limit=0, task_ids=["a"], workers=9, pace_cooldown=3.0, retries=4,
                              vllm="http://127.0.0.1:9/v1", api_key_env="OTHER", record_rows=True,
                              judge_url="http://127.0.0.1:8/v1", resume_changed=True)
    assert run_changes(now, [manifest(was)]) == []


def test_every_shards_manifest_is_compared_and_a_change_said_once(tmp_path):
    a = RunConfig(out=tmp_path, model="a")
    b = dataclasses.replace(a, model="b")
    assert run_changes(dataclasses.replace(a, model="c"), [manifest(a), manifest(b), manifest(a)]) == [
        "--model 'a' -> 'c'", "--model 'b' -> 'c'"]


def test_a_manifest_from_before_measured_was_kept_is_read_from_its_config_but_for_the_user_agent(tmp_path):
    """Older run.json files kept only the resolved config, whose user agent is the browser's own string; asking for
    `auto` again asks for the same."""
    cfg = RunConfig(out=tmp_path, model="oracle")
    old = {"config": {**cfg.to_json(), "user_agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/140"}}
    assert run_changes(cfg, [old]) == []
    assert run_changes(dataclasses.replace(cfg, model="x"), [old]) == ["--model 'oracle' -> 'x'"]


def test_the_folder_is_read_from_its_manifests_and_an_unreadable_one_says_nothing(tmp_path):
    cfg = RunConfig(out=tmp_path, model="oracle")
    assert folder_changes(cfg) == []                                   # a new folder
    (tmp_path / "run.shard-1-of-2.json").write_text(json.dumps(manifest(cfg, started_at=1.0)))
    (tmp_path / "run.shard-2-of-2.json").write_text("{torn")
    _settled(tmp_path, offline_tasks()[1][0], None, "killed", "interrupted")
    assert folder_changes(dataclasses.replace(cfg, seed=3)) == []      # nothing settled: nothing measured to mix
    _settled(tmp_path, offline_tasks()[1][1], None)
    assert folder_changes(dataclasses.replace(cfg, seed=3)) == ["--seed unset -> 3"]


def test_changes_kept_add_to_the_earlier_ones_and_are_said_once_whatever_their_shape():
    first = changes_kept(None, ["--model 'a' -> 'b'"])
    assert changes_kept({"changes": first}, []) == first               # a resume that changes nothing adds nothing
    both = changes_kept({"changes": first}, ["--model 'b' -> 'a'", "--model 'a' -> 'b'"])
    assert [e["changed"] for e in both] == [["--model 'a' -> 'b'"], ["--model 'b' -> 'a'", "--model 'a' -> 'b'"]]
    assert changes_said({"changes": both}) == ["--model 'a' -> 'b'", "--model 'b' -> 'a'"]
    assert changes_said({"changes": [3, {"changed": [None, "x"]}, {"at": 1}]}) == ["x"]
    assert changes_said({"changes": "x"}) == changes_said(None) == []
    assert changes_said({"changes": [{"changed": 5}]}) == []


def test_each_resume_kept_is_said_with_when_it_was(tmp_path):
    """What `doctor` says of a folder resumed with --resume-changed (tests/e2e/test_out_folder.py runs it)."""
    kept = [{"at": 0.0, "changed": ["--model 'a' -> 'b'", "--seed 1 -> 2"]}, {"at": 86400.0, "changed": ["x"]},
            {"at": 1e300, "changed": ["y"]}, {"at": True, "changed": ["z"]}, {"at": 1.0, "changed": []}]
    assert changes_when({"changes": kept}) == ["1970-01-01 00:00:00 UTC: --model 'a' -> 'b'; --seed 1 -> 2",
                                               "1970-01-02 00:00:00 UTC: x", "at an unknown time: y",
                                               "at an unknown time: z"]
    assert resumes_changed(tmp_path) == []
    (tmp_path / "run.json").write_text(json.dumps({"changes": kept[:2]}))
    (tmp_path / "run.shard-1-of-2.json").write_text(json.dumps({"changes": kept[1:2]}))
    assert resumes_changed(tmp_path) == [
        "run.json: the run went on under other settings than it began with (--resume-changed, 1970-01-01 00:00:00 "
        "UTC: --model 'a' -> 'b'; --seed 1 -> 2; then 1970-01-02 00:00:00 UTC: x); its episodes mix two measurements",
        "run.shard-1-of-2.json: the run went on under other settings than it began with (--resume-changed, "
        "1970-01-02 00:00:00 UTC: x); its episodes mix two measurements"]


def test_a_campaign_lets_changed_lanes_go_on_with_resume_changed(tmp_path):
    from om2w_tui.engine.plan import read_plan, resolve, resume_problem, write_plan

    plan = Path(tmp_path / "plan.toml")
    plan.write_text(f'bench = "offline"\nout = "{tmp_path / "study"}"\n[arms.a]\nmodel = "x"\n[arms.b]\nmodel = "y"\n')
    write_plan(resolve(read_plan(plan)))
    plan.write_text(plan.read_text().replace('"y"', '"z"'))
    assert "b: model 'y' -> 'z'" in resume_problem(resolve(read_plan(plan)))
    assert resume_problem(resolve(read_plan(plan), {"resume_changed": True})) == ""


def _settled(out: Path, task, digest: str | None, status: str = "done", error: str | None = None) -> None:
    rec = EpisodeRecord(task_id=task.task_id, status=status, error=error, task_digest=digest, started_at=1.0,
                        finished_at=2.0)
    with (out / "results.jsonl").open("a") as f:
        f.write(json.dumps(rec.to_json()) + "\n")


def test_a_settled_task_the_file_changed_since_is_named_and_a_new_or_unsettled_one_is_not(tmp_path):
    _, tasks = offline_tasks()
    a, b, c, d = tasks[:4]
    _settled(tmp_path, a, a.digest)
    _settled(tmp_path, b, b.digest)
    _settled(tmp_path, c, "0" * 16, "killed", "interrupted")   # not settled: it runs again, as the file now says
    _settled(tmp_path, d, None)                            # a record from before the digest says nothing
    edited = dataclasses.replace(b, digest=row_digest({**b.raw, "confirmed_task": b.confirmed_task + " today"}))
    assert task_changes(read_results(tmp_path).latest_records(), [a, b, c, d]) == []
    assert task_changes(read_results(tmp_path).latest_records(), [a, edited, c, d, tasks[5]]) == [
        f"--tasks: 1 settled task(s) changed in the task file since they ran ({b.task_id})"]
    assert folder_changes(RunConfig(out=tmp_path), [edited])[-1].startswith("--tasks: 1 settled task(s)")


def test_a_tasks_digest_is_the_files_and_stays_through_the_runs_own_rewrites():
    _, tasks = offline_tasks()
    t = tasks[0]
    live = live_offline_task(t, {name: "http://127.0.0.1:1234/" for name in ("shop", "wiki", "booking", "travel",
                                                                            "forum", "news")})
    assert live.website != t.website and live.digest == t.digest == row_digest(t.raw)
    assert dataclasses.replace(t, lane="agent").digest == t.digest
    assert row_digest({**t.raw, "level": "hard"}) != t.digest
    assert row_digest(dict(reversed(list(t.raw.items())))) == t.digest    # the keys' order says nothing


def test_run_json_keeps_the_task_files_it_read_before():
    assert earlier_task_files(None, "b") == []
    assert earlier_task_files({"task_file": {"sha256": "a"}}, "b") == ["a"]
    assert earlier_task_files({"task_file": {"sha256": "b", "earlier_sha256": ["a"]}}, "b") == ["a"]
    assert earlier_task_files({"task_file": {"sha256": "c", "earlier_sha256": ["a", 3]}}, "b") == ["a", "c"]
