"""engine/settings.py: every run setting declared once, and the command line, the launch form and doctor built from
that one declaration."""

from __future__ import annotations

import argparse
import dataclasses

from om2w_tui.cli.main import build_parser, config_from_args
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.settings import BY_KEY, SETTINGS, Switch, changed
from om2w_tui.frontends.console.launch_values import DEFAULTS, FIELDS, config_from_values, values_from_config

# RunConfig fields that are no flag of their own: derived (the template's text, the node's share) or internal
NOT_FLAGS = {"instruction_template", "shard", "stop_grace"}


def run_actions() -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices["run"]._actions}


def test_every_field_of_a_run_is_declared_once_or_said_not_to_be_a_flag():
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    declared = [s.key for s in SETTINGS]
    assert len(declared) == len(set(declared)) and len({s.flag for s in SETTINGS}) == len(SETTINGS)
    assert set(declared) | NOT_FLAGS == fields and not set(declared) & NOT_FLAGS


def test_the_command_line_has_each_declared_flag_with_its_default_and_help():
    actions = run_actions()
    for s in SETTINGS:
        a = actions[s.key]
        assert a.option_strings == [s.flag] and a.help == s.help_text()
        assert a.default == (s.default if s.kind != Switch(False) else True), s.key
        assert tuple(a.choices or ()) == s.choices


def test_the_demo_has_its_own_defaults_and_fewer_flags():
    args = build_parser().parse_args(["demo"])
    cfg = config_from_args(args)
    assert (cfg.workers, cfg.pace_cooldown, cfg.bench, cfg.model) == (2, 0.0, "offline", "oracle")
    assert not hasattr(args, "bench") and not hasattr(args, "arm")


def test_the_form_shows_the_labelled_settings_and_reads_them_back(tmp_path):
    assert {f.key for f in FIELDS} == {s.key for s in SETTINGS if s.label}
    assert all(f.flag == BY_KEY[f.key].flag and f.label == BY_KEY[f.key].label for f in FIELDS)
    cfg = RunConfig(out=tmp_path / "r", bench="webvoyager", workers=7, pace_cooldown=45.5, levels=["easy", "hard"],
                    limit=3, site_slots=0, coordinates="pixels", timezone="Europe/Paris")
    back = config_from_values(values_from_config(cfg))
    assert back == cfg
    assert config_from_values(DEFAULTS).bench == "offline"   # a first launch runs the offline suite


def test_doctor_lists_what_a_run_changes():
    cfg = RunConfig(out="x", workers=8, pace_cooldown=60, vision=False, levels=["easy"])
    assert changed(cfg) == ["--level easy", "--no-vision", "--workers 8", "--pace-cooldown 60"]
    assert changed(RunConfig(out="x")) == []
