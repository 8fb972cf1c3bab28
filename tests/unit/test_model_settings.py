"""The run's model settings are one value (`ModelSettings`), declared once with their defaults: the run's config is
built on it, and the worker's spec, the probe's question and the arm's context carry it whole, through the one codec
(a nested dataclass round-trips; a whole config where the settings are declared is refused, never half-sent)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.model_check import ProbeSpec, probe_spec
from om2w_tui.episode.arms.interface import ArmContext
from om2w_tui.protocol.codec import CodecError, from_json, to_json
from om2w_tui.protocol.model_settings import ModelSettings
from om2w_tui.protocol.probe import ProbeQuestion
from om2w_tui.protocol.worker import COMMANDS, Run, WorkerSpec

MODEL_FIELDS = {f.name for f in dataclasses.fields(ModelSettings)}


def test_the_runs_defaults_are_the_settings_own_and_nobody_keeps_a_second_set():
    cfg = RunConfig(out=Path("runs/x"))
    assert cfg.model_settings() == ModelSettings() and type(cfg.model_settings()) is ModelSettings
    for carrier in (WorkerSpec, ProbeQuestion, ProbeSpec, ArmContext):
        names = {f.name for f in dataclasses.fields(carrier)}
        assert not (names & MODEL_FIELDS), f"{carrier.__name__} spells {names & MODEL_FIELDS} itself"
        assert "llm" in names
    for carrier in (WorkerSpec, ProbeQuestion, ProbeSpec):   # no defaults of their own at all
        assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                   for f in dataclasses.fields(carrier)), carrier.__name__


def test_the_workers_spec_round_trips_with_its_settings_nested(tmp_path):
    cfg = RunConfig(out=tmp_path, model="qwen3-vl", temperature=0.4, vision=False, coordinates="pixels",
                    llm_timeout=33.0, llm_retries=5, max_completion_tokens=512, mend_thinking=False)
    run = Run({"task_id": "t"}, cfg.worker_spec(tmp_path / "t", base_url="http://127.0.0.1:9/v1"))
    back = COMMANDS.read(COMMANDS.line(run))
    assert back == run and type(back.spec.llm) is ModelSettings
    assert back.spec.llm == cfg.model_settings()
    # a value of the wrong type deep inside is refused, naming where
    wire = json.loads(COMMANDS.line(run))
    wire["spec"]["llm"]["temperature"] = "hot"
    with pytest.raises(CodecError, match=r"spec\.llm\.temperature: expected float"):
        COMMANDS.decode(wire)


def test_the_probes_question_round_trips_with_its_settings_nested(tmp_path):
    question = probe_spec(RunConfig(out=tmp_path, temperature=1.5), "http://h/v1", []).question("sk")
    back = from_json(ProbeQuestion, json.loads(json.dumps(to_json(question))))
    assert back == question and type(back.llm) is ModelSettings and back.llm.temperature == 1.5


def test_a_whole_config_where_the_settings_are_declared_is_refused_not_half_sent(tmp_path):
    cfg = RunConfig(out=tmp_path)
    spec = dataclasses.replace(cfg.worker_spec(tmp_path), llm=cfg)   # mypy lets it by: a RunConfig is one
    with pytest.raises(CodecError, match="WorkerSpec.llm: a RunConfig where its field declares ModelSettings"):
        COMMANDS.line(Run({"task_id": "t"}, spec))
