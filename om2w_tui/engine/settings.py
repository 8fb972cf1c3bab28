"""Every run setting declared once: its RunConfig field, flag, kind (which carries its parser and bounds), help, and
its label on the launch form. The command line builds its flags from `SETTINGS` (`cli/main.py`), the launch form its
fields and their parsing (`frontends/console/launch_values.py`), the preflight its check of every value
(`check_config`: for a RunConfig built in code or read back), and `doctor` the list of settings a run changes.

A new setting is a RunConfig field and one `Setting(...)` line here, its kind saying how its text is read and what
it may be: `Whole(1, 64)`, `Number(0, 3600, above=True)`, `Text(required=True)`, `Choice(...)`, `Endpoint()`...
The help says what the setting does; its default (and a number's range) is added from the declaration, never
written by hand. Every number any flag or field takes (here, and the other commands' flags through
`cli/argtypes.py`) is read by `parse_number`: NaN, infinities, other digits than 0-9 and values out of range are
refused, with a message the caller prefixes with the flag or the field."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from om2w_tui.benchmarks.tasks import MAX_STEPS
from om2w_tui.engine.config import BENCHES, COORDINATES, DEFAULT_VLLM, EXECUTORS, JUDGE_MODES, SCHEMAS, RunConfig
from om2w_tui.episode.browser import DEFAULT_LOCALE, DEFAULT_TIMEZONE, DEFAULT_VIEWPORT
from om2w_tui.secret import EndpointURL, URLError, check_endpoint_url, check_key_variable

WHAT, AGENT, ARMS, BROWSER, PACING, FAULTS, WHERE, BEYOND = (
    "what to run", "the agent", "arms and training rows", "the browser (the same on every host)", "pacing and slots",
    "faults", "where episodes run", "beyond one run (several runs on a node, several nodes without Ray)")
JUDGING = "judging as the run goes"

# the most episodes a run holds at once (its worker processes, or Ray actors): more is a typo (`ctl workers 100000`
# would fork that many), and the console's slot panel stays readable
MAX_WORKERS = 512
# 0 episodes at once per site (no limit) and 0 s of cooldown: no pacing at all (the seed's default, --no-pacing)
UNPACED: dict[str, Any] = {"site_slots": 0, "pace_cooldown": 0.0}
_INT = re.compile(r"[+-]?[0-9]+")
# a whole number's text longer than this is read as that many digits' worth (beyond every bound a setting has), not
# converted: int() of thousands of digits is slow, and Python refuses one past 4300
_LONGEST_INT = 100
_FLOAT = re.compile(r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?")


def unpaced(site_slots: int, cooldown: float) -> bool:
    """Whether a run with these pacing settings paces at all (the one place that says what "unpaced" is)."""
    return bool(site_slots == UNPACED["site_slots"] and cooldown == UNPACED["pace_cooldown"])


def clamp_workers(n: int) -> int:
    """A worker count asked live (the console's +, `ctl workers`) within 1..MAX_WORKERS."""
    return max(1, min(MAX_WORKERS, int(n)))


def _g(x: float) -> str:
    """A bound or a value as a person reads it, exactly (1800, 0.5, 1e-06; never a rounded 1.23457e+06)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def range_text(low: float, high: float | None, above: bool = False) -> str:
    """`1 to 64`, `more than 0`, `0 or more`, `at least 1`, `more than 0 and at most 3600`."""
    if high is None:
        return f"more than {_g(low)}" if above else (f"at least {_g(low)}" if low else "0 or more")
    return f"more than {_g(low)} and at most {_g(high)}" if above else f"{_g(low)} to {_g(high)}"


def parse_number(text: str, *, whole: bool, low: float, high: float | None = None, above: bool = False) -> float:
    """The one number parser: `text` as a whole number (`whole`) or a decimal, within [low, high] (`above`: more
    than low). Raises ValueError with what is wrong (the caller names the flag or field). Refused: NaN, infinities,
    values too large to be finite, digits other than 0-9, underscores, hex, and out-of-range values."""
    s = str(text).strip()
    noun = "whole number" if whole else "number"
    if not s:
        raise ValueError(f"(empty): give a {noun}")
    if not (_INT if whole else _FLOAT).fullmatch(s):
        raise ValueError(f"{s[:40]}: not a {noun}" +
                         (" (a whole number has no decimal point)" if whole and _FLOAT.fullmatch(s) else ""))
    value: float = _whole(s) if whole else float(s)
    problem = check_number(value, whole=whole, low=low, high=high, above=above)
    if problem:
        raise ValueError(f"{s[:40]}: {problem}")
    return value


def _whole(s: str) -> int:
    """A whole number's text (`_INT`) as its value; past `_LONGEST_INT` digits (leading zeros aside), 10 to that power
    with its sign: beyond every bound, so its range is what is said of it."""
    if len(s.lstrip("+-").lstrip("0")) <= _LONGEST_INT:
        return int(s)
    beyond: int = 10 ** _LONGEST_INT
    return -beyond if s.startswith("-") else beyond


def check_number(value: Any, *, whole: bool, low: float, high: float | None = None, above: bool = False) -> str:
    """'' when `value` (already a number) is one the setting takes, else what is wrong: the same bounds as
    `parse_number`, for values that did not come from text (a RunConfig built in code, a control command)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or (whole and not isinstance(value, int)):
        return f"must be a {'whole number' if whole else 'number'}"
    if not math.isfinite(value):
        return "must be a finite number"
    if value < low or (above and value == low) or (high is not None and value > high):
        return f"must be {range_text(low, high, above)}"
    return ""


# ── kinds: how a setting's text becomes its value, and what the value may be ─────────────────────────────────────
class Kind:
    """A setting's kind. `parse` reads text (a flag's, a field's) and raises ValueError saying what is wrong;
    `check` says what is wrong with a value already typed ('' when nothing); `text` shows a value (the form, doctor,
    a flag); `remember` is the text the launch form may keep on disk."""

    form: ClassVar[str] = "text"   # how the launch form asks for it: text | int | number | choice | switch
    shows_refused: ClassVar[bool] = True   # a problem with a value may show the value (never a key's variable's)

    def empty_is_default(self) -> bool:
        """Whether an empty text means the setting's default (else it is a mistake)."""
        return True

    def parse(self, text: str) -> Any:
        """The text itself, stripped, when `check` finds nothing wrong with it (text and choice kinds)."""
        text = text.strip()
        if problem := self.check(text):
            raise ValueError(problem)
        return text

    def check(self, value: Any) -> str:
        return ""

    def text(self, value: Any) -> str:
        return "" if value is None else str(value)

    def remember(self, text: str) -> str:
        return text

    def bounds_text(self) -> str:
        return ""

    def same(self, was: Any, now: Any) -> bool:
        """Whether two values (as a run's JSON records them) ask for the same thing (a resume compares so)."""
        return bool(was == now)


@dataclass(frozen=True)
class Text(Kind):
    required: bool = False          # an empty value is refused (a model's name)
    pattern: str | None = None      # a full match is required
    what: str = ""                  # what the pattern asks for, said when it does not match

    def empty_is_default(self) -> bool:
        return not self.required

    def check(self, value: Any) -> str:
        if not isinstance(value, str):
            return "must be text" if value is not None or self.required else ""
        if not value.strip():
            return "must not be empty" if self.required else ""
        if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
            return "holds a control character or a lone surrogate"
        if self.pattern and not re.fullmatch(self.pattern, value):
            return f"{value[:60]!r}: {self.what or 'not in the expected form'}"
        return ""


@dataclass(frozen=True)
class KeyVariable(Text):
    """The name of an environment variable holding a key the run uses (the model's, the judge's, any later one):
    every setting of this kind is withheld from the run's children by `key_variables`, so a new key is withheld
    by its declaration alone. A value it refuses is never shown (`secret.check_key_variable`): it may be a key."""

    required: bool = True
    shows_refused: ClassVar[bool] = False

    def check(self, value: Any) -> str:
        if not isinstance(value, str):
            return "must be text"
        return "must not be empty" if not value.strip() else check_key_variable(value)


@dataclass(frozen=True)
class PathKind(Kind):
    def parse(self, text: str) -> Any:
        text = text.strip()
        if "\0" in text:
            raise ValueError("a path holds no NUL character")
        return Path(text).expanduser() if text else None


@dataclass(frozen=True)
class Whole(Kind):
    low: int = 0
    high: int | None = None
    empty_default: bool = False     # an empty count (limit, per site) is its default
    optional: bool = False          # None is a value: unset (a --seed not sent); an empty text is it
    form: ClassVar[str] = "int"

    def empty_is_default(self) -> bool:
        return self.empty_default or self.optional

    def parse(self, text: str) -> Any:
        return int(parse_number(text, whole=True, low=self.low, high=self.high))

    def check(self, value: Any) -> str:
        if value is None and self.optional:
            return ""
        return check_number(value, whole=True, low=self.low, high=self.high)

    def bounds_text(self) -> str:
        return range_text(self.low, self.high)


@dataclass(frozen=True)
class Number(Kind):
    low: float = 0.0
    high: float | None = None
    above: bool = False             # more than `low` (0 is not allowed)
    optional: bool = False          # None is a value: unset (a --top-p not sent); an empty text is it
    form: ClassVar[str] = "number"

    def empty_is_default(self) -> bool:
        return self.optional

    def parse(self, text: str) -> Any:
        return float(parse_number(text, whole=False, low=self.low, high=self.high, above=self.above))

    def check(self, value: Any) -> str:
        if value is None and self.optional:
            return ""
        return check_number(value, whole=False, low=self.low, high=self.high, above=self.above)

    def text(self, value: Any) -> str:
        return "" if value is None else _g(float(value))

    def bounds_text(self) -> str:
        return range_text(self.low, self.high, self.above)


@dataclass(frozen=True)
class Csv(Kind):
    """A comma list that selects (task ids, levels, sites): a set, so its order and repeats say nothing;
    `fold_case`: matched whatever the case (benchmarks/tasks.py's select)."""

    fold_case: bool = False

    def parse(self, text: str) -> Any:
        return [x.strip() for x in text.split(",") if x.strip()]

    def text(self, value: Any) -> str:
        return ",".join(value or ())

    def same(self, was: Any, now: Any) -> bool:
        if not (isinstance(was, list | tuple) and isinstance(now, list | tuple)):
            return bool(was == now)
        fold = (lambda x: str(x).lower()) if self.fold_case else str
        return {fold(x) for x in was} == {fold(x) for x in now}


@dataclass(frozen=True)
class Choice(Kind):
    choices: tuple[str, ...] = ()
    form: ClassVar[str] = "choice"

    def empty_is_default(self) -> bool:
        return False

    def check(self, value: Any) -> str:
        return "" if value in self.choices else f"one of {', '.join(self.choices)}"


@dataclass(frozen=True)
class Switch(Kind):
    """A flag without a value: it sets True (`sets=True`, --record-rows) or False (--no-vision). On the launch form a
    check box, its text `true` or `false`, never remembered: a switch there (going on with a run measured otherwise)
    is asked at each launch."""

    form: ClassVar[str] = "switch"
    sets: bool = True

    def parse(self, text: str) -> Any:
        word = text.strip().lower()
        if word not in ("true", "false"):
            raise ValueError(f"{text.strip()[:40]}: give true or false")
        return word == "true"

    def check(self, value: Any) -> str:
        return "" if isinstance(value, bool) else "must be true or false"

    def text(self, value: Any) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else super().text(value)

    def remember(self, text: str) -> str:
        return ""


@dataclass(frozen=True)
class Endpoint(Kind):
    """An endpoint's URL: an `EndpointURL`, shown redacted everywhere, remembered without its credentials."""

    def parse(self, text: str) -> Any:
        text = text.strip()
        if not text:
            return None
        try:
            return EndpointURL.parse(text)
        except URLError as e:
            raise ValueError(str(e)) from None

    def check(self, value: Any) -> str:
        if value is None:
            return ""
        if not isinstance(value, EndpointURL):
            return "must be an endpoint URL"
        problem = check_endpoint_url(value.for_client())
        return f"{value}: {problem}" if problem else ""

    def remember(self, text: str) -> str:
        try:
            return EndpointURL.parse(text).without_credentials() if text.strip() else ""
        except URLError:
            return ""


# ── the declarations ─────────────────────────────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Setting:
    key: str                    # the RunConfig field it sets
    flag: str                   # its command-line flag
    help: str                   # what it does; the default and a number's range are added (`help_text`)
    kind: Kind = Text()
    group: str = AGENT
    metavar: str | None = None
    label: str = ""             # its field on the launch form ("": not on the form)
    form_kind: str = ""         # how the form asks for it, where not as its kind says (the arm: a list of the arms)
    placeholder: str = ""
    demo: bool = True           # `om2w-tui demo` has it too (the demo fixes the benchmark, the model and the arm)
    demo_default: Any = None    # the demo's default, where it differs from a run's
    form_default: str | None = None   # the form's first value, where it differs (a first launch runs offline)
    default_help: str = ""      # the default in words, where its value says too little (None: "found automatically")
    # a benchmark's own default, where it differs from a run's: (bench, value) pairs (the offline suite's sites are
    # local, so it paces with no cooldown); the flag given wins
    bench_defaults: tuple[tuple[str, Any], ...] = ()

    @property
    def default(self) -> Any:
        """The run's default: RunConfig's."""
        f = _FIELDS[self.key]
        if f.default is not dataclasses.MISSING:
            return f.default
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        return None

    def default_for(self, bench: str) -> Any:
        """The default on `bench`: its own where it has one, else the run's."""
        return dict(self.bench_defaults).get(bench, self.default)

    @property
    def choices(self) -> tuple[str, ...]:
        return self.kind.choices if isinstance(self.kind, Choice) else ()

    def parse(self, text: str) -> Any:
        """A flag's or a field's text as the setting's value; ValueError says what is wrong (without the flag)."""
        if not str(text).strip() and self.kind.empty_is_default():
            return self.default
        return self.kind.parse(str(text))

    def check(self, value: Any) -> str:
        """'' when `value` is one the setting takes, else the problem, naming the flag."""
        problem = self.kind.check(value)
        shown = f" {self.kind.text(value)}" if self.kind.shows_refused else ""
        return f"{self.flag}{shown}: {problem}" if problem else ""

    def text(self, value: Any) -> str:
        """A value as the form shows it (and the flag takes it); an endpoint redacted."""
        return self.kind.text(value)

    def help_text(self, demo: bool = False) -> str:
        """The help: what it does, then its default and range, from the declaration."""
        default = self.demo_default if demo and self.demo_default is not None else self.default
        if demo and self.key == "out":
            said = "runs/demo-<time>"
        elif self.default_help:
            said = self.default_help
        elif isinstance(self.kind, Switch) or default in (None, "", []):
            said = ""
        else:
            said = self.text(default)
        if self.bench_defaults and not demo:
            said += "".join(f"; {bench}: {self.text(v)}" for bench, v in self.bench_defaults)
        bounds = self.kind.bounds_text()
        tail = "; ".join(x for x in (bounds, f"default: {said}" if said else "") if x)
        return f"{self.help} ({tail})" if tail else self.help


_FIELDS = {f.name: f for f in dataclasses.fields(RunConfig)}

SETTINGS: tuple[Setting, ...] = (
    # what to run
    Setting("bench", "--bench", "om2w | webvoyager | offline (the built-in suite; no model or internet needed)",
            Choice(BENCHES), WHAT, label="benchmark", demo=False, form_default="offline"),
    Setting("tasks", "--tasks", "task file: Online-Mind2Web JSON, WebVoyager JSONL, or plain JSON/JSONL of that shape",
            PathKind(), WHAT, label="task file", placeholder="path (not needed for offline)", demo=False,
            default_help="the benchmark's file in data/"),
    Setting("task_ids", "--task-ids", "comma-separated task ids to run", Csv(), WHAT, label="task ids",
            placeholder="ids (all)", demo=False),
    Setting("levels", "--level", "only these levels (easy,medium,hard)", Csv(fold_case=True), WHAT, label="levels",
            placeholder="easy,medium,hard (all)", demo=False),
    Setting("sites", "--site", "only tasks on these sites (host names)", Csv(fold_case=True), WHAT, label="sites",
            placeholder="host names (all)", demo=False),
    Setting("limit", "--limit", "at most this many tasks (0: all)", Whole(0, 10_000_000, empty_default=True), WHAT,
            label="limit", placeholder="0: all", demo=False),
    Setting("exclude_tasks", "--exclude-tasks", "a file of task ids to leave out of the run: one a line, # comments "
            "(e.g. the candidates for label 2 `om2w-tui tasks health` lists)", PathKind(), WHAT, metavar="FILE",
            demo=False),
    Setting("out", "--out", "the run's folder: one subfolder per task, results.jsonl, run.json", PathKind(), WHAT,
            label="out folder", placeholder="runs/my-run", form_default="runs/offline"),
    Setting("resume_changed", "--resume-changed", "go on with a run (or campaign) in --out whose model, decoding, "
            "agent, budget or browser settings were otherwise: refused without it, as two measurements in one run; "
            "with it the change is kept in run.json and `report` warns", Switch(True), WHAT, demo=False,
            label="resume changed", placeholder="go on with a run measured otherwise"),
    # the agent
    Setting("arm", "--arm", "the agent: base (one browser-use Agent) or a plugin arm; `run --arm A --arm B`: a "
            "campaign of those arms, a run folder each in --out, paired on one queue and pacer", Text(required=True),
            label="arm", form_kind="choice", demo=False),
    Setting("model", "--model", "served model name (oracle, oracle-slow, ... start the built-in oracle)",
            Text(required=True), label="model", placeholder="served model name", demo=False, form_default="oracle"),
    Setting("vllm", "--vllm", "OpenAI-compatible endpoint (base URL); credentials in it are used, never shown or "
            "written", Endpoint(), label="endpoint", placeholder=f"default {DEFAULT_VLLM}", demo=False,
            default_help=f"{DEFAULT_VLLM}; with an oracle model, the oracle om2w-tui serves itself"),
    Setting("api_key_env", "--api-key-env", "the environment variable holding the API key (never written anywhere)",
            KeyVariable(), label="API key variable", placeholder="name of the env variable", demo=False),
    Setting("temperature", "--temperature", "sampling temperature", Number(0, 2), demo=False),
    Setting("top_p", "--top-p", "nucleus sampling: the share of probability mass each token is drawn from, sent "
            "with every model call", Number(0, 1, above=True, optional=True), demo=False, metavar="P",
            default_help="not sent"),
    Setting("seed", "--seed", "the sampling seed sent with every model call (vLLM honours it per request)",
            Whole(0, 2**32 - 1, optional=True), demo=False, default_help="not sent"),
    Setting("vision", "--no-vision", "send no screenshots to the model (text-only models)", Switch(False), demo=False),
    Setting("instruction_template_file", "--instruction-template", "a file with the agent's instruction, {task} and "
            "{website} filled in", PathKind(), metavar="FILE", label="instruction file",
            placeholder="the seed's template ({task}, {website})",
            default_help="the seed's: the task, then the website it starts on"),
    Setting("coordinates", "--coordinates", "clicks and drags by coordinates: off, pixels of the screenshot, or "
            "normalized to a 0-1000 grid as Qwen-VL models answer (the seed's)", Choice(COORDINATES),
            label="coordinates"),
    Setting("max_steps", "--max-steps", "agent steps per episode (a task's own max_steps wins)", Whole(1, MAX_STEPS),
            label="max steps"),
    Setting("timeout", "--timeout", "seconds per episode (its finished steps are kept)",
            Number(0, 7 * 86400, above=True), label="timeout (s)"),
    Setting("llm_timeout", "--llm-timeout", "seconds for one model call before it is retried",
            Number(0, 86400, above=True)),
    Setting("llm_retries", "--llm-retries", "the model client's own retries of one call: 429 (honouring "
            "Retry-After), 5xx, refused", Whole(0, 20)),
    Setting("max_completion_tokens", "--max-completion-tokens", "a reply's token cap, as browser-use sends it; "
            "replies cut there are counted as truncated", Whole(1, 1_000_000), metavar="N"),
    Setting("mend_thinking", "--no-mend-thinking", "leave a <think> block before a reply as it came (the reply then "
            "fails to parse) instead of splitting it off and keeping it as the step's thought", Switch(False)),
    Setting("model_guard", "--model-guard", "episodes in a row ending on the same model failure (context length, "
            "images refused, unparseable replies, ...) that stop dispatch with the remedy (0: never)",
            Whole(0, 1000), FAULTS, metavar="N"),
    Setting("trajectory_schema", "--trajectory-schema",
            "result.json layout: v1 (the evaluator's classic) or v2 (online-mind2web-v2 steps)", Choice(SCHEMAS)),
    Setting("retries", "--retries",
            "new attempts for an episode the harness failed (browser crash, endpoint down)", Whole(0, 100)),
    # arms and training rows
    Setting("planner_name", "--planner-name", "--arm agent: the planner's served model", group=ARMS, demo=False,
            default_help="--model"),
    Setting("adapters", "--adapters", "--arm agent: specialist families served under their own names", group=ARMS,
            demo=False),
    Setting("fallback", "--fallback", "--arm agent: the model for other families", group=ARMS, demo=False,
            default_help="--model"),
    Setting("planner_turns", "--planner-turns", "--arm agent: the planner's turns", Whole(1, 1000), ARMS, demo=False),
    Setting("record_rows", "--record-rows", "record every model call as a training row in <out>/<task>/rows/",
            Switch(True), ARMS, demo=False),
    Setting("hint_field", "--hint-field", "a task field appended to the instruction while acting, stripped from the "
            "rows", group=ARMS, demo=False),
    # the browser
    Setting("viewport", "--viewport", "WIDTHxHEIGHT in CSS pixels", group=BROWSER, metavar="WxH", label="viewport",
            placeholder=DEFAULT_VIEWPORT),
    Setting("user_agent", "--user-agent", "the user agent string (auto: a desktop Chrome of the browser's own "
            "version)", group=BROWSER, label="user agent", placeholder="auto: desktop Chrome"),
    Setting("locale", "--locale", "the browser's language and Accept-Language", group=BROWSER, label="locale",
            placeholder=DEFAULT_LOCALE),
    Setting("timezone", "--timezone", "an IANA time zone", group=BROWSER, label="timezone",
            placeholder=DEFAULT_TIMEZONE),
    Setting("chromium", "--chromium", "path to Chromium/Chrome", group=BROWSER, default_help="found automatically"),
    # pacing and slots
    Setting("workers", "--workers", "episodes at once (one worker process each)", Whole(1, MAX_WORKERS), PACING,
            label="workers", demo_default=2, form_default="2"),
    Setting("worker_start_rate", "--worker-start-rate", "worker processes started per second at most (a run's "
            "first workers, and those the console's + or `ctl workers` add)", Number(0, 1000, above=True), PACING,
            metavar="N"),
    Setting("slot_memory", "--slot-memory", "GiB of memory one slot takes (a worker process and its Chromium): more "
            "--workers than the machine's available memory holds are refused, and slots added live (+, `ctl workers`) "
            "stop there, saying why (0: no check)", Number(0, 1024), PACING, metavar="GIB"),
    Setting("pace_cooldown", "--pace-cooldown", "seconds from the end of one episode on a site to the start of the "
            "next", Number(0, 86400), PACING, label="cooldown (s)", demo_default=0.0, form_default="0",
            bench_defaults=(("offline", 0.0),)),
    Setting("site_slots", "--site-slots", "episodes at once on one site (0: no limit)",
            Whole(0, MAX_WORKERS, empty_default=True), PACING, metavar="N", label="per site",
            placeholder="1 (0: no limit)"),
    Setting("pair_hold", "--pair-hold", "a campaign: seconds ahead a free slot is kept for a started task's next unit "
            "coming off its site's cooldown, even while every slot is needed: a shorter pairing gap for a longer run "
            "(0: only while slots are spare, when it costs nothing; see the guide's Campaigns, Speed)",
            Number(0, 86400), PACING, metavar="S", demo=False),
    # faults
    Setting("breaker_after", "--breaker-after",
            "infra errors in a row that pause dispatch until the endpoint answers again", Whole(1, 1000), FAULTS),
    Setting("probe_interval", "--probe-interval",
            "seconds between endpoint probes while dispatch is paused by the breaker", Number(0, 3600, above=True),
            FAULTS),
    # where episodes run
    Setting("executor", "--executor", "local: worker processes on this machine; ray: one Ray actor per slot anywhere "
            "in a Ray cluster (pip install 'om2w-tui[ray]'; nodes advertise --resources '{\"browser\": N}')",
            Choice(EXECUTORS), WHERE, label="executor", demo=False),
    Setting("ray_address", "--ray-address", "--executor ray: the cluster to join", group=WHERE,
            metavar="auto|HOST:PORT", label="Ray address", placeholder="auto ($RAY_ADDRESS, or this node's)",
            demo=False, default_help="$RAY_ADDRESS, else auto: the one on this node"),
    Setting("ray_cpus", "--ray-cpus", "--executor ray: CPUs each actor (one worker and its Chromium) asks, besides a "
            "browser", Number(0, 1024, above=True), WHERE, metavar="N", demo=False),
    # beyond one run
    Setting("pace_dir", "--pace-dir", "a node-local folder of per-site lock files shared by every run on the node "
            "(and by the seed runner's --pace-dir): no two runs on one site at once, the cooldown kept between them",
            PathKind(), BEYOND, metavar="DIR", label="pace dir", placeholder="none: this run paces alone",
            default_help="none: this run paces alone"),
    # judging as the run goes
    Setting("judge_url", "--judge-url", "judge each episode as it ends with WebJudge on this OpenAI-compatible "
            "endpoint (a WebJudge-7B on vLLM, o4-mini ...), in the background, into the file `om2w-tui judge` "
            "writes; credentials in it are used, never shown or written", Endpoint(), JUDGING, metavar="URL",
            demo=False, default_help="none: no judging during the run"),
    Setting("judge_model", "--judge-model", "the judge's served model name (with --judge-url)", group=JUDGING,
            demo=False),
    Setting("judge_mode", "--judge-mode", "the live judge's method: webjudge (Online-Mind2Web's WebJudge, the "
            "official, judging by the screenshots), webjudge-answer (the agent's answer shown too, as its claim), "
            "webvoyager (WebVoyager's: the answer and the last screenshots)", Choice(JUDGE_MODES), JUDGING,
            demo=False),
    Setting("judge_workers", "--judge-workers", "judge calls at once (as `judge --workers`); the run's slots never "
            "wait for them", Whole(1, 64), JUDGING, demo=False),
    Setting("judge_api_key_env", "--judge-api-key-env", "the environment variable holding the judge's API key",
            KeyVariable(), JUDGING, demo=False),
)
BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}


def on_the_form() -> Iterator[Setting]:
    return (s for s in SETTINGS if s.label)


def key_variables(cfg: RunConfig) -> tuple[str, ...]:
    """The environment variables `cfg` reads its keys from (every `KeyVariable` setting): what no worker, probe or
    Chromium of the run inherits; a key reaches a child only in what it is sent on its stdin."""
    return tuple(dict.fromkeys(getattr(cfg, s.key) for s in SETTINGS
                               if isinstance(s.kind, KeyVariable) and getattr(cfg, s.key)))


def check_config(cfg: RunConfig) -> str:
    """The first value of `cfg` no declared setting takes (naming its flag), or ''. The same bounds the flags and
    the form read with, for a RunConfig built in code (tests, a plugin) or one whose values came another way."""
    for s in SETTINGS:
        if problem := s.check(getattr(cfg, s.key)):
            return problem
    return ""


def bench_defaults(bench: str) -> dict[str, Any]:
    """The settings whose default differs on `bench`, with that default (what a run on it gets unless given)."""
    return {s.key: s.default_for(bench) for s in SETTINGS if s.bench_defaults}


def changed(cfg: RunConfig) -> list[str]:
    """The flags of a run's settings that differ from their defaults (the benchmark's own, where it has one), as
    `--flag value` (what doctor lists; an endpoint redacted)."""
    out = []
    for s in SETTINGS:
        value = getattr(cfg, s.key)
        if value == s.default_for(cfg.bench) or (s.key == "out"):
            continue
        if isinstance(s.kind, Switch):
            out.append(s.flag)
        else:
            out.append(f"{s.flag} {s.text(value)}")
    return out
