"""A run's settings, built by the CLI or the launch screen and handed to the engine; what `run.json` records. Its
model settings are `ModelSettings`'s (protocol/model_settings.py: declared there once, with their defaults), which
`RunConfig` is built on; `model_settings()` hands them on whole."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from om2w_tui.benchmarks.tasks import DEFAULT_MAX_STEPS
from om2w_tui.episode.browser import DEFAULT_LOCALE, DEFAULT_TIMEZONE, DEFAULT_VIEWPORT
from om2w_tui.episode.instruction import DEFAULT_TEMPLATE
from om2w_tui.protocol.model_settings import Coordinates, ModelSettings
from om2w_tui.protocol.worker import BrowserSettings, WorkerSpec
from om2w_tui.secret import EndpointURL, reveal

BENCHES = ("om2w", "webvoyager", "offline")
SCHEMAS = ("v1", "v2")
COORDINATES: tuple[str, ...] = get_args(Coordinates)
DEFAULT_VLLM = "http://127.0.0.1:8400/v1"
EXECUTORS = ("local", "ray")
# the live judge's methods: the official WebJudge, WebJudge shown the answer as a claim, WebVoyager's (evaluation/
# judge_settings.py names each one's file as the official evaluator does)
JUDGE_MODES = ("webjudge", "webjudge-answer", "webvoyager")


def is_oracle(model: str) -> bool:
    """The built-in oracle's names: `oracle` and its fault modes (`oracle-slow-2`, `oracle-500`, ...)."""
    return model == "oracle" or model.startswith("oracle-")


@dataclass
class RunConfig(ModelSettings):
    """The run's settings: the model's (inherited, keyword-only) and the rest below."""
    out: Path
    bench: str = "om2w"
    tasks: Path | None = None
    task_ids: list[str] = field(default_factory=list)
    levels: list[str] = field(default_factory=list)
    sites: list[str] = field(default_factory=list)
    limit: int = 0
    exclude_tasks: Path | None = None   # a file of task ids left out of the run (--exclude-tasks)
    resume_changed: bool = False   # resume a folder whose run measured otherwise (engine/measured.py), keeping it said
    arm: str = "base"
    vllm: EndpointURL | None = None   # unset: DEFAULT_VLLM, or for an oracle model the oracle om2w-tui starts;
    # an EndpointURL shows only its redacted form (credentials in it reach the HTTP client alone)
    timeout: float = 1800.0
    max_steps: int = DEFAULT_MAX_STEPS   # a task without its own max_steps gets this budget as it is loaded
    pace_cooldown: float = 120.0
    site_slots: int = 1            # episodes at once on one site (0: no limit); with cooldown 0, no pacing at all
    pair_hold: float = 0.0         # a campaign: seconds a free slot waits for a started task's next unit (dispatch.py)
    workers: int = 4
    worker_start_rate: float = 8.0  # worker processes started per second at most (a run's first, and those added live)
    slot_memory: float = 0.5       # GiB a slot takes (a worker, its Chromium): no more slots than memory holds (0: any)
    chromium: str | None = None
    trajectory_schema: str = "v1"  # v1: the evaluator's result.json; v2: "online-mind2web-v2" steps
    model_guard: int = 3           # episodes in a row ending on the same model failure that stop dispatch (0: off)
    stop_grace: float = 20.0
    record_rows: bool = False      # every model call recorded as a training row under <task>/rows/
    hint_field: str | None = None  # a task field appended to the instruction while acting, stripped from rows
    planner_name: str | None = None       # --arm agent: the planner's served model (default: --model)
    adapters: str = "drag,io,select,rest,reasoning"   # --arm agent: specialist families served under their names
    fallback: str | None = None           # --arm agent: the model for a family not in adapters (default: --model)
    planner_turns: int = 8                # --arm agent: the planner's turns
    retries: int = 1               # new attempts for an episode that failed through the harness's fault (infra)
    breaker_after: int = 3         # infra errors in a row that pause dispatch until the endpoint answers again
    probe_interval: float = 30.0   # seconds between endpoint probes while the breaker is open
    instruction_template: str = DEFAULT_TEMPLATE   # what the agent is asked: `{task}` and `{website}` filled in
    instruction_template_file: Path | None = None  # where a user's template came from (--instruction-template)
    viewport: str = DEFAULT_VIEWPORT                # WxH in CSS pixels, the same on every host
    user_agent: str = "auto"       # auto: the browser's own desktop string, without "HeadlessChrome"
    locale: str = DEFAULT_LOCALE
    timezone: str = DEFAULT_TIMEZONE
    # beyond one run: pacing shared with other runs on the node (--pace-dir), and this node's share of the task
    # file ('' all of it; 'K/N' shard K of N; 'a:b/N' shards a..b-1 of N, the seed's --slot-range)
    pace_dir: Path | None = None
    shard: str = ""
    # where episodes run: local worker processes, or Ray actors in a cluster (auto, HOST:PORT; unset: RAY_ADDRESS)
    executor: str = "local"
    ray_address: str | None = None
    ray_cpus: float = 1.0          # CPUs each Ray actor (one worker and its Chromium) asks, besides one `browser`
    # judging as the run goes (--judge-url/--judge-model): settled episodes judged in the background (WebJudge)
    judge_url: EndpointURL | None = None   # shown redacted, as --vllm
    judge_model: str | None = None
    judge_workers: int = 4         # judge calls at once (as `judge --workers`)
    judge_mode: str = "webjudge"   # JUDGE_MODES: the live judge's method
    judge_api_key_env: str = "OPENAI_API_KEY"

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.tasks is not None:
            self.tasks = Path(self.tasks)
        if self.exclude_tasks is not None:
            self.exclude_tasks = Path(self.exclude_tasks)
        if self.instruction_template_file is not None:
            self.instruction_template_file = Path(self.instruction_template_file)
        if self.pace_dir is not None:
            self.pace_dir = Path(self.pace_dir)
        if isinstance(self.vllm, str):   # a config built in code may give the URL as text
            self.vllm = EndpointURL(self.vllm) if self.vllm.strip() else None
        if isinstance(self.judge_url, str):
            self.judge_url = EndpointURL(self.judge_url) if self.judge_url.strip() else None

    @property
    def endpoint(self) -> EndpointURL:
        return self.vllm or EndpointURL(DEFAULT_VLLM)

    @property
    def builtin_oracle(self) -> bool:
        """An oracle model with no endpoint given: om2w-tui serves the oracle itself for the run."""
        return is_oracle(self.model) and not self.vllm

    def arm_options(self) -> dict[str, Any]:
        return {"planner_name": self.planner_name or self.model, "fallback": self.fallback or self.model,
                "adapters": [a for a in self.adapters.split(",") if a.strip() and a.strip() != "none"],
                "planner_turns": self.planner_turns}

    def model_settings(self) -> ModelSettings:
        """The run's model settings alone, whole (what a worker, the preflight's probe and an arm are given)."""
        return ModelSettings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(ModelSettings)})

    def worker_spec(self, folder: Path, base_url: EndpointURL | str | None = None, *, max_steps: int) -> WorkerSpec:
        """What a worker needs to run one episode of this run into `folder`, on the endpoint `base_url` (the run's,
        or the oracle it serves itself), with its task's step budget (`Task.max_steps`). The key is read now and
        travels in the spec only: never in the worker's environment, which its Chromium would inherit; the endpoint
        as its model client opens it."""
        return WorkerSpec(
            folder=str(folder), chromium=self.chromium or "", llm=self.model_settings(),
            base_url=reveal(base_url) or self.endpoint.for_client(), api_key=self.api_key(),
            max_steps=max_steps, arm=self.arm, arm_options=self.arm_options(),
            schema="v2" if self.trajectory_schema == "v2" else "v1",
            instruction_template=self.instruction_template, record_rows=self.record_rows,
            hint_field=self.hint_field, browser=self.browser_settings())

    def browser_settings(self) -> BrowserSettings:
        """The pinned browser: viewport, user agent, locale and timezone (what a worker's Chromium is started with)."""
        return BrowserSettings(self.viewport, self.user_agent, self.locale, self.timezone)

    def api_key(self) -> str:
        """The key is read from the environment at the last moment and never stored in the config."""
        return os.environ.get(self.api_key_env, "") or "EMPTY"

    def to_json(self) -> dict[str, Any]:
        """What run.json records (no secret: the key's variable name, the URL redacted)."""
        d = dataclasses.asdict(self)
        for k, v in d.items():
            if isinstance(v, Path):
                d[k] = str(v)
        d["vllm"] = None if self.vllm is None else str(self.vllm)   # redacted: credentials are never recorded
        d["judge_url"] = None if self.judge_url is None else str(self.judge_url)
        return d

    def judge_api_key(self) -> str:
        """The judge endpoint's key, read from the environment at the last moment, as `api_key`."""
        return os.environ.get(self.judge_api_key_env, "") or "EMPTY"

