"""`--executor ray` for real: a Ray cluster of three nodes on 127.0.0.1 started by the test (a head that holds no
browser, two nodes that hold two each), the real command line as the driver, real workers and Chromium inside the
actors, the offline suite with the oracle. The files are shipped back (OM2W_RAY_SHIP=1: as when the nodes share no
filesystem) in the first test and written in place (shared, probed) in the second; a two-arm campaign runs there
with each lane's files shipped into its own folder; a node is removed for real while it runs an episode."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from om2w_tui.benchmarks.episode_folder import ATTEMPT_MARK
from om2w_tui.protocol.worker import Exited, Pause, Resume

from .helpers import assert_settled_once, check_task_folder, chromium_left, cli, popen, records, steps_on_disk

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}   # every Ray process stays on 127.0.0.1 (see docs/clusters.md)


@pytest.fixture(scope="module")
def cluster():
    os.environ.update(LOOPBACK)     # before Ray is first imported (it reads it then), and inherited by every node
    if os.environ.get("OM2W_REQUIRE_E2E") != "1":
        pytest.importorskip("ray")
    from ray.cluster_utils import Cluster  # Ray is an optional extra: only this module needs it

    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"browser": 0}, "node_ip_address": "127.0.0.1", "include_dashboard": False,
        # a lost node is noticed within ~2 s, not the default ~30 s
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3}})
    try:
        for _ in range(2):
            c.add_node(num_cpus=2, resources={"browser": 2}, node_ip_address="127.0.0.1")
        c.wait_for_nodes()
        yield c
    finally:
        c.shutdown()


def raylets(cluster: Any) -> dict[int, Any]:
    """The raylet's pid of each node that holds browsers -> the node."""
    from ray._private import ray_constants  # the process table of a test cluster's nodes

    return {n.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid: n
            for n in cluster.worker_nodes}


def nodes_running(out: Path, cluster: Any) -> set[Any]:
    """The nodes whose actors run a Chromium of the run in `out` now (a Chromium's ancestors reach its raylet)."""
    by_pid = raylets(cluster)
    found = set()
    for pid in chromium_left(out):
        try:
            for parent in psutil.Process(pid).parents():
                if parent.pid in by_pid:
                    found.add(by_pid[parent.pid])
                    break
        except psutil.Error:
            continue
    return found


def ray_run(cluster: Any, out: Path, *args: str) -> list[str]:
    return ["run", "--no-ui", "--bench", "offline", "--executor", "ray", "--ray-address", cluster.address,
            "--out", str(out), *args]


def no_overlap_per_site(rows: list[dict[str, Any]], cooldown: float) -> None:
    by_site: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        by_site.setdefault(r["website"], []).append((r["started_at"], r["finished_at"]))
    for site, spans in by_site.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end + cooldown - 0.05, (site, spans)


def test_the_offline_suite_on_two_nodes_conforms_paced_across_nodes_with_files_shipped(cluster, tmp_path):
    from om2w_tui.benchmarks.conformance import check_run

    out = tmp_path / "ray"
    ids = ["offline_wiki_search_08", "offline_wiki_port_06", "offline_booking_rates_11", "offline_booking_suite_13",
           "offline_studio_target_18"]
    seen: set[Any] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.update(nodes_running(out, cluster))
            stop.wait(0.3)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r = cli(*ray_run(cluster, out, "--model", "oracle", "--task-ids", ",".join(ids), "--workers", "2",
                         "--pace-cooldown", "1"), env={**LOOPBACK, "OM2W_RAY_SHIP": "1"}, timeout=240)
    finally:
        stop.set()
        watcher.join()
    assert r.returncode == 0, r.stderr[-3000:]
    rows = records(out)
    assert_settled_once(rows, ids)
    assert sorted(x["task_id"] for x in rows) == sorted(ids)
    assert all(x["status"] == "done" and x["correct"] for x in rows), rows
    assert len(seen) == 2, "both browser nodes ran episodes"
    no_overlap_per_site(rows, 1.0)
    assert check_run(out) == []                       # the evaluator reads it as a local run's
    for tid in ids:
        res = check_task_folder(out / tid)
        assert res["action_history"]
        # no temporary left by the shipping (the attempt's mark is the engine's own, written before it)
        assert [p.name for p in (out / tid).glob(".*")] == [ATTEMPT_MARK]
    assert not list(out.glob(".om2w-ray-probe-*"))
    assert chromium_left(out) == []


async def test_a_killed_ray_worker_ends_its_process_group_then_its_actor(cluster, tmp_path):
    """The scheduler's kill, in-process against the cluster: the worker (and `sh` before it) gone from its node, the
    stream ended by an `exit`, the actor ended, and a command after the kill refused."""
    import ray  # the optional extra, as the executor imports it

    from om2w_tui.executors.ray import RayExecutor

    ex = RayExecutor(tmp_path / "out", cluster.address)
    try:
        assert ray.util.get_node_ip_address() == "127.0.0.1"   # the driver too: not the machine's other address
        w = await ex.start_worker(0)
        assert w.info["shared"] is True and w.pid and psutil.pid_exists(w.pid)
        group = os.getpgid(w.pid)
        assert await w.send(Pause())          # no episode: the worker ignores it, the actor answers
        w.kill_group()
        assert w.killed and not await w.send(Resume())
        ev = await asyncio.wait_for(w.next_event(), 30)
        assert isinstance(ev, Exited) and w.exited
        deadline = time.monotonic() + 10    # the worker below `sh` is reaped by init, not at once
        while (left := _alive_in_group(group)) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert not left
        with pytest.raises(ray.exceptions.RayActorError):
            await asyncio.wait_for(w.actor.send.remote(Pause()), 30)
    finally:
        ex.shutdown()
    assert not list((tmp_path / "out").glob(".om2w-ray-probe-*"))


def _alive_in_group(group: int) -> list[int]:
    alive = []
    for p in psutil.process_iter(["status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) == group:
                alive.append(p.pid)
        except (OSError, psutil.Error):
            continue
    return alive


def test_a_two_arm_campaign_runs_on_the_cluster_each_lane_a_run_folder_with_files_shipped(cluster, tmp_path):
    """A campaign (`oracle` against `oracle-weak`, two offline tasks) with `executor = "ray"`: one executor for every
    lane's units, each lane's files shipped back into its own folder (OM2W_RAY_SHIP=1), every unit settled once."""
    from om2w_tui.benchmarks.conformance import check_run

    out, plan = tmp_path / "study", tmp_path / "plan.toml"
    ids = ["offline_wiki_search_08", "offline_booking_reserve_12"]   # oracle-weak fails the reservation
    plan.write_text(f'bench = "offline"\ntask-ids = {json.dumps(ids)}\nout = "{out}"\nworkers = 2\n'
                    f'pace_cooldown = 1\nexecutor = "ray"\nray_address = "{cluster.address}"\n\n'
                    '[arms.good]\nmodel = "oracle"\n\n[arms.weak]\nmodel = "oracle-weak"\n')
    r = cli("campaign", str(plan), "--no-ui", env={**LOOPBACK, "OM2W_RAY_SHIP": "1"}, timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for lane, right in (("good", [True, True]), ("weak", [True, False])):
        rows = records(out / lane)
        assert_settled_once(rows, ids)
        # the settling row's verdict (a retried attempt before it has none)
        assert [next(x["correct"] for x in reversed(rows) if x["task_id"] == tid) for tid in ids] == right, rows
        assert check_run(out / lane) == []                # the evaluator reads each lane as a local run's
        for tid, acted in zip(ids, right, strict=True):   # oracle-weak's wrong answer is `done` at once
            assert bool(check_task_folder(out / lane / tid)["action_history"]) == acted
            assert [p.name for p in (out / lane / tid).glob(".*")] == [ATTEMPT_MARK]   # no shipping temporary
        assert json.loads((out / lane / "run.json").read_text())["config"]["executor"] == "ray"
    # one pacer for both lanes: one episode at a time on a site whatever its arm, the cooldown between them
    no_overlap_per_site(records(out / "good") + records(out / "weak"), 1.0)
    assert (out / "campaign.json").is_file() and not list(out.glob(".om2w-ray-probe-*"))
    assert chromium_left(out / "good") == chromium_left(out / "weak") == chromium_left(out) == []


def test_a_node_lost_mid_episode_loses_nothing_the_episode_retried_elsewhere_its_steps_kept(cluster, tmp_path):
    """The last test of the module: it removes one of the two browser nodes, the one running the episode (one slot:
    the longest task goes first), with --out shared (written in place, as the probe finds)."""
    from om2w_tui.benchmarks.conformance import check_run

    out = tmp_path / "lost"
    victim_task = "offline_wiki_port_06"   # five steps: the longer task, dispatched first
    ids = [victim_task, "offline_booking_rates_11"]
    p = popen(*ray_run(cluster, out, "--model", "oracle", "--task-ids", ",".join(ids), "--workers", "1",
                       "--pace-cooldown", "0"))   # inherits os.environ: the fixture put the loopback setting in it
    try:
        deadline = time.monotonic() + 120
        while steps_on_disk(out / victim_task) < 1:
            assert p.poll() is None, p.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no first step"
            time.sleep(0.2)
        holders = nodes_running(out, cluster)
        assert len(holders) == 1
        cluster.remove_node(holders.pop(), allow_graceful=False)
        stdout, stderr = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, stderr[-3000:]
    rows = records(out)
    assert_settled_once(rows, ids)
    mine = [r for r in rows if r["task_id"] == victim_task]
    assert [(r["status"], r["error_kind"]) for r in mine] == [("error", "infra"), ("done", None)], mine
    assert mine[0]["steps"] >= 1 and mine[1]["correct"]
    kept = check_task_folder(out / victim_task / "attempts" / "1", victim_task)
    assert kept["action_history"]                       # the lost attempt's steps, kept as an earlier attempt
    assert check_run(out) == []
    assert json.loads((out / "run.json").read_text())["config"]["executor"] == "ray"
    assert chromium_left(out) == []
