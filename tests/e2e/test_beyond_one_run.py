"""Beyond one run, with real processes: two runs on one node sharing a --pace-dir, a seed-style lock file held by
another process, and two shards of one run writing into one out folder."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from om2w_tui.engine.shared_pacing import seed_domain
from om2w_tui.offline import OfflineSuite, OracleServer

from .helpers import Lines, cli, popen

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
COOLDOWN = 2.0


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


@pytest.fixture
def shared_sites(tmp_path):
    """One set of offline sites and one oracle for every run of the test (runs meet only on the same sites), and a
    task file pointing at them: one task on the wiki, one on the booking site."""
    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        picked = [t for t in suite.tasks() if t["task_id"] in ("offline_wiki_search_08", "offline_booking_rates_11")]
        path = tmp_path / "tasks.json"
        path.write_text(json.dumps(picked))
        yield path, oracle.url, {t["task_id"]: t["website"] for t in picked}


def run_args(tasks: Path, endpoint: str, pace: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--no-ui", "--tasks", str(tasks), "--model", "oracle", "--vllm", endpoint, "--workers", "2",
            "--pace-cooldown", str(COOLDOWN), "--pace-dir", str(pace), "--out", str(out), *extra]


def test_two_runs_with_one_pace_dir_never_overlap_on_a_site_and_keep_the_cooldown(tmp_path, shared_sites):
    tasks, endpoint, sites = shared_sites
    pace = tmp_path / "pace"
    # both runs on the same site (the wiki) at once: without the shared directory they would overlap at the start
    wiki = "offline_wiki_search_08"
    procs = [popen(*run_args(tasks, endpoint, pace, tmp_path / name, "--task-ids", wiki)) for name in ("base", "agent")]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, (out[-2000:], err[-3000:])
    recs = rows(tmp_path / "base" / "results.jsonl") + rows(tmp_path / "agent" / "results.jsonl")
    assert [r["task_id"] for r in recs] == [wiki, wiki]
    assert all(r["status"] == "done" and r["correct"] for r in recs)
    first, second = sorted(recs, key=lambda r: r["started_at"])
    assert second["started_at"] >= first["finished_at"] + COOLDOWN - 0.05, (first, second)
    assert {p.name for p in pace.iterdir()} == {f"{seed_domain(sites[wiki])}.{x}" for x in ("lock", "last")}


def test_a_seed_style_lock_is_honoured_and_its_release_starts_the_site_within_a_second(tmp_path, shared_sites):
    tasks, endpoint, sites = shared_sites
    pace = tmp_path / "pace"
    pace.mkdir()
    wiki = sites["offline_wiki_search_08"]
    # the seed's Pacer: open(<dir>/<domain>.lock, "a+"), flock LOCK_EX; let go when told, and say when
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX); "
        "print('held', flush=True); sys.stdin.read(); fcntl.flock(f, fcntl.LOCK_UN); "
        "print(time.time(), flush=True); f.close()"),
        str(pace / f"{seed_domain(wiki)}.lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    run = None
    try:
        assert holder.stdout.readline().strip() == "held"
        run = popen(*run_args(tasks, endpoint, pace, tmp_path / "out", "--pace-cooldown", "0"))
        log = Lines(run)
        log.wait_for("held by another run")
        log.wait_for("offline_booking_rates_11")          # the other site ran meanwhile
        assert not (tmp_path / "out" / "offline_wiki_search_08").exists()
        before = time.time()
        holder.stdin.close()
        released = float(holder.stdout.readline())
        log.wait_for("summary:")
        assert run.wait(60) == 0
    finally:
        for p in (holder, run):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    (wiki_rec,) = [r for r in rows(tmp_path / "out" / "results.jsonl") if r["task_id"] == "offline_wiki_search_08"]
    assert before <= wiki_rec["started_at"] <= released + 1.0, (before, released, wiki_rec["started_at"])
    assert wiki_rec["status"] == "done" and wiki_rec["correct"]


def test_two_shards_into_one_out_folder_make_the_whole_run_once(tmp_path):
    out = tmp_path / "run"
    ids = ["offline_shop_search_01", "offline_wiki_search_08", "offline_booking_rates_11",
           "offline_longpage_footer_15"]
    common = ["run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", ",".join(ids),
              "--workers", "2", "--pace-cooldown", "0", "--out", str(out)]
    procs = [popen(*common, "--shard", f"{k}/2") for k in (0, 1)]
    for p in procs:
        o, e = p.communicate(timeout=240)
        assert p.returncode == 0, (o[-2000:], e[-3000:])
    shard_rows = [rows(out / f"results.shard-{k}-of-2.jsonl") for k in (0, 1)]
    assert all(shard_rows) and not (out / "results.jsonl").exists()
    assert sorted(r["task_id"] for rs in shard_rows for r in rs) == sorted(ids)   # every task exactly once
    assert not {r["website"] for r in shard_rows[0]} & {r["website"] for r in shard_rows[1]}   # whole sites
    assert all(r["status"] == "done" and r["correct"] for rs in shard_rows for r in rs)
    assert {p.name for p in out.glob("run*.json")} == {"run.shard-0-of-2.json", "run.shard-1-of-2.json"}
    assert {p.name for p in out.iterdir() if p.is_dir()} == set(ids)

    for k in (0, 1):   # again: each shard finds its share done (in the other shard's file as much as its own)
        again = cli(*common, "--shard", f"{k}/2", timeout=120)
        assert again.returncode == 0, again.stderr[-2000:]
        assert f"resuming: {len(shard_rows[k])} of {len(shard_rows[k])} already done" in again.stdout
        assert f"results.shard-{k}-of-2.jsonl" in again.stdout
    assert [rows(out / f"results.shard-{k}-of-2.jsonl") for k in (0, 1)] == shard_rows

    report = cli("report", str(out), "--format", "json", timeout=60)   # reads both shards' files
    assert report.returncode == 0, report.stderr
    (summary,) = json.loads(report.stdout)["runs"]
    assert summary["has_results"] and summary["has_manifest"]
    assert summary["tasks"] == summary["attempts"] == len(ids)
    overall = summary["success"]["overall"]
    assert (overall["successes"], overall["tasks"], overall["rate"]) == (len(ids), len(ids), 1.0)
