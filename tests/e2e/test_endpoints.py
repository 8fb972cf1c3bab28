"""Endpoints asked before the work, and every call to them bounded (issue 26 item 7, issue 30 items 4 and 6): the real
command line against real servers on 127.0.0.1 (the oracle, the judge stub and its broken forms: a trickle of one
byte a second, an endless body, 50 MB, an HTML page), and the real openai client on the one bounded transport."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from om2w_tui.offline.oracle import OracleServer
from om2w_tui.offline.suite import load_task_templates

from .helpers import RIGHT, WRONG, cli, free_port, write_task
from .judge_stub import StubJudge

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
QUICK_S = 30     # what "refused in seconds" allows on a loaded 2-core machine (the old code took minutes)


@pytest.fixture
def run_dir(tmp_path) -> Path:
    out = tmp_path / "run"
    write_task(out, RIGHT, "A Deluxe room costs $189.00 per night.", shots=2)
    write_task(out, WRONG, "I could not find it.", shots=2)
    return out


def judge(out: Path, url: str, model: str, *extra: str, timeout: float = QUICK_S * 2):
    started = time.monotonic()
    r = cli("judge", str(out), "--judge-model", model, "--judge-url", url, "--backoff", "0", *extra, timeout=timeout)
    return r, time.monotonic() - started


# ── asked before the work (issue 26 item 7) ─────────────────
def test_judge_refuses_a_dead_url_in_seconds_with_the_cause(run_dir):
    r, took = judge(run_dir, f"http://127.0.0.1:{free_port()}/v1", "oracle-judge")
    assert r.returncode == 2 and took < QUICK_S, (took, r.stdout[-800:], r.stderr[-800:])
    assert "--judge-url" in r.stderr and "does not answer" in r.stderr and "Start the server" in r.stderr
    assert "run the same command again" not in r.stderr and "success:" not in r.stdout
    assert not list(run_dir.glob("*auto_eval_results.json"))


def test_a_url_without_its_v1_is_told_to_add_it_for_judge_run_and_doctor(run_dir, tmp_path):
    with OracleServer(load_task_templates()) as oracle:
        bare = oracle.url.removesuffix("/v1")
        r, _ = judge(run_dir, bare, "oracle-judge")
        assert r.returncode == 2 and "add /v1" in r.stderr, r.stderr[-800:]
        assert "does not serve" not in r.stderr
        ran = cli("run", "--no-ui", "--vllm", bare, "--model", "oracle", "--bench", "offline", "--task-ids",
                  "offline_shop_search_01", "--out", str(tmp_path / "out"), timeout=QUICK_S * 2)
        assert ran.returncode == 2 and "--vllm" in ran.stderr and "add /v1" in ran.stderr, ran.stderr[-800:]
        doctor = cli("doctor", "--vllm", bare, "--model", "oracle", "--bench", "offline", "--task-ids",
                     "offline_shop_search_01", "--out", str(tmp_path / "out2"), timeout=QUICK_S * 4)
        assert doctor.returncode != 0 and "add /v1" in doctor.stdout + doctor.stderr, doctor.stdout[-1500:]


def test_a_model_the_endpoint_does_not_serve_is_named(run_dir):
    with OracleServer(load_task_templates()) as oracle:
        r, _ = judge(run_dir, oracle.url, "gpt-nope")
    assert r.returncode == 2 and "--judge-model gpt-nope: not served by" in r.stderr, r.stderr[-800:]


def test_an_endpoint_answering_html_is_named_as_such(run_dir):
    with StubJudge(fault="html", fault_models=True) as stub:
        r, took = judge(run_dir, stub.url, "stub-judge")
    assert r.returncode == 2 and took < QUICK_S
    assert "the endpoint answered HTML, not the OpenAI API" in r.stderr, r.stderr[-800:]


# ── deadlines and caps (issue 30 item 4) ────────────────────
def test_a_trickling_endpoint_is_refused_by_the_question_within_its_deadline(run_dir):
    with StubJudge(fault="trickle", fault_models=True) as stub:
        r, took = judge(run_dir, stub.url, "stub-judge", "--request-timeout", "5", "--retries", "0")
    assert r.returncode == 2 and took < QUICK_S, (took, r.stderr[-800:])
    assert "no whole reply within the deadline of 5 s" in r.stderr


def test_a_trickling_vllm_is_refused_by_the_runs_preflight_within_its_deadline(tmp_path):
    with StubJudge(fault="trickle", fault_models=True) as stub:
        started = time.monotonic()
        r = cli("run", "--no-ui", "--vllm", stub.url, "--model", "stub-judge", "--bench", "offline", "--task-ids",
                "offline_shop_search_01", "--out", str(tmp_path / "out"), timeout=QUICK_S * 3)
        took = time.monotonic() - started
    assert r.returncode == 2 and took < QUICK_S * 2, (took, r.stderr[-800:])
    assert "--vllm" in r.stderr and "no whole reply within the deadline of 15 s" in r.stderr


def test_judge_calls_have_a_total_deadline_not_a_timeout_per_read(run_dir):
    """The list answers; every chat call trickles one byte a second: each ends at its 5 s, the run in seconds."""
    with StubJudge(fault="trickle") as stub:
        r, took = judge(run_dir, stub.url, "stub-judge", "--request-timeout", "5", "--retries", "0")
    assert r.returncode == 1 and took < QUICK_S, (took, r.stdout[-800:])
    assert r.stdout.count("no whole reply within the deadline of 5 s") == 2, r.stdout[-800:]


@pytest.mark.parametrize("fault", ["endless", "huge"])
def test_a_reply_past_the_cap_is_refused_and_never_stored(run_dir, fault):
    with StubJudge(fault=fault) as stub:
        r, took = judge(run_dir, stub.url, "stub-judge", "--retries", "0", "--mode", "webvoyager")
    assert r.returncode == 1 and took < QUICK_S, (took, r.stdout[-800:])
    assert r.stdout.count("the reply passed 1,048,576 bytes") == 2, r.stdout[-800:]
    assert sum(p.stat().st_size for p in run_dir.glob("*auto_eval_results.json")) == 0


def test_a_judge_reply_that_is_html_names_the_endpoint_not_an_attribute_error(run_dir):
    with StubJudge(fault="html") as stub:
        r, _ = judge(run_dir, stub.url, "stub-judge", "--retries", "0", "--mode", "webvoyager")
    assert r.returncode == 1
    assert r.stdout.count("the endpoint answered HTML, not the OpenAI API") == 2, r.stdout[-800:]
    assert "AttributeError" not in r.stdout + r.stderr


# ── the worker's client: the same transport (episode/model_watch.py sees each call) ──
def watched_call(url: str, deadline: float) -> tuple[str, str, float]:
    """One chat call as a worker's planner makes it (ArmContext.openai_client, watched): (kind, message, seconds)."""
    from om2w_tui.episode.arms.interface import ArmContext
    from om2w_tui.episode.model_watch import ModelWatch
    from om2w_tui.protocol.model_settings import ModelSettings

    seen = []
    watch = ModelWatch(seen.append)

    async def nothing(*_args):
        return None

    llm = ModelSettings(model="stub-judge", llm_timeout=deadline, llm_retries=0)
    ctx = ArmContext(task={}, instruction="", session=None, llm=llm, base_url=url, api_key="x", max_steps=1,
                     step_done=nothing, watch=watch)

    async def go() -> None:
        import openai

        with pytest.raises(openai.APIConnectionError):   # its timeout error is one too
            await ctx.openai_client().chat.completions.create(model="stub-judge",
                                                              messages=[{"role": "user", "content": "hi"}])

    started = time.monotonic()
    asyncio.run(go())
    took = time.monotonic() - started
    (kind, message), = [(k, watch.calls.first[k]) for k in watch.calls.failures]
    return kind, message, took


def test_a_model_endpoint_answering_html_is_the_endpoints_fault_named():
    from om2w_tui.protocol.model import ENDPOINT_KINDS

    with StubJudge(fault="html") as stub:
        kind, message, _ = watched_call(stub.url, 10)
    assert kind == "not_api" and kind in ENDPOINT_KINDS
    assert "the endpoint answered HTML, not the OpenAI API" in message


def test_a_trickling_model_endpoint_times_out_at_the_deadline():
    with StubJudge(fault="trickle") as stub:
        kind, message, took = watched_call(stub.url, 3)
    assert kind == "timeout" and "deadline of 3 s" in message and took < 3 + 5, (kind, message, took)
