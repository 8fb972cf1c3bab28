"""om2w_tui.engine.sharding: whole sites per shard, balanced and stable; the flags' errors; shard-own files and locks
in one shared out folder."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om2w_tui.benchmarks.tasks import Task, TaskFileError, parse_tasks
from om2w_tui.cli.main import main as cli_main
from om2w_tui.engine.results import read_results
from om2w_tui.engine.runlock import OutFolderBusy, RunLock
from om2w_tui.engine.sharding import (
    Shard,
    ShardLock,
    assign_sites,
    check_out_free,
    parse_spec,
    select_shard,
    shard_from_flags,
)
from om2w_tui.run_folder import RunFolder
from tests.stand_ins import STAND_IN_CHROMIUM
from tests.unit.helpers import assert_usage_error, run_cli

site_lists = st.lists(st.sampled_from([f"s{i}.com" for i in range(12)]), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(sites=site_lists, n=st.integers(1, 6), seed=st.integers(0, 1 << 30))
def test_every_site_on_exactly_one_shard_balanced_and_stable(sites, n, seed):
    where = assign_sites(sites, n)
    assert set(where) == set(sites) and all(0 <= k < n for k in where.values())
    shuffled = list(sites)
    random.Random(seed).shuffle(shuffled)
    assert assign_sites(shuffled, n) == where                       # the file's order does not matter
    load = [sum(sites.count(s) for s, k in where.items() if k == i) for i in range(n)]
    biggest = max(sites.count(s) for s in set(sites))
    assert max(load) - min(load) <= biggest                          # greedy: within one site of level
    tasks = [Task(f"t{i}", "do", f"https://{s}/", None) for i, s in enumerate(sites)]
    shares = [select_shard(tasks, f"{k}/{n}") for k in range(n)]
    assert sorted(t.task_id for share in shares for t in share) == sorted(t.task_id for t in tasks)
    for share in shares:                                             # whole sites
        assert all(where[t.site] == where[share[0].site] for t in share)


def test_the_split_is_the_one_the_readme_describes():
    sites = ["a"] * 5 + ["b"] * 5 + ["c"] * 3 + ["d"] * 3 + ["e"] * 3
    # by count then name, each to the least loaded (lowest index on a tie): a0 b1 c0 d1 e0
    assert assign_sites(sites, 2) == {"a": 0, "b": 1, "c": 0, "d": 1, "e": 0}
    assert assign_sites(sites, 1) == dict.fromkeys("abcde", 0)
    assert set(assign_sites(sites, 9).values()) == {0, 1, 2, 3, 4}   # more shards than sites: some are empty


def test_task_ids_of_other_shards_are_no_error():
    tasks = [Task(f"t{i}", "do", f"https://s{i % 2}.com/", None) for i in range(4)]
    chosen = [tasks[0], tasks[1]]
    assert [t.task_id for k in (0, 1) for t in select_shard(tasks, f"{k}/2", chosen)] == ["t0", "t1"]


def test_a_slot_range_is_the_union_of_its_shards():
    tasks = [Task(f"t{i}", "do", f"https://s{i % 7}.com/", None) for i in range(40)]
    spec, workers = shard_from_flags(None, "1:3", 4)
    assert (spec, workers) == ("1:3/4", 2)
    ids = {t.task_id for t in select_shard(tasks, spec)}
    assert ids == {t.task_id for k in (1, 2) for t in select_shard(tasks, f"{k}/4")}


def test_names_of_a_shards_files():
    one, some = RunFolder(Path("o"), "1/3"), RunFolder(Path("o"), "0:2/4")
    assert one.parsed == Shard(1, 2, 3) and one.results.name == "results.shard-1-of-3.jsonl"
    assert one.manifest.name == "run.shard-1-of-3.json"
    assert [p.name for p in one.shard_locks] == [".om2w-run.shard-1-of-3.lock"]
    assert some.results.name == "results.shards-0-to-1-of-4.jsonl"
    assert [p.name for p in some.shard_locks] == [".om2w-run.shard-0-of-4.lock", ".om2w-run.shard-1-of-4.lock"]
    assert parse_spec("") is None and RunFolder(Path("o")).results.name == "results.jsonl"


def test_a_task_cannot_be_named_like_a_shards_files(tmp_path):
    for tid in ("run.shard-0-of-2.json", "results.shard-0-of-2.jsonl"):
        with pytest.raises(TaskFileError, match="the run's own files"):
            parse_tasks(tmp_path / "t.json", json.dumps([{"task_id": tid, "confirmed_task": "x",
                                                          "website": "https://a.com/"}]))


def test_resume_reads_every_shards_results(tmp_path):
    (tmp_path / "results.shard-0-of-2.jsonl").write_text(json.dumps({"task_id": "a", "status": "done"}) + "\n")
    (tmp_path / "results.shard-1-of-2.jsonl").write_text(json.dumps({"task_id": "b", "status": "done"}) + "\n")
    assert read_results(tmp_path).settled() == {"a", "b"}


def test_shards_share_a_folder_but_not_a_shard(tmp_path):
    with ShardLock(tmp_path, Shard(0, 1, 2)), ShardLock(tmp_path, Shard(1, 2, 2)):
        assert "another run" in check_out_free(tmp_path, "1/2")
        with pytest.raises(OutFolderBusy, match="shard-1-of-2"):
            ShardLock(tmp_path, Shard(1, 2, 2)).acquire()
        with pytest.raises(OutFolderBusy, match="shards of a run"):   # nor may an unsharded run take it
            RunLock(tmp_path).acquire()
        assert "shard-0-of-2" in check_out_free(tmp_path, "")          # which its preflight says
        with pytest.raises(OutFolderBusy):                            # a range that overlaps a running shard
            ShardLock(tmp_path, Shard(0, 2, 2)).acquire()
        assert check_out_free(tmp_path, "0/3") == ""                  # (another N is the user's to avoid)
    with RunLock(tmp_path):
        assert "another run" in check_out_free(tmp_path, "0/2")
        with pytest.raises(OutFolderBusy):
            ShardLock(tmp_path, Shard(0, 1, 2)).acquire()
    with ShardLock(tmp_path, Shard(0, 2, 2)):                         # all released: free again
        pass


@pytest.mark.parametrize("args, message", [
    (["--shard", "2/2"], "--shard 2/2: K must be 0..1 (shards count from 0)"),
    (["--shard", "1of2"], "--shard 1of2: expected K/N"),
    (["--shard", "0/0"], "--shard 0/0: N must be at least 1"),
    (["--slot-range", "3:3", "--workers", "8"], "--slot-range 3:3: a must be less than b"),
    (["--slot-range", "4:9", "--workers", "8"], "--slot-range 4:9: b must be at most --workers (8)"),
    (["--shard", "0/2", "--slot-range", "0:1"], "give one of them"),
])
def test_bad_shard_flags_name_the_flag(tmp_path, capsys, args, message):
    code = cli_main(["run", "--no-ui", "--out", str(tmp_path / "out"), "--bench", "offline", *args])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_bad_shard_exits_2_as_a_process(work):  # noqa: F811 (the fixture)
    assert_usage_error(run_cli(work, "--tasks", str(work / "tasks.json"), "--shard", "5/2"), "--shard 5/2: K must be")


def test_a_shard_with_no_site_says_so(work):  # noqa: F811 (the fixture)
    # two sites, three shards: shard 2 has none
    assert_usage_error(run_cli(work, "--tasks", str(work / "tasks.json"), "--shard", "2/3"),
                       "no task left after the filters", "--shard 2/3")


def test_the_selection_is_the_shards_share_then_the_filters(work):  # noqa: F811 (the fixture)
    from om2w_tui.cli.main import build_parser, config_from_args
    from om2w_tui.engine.launch import preflight

    rows = [{"task_id": f"t{i}", "confirmed_task": "x", "website": f"https://s{i % 3}.com/"} for i in range(9)]
    (work / "nine.json").write_text(json.dumps(rows))
    picked = []
    for k in (0, 1):
        args = build_parser().parse_args(["run", "--no-ui", "--out", str(work / "out"), "--chromium", STAND_IN_CHROMIUM,
                                          "--model", "oracle", "--tasks", str(work / "nine.json"),
                                          "--shard", f"{k}/2", "--limit", "2"])
        picked.append([t.task_id for t in preflight(config_from_args(args)).tasks])
    # s0.com and s2.com on shard 0, s1.com on shard 1 (3 tasks each, by name on ties); --limit 2 takes the file's
    # first two, as an unsharded run would, and each shard runs its part of them
    assert picked == [["t0"], ["t1"]]
    assert not (work / "out").exists()


def test_shard_files_match_what_resume_and_report_read():
    assert RunFolder(Path("o"), "3/4").results.match("results*.jsonl")
