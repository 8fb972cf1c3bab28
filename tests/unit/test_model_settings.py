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
    run = Run({"task_id": "t"}, cfg.worker_spec(tmp_path / "t", base_url="http://127.0.0.1:9/v1", max_steps=30))
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
    spec = dataclasses.replace(cfg.worker_spec(tmp_path, max_steps=30), llm=cfg)   # mypy lets it by: a RunConfig is one
    with pytest.raises(CodecError, match="WorkerSpec.llm: a RunConfig where its field declares ModelSettings"):
        COMMANDS.line(Run({"task_id": "t"}, spec))


# ── what reaches the request: every client the run builds, against the real oracle server ──
def _cfg(*flags: str) -> RunConfig:
    from om2w_tui.cli.main import build_parser, config_from_args

    return config_from_args(build_parser().parse_args(["run", "--out", "runs/x", *flags]))


def _bodies_sent(llm: ModelSettings) -> list[dict]:
    """The bodies the oracle received from an agent step's client (browser-use's ChatOpenAI) and a planner's call
    (a bare client, sent `**ctx.llm.sampling()`), each once: a model the oracle does not serve answers 404 at once."""
    import asyncio

    from om2w_tui.offline import OracleServer

    async def nothing(*_args):
        return None

    async def ask(ctx: ArmContext) -> None:
        from browser_use.llm.messages import UserMessage

        with pytest.raises(Exception):   # noqa: B017 (the 404, as each client raises it)
            await ctx.chat_model().ainvoke([UserMessage(content="hi")])
        with pytest.raises(Exception):   # noqa: B017
            await ctx.openai_client().chat.completions.create(model=ctx.llm.model, **ctx.llm.sampling(),
                                                              messages=[{"role": "user", "content": "hi"}])

    with OracleServer([], keep=True) as oracle:
        ctx = ArmContext(task={}, instruction="", session=None, llm=llm, base_url=oracle.url, api_key="x",
                         max_steps=1, step_done=nothing)
        asyncio.run(ask(ctx))
        return [json.loads(b) for b in oracle.bodies]


def test_without_the_flags_neither_seed_nor_top_p_is_sent():
    cfg = _cfg("--model", "not-served", "--llm-retries", "0")
    assert (cfg.seed, cfg.top_p) == (None, None) and cfg.model_settings().sampling() == {"temperature": 0.0}
    bodies = _bodies_sent(cfg.model_settings())
    assert len(bodies) == 2 and all(b["temperature"] == 0.0 for b in bodies)
    assert not any("seed" in b or "top_p" in b for b in bodies), bodies


def test_the_seed_reaches_every_request_run_json_and_doctors_list():
    from om2w_tui.engine.settings import changed, check_config

    cfg = _cfg("--model", "not-served", "--llm-retries", "0", "--seed", "1234")
    bodies = _bodies_sent(cfg.model_settings())
    assert len(bodies) == 2 and all(b["seed"] == 1234 for b in bodies), bodies
    assert cfg.to_json()["seed"] == 1234 and check_config(cfg) == ""
    assert "--seed 1234" in changed(cfg) and not any("--seed" in c for c in changed(_cfg()))
    assert _cfg().to_json()["seed"] is None


def test_top_p_reaches_every_request_run_json_and_doctors_list():
    from om2w_tui.engine.settings import changed, check_config

    cfg = _cfg("--model", "not-served", "--llm-retries", "0", "--top-p", "0.9")
    bodies = _bodies_sent(cfg.model_settings())
    assert len(bodies) == 2 and all(b["top_p"] == 0.9 and "seed" not in b for b in bodies), bodies
    assert cfg.to_json()["top_p"] == 0.9 and check_config(cfg) == ""
    assert "--top-p 0.9" in changed(cfg) and not any("--top-p" in c for c in changed(_cfg()))
    assert check_config(RunConfig(out=Path("x"), top_p=0.0)) == "--top-p 0: must be more than 0 and at most 1"


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--seed", "-1", "must be 0 to 4294967295"), ("--seed", "1.5", "not a whole number"),
    ("--seed", "4294967296", "must be 0 to 4294967295"), ("--seed", "99999999999999999999", "must be 0 to 4294967295"),
    ("--workers", "99999999999999999999999", "must be 1 to 512"), ("--top-p", "0", "must be more than 0 and at most 1"),
    ("--top-p", "1.01", "must be more than 0 and at most 1"), ("--top-p", "nan", "not a number")])
def test_a_sampling_flag_out_of_its_range_is_refused_naming_it(capsys, flag, value, says):
    with pytest.raises(SystemExit) as exit_:
        _cfg(flag, value)
    assert exit_.value.code == 2 and f"{flag} {value}: {says}" in capsys.readouterr().err
