"""Every run setting declared once: its RunConfig field, flag, kind and bounds, help, and its label on the launch form.
The command line builds its flags from `SETTINGS` (`cli/main.py`), the launch form its fields and their parsing
(`frontends/console/launch_values.py`), and `doctor` the list of settings a run changes from their defaults. A new
setting is a RunConfig field and one line here."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from om2w_tui.engine.config import BENCHES, COORDINATES, DEFAULT_VLLM, EXECUTORS, SCHEMAS, RunConfig
from om2w_tui.episode.browser import DEFAULT_LOCALE, DEFAULT_TIMEZONE, DEFAULT_VIEWPORT

# kinds: text (a string; empty is the default), path, int (a whole number at least `minimum`), number (0 or more;
# more than 0 with `above_zero`), csv (comma-separated), choice, on (a switch that sets True), off (one that sets
# False)
KINDS = ("text", "path", "int", "number", "csv", "choice", "on", "off")

WHAT, AGENT, ARMS, BROWSER, PACING, FAULTS, WHERE, BEYOND = (
    "what to run", "the agent", "arms and training rows", "the browser (the same on every host)", "pacing and slots",
    "faults", "where episodes run", "beyond one run (several runs on a node, several nodes without Ray)")
JUDGING = "judging as the run goes"


@dataclass(frozen=True)
class Setting:
    key: str                    # the RunConfig field it sets
    flag: str                   # its command-line flag
    help: str
    kind: str = "text"
    group: str = AGENT
    minimum: int = 0            # int: the least value
    above_zero: bool = False    # number: 0 is not allowed
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    label: str = ""             # its field on the launch form ("": not on the form)
    form_kind: str = ""         # how the form asks for it, where not as its kind says (the arm: a list of the arms)
    placeholder: str = ""
    demo: bool = True           # `om2w-tui demo` has it too (the demo fixes the benchmark, the model and the arm)
    demo_default: Any = None    # the demo's default, where it differs from a run's
    form_default: str | None = None   # the form's first value, where it differs (a first launch runs offline)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.key}: unknown kind {self.kind!r}")

    @property
    def default(self) -> Any:
        """The run's default: RunConfig's."""
        f = _FIELDS[self.key]
        if f.default is not dataclasses.MISSING:
            return f.default
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        return None

    def text(self, value: Any) -> str:
        """A value as the form shows it (and the flag takes it)."""
        if value is None:
            return ""
        if self.kind == "csv":
            return ",".join(value)
        if self.kind == "number":
            return f"{float(value):g}"
        return str(value)


_FIELDS = {f.name: f for f in dataclasses.fields(RunConfig)}

SETTINGS: tuple[Setting, ...] = (
    # what to run
    Setting("bench", "--bench", "om2w | webvoyager | offline (the built-in suite; no model or internet needed)",
            "choice", WHAT, choices=BENCHES, label="benchmark", demo=False, form_default="offline"),
    Setting("tasks", "--tasks", "task file: Online-Mind2Web JSON, WebVoyager JSONL, or plain JSON/JSONL of that shape",
            "path", WHAT, label="task file", placeholder="path (not needed for offline)", demo=False),
    Setting("task_ids", "--task-ids", "comma-separated task ids to run", "csv", WHAT, label="task ids",
            placeholder="ids (all)", demo=False),
    Setting("levels", "--level", "only these levels (easy,medium,hard)", "csv", WHAT, label="levels",
            placeholder="easy,medium,hard (all)", demo=False),
    Setting("sites", "--site", "only tasks on these sites (host names)", "csv", WHAT, label="sites",
            placeholder="host names (all)", demo=False),
    Setting("limit", "--limit", "at most this many tasks (0: all)", "int", WHAT, label="limit", placeholder="0: all",
            demo=False),
    Setting("out", "--out", "the run's folder: one subfolder per task, results.jsonl, run.json", "path", WHAT,
            label="out folder", placeholder="runs/my-run", form_default="runs/offline"),
    # the agent
    Setting("arm", "--arm", "the agent: base (one browser-use Agent) or a plugin arm", label="arm",
            form_kind="choice", demo=False),
    Setting("model", "--model", "served model name (oracle, oracle-slow, ... start the built-in oracle)",
            label="model", placeholder="served model name", demo=False, form_default="oracle"),
    Setting("vllm", "--vllm", f"OpenAI-compatible endpoint (base URL) ({DEFAULT_VLLM}); with an oracle model and no "
            f"--vllm, om2w-tui serves the oracle itself", label="endpoint", placeholder=f"default {DEFAULT_VLLM}",
            demo=False),
    Setting("api_key_env", "--api-key-env", "the environment variable holding the API key (never written anywhere)",
            label="API key variable", placeholder="name of the env variable", demo=False),
    Setting("temperature", "--temperature", "sampling temperature (0)", "number", demo=False),
    Setting("vision", "--no-vision", "send no screenshots to the model (text-only models)", "off", demo=False),
    Setting("instruction_template_file", "--instruction-template", "a file with the agent's instruction, {task} and "
            "{website} filled in (default: the seed's: the task, then the website it starts on)", "path",
            metavar="FILE", label="instruction file", placeholder="the seed's template ({task}, {website})"),
    Setting("coordinates", "--coordinates", "clicks and drags by coordinates: off, pixels of the screenshot, or "
            "normalized to a 0-1000 grid as Qwen-VL models answer (normalized, as the seed)", "choice",
            choices=COORDINATES, label="coordinates"),
    Setting("max_steps", "--max-steps", "agent steps per episode (a task's own max_steps wins)", "int", minimum=1,
            label="max steps"),
    Setting("timeout", "--timeout", "seconds per episode (its finished steps are kept)", "number", above_zero=True,
            label="timeout (s)"),
    Setting("llm_timeout", "--llm-timeout", "seconds for one model call before it is retried (120)", "number",
            above_zero=True),
    Setting("trajectory_schema", "--trajectory-schema",
            "result.json layout: v1 (the evaluator's classic) or v2 (online-mind2web-v2 steps)", "choice",
            choices=SCHEMAS),
    Setting("retries", "--retries",
            "new attempts for an episode the harness failed (browser crash, endpoint down) (1)", "int"),
    # arms and training rows
    Setting("planner_name", "--planner-name", "--arm agent: the planner's served model (--model)", group=ARMS,
            demo=False),
    Setting("adapters", "--adapters", "--arm agent: specialist families served under their own names", group=ARMS,
            demo=False),
    Setting("fallback", "--fallback", "--arm agent: the model for other families (--model)", group=ARMS, demo=False),
    Setting("planner_turns", "--planner-turns", "--arm agent: the planner's turns (8)", "int", ARMS, minimum=1,
            demo=False),
    Setting("record_rows", "--record-rows", "record every model call as a training row in <out>/<task>/rows/", "on",
            ARMS, demo=False),
    Setting("hint_field", "--hint-field", "a task field appended to the instruction while acting, stripped from the "
            "rows", group=ARMS, demo=False),
    # the browser
    Setting("viewport", "--viewport", f"WIDTHxHEIGHT in CSS pixels ({DEFAULT_VIEWPORT})", group=BROWSER,
            metavar="WxH", label="viewport", placeholder=DEFAULT_VIEWPORT),
    Setting("user_agent", "--user-agent", "the user agent string (auto: a desktop Chrome of the browser's own "
            "version)", group=BROWSER, label="user agent", placeholder="auto: desktop Chrome"),
    Setting("locale", "--locale", f"the browser's language and Accept-Language ({DEFAULT_LOCALE})", group=BROWSER,
            label="locale", placeholder=DEFAULT_LOCALE),
    Setting("timezone", "--timezone", f"an IANA time zone ({DEFAULT_TIMEZONE})", group=BROWSER, label="timezone",
            placeholder=DEFAULT_TIMEZONE),
    Setting("chromium", "--chromium", "path to Chromium/Chrome (default: found automatically)", group=BROWSER),
    # pacing and slots
    Setting("workers", "--workers", "episodes at once (one worker process each)", "int", PACING, minimum=1,
            label="workers", demo_default=2, form_default="2"),
    Setting("pace_cooldown", "--pace-cooldown", "seconds from the end of one episode on a site to the start of the "
            "next", "number", PACING, label="cooldown (s)", demo_default=0.0, form_default="0"),
    Setting("site_slots", "--site-slots", "episodes at once on one site (1; 0: no limit)", "int", PACING,
            metavar="N", label="per site", placeholder="1 (0: no limit)"),
    # faults
    Setting("breaker_after", "--breaker-after",
            "infra errors in a row that pause dispatch until the endpoint answers again (3)", "int", FAULTS, minimum=1),
    Setting("probe_interval", "--probe-interval",
            "seconds between endpoint probes while dispatch is paused by the breaker (30)", "number", FAULTS,
            above_zero=True),
    # where episodes run
    Setting("executor", "--executor", "local: worker processes on this machine; ray: one Ray actor per slot anywhere "
            "in a Ray cluster (pip install 'om2w-tui[ray]'; nodes advertise --resources '{\"browser\": N}')",
            "choice", WHERE, choices=EXECUTORS, label="executor", demo=False),
    Setting("ray_address", "--ray-address", "--executor ray: the cluster to join (default: $RAY_ADDRESS, else auto: "
            "the one on this node)", group=WHERE, metavar="auto|HOST:PORT", label="Ray address",
            placeholder="auto ($RAY_ADDRESS, or this node's)", demo=False),
    Setting("ray_cpus", "--ray-cpus", "--executor ray: CPUs each actor (one worker and its Chromium) asks, besides a "
            "browser (1)", "number", WHERE, above_zero=True, metavar="N", demo=False),
    # beyond one run
    Setting("pace_dir", "--pace-dir", "a node-local folder of per-site lock files shared by every run on the node "
            "(and by the seed runner's --pace-dir): no two runs on one site at once, the cooldown kept between them",
            "path", BEYOND, metavar="DIR", label="pace dir", placeholder="none: this run paces alone"),
    # judging as the run goes
    Setting("judge_url", "--judge-url", "judge each episode as it ends with WebJudge on this OpenAI-compatible "
            "endpoint (a WebJudge-7B on vLLM, o4-mini ...), in the background, into the file `om2w-tui judge` "
            "writes", group=JUDGING, metavar="URL", demo=False),
    Setting("judge_model", "--judge-model", "the judge's served model name (with --judge-url)", group=JUDGING,
            demo=False),
    Setting("judge_workers", "--judge-workers", "judge calls at once (4, as `judge --workers`); the run's slots "
            "never wait for them", "int", JUDGING, minimum=1, demo=False),
    Setting("judge_api_key_env", "--judge-api-key-env", "the environment variable holding the judge's API key "
            "(OPENAI_API_KEY)", group=JUDGING, demo=False),
)
BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}


def on_the_form() -> Iterator[Setting]:
    return (s for s in SETTINGS if s.label)


def changed(cfg: RunConfig) -> list[str]:
    """The flags of a run's settings that differ from their defaults, as `--flag value` (what doctor lists)."""
    out = []
    for s in SETTINGS:
        value = getattr(cfg, s.key)
        if value == s.default or (s.key == "out"):
            continue
        if s.kind in ("on", "off"):
            out.append(s.flag)
        else:
            out.append(f"{s.flag} {s.text(value)}")
    return out
