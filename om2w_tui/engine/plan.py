"""A campaign's plan (`om2w-tui campaign PLAN.toml`): the TOML file read and checked, resolved into the campaign's
shared RunConfig and one RunConfig per lane (each arm's repeat), the resolved plan as `campaign.json` records it, and
the resume rule that compares a plan with the folder it would write into.

The plan holds the shared settings at its top level under their flags' names (`workers = 12`, `pace-cooldown = 120`,
`out = "runs/study"`, `_` or `-` alike), `repeats = K`, and one `[arms.NAME]` table per arm with what that arm
changes (`arm`, `model`, `vllm`, `api-key-env`, `max-steps`, `temperature`, ... any per-run setting). Every value is
read by its setting's own declaration (engine/settings.py), as its flag is; a problem is a `PlanError` naming the
plan's file and line (a setting given twice, spelled both ways, names both). Command-line flags given after the plan
(`overrides`) replace its top level.

What a lane measures (its arm's settings and the task selection) may not change under an existing campaign folder;
where its episodes run, how they are paced and judged as they go may (engine/measured.py declares which). Each
setting is compared as its kind says (`Kind.same`): a selection (task ids, levels, sites) as a set. `--resume-changed`
lets the lanes change as it lets a run (each lane's run.json keeps the change)."""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.campaign_folder import FORMAT, CampaignFolder, LaneName, arm_problem, is_campaign, lane_name
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.measured import MEASURED, SELECTION, measured, selection_change
from om2w_tui.engine.measured import changes as changed
from om2w_tui.engine.settings import (
    BEYOND,
    BROWSER,
    BY_KEY,
    JUDGING,
    PACING,
    SETTINGS,
    UNPACED,
    WHAT,
    WHERE,
    Csv,
    Kind,
    Number,
    Setting,
    Switch,
    Whole,
    bench_defaults,
    check_number,
)
from om2w_tui.engine.sharding import shard_from_flags
from om2w_tui.episode.arms import arm_names
from om2w_tui.episode.instruction import TemplateError, read_template
from om2w_tui.files import write_json_atomic
from om2w_tui.json_input import InputError, read_bytes
from om2w_tui.run_folder import RunFolder

MAX_REPEATS = 100
REPEATS = Whole(1, MAX_REPEATS)   # `repeats = K`: read as a whole-number setting's value is
PLAN_LIMIT = 1 << 20   # a plan is a few lines; a larger file is a mistake (a task file given for a plan)
# flags that are no RunConfig field but say how its fields are set: this node's shard, and no pacing at all
EXTRA_FLAGS = ("shard", "slot-range", "no-pacing")
NODE_SHARE = ("shard", "slot_range")   # this node's share of a campaign: never in campaign.json
# campaign-wide: the units of every arm are the same tasks on one pacer, one queue and one set of slots, in the same
# browser (checked and started once)
SHARED_GROUPS = (WHAT, BROWSER, PACING, WHERE, BEYOND, JUDGING)
SHARED_KEYS = frozenset({s.key for s in SETTINGS if s.group in SHARED_GROUPS}
                        | {"breaker_after", "probe_interval", "shard", "slot_range", "no_pacing"})


class PlanError(ValueError):
    """A plan the campaign cannot start with; the message names the plan's file (and line) and what to do."""


def flag_name(key: str) -> str:
    """A plan's key as its flag is spelled, without `--` (`pace_cooldown` -> `pace-cooldown`)."""
    return key.strip().replace("_", "-")


# the plan's names: each setting's flag without `--`
_BY_NAME: dict[str, Setting] = {s.flag.removeprefix("--"): s for s in SETTINGS}
_KEYS = (*_BY_NAME, *EXTRA_FLAGS, "repeats")   # every key a plan's settings may have


@dataclass(frozen=True)
class Arm:
    name: str
    changes: dict[str, Any]          # RunConfig field -> value, as the arm's table gives it


@dataclass(frozen=True)
class Plan:
    path: Path
    shared: dict[str, Any]           # RunConfig field (or shard, slot_range, no_pacing) -> value: the top level
    arms: tuple[Arm, ...]
    repeats: int = 1
    command_line: bool = False       # the short form (`run --arm A --arm B`): no file, every setting a flag
    lines: Mapping[str, int] = dataclasses.field(default_factory=dict)   # a top-level key as spelled -> its line


@dataclass(frozen=True)
class PlannedLane:
    """A lane as the plan makes it: launch adds its tasks and endpoint (engine/lanes.py's Lane)."""
    name: str
    arm: str
    repeat: int
    config: RunConfig


@dataclass(frozen=True)
class Campaign:
    plan: Plan
    config: RunConfig                # the shared settings as this node runs them; out = the campaign's folder
    lanes: tuple[PlannedLane, ...]   # repeat by repeat, each in the plan's order of arms
    # the shared settings before this node's share (--shard, --slot-range) is taken: the same on every node, what
    # campaign.json records (`--slot-range a:b --workers W`: W, the campaign's slots, where `config` has b - a);
    # None: `config` itself
    whole: RunConfig | None = None
    overrides: frozenset[str] = frozenset()   # the fields the flags given after the plan set (replacing its own)
    # the ids of the tasks every lane runs (the whole selection, before this node's share), once the checks loaded
    # them (engine/campaign_launch.py): what campaign.json records and a resume compares; None: not loaded
    selection: tuple[str, ...] | None = None

    @property
    def settings(self) -> RunConfig:
        """The campaign's shared settings as every node is given them (`whole`)."""
        return self.whole if self.whole is not None else dataclasses.replace(self.config, shard="")


# ── reading ───────────────────────────────────────────────────────────────────────────────────────────────────────
_HEADER = re.compile(r"\s*\[\s*(?P<name>[^\[\]]+?)\s*\]\s*(?:#.*)?$")
_PART = re.compile(r"\"[^\"]*\"|'[^']*'|[^.\s]+")
_TOML_LINE = re.compile(r"at line (?P<line>\d+)")
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ONE_KEY = r"(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)"
_KEY = re.compile(rf"\s*(?P<key>{_ONE_KEY}(?:\s*\.\s*{_ONE_KEY})*)\s*=")   # a key, dotted or not


def _unquote(part: str) -> str:
    part = part.strip()
    return part[1:-1] if len(part) >= 2 and part[0] == part[-1] and part[0] in "\"'" else part


def table_name(table: tuple[str, ...]) -> str:
    """A table as the plan spells it (`arms."campaign.json"`: a part that is no bare key quoted)."""
    return ".".join(p if _BARE.fullmatch(p) else f'"{p}"' for p in table)


def key_line(text: str, table: tuple[str, ...], key: str | None) -> int:
    """The line (from 1) where `key` is set in `table` (() the top level), else where the table is first named (its
    header, a table under it: `[arm.a]` names `arm`, or a key that sets it: `arms = "a"`, `arms.a.model = "m"`);
    0 where it cannot be told (tomllib gives no lines: a key inside an inline table)."""
    current: tuple[str, ...] = ()
    first = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if m := _HEADER.match(line):
            current = tuple(_unquote(p) for p in _PART.findall(m["name"]))
            path = current
        elif m := _KEY.match(line):
            path = current + tuple(_unquote(p) for p in _PART.findall(m["key"]))
        else:
            continue
        if key is not None and path[:len(table) + 1] == (*table, key):
            return number
        if not first and path[:len(table)] == table and (table or key is None):
            first = number
    return first


class _Reader:
    def __init__(self, path: Path, text: str):
        self.path, self.text = path, text

    def fail(self, table: tuple[str, ...], key: str | None, message: str) -> PlanError:
        line = key_line(self.text, table, key)
        return PlanError(f"{self.path}{f':{line}' if line else ''}: {message}")

    def once(self, table: tuple[str, ...], keys: Mapping[str, Any]) -> None:
        """PlanError naming both lines where `table` sets one setting twice, spelled both ways (`pace_cooldown`
        and `pace-cooldown`: TOML takes them for two keys, and the last would win without a word)."""
        seen: dict[str, str] = {}
        for key in keys:
            if (name := flag_name(key)) in seen:
                first = key_line(self.text, table, seen[name])
                where = f"[{table_name(table)}] " if table else ""
                raise self.fail(table, key, f"{where}{key}: set twice, also as {seen[name]}"
                                            f"{f' on line {first}' if first else ''}; keep one of them")
            seen[name] = key

    def arms(self, plan: Plan) -> None:
        """PlanError naming every `arm = ...` of the plan (the top level's, each arm's) that is no arm, each at its
        line, at once."""
        given: list[tuple[tuple[str, ...], str]] = [((), plan.shared["arm"])] if "arm" in plan.shared else []
        given += [(("arms", arm.name), arm.changes["arm"]) for arm in plan.arms if "arm" in arm.changes]
        said = [f"{self.path}{f':{line}' if (line := key_line(self.text, table, 'arm')) else ''}: "
                f"{f'[{table_name(table)}] ' if table else ''}arm = \"{name}\"" for table, name in given]
        if problem := unknown_arms([name for _, name in given], said):
            raise PlanError(problem)

    def setting(self, table: tuple[str, ...], key: str, raw: Any) -> tuple[str, Any]:
        """(RunConfig field or extra flag's name, value) for one key of the plan, read as its flag is."""
        name = flag_name(key)
        where = f"[{table_name(table)}] " if table else ""
        if name in EXTRA_FLAGS:
            if name == "no-pacing":
                if not isinstance(raw, bool):
                    raise self.fail(table, key, f"{where}{key}: true or false")
                return "no_pacing", raw
            if not isinstance(raw, str):
                raise self.fail(table, key, f"{where}{key}: give it as text (\"K/N\")")
            return name.replace("-", "_"), raw
        s = _BY_NAME.get(name)
        if s is None:
            close = difflib.get_close_matches(name, _KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else " (a plan's keys are the run's flags without --)"
            raise self.fail(table, key, f"{where}{key}: no such setting{hint}")
        try:
            return s.key, _value(s, raw)
        except ValueError as e:
            raise self.fail(table, key, f"{where}{key}: {e}") from None


def _value(s: Setting, raw: Any) -> Any:
    """A TOML value as the setting's flag reads its text (its kind's parser, its bounds); ValueError when not."""
    if isinstance(s.kind, Switch):
        if not isinstance(raw, bool):
            raise ValueError(f"{raw!r}: true or false")
        return s.kind.sets if raw else not s.kind.sets
    return s.parse(_text(s.kind, raw, s.flag))


def _text(kind: Kind, raw: Any, flag: str) -> str:
    """A TOML value (of no switch) as the text its flag would be given; ValueError when it is of a kind the flag does
    not take. A number is a number setting's only (`model = 5` is no model's name: quote it); a float that is no
    finite number is said as a flag's is (`must be a finite number`)."""
    if isinstance(raw, bool):
        raise ValueError(f"{str(raw).lower()}: not a value of {flag} (it is no switch)")
    if isinstance(raw, list) and isinstance(kind, Csv):
        if not all(isinstance(x, str) for x in raw):
            raise ValueError("a list of text")
        return ",".join(raw)
    if isinstance(raw, int | float) and not isinstance(kind, Whole | Number):
        raise ValueError(f"{raw!r} is {toml_kind(raw)}, not text; write it in quotes (\"{raw!r}\") if it is meant")
    if isinstance(raw, float) and math.isinf(raw):
        raise ValueError(f"{raw!r}: {check_number(raw, whole=False, low=-math.inf)}")
    if isinstance(raw, int | float):
        return repr(raw)
    if isinstance(raw, str):
        return raw
    raise ValueError(f"{toml_kind(raw)} is not a value of {flag}")


# what TOML calls each kind of value tomllib gives (a bool before an int: it is one in Python)
_TOML_KINDS: tuple[tuple[type, str], ...] = ((dict, "a table"), (list, "an array"), (bool, "a boolean"),
                                             (int, "an integer"), (float, "a float"), (str, "a string"))


def toml_kind(value: Any) -> str:
    """What TOML calls a value of this kind (`a table`, `an array`), as the plan's reader says it."""
    return next((words for kind, words in _TOML_KINDS if isinstance(value, kind)), "a date or time")


def read_plan(path: Path) -> Plan:
    """The plan at `path`, every value checked; PlanError naming the file and line for anything wrong."""
    path = Path(path)
    try:   # the one reader: a folder, a FIFO (never waited on), a device or a file too large is said as such
        raw = read_bytes(path, PLAN_LIMIT)
    except InputError as e:
        raise PlanError(f"{e}; give a campaign's plan (TOML)") from None
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise PlanError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except RecursionError:   # tomllib has no depth limit of its own: arrays in arrays past Python's stack
        raise PlanError(f"{path}: nested too deep to be a plan (arrays or tables inside one another)") from None
    except tomllib.TOMLDecodeError as e:   # its message says the line and column
        line = _TOML_LINE.search(str(e))
        raise PlanError(f"{path}{f':{line[1]}' if line else ''}: not a plan in TOML: {e}") from None
    reader = _Reader(path, text)
    shared: dict[str, Any] = {}
    repeats = 1
    arms_table: Any = None
    reader.once((), data)
    for key, value in data.items():
        if key == "arms":
            arms_table = value
        elif flag_name(key) == "repeats":
            try:
                repeats = int(REPEATS.parse(_text(REPEATS, value, "repeats")))
            except ValueError as e:
                raise reader.fail((), key, f"repeats: {e}") from None
        elif isinstance(value, dict):
            raise reader.fail((key,), None, f"[{key}]: no such table (a plan has settings, then [arms.NAME] tables)")
        else:
            field, parsed = reader.setting((), key, value)
            shared[field] = parsed
    if arms_table is not None and not isinstance(arms_table, dict):
        raise reader.fail(("arms",), None, f"arms: {toml_kind(arms_table)}, not a table; give one [arms.NAME] table "
                                           f"per arm (e.g. [arms.base] and [arms.agent] with arm = \"agent\")")
    if not arms_table:
        raise reader.fail(("arms",), None, "no arms: give one [arms.NAME] table per arm (e.g. [arms.base] and "
                                           "[arms.agent] with arm = \"agent\")")
    arms: list[Arm] = []
    for name, table in arms_table.items():
        shown = table_name(("arms", name))   # as the plan spells it: `arms."campaign.json"`
        if problem := arm_problem(name, [arm.name for arm in arms]):
            raise reader.fail(("arms", name), None, f"[{shown}]: {problem}")
        if not isinstance(table, dict):
            raise reader.fail(("arms",), name, f"{shown}: {toml_kind(table)}, not a table; give [{shown}] with the "
                                               f"settings the arm changes")
        reader.once(("arms", name), table)
        changes: dict[str, Any] = {}
        for key, value in table.items():
            if isinstance(value, dict) and flag_name(key) not in _KEYS:
                sub = table_name(("arms", name, key))
                raise reader.fail(("arms", name, key), None, f"[{sub}]: no such table (an arm's table holds the "
                                                             f"settings the arm changes, no table of its own)")
            if flag_name(key) == "repeats":
                raise reader.fail(("arms", name), key, f"[{shown}] {key}: campaign-wide (every arm runs as many "
                                                       f"times, each repeat paired); set it at the plan's top level")
            field, parsed = reader.setting(("arms", name), key, value)
            if field in SHARED_KEYS:
                judging = field in BY_KEY and BY_KEY[field].group == JUDGING
                why = ("one judge for every arm, so the arms are compared on one measure" if judging
                       else "every arm runs the same tasks on one pacer and one set of slots")
                raise reader.fail(("arms", name), key, f"[{shown}] {key}: campaign-wide ({why}); set it at the "
                                  f"plan's top level")
            changes[field] = parsed
        arms.append(Arm(name, changes))
    plan = Plan(path, shared, tuple(arms), repeats,
                lines={k: n for k in data if (n := key_line(text, (), k))})
    reader.arms(plan)
    return plan


# ── resolving ─────────────────────────────────────────────────────────────────────────────────────────────────────
def config_from_values(given: dict[str, Any]) -> RunConfig:
    """A RunConfig from settings' values by field (what the flags or a plan gave; a missing one is its default),
    with what the flags say beside the fields: `shard`/`slot_range` (this node's share), `no_pacing`, the
    benchmark's own defaults for settings left unset (None), the instruction template read from its file. Raises
    ValueError naming the flag."""
    given = dict(given)
    shard, slot_range, no_pacing = given.pop("shard", None), given.pop("slot_range", None), given.pop("no_pacing",
                                                                                                      False)
    if shard is not None or slot_range is not None:
        given["shard"], given["workers"] = shard_from_flags(shard, slot_range,
                                                            given.get("workers", BY_KEY["workers"].default))
    for key, value in bench_defaults(given.get("bench") or RunConfig.bench).items():
        if given.get(key) is None:   # not given: the benchmark's default (engine/settings.py declares it)
            given[key] = value
    if no_pacing:
        given.update(UNPACED)
    if given.get("instruction_template_file") is not None:
        try:
            given["instruction_template"] = read_template(given["instruction_template_file"])
        except TemplateError as e:
            raise ValueError(str(e)) from None
    return RunConfig(**given)


def resolve(plan: Plan, overrides: Mapping[str, Any] | None = None) -> Campaign:
    """The campaign's shared config and its lanes: the plan's top level, `overrides` (flags given after the plan)
    over it, each arm's changes over that; each lane's out is the campaign's out / its name."""
    shared = {**plan.shared, **(overrides or {})}
    if shared.get("out") is None:
        raise PlanError(f"{plan.path}: out: required (the campaign's folder; e.g. out = \"runs/study\")")
    out = Path(shared["out"])
    try:
        config = config_from_values(shared)
        whole = config_from_values({k: v for k, v in shared.items() if k not in NODE_SHARE})
        lanes = []
        for repeat in range(1, plan.repeats + 1):
            for arm in plan.arms:
                name = lane_name(arm.name, repeat)
                lanes.append(PlannedLane(name, arm.name, repeat,
                                         config_from_values({**shared, **arm.changes, "out": out / name})))
    except ValueError as e:
        raise PlanError(f"{plan.path}: {e}") from None
    return Campaign(plan, config, tuple(lanes), whole, frozenset(overrides or {}))


def unknown_arms(names: Sequence[str], said: Sequence[str] = ()) -> str:
    """'' when each of `names` is an arm, else the words naming every one that is not, at once (the checks would stop
    at the first), each as `said` gives it (a plan's `FILE:LINE: [arms.x] arm = 'NAME'`), else as `--arm NAME`."""
    shown = list(said) or [f"--arm {name}" for name in names]
    unknown = list(dict.fromkeys(how for name, how in zip(names, shown, strict=True) if name not in arm_names()))
    return f"{', '.join(unknown)}: no such arm (known: {', '.join(arm_names())})" if unknown else ""


def short_form(config: RunConfig, arms: list[str], whole: RunConfig | None = None) -> Campaign:
    """`om2w-tui run --arm A --arm B ...`: a campaign whose arms differ only in the arm, each lane named by it
    (`whole`: the flags' settings before this node's share, as `Campaign.whole`)."""
    seen: list[str] = []
    for name in arms:
        if problem := arm_problem(name, seen):
            raise PlanError(f"--arm {name}: {problem}")
        seen.append(name)
    plan = Plan(Path("--arm " + " --arm ".join(seen)), {}, tuple(Arm(a, {"arm": a}) for a in seen),
                command_line=True)
    lanes = tuple(PlannedLane(a, a, 1, dataclasses.replace(config, arm=a, out=config.out / a)) for a in seen)
    return Campaign(plan, config, lanes, whole, frozenset(f.name for f in dataclasses.fields(RunConfig)))


def said(campaign: Campaign, detail: str) -> str:
    """A run's check's words for a campaign-wide setting (they start with its flag: `--out X: ...`) as the plan says
    where the plan set it (`study.toml:3: out X: ...`, as its other problems are said); as they are where a flag
    given after the plan set it, or the campaign is the short form's (all flags)."""
    m = re.match(r"--([a-z][a-z-]*) ", detail)
    setting = _BY_NAME.get(m[1]) if m else None
    plan = campaign.plan
    if m is None or setting is None or plan.command_line or setting.key in campaign.overrides \
            or setting.key not in plan.shared:
        return detail
    line = next((n for key, n in plan.lines.items() if flag_name(key) == m[1]), 0)
    return f"{plan.path}{f':{line}' if line else ''}: {m[1]} {detail[m.end():]}"


# ── campaign.json ─────────────────────────────────────────────────────────────────────────────────────────────────
def _json(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)   # an EndpointURL: its redacted form


def plan_json(campaign: Campaign) -> dict[str, Any]:
    """campaign.json: the plan as resolved. No secret: an endpoint redacted, a key's variable name only."""
    # the campaign's settings, not this node's share (its shard, its slots of a --slot-range): every node writes the
    # file, which must say the same whoever wrote it; each lane's run.<shard>.json says the node's part
    shared = campaign.settings.to_json()
    return {
        "format": FORMAT,
        "plan": str(campaign.plan.path),
        "shared": {k: v for k, v in shared.items() if (k in SHARED_KEYS or k == "out") and k != "shard"},
        "arms": {arm.name: {k: _json(v) for k, v in arm.changes.items()} for arm in campaign.plan.arms},
        "repeats": campaign.plan.repeats,
        "lanes": [{"name": lane.name, "arm": lane.arm, "repeat": lane.repeat, "settings": measured(lane.config)}
                  for lane in campaign.lanes],
        **({"selection": list(campaign.selection)} if campaign.selection is not None else {}),
    }


def resume_problem(campaign: Campaign, *, unread: bool = False) -> str:
    """'' when the campaign may write its folder: new, or a campaign's whose lanes it keeps, each measuring what it
    did on the same tasks (`campaign.selection` against campaign.json's); else what changed, where the change came
    from (the plan, or a flag given after it) and what to do. New lanes (an arm added, more repeats) are allowed
    where their folders are new or hold nothing but hidden files; a lane dropped is not (its folder holds its
    results and report reads the lanes campaign.json names). `unread`: the task files could not be read (the
    tasks check says why, and the campaign cannot start): the selection is not compared."""
    out = campaign.config.out
    folder = CampaignFolder(out)
    if not out.is_dir():
        return ""
    old: dict[str, Any] = {"lanes": []}
    old_lanes: list[LaneName] = []
    if is_campaign(out):
        try:
            old, old_lanes = folder.read_plan(), folder.lanes()
        except InputError as e:
            return f"{e}; move it aside or give the campaign another out"
    elif any(p.exists() for p in (RunFolder(out).results, RunFolder(out).manifest)):
        return said(campaign, f"--out {out}: a run's folder, not a campaign's; give the campaign its own out")
    names = {lane.name for lane in campaign.lanes}
    if dropped := [lane.name for lane in old_lanes if lane.name not in names]:
        return (f"{campaign.plan.path}: the campaign in {out} has lane(s) this plan drops: {', '.join(dropped)} "
                f"(their folders hold results); keep their arms and repeats in the plan, or give another out")
    kept = {lane.name for lane in old_lanes}
    for lane in campaign.lanes:
        if lane.name not in kept and (problem := _not_a_new_lane(folder.run(lane.name))):
            return (f"{folder.run(lane.name)}: {problem}, not a lane of the campaign in {out}; arm {lane.arm}'s "
                    f"lane would be written into it: move it aside or rename the arm")
    found = _measured_changes(campaign, old, unread)
    if not found or campaign.config.resume_changed:
        return ""
    flags = list(dict.fromkeys(source for source, _ in found if source))
    named = ", ".join(flags) + ("" if campaign.plan.command_line else " (given after the plan)")
    what = f"what lanes in {out} measure ({'; '.join(change for _, change in found)})"
    both = ", or add --resume-changed to go on with both in its lanes (each lane's run.json keeps the change)"
    if not flags and all(change.startswith("selection:") for _, change in found):
        # the plan may be as it was: a file it names (the tasks left out, the task file) says other tasks now
        cfg = campaign.config
        files = ([f"exclude_tasks {cfg.exclude_tasks}"] if cfg.exclude_tasks else []) + (
            [f"tasks {cfg.tasks}"] if cfg.tasks else [])
        via = f", as the files it names say them ({', '.join(files)})" if files else ""
        return (f"{campaign.plan.path}: the tasks it selects now{via} are not those of the lanes in {out} "
                f"({'; '.join(change for _, change in found)}); select them as before, give the new selection "
                f"another out{both}")
    if not flags:
        return (f"{campaign.plan.path}: the plan changes {what}; run it as it was, give the changed plan another "
                f"out{both}")
    if all(source for source, _ in found):
        verb = "changes" if len(flags) == 1 else "change"
        return f"{named} {verb} {what}; run the plan as it was, give the change another out{both}"
    return (f"{campaign.plan.path}: the plan and {named} change {what}; run it as it was, give the changed plan "
            f"another out{both}")


def _not_a_new_lane(path: Path) -> str:
    """'' where a new lane may be written at `path` (absent, or a folder of hidden files only: an earlier start's
    locks), else what is there."""
    if not path.exists() and not path.is_symlink():
        return ""
    if path.is_symlink() or not path.is_dir():
        return "not a folder"
    try:
        held = sorted(p.name for p in path.iterdir() if not p.name.startswith("."))
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    return f"a folder that holds {', '.join(held[:3])}{' ...' if len(held) > 3 else ''}" if held else ""


def _measured_changes(campaign: Campaign, old: Mapping[str, Any], unread: bool = False) -> list[tuple[str, str]]:
    """Each change in what a kept lane measures, as (the flag given after the plan it came from, or '' for the plan;
    the change in words). The selection is compared by its tasks where campaign.json has them, never by the files
    that say them (another path to the same tasks is no change); else by the settings that say it, as an older
    campaign.json was; not at all where the files could not be read (`unread`) or the tasks were not loaded."""
    before = {lane.get("name"): lane.get("settings") for lane in old["lanes"] if isinstance(lane, dict)}
    arms = {arm.name: arm.changes for arm in campaign.plan.arms}
    was_selected = old.get("selection")
    by_ids = isinstance(was_selected, list)
    keys = [k for k in MEASURED if not ((by_ids or unread) and k in SELECTION)]

    def source(key: str, arm: str) -> str:
        if key not in campaign.overrides or key in arms.get(arm, {}):
            return ""
        return BY_KEY[key].flag if key in BY_KEY else f"--{flag_name(key)}"

    found: list[tuple[str, str]] = []
    if by_ids and campaign.selection is not None and (how := selection_change(
            [str(t) for t in was_selected or ()], campaign.selection)):
        # the selection's flags given (the short form's: those set, every setting being a flag there)
        flags = [source(k, "") for k in MEASURED if k in SELECTION and source(k, "")
                 and (not campaign.plan.command_line or getattr(campaign.config, k) not in (None, "", ()))]
        found.append((", ".join(flags), how))
    for lane in campaign.lanes:
        was = before.get(lane.name)
        if isinstance(was, dict):
            now = measured(lane.config)
            found += [(source(k, lane.arm), f"{lane.name}: {c}") for k in keys
                      for c in changed(was, now, [k])]
    return found


def write_plan(campaign: Campaign) -> None:
    """campaign.json, atomically (when the campaign starts, after resume_problem found nothing)."""
    data = plan_json(campaign)
    data["written_at"] = time.time()
    campaign.config.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(CampaignFolder(campaign.config.out).plan, data)
