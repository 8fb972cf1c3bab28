"""What the launch form holds: its fields, their defaults, parsing them into a RunConfig, and the values of the
last launch, remembered in `$XDG_CONFIG_HOME/om2w-tui/last_launch.json` (never a secret: the API key's variable
NAME only). No Textual here, so it is tested on its own."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from om2w_tui.benchmarks.trajectory import write_json_atomic
from om2w_tui.engine.config import BENCHES, COORDINATES, DEFAULT_VLLM, RunConfig
from om2w_tui.episode.browser import DEFAULT_LOCALE, DEFAULT_TIMEZONE, DEFAULT_VIEWPORT
from om2w_tui.episode.instruction import DEFAULT_TEMPLATE, TemplateError, read_template


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    kind: str = "text"          # text | int | number | csv | choice
    placeholder: str = ""
    flag: str = ""              # the command-line flag its problems are named by


FIELDS: tuple[Field, ...] = (
    Field("bench", "benchmark", "choice", flag="--bench"),
    Field("tasks", "task file", placeholder="path (not needed for offline)", flag="--tasks"),
    Field("arm", "arm", "choice", flag="--arm"),
    Field("model", "model", placeholder="served model name", flag="--model"),
    Field("vllm", "endpoint", placeholder=f"default {DEFAULT_VLLM}", flag="--vllm"),
    Field("api_key_env", "API key variable", placeholder="name of the env variable", flag="--api-key-env"),
    Field("workers", "workers", "int", flag="--workers"),
    Field("out", "out folder", placeholder="runs/my-run", flag="--out"),
    Field("pace_cooldown", "cooldown (s)", "number", flag="--pace-cooldown"),
    Field("site_slots", "per site", "int", placeholder="1 (0: no limit)", flag="--site-slots"),
    Field("timeout", "timeout (s)", "number", flag="--timeout"),
    Field("max_steps", "max steps", "int", flag="--max-steps"),
    Field("levels", "levels", "csv", placeholder="easy,medium,hard (all)", flag="--level"),
    Field("sites", "sites", "csv", placeholder="host names (all)", flag="--site"),
    Field("task_ids", "task ids", "csv", placeholder="ids (all)", flag="--task-ids"),
    Field("limit", "limit", "int", placeholder="0: all", flag="--limit"),
    Field("instruction_template_file", "instruction file", placeholder="the seed's template ({task}, {website})",
          flag="--instruction-template"),
    Field("coordinates", "coordinates", "choice", flag="--coordinates"),
    Field("viewport", "viewport", placeholder=DEFAULT_VIEWPORT, flag="--viewport"),
    Field("user_agent", "user agent", placeholder="auto: desktop Chrome", flag="--user-agent"),
    Field("locale", "locale", placeholder=DEFAULT_LOCALE, flag="--locale"),
    Field("timezone", "timezone", placeholder=DEFAULT_TIMEZONE, flag="--timezone"),
)
CHOICES: dict[str, tuple[str, ...]] = {"bench": BENCHES, "coordinates": COORDINATES}
BY_KEY = {f.key: f for f in FIELDS}

# a first launch runs the built-in offline suite: it needs no model server and no internet
DEFAULTS: dict[str, str] = {
    "bench": "offline", "tasks": "", "arm": "base", "model": "oracle", "vllm": "",
    "api_key_env": "OPENAI_API_KEY", "workers": "2", "out": "runs/offline", "pace_cooldown": "0",
    "site_slots": "1",
    "timeout": "1800", "max_steps": "30", "levels": "", "sites": "", "task_ids": "", "limit": "0",
    "instruction_template_file": "", "coordinates": "normalized", "viewport": DEFAULT_VIEWPORT, "user_agent": "auto",
    "locale": DEFAULT_LOCALE, "timezone": DEFAULT_TIMEZONE,
}


class FormError(ValueError):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def last_launch_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "om2w-tui" / "last_launch.json"


def load_values(path: Path | None) -> dict[str, str]:
    """The last launch's values over the defaults; a missing or broken file gives the defaults."""
    values = dict(DEFAULTS)
    if path is None:
        return values
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return values
    if isinstance(saved, dict):
        values.update({k: str(v) for k, v in saved.items() if k in DEFAULTS and v is not None})
    for key, choices in CHOICES.items():
        if values[key] not in choices:
            values[key] = DEFAULTS[key]
    return values


def save_values(path: Path | None, values: Mapping[str, str]) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {k: str(values.get(k, "")) for k in DEFAULTS})


def values_from_config(cfg: RunConfig) -> dict[str, str]:
    def num(x: float) -> str:
        return f"{x:g}"

    return {"bench": cfg.bench, "tasks": str(cfg.tasks or ""), "arm": cfg.arm, "model": cfg.model,
            "vllm": cfg.vllm or "", "api_key_env": cfg.api_key_env, "workers": str(cfg.workers), "out": str(cfg.out),
            "pace_cooldown": num(cfg.pace_cooldown), "site_slots": str(cfg.site_slots), "timeout": num(cfg.timeout),
            "max_steps": str(cfg.max_steps),
            "levels": ",".join(cfg.levels), "sites": ",".join(cfg.sites), "task_ids": ",".join(cfg.task_ids),
            "limit": str(cfg.limit), "instruction_template_file": str(cfg.instruction_template_file or ""),
            "coordinates": cfg.coordinates, "viewport": cfg.viewport, "user_agent": cfg.user_agent,
            "locale": cfg.locale, "timezone": cfg.timezone}


def _int(key: str, text: str, minimum: int) -> int:
    try:
        v = int(text.strip())
    except ValueError:
        raise FormError(key, f"{BY_KEY[key].label}: {text.strip() or 'empty'} is not a whole number") from None
    if v < minimum:
        raise FormError(key, f"{BY_KEY[key].label}: must be at least {minimum}")
    return v


def _seconds(key: str, text: str, allow_zero: bool) -> float:
    try:
        v = float(text.strip())
    except ValueError:
        raise FormError(key, f"{BY_KEY[key].label}: {text.strip() or 'empty'} is not a number of seconds") from None
    if v < 0 or (v == 0 and not allow_zero):
        raise FormError(key, f"{BY_KEY[key].label}: must be {'0 or more' if allow_zero else 'more than 0'}")
    return v


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def config_from_values(values: Mapping[str, str]) -> RunConfig:
    """The form's values as a RunConfig; FormError names the field that cannot be read."""
    v = {**DEFAULTS, **values}
    out = v["out"].strip()
    if not out:
        raise FormError("out", "out folder: give the run's folder (a new one, or an earlier run's to resume it)")
    for key in ("model", "api_key_env"):
        if not v[key].strip():
            raise FormError(key, f"{BY_KEY[key].label}: must not be empty")
    if v["bench"] not in BENCHES:
        raise FormError("bench", f"benchmark: one of {', '.join(BENCHES)}")
    tasks = v["tasks"].strip()
    if v["coordinates"] not in COORDINATES:
        raise FormError("coordinates", f"coordinates: one of {', '.join(COORDINATES)}")
    template_file = v["instruction_template_file"].strip()
    template = DEFAULT_TEMPLATE
    if template_file:
        try:
            template = read_template(Path(template_file).expanduser())
        except TemplateError as e:
            raise FormError("instruction_template_file", str(e)) from None
    browser = {key: v[key].strip() or DEFAULTS[key] for key in ("viewport", "user_agent", "locale", "timezone")}
    return RunConfig(
        out=Path(out).expanduser(), bench=v["bench"], tasks=Path(tasks).expanduser() if tasks else None,
        task_ids=_csv(v["task_ids"]), levels=_csv(v["levels"]), sites=_csv(v["sites"]),
        limit=_int("limit", v["limit"] or "0", 0), arm=v["arm"].strip() or "base", model=v["model"].strip(),
        vllm=v["vllm"].strip() or None, api_key_env=v["api_key_env"].strip(),
        timeout=_seconds("timeout", v["timeout"], False), max_steps=_int("max_steps", v["max_steps"], 1),
        pace_cooldown=_seconds("pace_cooldown", v["pace_cooldown"], True), workers=_int("workers", v["workers"], 1),
        site_slots=_int("site_slots", v.get("site_slots") or "1", 0),
        instruction_template=template,
        instruction_template_file=Path(template_file).expanduser() if template_file else None,
        coordinates=v["coordinates"], **browser)


def field_of_problem(message: str) -> str | None:
    """The form field a preflight problem is about, read off the flag its message starts with."""
    for f in FIELDS:
        if f.flag and (message.startswith(f.flag + " ") or message.startswith(f.flag + ":")):
            return f.key
    if message.startswith("no task left after the filters"):
        return "task_ids"
    return None
