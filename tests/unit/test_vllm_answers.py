"""The oracle's vLLM-faithful model names over real HTTP: each failure case of issue 19 answered with vLLM's own body,
status and headers (om2w_tui/offline/vllm_answers.py names the vLLM source of each), seen through the openai client
(its exception classes, `e.body`, its retries on 429 honouring Retry-After), and named right by protocol/model.py."""

from __future__ import annotations

import base64
import io
import json
import time
import urllib.request

import openai
import pytest
from PIL import Image

from om2w_tui.offline import OracleServer
from om2w_tui.offline import vllm_answers as vllm
from om2w_tui.offline.oracle import VLLM_MODES, parse_mode
from om2w_tui.protocol.model import classify_error, context_limit, describe, remedy, reply_problem, split_thinking
from tests.unit.agent_requests import AGENT_SCHEMA, SEARCH_TASK, SHOP_HOME_STATE, TEMPLATES, user_message

CAP = 4096   # browser-use 0.13's ChatOpenAI sends max_completion_tokens 4096
RIGHT_ACTION = [{"input": {"index": 2, "text": "kettle", "clear": True}}, {"click": {"index": 26}}]


def screenshot_url(width: int = 1280, height: int = 800) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def step_messages(step: int = 1, vision: bool = True) -> list[dict]:
    text = user_message(SEARCH_TASK["confirmed_task"], SHOP_HOME_STATE, step)
    content: str | list = text
    if vision:
        content = [{"type": "text", "text": text}, {"type": "text", "text": "Current screenshot:"},
                   {"type": "image_url", "image_url": {"url": screenshot_url(), "detail": "auto"}}]
    return [{"role": "system", "content": "You are a browser agent."}, {"role": "user", "content": content}]


@pytest.fixture(scope="module")
def oracle():
    with OracleServer(TEMPLATES) as server:
        yield server


def client(server: OracleServer, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="x", max_retries=retries, timeout=10)


def step(server: OracleServer, model: str, n: int = 1, vision: bool = True, cap: int | None = CAP,
         retries: int = 0):
    extra = {} if cap is None else {"max_completion_tokens": cap}
    return client(server, retries).chat.completions.create(
        model=model, messages=step_messages(n, vision), response_format=AGENT_SCHEMA, temperature=0.0, **extra)


def refusal(server: OracleServer, model: str, **kwargs) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as raised:
        step(server, model, **kwargs)
    return raised.value


def get_json(url: str) -> tuple[int, dict, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


# ── model cards ──────────────────────────────────────────
def test_models_are_listed_as_vllm_lists_them(oracle):
    status, listing, headers = get_json(oracle.url + "/models")
    assert status == 200 and listing["object"] == "list" and headers["Server"] == "uvicorn"
    cards = {card["id"]: card for card in listing["data"]}
    assert set(VLLM_MODES) <= set(cards)
    for name in ("oracle", *VLLM_MODES):
        card = cards[name]
        assert card["object"] == "model" and card["owned_by"] == "vllm" and card["parent"] is None
        assert card["max_model_len"] == vllm.MAX_MODEL_LEN and isinstance(card["created"], int)
        assert card["permission"][0]["object"] == "model_permission"
    assert cards["oracle"]["root"] == vllm.VISION_ROOT and cards["oracle-text-only"]["root"] == vllm.TEXT_ROOT
    family = cards["drag"]   # the agent arm's families: LoRA cards of the oracle
    assert family["parent"] == "oracle" and family["max_model_len"] is None
    assert [m.id for m in client(oracle).models.list()][0] == "oracle"


def test_a_models_own_limit_is_on_its_card(oracle):
    assert get_json(oracle.url + "/models/oracle-context-2000")[1]["max_model_len"] == 2000
    assert parse_mode("oracle-context-2000").limit == 2000 and parse_mode("oracle-context").limit is None
    assert parse_mode("oracle-429-3").refusals == 3 and parse_mode("oracle-429").refusals == 2
    assert parse_mode("oracle-think-flat").shape == "flat" and parse_mode("oracle-think").shape == "nested"
    assert parse_mode("oracle-nosuch-flat") is None


# ── context length ───────────────────────────────────────
def test_context_is_exceeded_from_the_second_step_on(oracle):
    first = step(oracle, "oracle-context", 1)
    assert json.loads(first.choices[0].message.content)["action"] == RIGHT_ACTION
    error = refusal(oracle, "oracle-context", n=2)
    assert isinstance(error, openai.BadRequestError) and error.status_code == 400
    body = error.response.json()
    inner = body["error"]
    assert error.body == inner and inner["type"] == "BadRequestError" and inner["code"] == 400
    assert inner["param"] == "max_tokens"
    words = inner["message"]
    prompt = int(words.split("your request has ")[1].split(" ")[0])
    assert words == (f"'max_tokens' or 'max_completion_tokens' is too large: {CAP}. This model's maximum context "
                     f"length is 32768 tokens and your request has {prompt} input tokens ({CAP} > 32768 - {prompt}). "
                     f"(parameter=max_tokens, value={CAP})")
    assert prompt + CAP > 32768
    kind, message = classify_error(error.status_code, body)
    assert kind == "context_length" and context_limit(message) == 32768
    assert describe(kind, message).startswith("context length exceeded (32768 tokens): ")
    later = refusal(oracle, "oracle-context", n=5).response.json()["error"]["message"]
    assert int(later.split("your request has ")[1].split(" ")[0]) > prompt   # the prompt keeps growing


def test_context_without_a_completion_budget_names_the_input_tokens(oracle):
    inner = refusal(oracle, "oracle-context", n=2, cap=None).response.json()["error"]
    prompt = int(inner["message"].split("your request has ")[1].split(" ")[0])
    assert inner["param"] == "input_tokens" and prompt >= 32768
    assert inner["message"] == (f"This model's maximum context length is 32768 tokens. However, your request has "
                                f"{prompt} input tokens. Please reduce the length of the input messages. "
                                f"(parameter=input_tokens, value={prompt})")


def test_context_in_vllm_0_10s_flat_shape(oracle):
    error = refusal(oracle, "oracle-context-flat", n=3)
    body = error.response.json()
    assert set(body) == {"object", "message", "type", "param", "code"} and body["object"] == "error"
    assert error.body == body and body["code"] == 400 and body["param"] is None
    words = body["message"]
    prompt = int(words.split("(")[1].split(" ")[0])
    assert words == (f"This model's maximum context length is 32768 tokens. However, you requested {prompt + CAP} "
                     f"tokens ({prompt} in the messages, {CAP} in the completion). Please reduce the length of the "
                     f"messages or completion. None")
    kind, message = classify_error(400, body)
    assert kind == "context_length" and context_limit(message) == 32768


def test_a_limit_of_its_own_refuses_what_is_longer_and_nothing_else(oracle):
    fits = client(oracle).chat.completions.create(model="oracle-context-3000", max_completion_tokens=100,
                                                  messages=step_messages(1, vision=False))
    assert fits.usage.prompt_tokens + 100 <= 3000
    error = refusal(oracle, "oracle-context-3000", n=1, vision=True)   # a screenshot is ~1300 tokens more
    words = error.response.json()["error"]["message"]
    prompt = int(words.split("your request has ")[1].split(" ")[0])
    assert prompt > fits.usage.prompt_tokens + 1000 and "maximum context length is 3000 tokens" in words


# ── replies ──────────────────────────────────────────────
@pytest.mark.parametrize("model", ["oracle-think", "oracle-think-open"])
def test_a_think_block_before_the_right_json(oracle, model):
    reply = step(oracle, model).choices[0]
    content = reply.message.content
    assert reply.finish_reason == "stop"
    assert content.startswith("<think>\n") == (model == "oracle-think") and "\n</think>\n\n{" in content
    thought, rest = split_thinking(content)
    assert thought.startswith("Oracle for offline_shop_search_01") and json.loads(rest)["action"] == RIGHT_ACTION
    kind, message = reply_problem(content, reply.finish_reason, structured=True)
    assert kind == "unparseable" and message.startswith("think: ") and "--reasoning-parser" in remedy(kind, message)


@pytest.mark.parametrize(("model", "field", "absent"), [("oracle-reasoning", "reasoning_content", "reasoning"),
                                                         ("oracle-reasoning-new", "reasoning", "reasoning_content")])
def test_reasoning_beside_good_json(oracle, model, field, absent):
    reply = step(oracle, model).choices[0]
    extra = reply.message.model_extra
    assert extra[field].startswith("Oracle for offline_shop_search_01") and absent not in extra
    assert json.loads(reply.message.content)["action"] == RIGHT_ACTION
    assert reply_problem(reply.message.content, reply.finish_reason, structured=True) is None


@pytest.mark.parametrize(("model", "shape"), [("oracle-prose", "prose"), ("oracle-fenced", "fenced")])
def test_replies_that_are_not_the_schema(oracle, model, shape):
    reply = step(oracle, model).choices[0]
    kind, message = reply_problem(reply.message.content, reply.finish_reason, structured=True)
    assert (kind, message.split(":")[0]) == ("unparseable", shape)
    assert "guided decoding" in remedy(kind, message)
    if shape == "fenced":
        assert json.loads(reply.message.content.strip("`\n").removeprefix("json\n"))["action"] == RIGHT_ACTION
    else:
        assert "kettle" in reply.message.content and not reply.message.content.lstrip().startswith("{")


def test_a_reply_cut_at_the_cap(oracle):
    completion = step(oracle, "oracle-truncated", cap=300)
    reply = completion.choices[0]
    assert reply.finish_reason == "length" and completion.usage.completion_tokens == 300
    assert reply.message.content.startswith('{"thinking": "Oracle for') and len(reply.message.content) == 1200
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.message.content)
    assert reply_problem(reply.message.content, reply.finish_reason, structured=True)[0] == "truncated"


def test_an_empty_reply(oracle):
    completion = step(oracle, "oracle-empty")
    reply = completion.choices[0]
    assert reply.message.content == "" and reply.finish_reason == "stop" and completion.usage.completion_tokens == 1
    assert reply_problem(reply.message.content, reply.finish_reason, structured=True)[0] == "empty"


# ── images to a text-only model ──────────────────────────
@pytest.mark.parametrize(("model", "words"), [
    ("oracle-text-only", f"{vllm.TEXT_ROOT} is not a multimodal model"),
    ("oracle-text-only-flat", f"{vllm.TEXT_ROOT} is not a multimodal model None"),
])
def test_an_image_to_a_text_only_model(oracle, model, words):
    error = refusal(oracle, model)
    assert isinstance(error, openai.BadRequestError) and error.body["message"] == words
    assert error.body["type"] == "BadRequestError" and error.body["code"] == 400
    kind, _ = classify_error(400, error.response.json())
    assert kind == "images_refused" and "--no-vision" in remedy(kind)
    without = step(oracle, model, vision=False)    # --no-vision: the same model plays the step
    assert json.loads(without.choices[0].message.content)["action"] == RIGHT_ACTION


# ── an unknown model ─────────────────────────────────────
@pytest.mark.parametrize(("model", "body"), [
    ("qwen-9b", {"error": {"message": "The model `qwen-9b` does not exist.", "type": "NotFoundError",
                           "param": "model", "code": 404}}),
    ("qwen-9b-flat", {"object": "error", "message": "The model `qwen-9b-flat` does not exist.",
                      "type": "NotFoundError", "param": None, "code": 404}),
])
def test_an_unknown_model_is_vllms_404(oracle, model, body):
    error = refusal(oracle, model)
    assert isinstance(error, openai.NotFoundError) and error.response.json() == body
    assert error.response.headers["server"] == "uvicorn"
    assert classify_error(404, body)[0] == "model_not_found"


# ── 429 from a proxy in front ────────────────────────────
def test_429_with_retry_after_passes_after_the_clients_retries():
    with OracleServer(TEMPLATES) as server:
        started = time.monotonic()
        completion = step(server, "oracle-429", retries=2)      # openai's default: 2 retries
        waited = time.monotonic() - started
        assert json.loads(completion.choices[0].message.content)["action"] == RIGHT_ACTION
        assert server.calls == 3 and waited >= 2 * vllm.RETRY_AFTER_S   # two refusals, each waited out
        error = refusal(server, "oracle-429", retries=0)
        assert isinstance(error, openai.RateLimitError) and error.status_code == 429
        assert error.response.headers["retry-after"] == str(vllm.RETRY_AFTER_S)
        assert error.body["code"] == "429" and "Crossed TPM / RPM / Max Parallel Request Limit" in error.body["message"]
        assert classify_error(429, error.response.json())[0] == "rate_limited"


def test_429_refusals_follow_the_count_asked():
    with OracleServer(TEMPLATES) as server:
        outcomes = []
        for _ in range(4):
            try:
                step(server, "oracle-429-1")
                outcomes.append("ok")
            except openai.RateLimitError:
                outcomes.append("429")
        assert outcomes == ["429", "ok", "429", "ok"]


# ── usage ────────────────────────────────────────────────
def test_usage_counts_the_screenshot_as_a_vision_model_does(oracle):
    text_only = step(oracle, "oracle-reasoning", vision=False).usage.prompt_tokens
    with_image = step(oracle, "oracle-reasoning").usage.prompt_tokens
    expected = (1280 + 27) // 28 * ((800 + 27) // 28) + 2   # one token per 28x28 pixels, + vision start and end
    assert with_image - text_only == expected + vllm.text_tokens("Current screenshot:")
