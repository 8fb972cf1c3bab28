"""From a RunConfig to a running scheduler, the same for every front end.

`preflight` checks everything that can be checked before anything is written (task file, filters, out folder,
Chromium, the model endpoint); `open_run` starts what the run needs (the offline sites, the oracle), writes the
manifest `run.json`, and yields a Scheduler. Bad input raises `UsageError`, which front ends show as it is and
turn into exit code 2.

What a front end runs beside its runs (the live judge, `evaluation/live_judge.py`) is a `Companion` it gives the
checks: launch checks it with the run and runs it with the run, knowing nothing of it (evaluation sits above the
engine: it reads what runs write)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import platform
import sys
import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from om2w_tui.benchmarks.dates import refresh_note
from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.benchmarks.tasks import (
    DEFAULT_MAX_STEPS,
    Task,
    TaskFileError,
    file_sha256,
    load_tasks,
    parse_tasks,
    read_task_list,
    read_task_text,
    select,
)
from om2w_tui.engine.chromium_check import check_starts
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.control import Run
from om2w_tui.engine.control_socket import ControlServer, ControlSocketError
from om2w_tui.engine.events import Event, Log, Sink
from om2w_tui.engine.machine import slot_room, starts_at_once, too_many_workers
from om2w_tui.engine.measured import earlier_task_files, folder_changes, kept_in_manifest, refusal, some
from om2w_tui.engine.model_check import WARNING as WARNING  # re-exported: the front ends show the warning state
from om2w_tui.engine.model_check import Check as Check  # re-exported: a check row, as the front ends show it
from om2w_tui.engine.model_check import model_checks
from om2w_tui.engine.out_folder import check_out
from om2w_tui.engine.plan import Campaign, unknown_arms
from om2w_tui.engine.redact import redact_argv
from om2w_tui.engine.results import EpisodeRecord, read_manifest, read_results
from om2w_tui.engine.runlock import OutFolderBusy, RunLock
from om2w_tui.engine.scheduler import Judge, Scheduler
from om2w_tui.engine.settings import BY_KEY, check_config, key_variables, unpaced
from om2w_tui.engine.sharding import run_lock, select_shard
from om2w_tui.engine.shared_pacing import check_pace_dir, check_pace_files, pace_names, ready_pace_dir
from om2w_tui.engine.start_rate import PacedStarts
from om2w_tui.episode.browser import BrowserNotFound, check_browser_settings, find_chromium, resolve_browser
from om2w_tui.episode.instruction import check_template
from om2w_tui.executors.local import LocalExecutor
from om2w_tui.executors.ray import check_address, on_loopback, ray_missing
from om2w_tui.files import write_json_atomic
from om2w_tui.resources import data_dir, default_task_file
from om2w_tui.run_folder import RunFolder
from om2w_tui.secret import EndpointURL
from om2w_tui.words import plural


class UsageError(ValueError):
    """Input the run cannot start with; the message names the file, line or flag and what to do."""


class CompanionRun(Sink, Protocol):
    """A companion for one run: a sink of its events, started once the run's sinks listen and closed with the run;
    `hold(run)` is the run its front end holds then (the live judge's lets it finish its queue after the run)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def hold(self, run: Run) -> Run: ...


class Companion(Protocol):
    """What a front end runs beside its runs (the live judge: evaluation/live_judge.py's LIVE_JUDGE), given to
    `run_checks` and carried by the Preflight to `open_run`."""

    def check(self, cfg: RunConfig) -> str:
        """'' or what refuses the run (a file of its own in the out folder that it must not write through)."""
        ...

    def open(self, cfg: RunConfig, emit: Callable[[Event], None], selection: Collection[str]) -> CompanionRun | None:
        """Its service for this run (None: `cfg` asks for none); `emit` tells every sink of the run; `selection` the
        ids of the tasks this process runs (its shard's share, after the filters)."""
        ...

    def open_lanes(self, cfg: RunConfig, lanes: Sequence[tuple[str, Path]], emit: Callable[[Event], None],
                   selection: Collection[str]) -> CompanionRun | None:
        """Its service for a campaign (`cfg` its shared settings; `lanes` each lane's name and run folder: a lane's
        events carry its name; `selection` as `open`'s, every lane's)."""
        ...


@dataclass(frozen=True)
class Resolved:
    """What the checks found for the settings they leave to be found: the Chromium (`--chromium` unset) and the user
    agent (`auto`). The checks never write them into the config they check (doctor lists only what was given)."""
    chromium: str | None = None
    user_agent: str | None = None


@dataclass(frozen=True)
class Excluded:
    """What --exclude-tasks left out: the selected tasks it named, and the ids it names that the file lacks."""

    left_out: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    def words(self, cfg: RunConfig) -> str:
        """`, 2 left out by --exclude-tasks FILE: a, b (not in the task file, ignored: x)`, or ''."""
        if cfg.exclude_tasks is None:
            return ""
        unknown = f" (not in the task file, ignored: {some(self.unknown)})" if self.unknown else ""
        named = f": {some(self.left_out)}" if self.left_out else ""
        return f", {len(self.left_out)} left out by --exclude-tasks {cfg.exclude_tasks}{named}{unknown}"


@dataclass(frozen=True)
class LanePreflight:
    """A campaign's lane as checked: its name, arm and repeat, and its own preflight (its config, its tasks loaded
    with its settings, what its folder holds settled)."""
    name: str
    arm: str
    repeat: int
    pre: Preflight


@dataclass
class Preflight:
    config: RunConfig                                   # as given, never rewritten by the checks
    tasks: list[Task]
    task_file: Path
    settled: int
    checks: list[Check] = field(default_factory=list)   # (what, ok | WARNING, detail)
    resolved: Resolved = field(default_factory=Resolved)
    companions: tuple[Companion, ...] = ()              # run beside the run (checked with it)
    excluded: Excluded = field(default_factory=Excluded)   # what --exclude-tasks left out
    campaign: Campaign | None = None                    # a campaign's plan (`config` its shared settings)
    lanes: tuple[LanePreflight, ...] = ()               # a campaign's lanes, each checked as a run
    changes: tuple[str, ...] = ()                       # what --resume-changed lets differ from the run in `out`

    @property
    def run_config(self) -> RunConfig:
        """The config the run uses: the given one with what the checks resolved (the Chromium, the user agent)."""
        return resolved_config(self.config, self.resolved)


def resolved_config(cfg: RunConfig, resolved: Resolved) -> RunConfig:
    """A copy of `cfg` with what the checks found put in (the given config is left as it is)."""
    return dataclasses.replace(cfg, chromium=resolved.chromium or cfg.chromium,
                               user_agent=resolved.user_agent or cfg.user_agent)


def _stand_in(name: str) -> str:
    return f"http://{name}.offline.invalid"


def offline_tasks(path: Path | None = None, max_steps: int = DEFAULT_MAX_STEPS) -> tuple[Path, list[Task]]:
    """The offline suite's tasks (the shipped file, or a file of the same kind): their `{shop}`-style placeholders
    become stand-in addresses until the sites run and `live_offline_task` puts the real ones in. `max_steps`: the
    run's budget (a task's own wins)."""
    from om2w_tui.offline import SITE_NAMES, TASKS_TEMPLATE  # the offline suite only when a run uses it

    path = Path(path or TASKS_TEMPLATE)
    text = read_task_text(path)
    for name in SITE_NAMES:
        text = text.replace("{" + name + "}", _stand_in(name))
    return path, parse_tasks(path, text, max_steps)


def live_offline_task(task: Task, base_urls: dict[str, str]) -> Task:
    raw = json.dumps(task.to_dict())
    for name, url in base_urls.items():
        raw = raw.replace(_stand_in(name), url)
    return dataclasses.replace(Task.from_dict(json.loads(raw), task.max_steps), digest=task.digest)   # the file's


def check_endpoint(endpoint: EndpointURL, model: str, api_key: str) -> str:
    """'' when the run's model endpoint answers the OpenAI API and serves `model` (endpoint.py's one question,
    within its deadline); else what is wrong and what to do, naming --vllm and --model."""
    from om2w_tui.endpoint import check_endpoint as ask  # httpx (slow to import) only when an endpoint is checked

    return ask(endpoint, model, api_key)


def probe_endpoint(endpoint: EndpointURL, model: str, api_key: str, timeout: float = 30.0) -> bool:
    """Whether the model answers a one-token chat completion within `timeout` in all (the circuit breaker's probe: a
    server can list its models and still fail every completion)."""
    from om2w_tui.endpoint import post_json, run_sync  # as above

    status = run_sync(post_json(endpoint.join("chat/completions"), api_key,
                                {"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1},
                                timeout))
    return status == 200


def _check_settings(cfg: RunConfig) -> str:
    """Every value within its declared bounds (engine/settings.py), then what needs more than a bound."""
    if problem := check_config(cfg):
        return problem
    if problem := unknown_arms([cfg.arm]):
        return problem
    if cfg.executor == "ray" and (problem := ray_missing(cfg.ray_address) or check_address(cfg.ray_address)):
        return problem
    # workers on this machine (local, or a Ray node on its loopback): no more than its memory holds (each about
    # half a gigabyte with its Chromium)
    if (cfg.executor != "ray" or ray_here(cfg)) and (problem := too_many_workers(cfg.workers, cfg.slot_memory)):
        return problem
    return _check_judge_settings(cfg)


def ray_here(cfg: RunConfig) -> bool:
    """A Ray cluster on this machine's loopback: its actors, their workers and browsers share this machine."""
    return on_loopback(cfg.ray_address or os.environ.get("RAY_ADDRESS") or "")


def _bench_default_note(cfg: RunConfig, key: str) -> str:
    """` (the offline benchmark's default)` where the value is its benchmark's own default, not a run's."""
    setting = BY_KEY[key]
    value = getattr(cfg, key)
    return f" (the {cfg.bench} benchmark's default)" if value == setting.default_for(cfg.bench) != setting.default \
        else ""


def _check_judge_settings(cfg: RunConfig) -> str:
    """Judging as the run goes needs both the endpoint and the model."""
    if bool(cfg.judge_url) != bool(cfg.judge_model):
        given, missing = ("--judge-url", "--judge-model") if cfg.judge_url else ("--judge-model", "--judge-url")
        return f"{given} needs {missing} too (the judge's endpoint and its served model)"
    return ""


def check_judge_endpoint(cfg: RunConfig) -> str:
    """'' when the judge's endpoint serves --judge-model; the messages name the judge's flags."""
    if cfg.judge_url is None:
        return "--judge-url: not given"
    from om2w_tui.endpoint import RUN_JUDGE_FLAGS
    from om2w_tui.endpoint import check_endpoint as ask  # httpx (slow to import) only when an endpoint is checked

    return ask(cfg.judge_url, cfg.judge_model or "", cfg.judge_api_key(), RUN_JUDGE_FLAGS)


def _exclude(cfg: RunConfig, tasks: list[Task], chosen: list[Task]) -> tuple[list[Task], Excluded]:
    """The selection less the tasks --exclude-tasks names; raises TaskFileError for a file that cannot be read."""
    if cfg.exclude_tasks is None:
        return chosen, Excluded()
    ids = read_task_list(cfg.exclude_tasks, "--exclude-tasks")
    known = {t.task_id for t in tasks}
    gone = set(ids)
    return ([t for t in chosen if t.task_id not in gone],
            Excluded(tuple(t.task_id for t in chosen if t.task_id in gone), tuple(i for i in ids if i not in known)))


def _load_selection(cfg: RunConfig) -> tuple[Path, list[Task], list[Task], Excluded]:
    """(task file, all its tasks, the selected ones, what --exclude-tasks left out); raises UsageError."""
    try:
        if cfg.bench == "offline":
            task_file, tasks = offline_tasks(cfg.tasks, cfg.max_steps)
        else:
            # without --tasks, the benchmark's file shipped in data/ (as the seed's defaults were)
            found = cfg.tasks or default_task_file(cfg.bench)
            if found is None or (cfg.tasks is None and not found.exists()):
                raise UsageError(f"--bench {cfg.bench} needs --tasks PATH (the benchmark's task file; "
                                 f"`om2w-tui tasks fetch {cfg.bench}` puts it in {data_dir()}; "
                                 f"use --bench offline for the built-in suite)")
            task_file = found
            tasks = load_tasks(task_file, cfg.max_steps)   # each task's step budget decided here, once
        chosen = select(tasks, task_ids=cfg.task_ids, levels=cfg.levels, sites=cfg.sites, limit=cfg.limit)
        # this node's share (--shard) of the selection, its sites assigned on the whole file: the same on every node
        chosen = select_shard(tasks, cfg.shard, chosen)
        chosen, excluded = _exclude(cfg, tasks, chosen)
    except TaskFileError as e:
        raise UsageError(str(e)) from None
    if not chosen:
        raise UsageError(f"no task left after the filters (--task-ids/--level/--site/--limit"
                         f"{', --shard ' + cfg.shard if cfg.shard else ''}"
                         f"{', --exclude-tasks' if cfg.exclude_tasks else ''}) out of {len(tasks)} in {task_file}; "
                         f"loosen them")
    return Path(task_file), tasks, chosen, excluded


def _check_browser(cfg: RunConfig, add: Callable[[str, str, str], bool]) -> tuple[bool, Resolved]:
    """The Chromium found and started as a worker starts it, the browser's settings, the user agent it sends."""
    chromium_ok = False
    chromium: str | None = None
    try:
        chromium = find_chromium(cfg.chromium)
        # it must start, headless, as a worker starts it: an executable that does not would fail every episode
        chromium_ok = add("chromium", check_starts(chromium, "--chromium" if cfg.chromium else ""), chromium)
    except BrowserNotFound as e:
        add("chromium", str(e), "")
    problem = check_browser_settings(cfg.browser_settings().as_dict())
    user_agent = cfg.user_agent
    if not problem and chromium_ok and chromium:
        user_agent = resolve_browser(cfg.browser_settings().as_dict(), chromium)["user_agent"]
    # what was found goes beside the config, never into it: the checks leave what they check as it was given
    resolved = Resolved(chromium, user_agent)
    add("browser", problem, f"viewport {cfg.viewport}, locale {cfg.locale}, timezone {cfg.timezone}, "
        f"user agent {user_agent}")
    return chromium_ok, resolved


def run_checks(cfg: RunConfig, *, check_model: bool = True, ask_model: bool = True,
               companions: Sequence[Companion] = (), known: Resolved | None = None,
               check_judge: bool | None = None, campaign: bool = False,
               lane: bool = False) -> tuple[Preflight | None, list[Check]]:
    """Every check that can be made before a run, each on its own (for `om2w-tui doctor` and the launch screen):
    -> (the Preflight when none failed, else None; [(what, ok | WARNING, detail)]). Writes nothing. `ask_model`:
    send the model the run's first step (engine/model_check.py); what it gets wrong is a WARNING, never a failure.
    `companions`: what the front end runs beside the run (the live judge), checked here and carried to `open_run`.
    `known`: the Chromium and user agent another check found for the same browser settings (a campaign's lanes):
    not started again. `check_judge`: ask the live judge's endpoint (default: as `check_model`; a campaign asks it
    once for every lane). `campaign`: `cfg` is a campaign's shared settings (its out the campaign's folder); `lane`:
    one of its lanes (its out a lane's folder, which a run of its own may not write)."""
    checks: list[Check] = []

    def add(name: str, problem: str, ok_detail: str) -> bool:
        checks.append((name, not problem, problem or ok_detail))
        return not problem

    # a campaign's shared settings name no arm: each lane's row says its own
    add("settings", _check_settings(cfg), ("" if campaign else f"arm {cfg.arm}, ")
        + f"{plural(cfg.workers, 'worker')}, timeout {cfg.timeout:g} s, "
        f"cooldown {cfg.pace_cooldown:g} s{_bench_default_note(cfg, 'pace_cooldown')}, "
        f"{cfg.site_slots or 'any number of'} per site, {plural(cfg.max_steps, 'step')}"
        + (" (unpaced)" if unpaced(cfg.site_slots, cfg.pace_cooldown) else "")
        + (f", on Ray actors ({cfg.ray_address or os.environ.get('RAY_ADDRESS') or 'auto'})"
           if cfg.executor == "ray" else ""))
    chosen: list[Task] = []
    task_file = None
    excluded = Excluded()
    try:
        task_file, tasks, chosen, excluded = _load_selection(cfg)
        detail = f"{task_file}: {len(tasks)} tasks, {len(chosen)} selected{excluded.words(cfg)}"
        if excluded.unknown:   # ids the task file lacks: a list kept from another file, or a typo; the run goes on
            checks.append(("tasks", WARNING, detail))
        else:
            add("tasks", "", detail)
    except UsageError as e:
        add("tasks", str(e), "")
    out_ok = add("out folder", check_out(cfg.out, cfg.shard, chosen, campaign=campaign, lane=lane),
                 str(cfg.out) + (f", shard {cfg.shard}" if cfg.shard else ""))
    for companion in companions:   # a companion's files (the live judge's) are refused as the run's own files are
        if out_ok and (problem := companion.check(cfg)):
            out_ok = add("out folder", problem, "")
    if cfg.pace_dir is not None:
        names = pace_names(chosen)
        add("pace dir", check_pace_dir(cfg.pace_dir) or check_pace_files(cfg.pace_dir, names),
            f"{cfg.pace_dir}: pacing shared with every run using it")
    template = cfg.instruction_template_file or "the seed's"
    # filled with every chosen task, as its episode will fill it
    problem = check_template(cfg.instruction_template, [t.to_dict() for t in chosen], cfg.hint_field)
    add("instruction", problem and f"--instruction-template {template}: {problem}",
        f"{template} template: {cfg.instruction_template!r}; coordinates {cfg.coordinates}")
    if known is not None:
        chromium_ok, resolved = True, known
    else:
        chromium_ok, resolved = _check_browser(cfg, add)
    endpoint_ok = False
    if cfg.builtin_oracle:
        endpoint_ok = add("model endpoint", "", f"{cfg.model}: the built-in oracle, started with the run")
    elif check_model:
        endpoint_ok = add("model endpoint", check_endpoint(cfg.endpoint, cfg.model, cfg.api_key()),
                          f"{cfg.endpoint} serves {cfg.model}")
    if check_model and ask_model and endpoint_ok and chromium_ok:
        checks.extend(model_checks(resolved_config(cfg, resolved), chosen))
    if cfg.judge_url and cfg.judge_model and (check_model if check_judge is None else check_judge):
        add("judge endpoint", check_judge_endpoint(cfg), f"{cfg.judge_url} serves {cfg.judge_model}: each episode "
            f"judged as it ends ({cfg.judge_workers} calls at once)")
    settled, changed = 0, []
    if out_ok and cfg.out.is_dir() and chosen:
        latest = read_results(cfg.out).latest_records()   # read once: a long run's log is large
        settled = sum((r := latest.get(t.task_id)) is not None and r.settles for t in chosen)
        said = f"{settled} of {len(chosen)} already done in {cfg.out}"
        if not (changed := folder_changes(cfg, chosen, latest)):   # else a resume would mix two measurements
            checks.append(("resume", True, said))
        else:
            checks.append(("resume", WARNING, f"{said}; --resume-changed: {'; '.join(changed)}") if cfg.resume_changed
                          else ("resume", False, refusal(cfg.out, changed)))
    if not all(ok for _, ok, _ in checks) or task_file is None:
        return None, checks
    return (Preflight(cfg, chosen, task_file, settled, checks, resolved, tuple(companions), excluded,
                      changes=tuple(changed)), checks)


def preflight(cfg: RunConfig, *, check_model: bool = True, companions: Sequence[Companion] = ()) -> Preflight:
    """Every check that needs no browser and writes nothing. Raises UsageError with the first problem."""
    pre, checks = run_checks(cfg, check_model=check_model, ask_model=False, companions=companions)
    if pre is None:
        raise UsageError(next(detail for _, ok, detail in checks if not ok))
    return pre


def versions() -> dict[str, str]:
    v = {"python": platform.python_version()}
    for pkg in ("om2w-tui", "browser-use", "openai", "playwright", "textual"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            v[pkg] = metadata.version(pkg)
    return v


def write_manifest(pre: Preflight, extra: dict[str, Any] | None = None) -> None:
    cfg = pre.run_config   # what the run uses: the Chromium and the user agent it sends
    path = RunFolder(cfg.out, cfg.shard).manifest
    before = read_manifest(path)[0] if os.path.lexists(path) else None
    first = (before or {}).get("first_started_at")
    now = time.time()
    write_json_atomic(path, {
        "config": cfg.to_json(),
        "task_file": {"path": str(pre.task_file.resolve()), "sha256": (sha := file_sha256(pre.task_file)),
                      **({"earlier_sha256": earlier} if (earlier := earlier_task_files(before, sha)) else {}),
                      "selected": len(pre.tasks), **({"excluded": list(pre.excluded.left_out),
                                                      "excluded_unknown": list(pre.excluded.unknown)}
                                                     if pre.config.exclude_tasks is not None else {})},
        "task_refresh": refresh_note(pre.task_file),
        "versions": versions(), "argv": redact_argv(sys.argv[1:]), "started_at": now,
        "first_started_at": first or now, **kept_in_manifest(before, pre.config, pre.changes), **(extra or {})})


def reference_judge(task: dict[str, Any], rec: EpisodeRecord) -> bool | None:
    """Tasks that carry `reference_answer` (the offline suite's, or any file's) are judged on the spot: the episode
    ended well, the agent said it was done, and its answer holds every reference string. None without one."""
    if "reference_answer" not in task:
        return None
    from om2w_tui.offline import judge_answer  # the offline suite only when a run uses it

    return rec.status == "done" and rec.agent_done and judge_answer(task, rec.answer)


def emit_to(sinks: list[Sink]) -> Callable[[Event], None]:
    """An emit that tells each of the run's sinks (a companion's log lines reach the console and the headless log)."""
    def emit(event: Event) -> None:
        for sink in sinks:
            with contextlib.suppress(Exception):
                sink.handle(event)
    return emit


def make_executor(cfg: RunConfig, stack: contextlib.ExitStack, withhold: Sequence[str] | None = None) -> Any:
    """The run's executor: local worker processes, or (--executor ray) Ray actors, ended with the run's stack;
    either starts its workers at most `--worker-start-rate` a second. `withhold`: the key variables no child
    inherits (default: `cfg`'s; a campaign's: every lane's)."""
    withhold = tuple(key_variables(cfg) if withhold is None else withhold)
    if cfg.executor != "ray":   # starting at most one a core at once: each starts a Chromium (the first, the zygote)
        local = LocalExecutor(cfg.out, withhold=withhold, shard=cfg.shard)
        stack.callback(local.close)
        return PacedStarts(local, cfg.worker_start_rate, at_once=starts_at_once())
    from om2w_tui.executors.ray import (
        RayExecutor,  # Ray only when a run asks for it (an optional extra, slow to import)
    )

    try:   # the key travels in each episode's spec, never in an actor's or a worker's environment
        ex = RayExecutor(cfg.out, cfg.ray_address, cfg.ray_cpus, withhold=withhold, shard=cfg.shard)
    except ConnectionError as e:
        raise UsageError(f"--ray-address {cfg.ray_address or os.environ.get('RAY_ADDRESS') or 'auto'}: no Ray "
                         f"cluster there ({e}); start one with `ray start --head --resources '{{\"browser\": 4}}'`"
                         ) from None
    stack.callback(ex.shutdown)
    if (n := ex.browsers()) < cfg.workers:   # a slot whose actor finds no browser would hold its site, waiting
        raise UsageError(f"--workers {cfg.workers}: the Ray cluster at {ex.address} advertises {n} browsers; start "
                         f"nodes with `ray start ... --resources '{{\"browser\": N}}'` or ask fewer workers")
    return PacedStarts(ex, cfg.worker_start_rate)


@contextlib.asynccontextmanager
async def open_run(pre: Preflight, sinks: list[Sink], *, guard_ends_run: bool = False) -> AsyncIterator[Run]:
    """Start the run's services and yield the run (its scheduler, as the front ends may hold it); everything started
    here is ended on the way out. `guard_ends_run`: the model guard ends the run (a front end with nobody to press
    resume) rather than holding dispatch until its user resumes."""
    if pre.lanes:   # a campaign: its lanes' units on one queue and pacer
        from om2w_tui.engine.campaign_launch import open_campaign  # it builds on this module: imported once needed

        async with open_campaign(pre, sinks, guard_ends_run=guard_ends_run) as campaign:
            yield campaign
        return
    cfg = pre.run_config
    tasks = pre.tasks
    judge: Judge | None = None
    stack = contextlib.ExitStack()
    try:
        local_names: dict[str, str] = {}   # the sites served here, by the names the report gives them
        if cfg.bench == "offline":
            from om2w_tui.offline import OfflineSuite  # the offline suite only when a run uses it

            suite = stack.enter_context(OfflineSuite())
            tasks = [live_offline_task(t, suite.base_urls) for t in tasks]
            local_names = {site_key(url): name for name, url in suite.base_urls.items()}
        if any("reference_answer" in t.raw for t in tasks):
            judge = reference_judge
        if cfg.builtin_oracle:
            from om2w_tui.offline import OracleServer  # the oracle only when it is served here

            all_tasks = suite.tasks() if cfg.bench == "offline" else [t.to_dict() for t in tasks]
            endpoint = EndpointURL(stack.enter_context(OracleServer(all_tasks)).url)
        else:
            endpoint = cfg.endpoint
        folder = RunFolder(cfg.out, cfg.shard)
        check_pace_ready(cfg)
        hold_folder(folder, stack)
        write_manifest(pre, {"endpoint": str(endpoint)})   # redacted
        executor = make_executor(cfg, stack)

        async def probe() -> bool:
            return await asyncio.to_thread(probe_endpoint, endpoint, cfg.model, cfg.api_key())

        # every run listens on its control socket (ctl, attach) for its life; one that cannot still runs
        server = ControlServer(folder)
        emit = emit_to([*sinks, server])
        # the live judge unless the run judges nothing as it goes (--judge-url)
        selection = [t.task_id for t in tasks]   # this node's share: its judge catches up on these only
        beside = [c for c in (companion.open(cfg, emit, selection) for companion in pre.companions) if c is not None]
        run = Scheduler(cfg, tasks, executor, [*sinks, server, *beside], judge=judge, probe=probe,
                        endpoint=endpoint.for_client(), guard_ends_run=guard_ends_run, site_names=local_names,
                        slot_room=lambda: slot_room(cfg.slot_memory) if cfg.executor != "ray" or ray_here(cfg)
                        else None)
        async with contextlib.AsyncExitStack() as listening:
            await listen_on([server], run, sinks, listening)
            yield await start_beside(beside, run, listening)
    finally:
        # in a thread: a server's shutdown waits for its poll loop (up to 0.5 s each), which froze the console's
        # screen at the end of every offline run (bench/console_lag.py); shielded, so a cancel still closes it all
        await asyncio.shield(asyncio.to_thread(stack.close))


async def start_beside(beside: Sequence[CompanionRun], run: Run, listening: contextlib.AsyncExitStack) -> Run:
    """Each companion run started, closed with the stack; -> the run the front end holds (each companion's hold)."""
    held = run
    for companion_run in beside:
        await companion_run.start()
        listening.push_async_callback(companion_run.close)
        held = companion_run.hold(held)
    return held


def check_pace_ready(cfg: RunConfig) -> None:
    if cfg.pace_dir is not None and (problem := ready_pace_dir(cfg.pace_dir)):
        raise UsageError(problem)


def hold_folder(folder: RunFolder, stack: contextlib.ExitStack, lock: str = "") -> None:
    """Before anything is written: the folder made and its run's lock taken for the stack's life (`lock`: another
    lock file's name, a campaign's); a second run over it is refused, a folder that takes no file too."""
    out = folder.out
    try:
        out.mkdir(parents=True, exist_ok=True)
        if lock:   # a campaign's: it names the socket the campaign listens on in its folder (ctl OUT, attach OUT)
            stack.enter_context(RunLock(out, lock, {"socket": folder.socket.name}))
        else:
            stack.enter_context(run_lock(out, folder.shard, {"socket": folder.socket.name}))
    except OutFolderBusy as e:
        raise UsageError(str(e) if not lock else str(e).replace("another run", "another campaign")) from None
    except OSError as e:
        raise UsageError(f"--out {out}: cannot be written ({e.strerror or e}); choose another --out") from None


async def listen_on(servers: Sequence[ControlServer], run: Run, sinks: list[Sink],
                  listening: contextlib.AsyncExitStack) -> None:
    """Each control socket serving `run` for the stack's life; one that cannot is said, and the run goes on."""
    for server in servers:
        try:
            await listening.enter_async_context(server.serving(run))
        except (ControlSocketError, OSError) as e:
            for sink in sinks:
                sink.handle(Log("warning", f"no control socket in {server.out}, so ctl and attach cannot reach "
                                           f"this run there: {e}"))
