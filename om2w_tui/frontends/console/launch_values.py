"""What the launch form holds: its fields (the settings that engine/settings.py gives a label), their first values,
parsing them into a RunConfig (each field through its setting's own parser and bounds), and the values of the last
launch, remembered in `$XDG_CONFIG_HOME/om2w-tui/last_launch.json`: owner-only, and never a secret (the API key's
variable NAME only; an endpoint URL without its credentials). No Textual here, so it is tested on its own."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.settings import BY_KEY as SETTING
from om2w_tui.engine.settings import SETTINGS, Choice, Setting, on_the_form
from om2w_tui.episode.instruction import TemplateError, read_template
from om2w_tui.files import write_json_atomic
from om2w_tui.json_input import InputError, load

VALUES_LIMIT = 1 << 20   # bytes of the launch form's memory read back


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    kind: str = "text"          # text | int | number | choice | switch: how the form asks for it
    placeholder: str = ""
    flag: str = ""              # the command-line flag its problems are named by


def _field(st: Setting) -> Field:
    return Field(st.key, st.label, st.form_kind or st.kind.form, st.placeholder, st.flag)


# the form's fields, in the form's order: the settings that have a label (engine/settings.py declares each once)
ORDER = ("bench", "tasks", "arm", "model", "vllm", "api_key_env", "workers", "out", "resume_changed", "pace_cooldown",
         "site_slots",
         "pace_dir", "executor", "ray_address", "timeout", "max_steps", "levels", "sites", "task_ids", "limit",
         "instruction_template_file", "coordinates", "viewport", "user_agent", "locale", "timezone")
FIELDS: tuple[Field, ...] = tuple(_field(SETTING[k]) for k in ORDER)
CHOICES: dict[str, tuple[str, ...]] = {st.key: st.choices for st in on_the_form() if isinstance(st.kind, Choice)}
BY_KEY = {f.key: f for f in FIELDS}

# a first launch runs the built-in offline suite: it needs no model server and no internet
def _form_default(key: str) -> str:
    st = SETTING[key]
    return st.form_default if st.form_default is not None else st.text(st.default)


DEFAULTS: dict[str, str] = {k: _form_default(k) for k in ORDER}


class FormError(ValueError):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def last_launch_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "om2w-tui" / "last_launch.json"


def load_values(path: Path | None) -> dict[str, str]:
    """The last launch's values over the defaults; a missing or broken file gives the defaults (and a value that
    should never have been kept, an endpoint's credentials, is dropped)."""
    values = dict(DEFAULTS)
    if path is None:
        return values
    try:   # the config folder's own file: never through a symlink, never a FIFO, bounded, the one decoder
        saved = load(path, VALUES_LIMIT, follow_symlinks=False)
    except InputError:
        return values
    if isinstance(saved, dict):
        values.update({k: remembered(k, str(v)) for k, v in saved.items() if k in DEFAULTS and v is not None})
    for key, choices in CHOICES.items():
        if values[key] not in choices:
            values[key] = DEFAULTS[key]
    return values


def remembered(key: str, text: str) -> str:
    """What of a field's text may be kept on disk (an endpoint without its credentials)."""
    return SETTING[key].kind.remember(text)


def save_values(path: Path | None, values: Mapping[str, str]) -> None:
    """Remember the form's values, owner-only, with nothing secret in them."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_json_atomic(path, {k: remembered(k, str(values.get(k, ""))) for k in DEFAULTS}, mode=0o600)


def values_from_config(cfg: RunConfig) -> dict[str, str]:
    """A config's values as the form shows them (an endpoint redacted)."""
    return {k: SETTING[k].text(getattr(cfg, k)) for k in ORDER}


def follow_bench(values: Mapping[str, str], old: str, new: str) -> dict[str, str]:
    """The fields a change of benchmark moves: each setting whose default depends on the benchmark (the offline
    suite's cooldown of 0) and that still holds the old benchmark's default takes the new one's; a value the user
    typed stays. Switching from the offline suite to a live one must not leave it unpaced."""
    moved = {}
    for st in SETTINGS:
        if st.bench_defaults and st.key in values and values[st.key].strip() == st.text(st.default_for(old)):
            moved[st.key] = st.text(st.default_for(new))
    return moved


def _value(st: Setting, text: str) -> Any:
    """One field's text as its setting's value; FormError names the field when it cannot be read."""
    try:
        return st.parse(text)
    except ValueError as e:
        raise FormError(st.key, f"{st.label}: {e}") from None


def config_from_values(values: Mapping[str, str]) -> RunConfig:
    """The form's values as a RunConfig; FormError names the field that cannot be read."""
    v = {**DEFAULTS, **values}
    if not v["out"].strip():
        raise FormError("out", "out folder: give the run's folder (a new one, or an earlier run's to resume it)")
    given = {k: _value(SETTING[k], v[k]) for k in ORDER}
    template_file = given["instruction_template_file"]
    if template_file is not None:
        try:
            given["instruction_template"] = read_template(template_file)
        except TemplateError as e:
            raise FormError("instruction_template_file", str(e)) from None
    return RunConfig(**given)


def on_this_form(message: str) -> str:
    """A preflight message as the form shows it: a switch's flag it names (`add --resume-changed`) is followed by
    the form's box that sets it."""
    for f in FIELDS:
        if f.kind == "switch" and f.flag in message:
            message = message.replace(f.flag, f"{f.flag} (the form's “{f.label}” box)")
    return message


def field_of_problem(message: str) -> str | None:
    """The form field a preflight problem is about, read off the flag its message starts with."""
    for f in FIELDS:
        if f.flag and (message.startswith(f.flag + " ") or message.startswith(f.flag + ":")):
            return f.key
    if message.startswith("no task left after the filters"):
        return "task_ids"
    return None
