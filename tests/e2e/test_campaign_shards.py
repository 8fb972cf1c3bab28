"""A campaign split by `--shard` across two processes on one folder, beside a plain run, all three sharing one
`--pace-dir` on the same sites (one offline suite and one oracle served by the test, as runs on one node meet on
the same live sites): `ctl OUT pause --arm` holding the arm on both shards and `ctl OUT status` showing each, every
unit settled exactly once over the shards, each task's units on one shard, one episode
at a time per site over all three processes with the cooldown between them, each shard's workers' logs its own, a
shard run again finding its share settled, and `report`, `tasks health` and `check` reading the campaign whole (every
shard's results). Then, in process: a shard's socket in the campaign's folder, its live judge opened with its
share only, and a campaign on Ray (its executor built, not run) withholding every lane's key."""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.engine.campaign_launch import campaign_checks, campaign_preflight, open_campaign
from om2w_tui.engine.plan import read_plan, resolve
from om2w_tui.engine.shared_pacing import lock_names
from om2w_tui.engine.socket_trust import listeners
from om2w_tui.offline import OfflineSuite, OracleServer

from .helpers import cli, popen, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]
COOLDOWN = 1.0
# two sites (two ports of one suite), the booking site's two tasks on shard 0, the shop's on shard 1 (sites are given
# out by task count, then name); oracle-weak fails the reservation
IDS = ["offline_booking_rates_11", "offline_booking_reserve_12", "offline_shop_search_01"]
PLAN = """\
tasks = "{tasks}"
vllm = "{vllm}"
out = "{out}"
workers = 2
pace_cooldown = {cooldown}
pace_dir = "{pace}"
retries = 0

[arms.good]
model = "oracle"

[arms.weak]
model = "oracle-weak"
"""


def rows(folder: Path, pattern: str = "results*.jsonl") -> list[dict[str, Any]]:
    return [json.loads(x) for p in sorted(folder.glob(pattern)) for x in p.read_text().splitlines() if x.strip()]


def hold_site(pace: Path, url: str) -> int:
    """The site's lock in the pace dir held, as a run holds it while its episode runs there: -> the fd (close it to
    let go)."""
    name, = lock_names(site_key(url), [url])
    pace.mkdir(exist_ok=True)
    fd = os.open(pace / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def shard_lines(stdout: str) -> dict[str, str]:
    """`ctl OUT status` on a split campaign: each shard's section of lines, by its name."""
    sections: dict[str, str] = {}
    for block in re.split(r"^(?=shard-\d+-of-\d+:)", stdout, flags=re.M):
        if block.strip():
            sections[block.split(":", 1)[0]] = block
    return sections


def pause_one_arm_on_both_shards(out: Path, plain: Path, procs: list[Any], held: dict[int, int]) -> None:
    """`ctl OUT pause --arm weak` once both shards listen (no episode started: the pace dir holds their sites) holds
    the arm on both; shard 1's site let go, its `good` unit runs and its `weak` one waits while the site is free
    (the plain run's episode there and a cooldown after it); `resume --arm weak` lets it go on both."""
    wait_for(lambda: len(listeners(out)) == 2, 240, what="both shards listening")
    assert all(p.poll() is None for p in procs)
    paused = cli("ctl", str(out), "pause", "--arm", "weak", timeout=60)
    assert paused.returncode == 0, paused.stdout + paused.stderr
    assert paused.stdout.splitlines() == [f"shard-{k}-of-2: arm weak: held (its running episodes go on)"
                                          for k in (0, 1)], paused.stdout
    os.close(held.pop(1))
    shard1 = out / "good" / "results.shard-1-of-2.jsonl"
    wait_for(lambda: shard1.exists() and bool(rows(out / "good", shard1.name)) and
             any(r["task_id"] == IDS[2] for r in rows(plain)), 240, procs[1], "shard 1's good unit and the plain run")
    last = max(float(r["finished_at"]) for r in [*rows(out / "good", shard1.name), *rows(plain)]
               if r["task_id"] == IDS[2])
    wait_for(lambda: time.time() > last + 3 * COOLDOWN, 30, what="the shop site free and cooled")
    status = cli("ctl", str(out), "status", timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr
    shards = shard_lines(status.stdout)
    assert sorted(shards) == ["shard-0-of-2", "shard-1-of-2"], status.stdout
    assert "lane weak (arm weak, repeat 1): 0/2 done (0 before), 0 errors, held" in shards["shard-0-of-2"], \
        status.stdout
    assert "lane good (arm good, repeat 1): 1/1 done" in shards["shard-1-of-2"] and \
        "lane weak (arm weak, repeat 1): 0/1 done (0 before), 0 errors, held" in shards["shard-1-of-2"], status.stdout
    assert not rows(out / "weak")   # held on both shards: no unit of the arm ran, shard 1's site free as it was
    as_json = json.loads(cli("ctl", str(out), "status", "--json", timeout=60).stdout)
    assert [(x["shard"], x["answered"], x["total"]) for x in as_json["shards"]] == \
        [("shard-0-of-2", True, 4), ("shard-1-of-2", True, 2)]
    resumed = cli("ctl", str(out), "resume", "--arm", "weak", timeout=60)
    assert resumed.returncode == 0 and resumed.stdout.count("arm weak: goes on") == 2, resumed.stdout


def test_two_shards_of_a_campaign_and_a_run_on_one_pace_dir_settle_every_unit_once_one_episode_per_site(tmp_path):
    out, pace, plain = tmp_path / "study", tmp_path / "pace", tmp_path / "plain"
    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        tasks = tmp_path / "tasks.json"
        tasks.write_text(json.dumps([t for t in suite.tasks() if t["task_id"] in IDS]))
        plan = tmp_path / "plan.toml"
        plan.write_text(PLAN.format(tasks=tasks, vllm=oracle.url, out=out, cooldown=COOLDOWN, pace=pace))
        # both sites held in the pace dir, as another run's episode holds one: nothing starts until the test lets go
        urls = {t["task_id"]: t["website"] for t in suite.tasks() if t["task_id"] in IDS}
        held = {k: hold_site(pace, urls[tid]) for k, tid in ((0, IDS[0]), (1, IDS[2]))}
        procs = [popen("campaign", str(plan), "--no-ui", "--shard", f"{k}/2") for k in (0, 1)]
        procs.append(popen("run", "--no-ui", "--tasks", str(tasks), "--model", "oracle", "--vllm", oracle.url,
                           "--workers", "2", "--pace-cooldown", str(COOLDOWN), "--pace-dir", str(pace),
                           "--out", str(plain)))
        try:
            pause_one_arm_on_both_shards(out, plain, procs, held)
        except BaseException:
            for p in procs:   # not left running behind a failed test
                p.kill()
            raise
        finally:
            for fd in held.values():
                os.close(fd)
        outs = [p.communicate(timeout=360) for p in procs]
        for p, (o, e) in zip(procs, outs, strict=True):
            assert p.returncode == 0, (o[-3000:], e[-3000:])
        # a shard run again finds its share settled (nothing runs twice: the counts below are after it)
        again = cli("campaign", str(plan), "--no-ui", "--shard", "1/2", timeout=180)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        for lane in ("good", "weak"):
            assert f"lane {lane} (arm {lane}, repeat 1): 1/1 done (1 before)" in again.stdout, again.stdout[-3000:]
        website = {t["task_id"]: site_key(t["website"]) for t in suite.tasks() if t["task_id"] in IDS}

    shard_of: dict[str, set[int]] = defaultdict(set)
    units: list[tuple[str, str, dict[str, Any]]] = []
    for lane in ("good", "weak"):
        assert not (out / lane / "results.jsonl").exists()
        for k in (0, 1):
            for r in rows(out / lane, f"results.shard-{k}-of-2.jsonl"):
                shard_of[r["task_id"]].add(k)
                units.append((lane, r["task_id"], r))
    assert sorted((lane, tid) for lane, tid, _ in units) == sorted((lane, tid) for lane in ("good", "weak")
                                                                  for tid in IDS)   # every unit exactly once
    assert all(len(ks) == 1 for ks in shard_of.values()), shard_of                  # a task's units on one shard
    assert {tid: k for tid, (k,) in shard_of.items()} == {IDS[0]: 0, IDS[1]: 0, IDS[2]: 1}
    assert all(r["status"] == "done" for _, _, r in units)

    # one episode at a time on a site over both shards and the plain run, the cooldown between them
    episodes = [(website[tid], r) for _, tid, r in units] + [(website[r["task_id"]], r) for r in rows(plain)]
    assert len(episodes) == 3 * len(IDS)
    by_site: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for site, r in episodes:
        by_site[site].append(r)
    for site, rs in by_site.items():
        rs.sort(key=lambda r: float(r["started_at"]))
        for a, b in zip(rs, rs[1:]):
            assert float(b["started_at"]) >= float(a["finished_at"]) + COOLDOWN - 0.05, (site, a, b)

    # and within the campaign its pairing holds: no other task's unit between a task's units on its site. Not checked
    # on shard 0's site: its `weak` arm was paused there while `good` went on, so how far `good` got before the resume
    # (when the started tasks' `weak` units go first: tests/unit/test_lanes.py) is the machine's timing
    for site in {website[IDS[2]]}:
        order = [tid for _, tid, r in sorted(units, key=lambda u: float(u[2]["started_at"])) if website[tid] == site]
        runs = [tid for k, tid in enumerate(order) if k == 0 or order[k - 1] != tid]
        assert len(runs) == len(set(runs)), (site, order)

    # each shard's workers log into their own files in the campaign's folder (shards number their slots alike)
    logs = {p.name for p in out.glob("worker_*.log")}
    assert logs and all(".shard-" in name for name in logs), logs
    assert {name.split(".")[1] for name in logs} == {"shard-0-of-2", "shard-1-of-2"}

    report = cli("report", str(out), "--format", "json", timeout=120)
    assert report.returncode == 0, report.stderr
    runs = json.loads(report.stdout)["runs"]
    assert sorted((Path(x["out"]).name if "out" in x else x.get("name"), x["attempts"]) for x in runs) == \
        [("good", len(IDS)), ("weak", len(IDS))], report.stdout[:3000]
    health = cli("tasks", "health", str(out), "--format", "json", timeout=120)
    assert health.returncode == 0, health.stderr
    for lane in ("good", "weak"):
        check = cli("check", str(out / lane), timeout=120)
        assert check.returncode == 0, check.stdout + check.stderr


class Selection:
    """Stands in for the live judge as a launch companion: what each campaign opens it with (its lanes, the
    selection it may catch up on)."""

    def __init__(self) -> None:
        self.given: list[tuple[list[str], list[str]]] = []

    def check(self, cfg: Any) -> str:
        return ""

    def open(self, cfg: Any, emit: Any, selection: Any) -> None:
        return None

    def open_lanes(self, cfg: Any, lanes: Any, emit: Any, selection: Any) -> None:
        self.given.append(([name for name, _ in lanes], sorted(selection)))


class FakeRay:
    """Stands in for RayExecutor's construction (no cluster here): what a campaign builds it with."""
    made: list[tuple[Path, tuple[str, ...], str]] = []

    def __init__(self, out: Path, address: str | None = None, num_cpus: float = 1.0, withhold: tuple[str, ...] = (),
                 shard: str = ""):
        self.address = address or "auto"
        FakeRay.made.append((Path(out), tuple(withhold), shard))

    def browsers(self) -> int:
        return 64

    def shutdown(self) -> None:
        pass


async def test_a_shard_of_a_campaign_listens_in_its_folder_and_on_ray_withholds_every_lanes_key(tmp_path, monkeypatch):
    out = tmp_path / "study"
    plan = tmp_path / "plan.toml"
    plan.write_text(f'bench = "offline"\ntask-ids = ["offline_wiki_search_08", "offline_shop_search_01"]\n'
                    f'out = "{out}"\nworkers = 1\n\n'
                    '[arms.good]\nmodel = "oracle"\napi_key_env = "OM2W_KEY_GOOD"\n\n'
                    '[arms.weak]\nmodel = "oracle-weak"\napi_key_env = "OM2W_KEY_WEAK"\n')
    monkeypatch.setenv("OM2W_KEY_GOOD", "sk-good")
    monkeypatch.setenv("OM2W_KEY_WEAK", "sk-weak")
    judge = Selection()
    pre = campaign_preflight(resolve(read_plan(plan), {"shard": "1/2"}), check_model=False, companions=[judge])
    pre = dataclasses.replace(pre, config=dataclasses.replace(pre.config, executor="ray"))
    monkeypatch.setattr("om2w_tui.executors.ray.RayExecutor", FakeRay)
    FakeRay.made = []
    async with open_campaign(pre, [], guard_ends_run=True):
        # each shard listens in the campaign's folder by its own socket, as a shard of a run does in a run's
        assert [lst.socket for lst in listeners(out)] == [".om2w-control.shard-1-of-2.sock"]
        status = await asyncio.to_thread(cli, "ctl", str(out), "status", "--json", timeout=60)
        assert status.returncode == 0, status.stdout + status.stderr
        # the campaign's status on each shard: this one's (nothing started: the run is not), the other not running
        assert [(x["shard"], x["answered"], "total" in x) for x in json.loads(status.stdout)["shards"]] == \
            [("shard-0-of-2", False, False), ("shard-1-of-2", True, True)]
        # the same shard again, and the whole campaign, are refused while the shard holds the folder
        for shard in ({"shard": "1/2"}, {}):
            again, checks = campaign_checks(resolve(read_plan(plan), shard), check_model=False)
            assert again is None and any("another run is using this folder" in detail and "shard-1-of-2" in detail
                                         for _, ok, detail in checks if not ok), checks
    # the live judge (a companion) is opened with the shard's share only, every lane's: it catches up on no other's
    assert len(judge.given) == 1 and judge.given[0][0] == ["good", "weak"] and len(judge.given[0][1]) == 1
    # one executor for every lane's units, rooted in the campaign's folder, no worker inheriting any lane's key
    assert [(root, {"OM2W_KEY_GOOD", "OM2W_KEY_WEAK"} <= set(keys), shard) for root, keys, shard in FakeRay.made] \
        == [(out, True, "1/2")]   # and the shard, which names its workers' logs in the campaign's folder
