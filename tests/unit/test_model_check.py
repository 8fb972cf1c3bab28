"""The preflight's verdicts on the model's answer to the agent's first step (engine/model_check.py), on the answers
vLLM really gives (the bodies of om2w_tui/offline/vllm_answers.py) and the probe's report of them. The probe process
itself, doctor and the launch form against the oracle's modes are tested end to end in tests/e2e/test_model_check.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.model_check import PAGE_TOKENS, WARNING, ProbeSpec, probe_spec, verdicts
from om2w_tui.offline import vllm_answers as vllm
from om2w_tui.protocol.codec import from_json
from om2w_tui.protocol.model_settings import ModelSettings
from om2w_tui.protocol.probe import ProbeAnswer

SPEC = probe_spec(RunConfig(out=Path("/tmp/x"), model="qwen"), "http://127.0.0.1:9/v1",
                  [Task("t", "Buy a kettle.", "https://shop.example/", max_steps=30)])
GOOD = '{"thinking": "t", "next_goal": "search", "action": [{"input": {"index": 2, "text": "kettle"}}]}'
VALID = {"valid": True, "how": "as sent", "actions": ["input"]}


def answered(content: str | None, *, finish: str = "stop", action: dict | None = None, prompt: int = 7923,
             images: int = 1, latency: float = 0.8, retried: list | None = None, reasoning: str | None = None) -> dict:
    """The probe's report of an HTTP 200, as its JSON line says it (read through the codec by `rows`)."""
    return {"ok": True, "sent": {"messages": 2, "images": images, "text_chars": 26000, "schema": "AgentOutput",
                                 "max_completion_tokens": 4096, "sampling": {"temperature": 0.0}},
            "latency_s": latency, "status": 200, "server": "uvicorn", "retried": retried or [],
            "content": content, "content_chars": len(content or ""), "finish_reason": finish,
            "prompt_tokens": prompt, "reasoning_field": reasoning, "action": action or VALID}


def refused(status: int | None, body: object, retried: list | None = None) -> dict:
    text = body if isinstance(body, str) else json.dumps(body)
    return {"ok": True, "sent": {"messages": 2, "images": 1, "text_chars": 26000, "schema": "AgentOutput",
                                 "max_completion_tokens": 4096, "sampling": {"temperature": 0.0}},
            "latency_s": 0.1, "status": status, "retried": retried or [], "error": text}


def rows(outcome: dict, limit: int | None = 32768, spec: ProbeSpec = SPEC) -> dict[str, tuple[object, str]]:
    answer = from_json(ProbeAnswer, json.loads(json.dumps(outcome)))    # as the preflight reads the probe's line
    return {what: (state, detail) for what, state, detail in verdicts(answer, limit, spec)}


def test_a_good_first_step_passes_both_rows():
    got = rows(answered(GOOD))
    assert got["model reply"] == (True, "answered in 0.8 s: the screenshot and the action schema accepted; the reply "
                                        "is a valid action (input)")
    assert got["model context"] == (True, "first step: 7,923 prompt + 4,096 completion tokens of max_model_len "
                                          "32,768 (20,749 left for larger pages and the history)")


def test_no_vision_says_no_screenshot_was_sent():
    assert "no screenshot sent: --no-vision" in rows(answered(GOOD, images=0))["model reply"][1]


@pytest.mark.parametrize(("content", "finish", "action", "said", "remedy"), [
    ("<think>\nthe search box\n</think>\n\n" + GOOD, "stop", {"valid": True, "how": "after the <think> block",
                                                            "actions": ["input"]},
     "opens with a <think> block before its JSON", "--reasoning-parser"),
    ("the search box\n</think>\n\n" + GOOD, "stop", {"valid": True, "how": "after the <think> block",
                                                    "actions": ["input"]},
     "opens with a <think> block before its JSON", "--reasoning-parser"),
    ("I will type kettle into the search box.", "stop", {"valid": False, "problem": "Invalid JSON"},
     "the reply is prose, not the action schema", "guided decoding"),
    ("```json\n" + GOOD + "\n```", "stop", {"valid": True, "how": "inside the code fence", "actions": ["input"]},
     "the reply's JSON is inside a code fence", "guided decoding"),
    ('{"thinking": "on and on', "length", {"valid": False, "problem": "EOF while parsing"},
     "the reply was cut at the max tokens (finish_reason length)", "--max-completion-tokens"),
    ("", "stop", {"valid": False, "problem": "EOF"}, "the reply is empty", "chat template"),
])
def test_replies_a_run_would_lose_are_warnings_with_their_remedy(content, finish, action, said, remedy):
    state, detail = rows(answered(content, finish=finish, action=action))["model reply"]
    assert state == WARNING and said in detail and remedy in detail
    assert ("is a valid action" in detail) == action["valid"]   # what a harness could mend is said so


def test_json_the_action_model_refuses_is_a_wrong_schema():
    action = {"valid": False, "problem": "action.0.click.index: Field required"}
    state, detail = rows(answered('{"action": [{"click": {}}]}', action=action))["model reply"]
    assert state == WARNING and "the action schema refuses (action.0.click.index: Field required)" in detail


def test_the_thought_in_a_reasoning_field_is_named():
    state, detail = rows(answered(GOOD, reasoning="reasoning_content"))["model reply"]
    assert state is True and "its thought in `reasoning_content` (kept as the step's thought)" in detail


def test_a_slow_first_step_is_a_warning():
    state, detail = rows(answered(GOOD, latency=70.0))["model reply"]
    assert state == WARNING and "took 70.0 s of --llm-timeout 120" in detail and "--llm-timeout" in detail


@pytest.mark.parametrize("shape", vllm.SHAPES)
def test_an_image_refused_by_a_text_only_model(shape):
    status, body = vllm.not_multimodal(shape, vllm.TEXT_ROOT)
    got = rows(refused(status, body))
    state, detail = got["model reply"]
    assert state == WARNING and f"images refused (not a multimodal model): {vllm.TEXT_ROOT} is not a multimodal " \
                                f"model" in detail and "--no-vision" in detail
    assert got["model context"] == (True, "max_model_len 32,768; the first step's tokens are not known (no usage in "
                                          "the reply)")


@pytest.mark.parametrize("shape", vllm.SHAPES)
def test_a_first_step_longer_than_the_context(shape):
    status, body = vllm.context_exceeded(shape, 9000, 7923, 4096)
    got = rows(refused(status, body), limit=9000)
    assert got["model reply"][0] == WARNING and "context length exceeded (9000 tokens)" in got["model reply"][1]
    state, detail = got["model context"]
    assert state == WARNING and detail.startswith("max_model_len 9000: the first step alone does not fit with 4096 "
                                                  "completion tokens") and "--max-model-len" in detail
    # a server that lists no max_model_len: the limit is read from its words
    assert rows(refused(status, body), limit=None)["model context"][1].startswith("max_model_len 9000:")


@pytest.mark.parametrize(("limit", "state"), [(7923 + 4096 + PAGE_TOKENS - 1, WARNING),
                                               (7923 + 4096 + PAGE_TOKENS, True)])
def test_the_context_left_after_the_first_step_against_a_real_pages_size(limit, state):
    got_state, detail = rows(answered(GOOD), limit=limit)["model context"]
    assert got_state == state
    assert ("less than a real site's page can add" in detail) == (state == WARNING)


def test_a_server_that_lists_no_max_model_len():
    assert rows(answered(GOOD), limit=None)["model context"] == (
        True, "the server lists no max_model_len (GET /v1/models); the first step took 7,923 prompt tokens")


def test_retries_before_the_answer_are_told():
    waits = [{"status": 429, "retry_after": "1"}, {"status": 429, "retry_after": "1"}]
    state, detail = rows(answered(GOOD, retried=waits))["model reply"]
    assert state is True and detail.startswith("answered in 0.8 s, after HTTP 429 (Retry-After 1 s), after HTTP 429 "
                                               "(Retry-After 1 s):")


@pytest.mark.parametrize(("outcome", "said", "remedy"), [
    (refused(429, vllm.proxy_rate_limited()[1], retried=[{"status": 429, "retry_after": "1"}] * 2),
     "rate limited (HTTP 429)", "fewer --workers"),
    (refused(*vllm.model_not_found("nested", "qwen")), "model not served (HTTP 404)", "--served-model-name"),
    (refused(None, "APIConnectionError: Connection error."), "endpoint unreachable", "start it or fix --vllm"),
    (refused(None, "TimeoutError: "), "timed out", "--llm-timeout"),
    (refused(None, "ModelProviderError: Request timed out."), "timed out", "--llm-timeout"),
    (refused(500, {"error": {"message": "boom", "type": "InternalServerError", "param": None, "code": 500}}),
     "server error (HTTP 5xx): boom", "see its log"),
])
def test_refusals_and_silences_are_named(outcome, said, remedy):
    state, detail = rows(outcome)["model reply"]
    assert state == WARNING and detail.startswith("the first step was refused: ") and said in detail
    assert remedy in detail


@pytest.mark.parametrize("words", [
    "The provided JSON schema contains features not supported by xgrammar.",
    "Failed to transform json schema into a grammar: unsupported keyword",
])
def test_a_schema_the_server_will_not_decode_by(words):
    state, detail = rows(refused(400, vllm.error_body("nested", words, "BadRequestError", 400)))["model reply"]
    assert state == WARNING and detail.startswith(f"the server refuses the action schema (response_format): {words}")
    assert "--structured-outputs-config.backend guidance" in detail


def test_a_probe_that_could_not_build_the_step_warns_without_blaming_the_model():
    state, detail = rows({"ok": False, "stage": "browser", "error": "TimeoutError: no CDP"})["model reply"]
    assert state == WARNING and detail == "not asked: the first step could not be built (browser: TimeoutError: no " \
                                          "CDP)"


def test_the_spec_is_the_runs_first_step(tmp_path):
    cfg = RunConfig(out=tmp_path, model="qwen3-vl", temperature=0.3, vision=False, coordinates="pixels",
                    max_steps=7, llm_timeout=45.0, api_key_env="MY_KEY")
    spec = probe_spec(cfg, "http://h/v1", [Task("t", "Buy a kettle.", "https://shop.example/", max_steps=7)])
    llm = spec.llm
    assert (llm.model, spec.base_url, llm.temperature, llm.vision, llm.coordinates, spec.max_steps,
            llm.llm_timeout, llm.api_key_env, llm.max_completion_tokens) == (
        "qwen3-vl", "http://h/v1", 0.3, False, "pixels", 7, 45.0, "MY_KEY", 4096)
    assert spec.llm == cfg.model_settings() and type(spec.llm) is ModelSettings   # whole, and nothing of the rest
    assert spec.instruction == ("Buy a kettle.\n\nThe task starts on https://shop.example/ (already open in the "
                                "browser).")
    assert "MY_KEY" in spec.to_json() and spec.browser == cfg.browser_settings()


def test_the_probes_question_crosses_through_the_codec_with_the_runs_values_and_no_key_shown():
    import subprocess
    import sys
    from pathlib import Path

    from om2w_tui.protocol.codec import from_json, to_json
    from om2w_tui.protocol.probe import ProbeQuestion

    cfg = RunConfig(out=Path("/tmp/x"), model="qwen", temperature=0.7, max_steps=9, llm_retries=4, vision=False,
                    coordinates="pixels", viewport="1024x768")
    question = probe_spec(cfg, "http://127.0.0.1:9/v1", []).question("sk-planted-secret")
    back = from_json(ProbeQuestion, json.loads(json.dumps(to_json(question))))
    assert back == question and back.api_key == "sk-planted-secret"
    assert (back.llm.temperature, back.max_steps, back.llm.llm_retries, back.llm.vision, back.llm.coordinates) == \
        (0.7, 9, 4, False, "pixels")
    assert back.browser is not None and back.browser.viewport == "1024x768"
    assert "sk-planted-secret" not in repr(back) and "127.0.0.1" not in repr(back)
    # a question this version did not ask is refused by the probe before it starts anything
    run = subprocess.run([sys.executable, "-m", "om2w_tui.episode.model_probe"], input='{"llm": {"model": "qwen"}}',
                         capture_output=True, text=True, timeout=60)
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer["ok"] is False and answer["stage"] == "probe" and "missing fields" in answer["error"]
