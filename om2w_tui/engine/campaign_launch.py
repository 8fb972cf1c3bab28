"""A campaign from its plan to a running scheduler: its checks (its folder, the shared settings once, the live judge's
endpoint once, each lane as a run, each distinct model asked once) and `open_campaign`, what `launch.open_run` opens
for a Preflight with lanes: the sites and the oracle served once, the campaign's lock and each lane's,
`campaign.json` and each lane's `run.json`, one executor and one scheduler for every lane's units, and what runs
beside them (the live judge: each lane judged into its own folder)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence

from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.campaign_folder import LOCK_FILE
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.control import Run
from om2w_tui.engine.control_socket import ControlServer
from om2w_tui.engine.events import Sink
from om2w_tui.engine.lanes import Lane
from om2w_tui.engine.launch import (
    Check,
    Companion,
    LanePreflight,
    Preflight,
    UsageError,
    _load_selection,
    check_pace_ready,
    emit_to,
    hold_folder,
    listen_on,
    live_offline_task,
    make_executor,
    probe_endpoint,
    ray_here,
    reference_judge,
    run_checks,
    start_beside,
    write_manifest,
)
from om2w_tui.engine.machine import slot_room
from om2w_tui.engine.plan import Campaign, resume_problem, said, write_plan
from om2w_tui.engine.runlock import check_free
from om2w_tui.engine.scheduler import Scheduler
from om2w_tui.engine.settings import key_variables
from om2w_tui.run_folder import RunFolder
from om2w_tui.secret import EndpointURL
from om2w_tui.words import plural

# rows of a lane's own checks the campaign shows (the rest are the shared checks', said once), and any that failed
_LANE_ROWS = ("settings", "tasks", "out folder", "model endpoint", "resume")


def campaign_checks(campaign: Campaign, *, check_model: bool = True, companions: Sequence[Companion] = ()
                    ) -> tuple[Preflight | None, list[Check]]:
    """A campaign's checks: its folder (the resume rule, its lock), the shared settings as a run's (task selection,
    pacing, the browser started once, the live judge's endpoint asked once), then each lane as a run (its settings,
    its tasks with its step budget, its folder and the files a companion writes there, what it has settled), each
    distinct endpoint and model asked once. A lane's row is named by it. Writes nothing."""
    cfg = campaign.config
    campaign = dataclasses.replace(campaign, selection=whole_selection(campaign.settings))
    # task files that cannot be read are the tasks check's to say (as a new campaign's and a run's are), not a change
    problem = resume_problem(campaign, unread=campaign.selection is None) or (
        check_free(cfg.out, LOCK_FILE).replace("another run", "another campaign") if cfg.out.is_dir() else "")
    arms = list(dict.fromkeys(lane.arm for lane in campaign.lanes))
    checks: list[Check] = [("campaign", not problem, problem or f"{cfg.out}: arms {', '.join(arms)} x "
                            f"{plural(campaign.plan.repeats, 'repeat')}: {len(campaign.lanes)} lanes "
                            f"({', '.join(lane.name for lane in campaign.lanes)})")]
    shared, shared_checks = run_checks(cfg, check_model=False, ask_model=False, check_judge=check_model,
                                       campaign=True)
    # a campaign-wide setting's problem named where the plan set it (its file and line), not as a run's flag
    checks += [(what, ok, detail if ok else said(campaign, detail)) for what, ok, detail in shared_checks
               if what != "resume"]
    if shared is None:
        return None, checks
    asked: set[tuple[str, str, str]] = set()
    lanes = []
    for lane in campaign.lanes:
        model = (str(lane.config.endpoint) if not lane.config.builtin_oracle else "", lane.config.model,
                 lane.config.api_key_env)
        pre, rows = run_checks(lane.config, check_model=check_model and model not in asked, ask_model=False,
                               known=shared.resolved, companions=companions, check_judge=False, lane=True)
        asked.add(model)
        # a lane's row that says what the shared one said (its tasks, its warning) is said once, by the shared one
        said_once = {(what, ok, detail) for what, ok, detail in shared_checks}
        checks += [(f"{lane.name}: {what}", ok, detail if ok else f"lane {lane.name} (arm {lane.arm}): {detail}")
                   for what, ok, detail in rows
                   if (what in _LANE_ROWS or not ok) and (what, ok, detail) not in said_once]
        if pre is not None:
            lanes.append(LanePreflight(lane.name, lane.arm, lane.repeat, pre))
    if not all(ok for _, ok, _ in checks) or len(lanes) != len(campaign.lanes):
        return None, checks
    return dataclasses.replace(shared, settled=sum(lane.pre.settled for lane in lanes), checks=checks,
                               campaign=campaign, lanes=tuple(lanes), companions=tuple(companions)), checks


def whole_selection(settings: RunConfig) -> tuple[str, ...] | None:
    """The ids of the tasks every lane runs, on every node (the campaign's settings: no node's share), as
    campaign.json records them; None where they cannot be loaded (the shared checks say why)."""
    try:
        return tuple(t.task_id for t in _load_selection(settings)[2])
    except UsageError:
        return None


def campaign_preflight(campaign: Campaign, *, check_model: bool = True, companions: Sequence[Companion] = ()
                       ) -> Preflight:
    """`campaign_checks` as `preflight` is `run_checks`: raises UsageError with the first problem."""
    pre, checks = campaign_checks(campaign, check_model=check_model, companions=companions)
    if pre is None:
        raise UsageError(next(detail for _, ok, detail in checks if not ok))
    return pre



@contextlib.asynccontextmanager
async def open_campaign(pre: Preflight, sinks: list[Sink], *, guard_ends_run: bool) -> AsyncIterator[Run]:
    """`open_run` for a campaign: the sites and the oracle served once for every lane, the campaign's lock and each
    lane's run lock, campaign.json and each lane's run.json written, one executor and one scheduler for every lane's
    units; the campaign's folder and each lane's listen on a control socket (ctl and attach reach the campaign from
    any of them)."""
    assert pre.campaign is not None
    cfg = pre.run_config
    stack = contextlib.ExitStack()
    try:
        base_urls: dict[str, str] = {}
        local_names: dict[str, str] = {}
        if cfg.bench == "offline":
            from om2w_tui.offline import OfflineSuite  # the offline suite only when a campaign uses it

            suite = stack.enter_context(OfflineSuite())
            base_urls = suite.base_urls
            local_names = {site_key(url): name for name, url in base_urls.items()}
        oracle: EndpointURL | None = None
        if any(lane.pre.config.builtin_oracle for lane in pre.lanes):
            from om2w_tui.offline import OracleServer  # the oracle only when it is served here: one for every lane

            all_tasks = suite.tasks() if cfg.bench == "offline" else [t.to_dict() for t in pre.tasks]
            oracle = EndpointURL(stack.enter_context(OracleServer(all_tasks)).url)
        lanes: list[Lane] = []
        endpoints: list[EndpointURL] = []
        for lp in pre.lanes:
            lane_cfg = lp.pre.run_config
            endpoint = oracle if lane_cfg.builtin_oracle and oracle is not None else lane_cfg.endpoint
            endpoints.append(endpoint)
            tasks = [live_offline_task(t, base_urls) for t in lp.pre.tasks] if base_urls else lp.pre.tasks
            lanes.append(Lane(lp.name, lp.arm, lp.repeat, lane_cfg, tuple(tasks), endpoint.for_client()))
        check_pace_ready(cfg)
        # the campaign's folder held (and its socket named) as a run's: whole by the campaign's lock; by a shard of a
        # campaign split with --shard as a run's shard holds a shared folder (the folder's lock shared, its own
        # exclusive), so `ctl OUT` and `attach OUT` reach each shard by its socket there
        campaign_folder = RunFolder(cfg.out, cfg.shard)
        hold_folder(campaign_folder, stack, "" if cfg.shard else LOCK_FILE)
        folders = [RunFolder(lane.config.out, cfg.shard) for lane in lanes]
        for folder in folders:
            hold_folder(folder, stack)
        if problem := resume_problem(pre.campaign):   # again, under the locks: the folder as it is now
            raise UsageError(problem)
        write_plan(pre.campaign)
        for lp, endpoint in zip(pre.lanes, endpoints, strict=True):
            write_manifest(lp.pre, {"endpoint": str(endpoint), "campaign": str(cfg.out), "lane": lp.name})
        withhold = tuple(dict.fromkeys(v for lane in lanes for v in key_variables(lane.config)))
        executor = make_executor(cfg, stack, withhold)
        asked = list(dict.fromkeys((endpoint, lane.config.model, lane.config.api_key_env)
                                   for endpoint, lane in zip(endpoints, lanes, strict=True)))

        async def probe() -> bool:   # every lane's model answers (the breaker's probe)
            for endpoint, model, _ in asked:
                lane_cfg = next(lane.config for lane in lanes if lane.config.model == model)
                if not await asyncio.to_thread(probe_endpoint, endpoint, model, lane_cfg.api_key()):
                    return False
            return True

        servers = [ControlServer(campaign_folder),   # each lane's knows its lane (a task's episode there is its own)
                   *(ControlServer(folder, lane.name) for folder, lane in zip(folders, lanes, strict=True))]
        # the live judge (--judge-url): one for every lane, each lane judged into its own folder
        emit = emit_to([*sinks, *servers])
        selection = [t.task_id for t in pre.tasks]   # this shard's share, every lane's (a shared setting)
        beside = [c for c in (companion.open_lanes(cfg, [(lane.name, lane.config.out) for lane in lanes], emit,
                                                   selection) for companion in pre.companions) if c is not None]
        judge = reference_judge if any("reference_answer" in t.raw for t in pre.tasks) else None
        shared_tasks = [live_offline_task(t, base_urls) for t in pre.tasks] if base_urls else pre.tasks
        run = Scheduler(cfg, shared_tasks, executor, [*sinks, *servers, *beside], judge=judge, probe=probe,
                        endpoint=lanes[0].endpoint, guard_ends_run=guard_ends_run, site_names=local_names,
                        slot_room=lambda: slot_room(cfg.slot_memory) if cfg.executor != "ray" or ray_here(cfg)
                        else None, lanes=lanes)
        async with contextlib.AsyncExitStack() as listening:
            await listen_on(servers, run, sinks, listening)
            yield await start_beside(beside, run, listening)
    finally:
        # as open_run's: in a thread, shielded
        await asyncio.shield(asyncio.to_thread(stack.close))
