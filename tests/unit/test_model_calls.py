"""The rules that name a model call's outcome (om2w_tui/protocol/model.py), on the bodies servers really send:
vLLM's two error shapes and its wordings across versions, OpenAI's, LiteLLM's and gateways' variants."""

from __future__ import annotations

import pytest

from om2w_tui.protocol.faults import FaultKind
from om2w_tui.protocol.model import (
    CALL_KINDS,
    ENDPOINT_KINDS,
    FAILURES,
    KINDS,
    MODEL_KINDS,
    ModelCalls,
    call_fault,
    classify_error,
    context_limit,
    describe,
    kind_counted,
    kind_label,
    kind_short,
    remedy,
    reply_problem,
    reply_shape,
    split_thinking,
)


def vllm_old(message: str, code: int, kind: str = "BadRequestError") -> dict[str, object]:
    """vLLM's ErrorResponse before its error bodies were nested (0.4-0.9)."""
    return {"object": "error", "message": message, "type": kind, "param": None, "code": code}


def vllm_new(message: str, code: int, kind: str = "BadRequestError") -> dict[str, object]:
    """vLLM's (and OpenAI's) nested error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


CONTEXT_WORDINGS = [
    "This model's maximum context length is 32768 tokens. However, you requested 35211 tokens (33211 in the "
    "messages, 2000 in the completion). Please reduce the length of the messages or completion.",
    "This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please "
    "reduce the length of the input messages.",
    "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 32768 "
    "tokens and your request has 30000 input tokens (4096 > 32768 - 30000). None",
    "The decoder prompt (length 40000) is longer than the maximum model length of 32768. Make sure that "
    "`max_model_len` is no smaller than the number of text tokens.",
    "Input prompt (40000 tokens) is too long and exceeds limit of 32768",
    # vLLM's renderer (vllm/renderers/params.py: TokenizeParams._token_len_check and _text_len_check)
    "You passed 40000 input tokens and requested 4096 output tokens. However, the model's context length is only "
    "32768 tokens, resulting in a maximum input length of 28672 tokens. Please reduce the length of the input prompt. "
    "(parameter=input_tokens, value=40000)",
    "You passed 200000 input characters and requested 4096 output tokens. However, the model's context length is only "
    "32768 tokens, resulting in a maximum input length of 28672 tokens (at most 114688 characters). Please reduce the "
    "length of the input prompt. (parameter=input_text, value=200000)",
    # vLLM's engine for a multimodal model, whose image tokens only its processor counts (v1/engine/input_processor.py)
    "The decoder prompt (length 35211) is longer than the maximum model length of 32768. Make sure that "
    "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens. For image inputs, the number "
    "of image tokens depends on the number of images, and possibly their aspect ratios as well.",
    # the VLLMValidationError era (engine/serving.py `_validate_input`; vllm/exceptions.py appends the parameter)
    "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 32768 tokens "
    "and your request has 30000 input tokens (4096 > 32768 - 30000). (parameter=max_tokens, value=4096)",
]


@pytest.mark.parametrize("shape", [vllm_old, vllm_new])
@pytest.mark.parametrize("words", CONTEXT_WORDINGS)
def test_context_length_in_every_wording_and_both_shapes(shape, words):
    kind, message = classify_error(400, shape(words, 400))
    assert kind == "context_length"
    assert message.startswith(words[:60])
    assert context_limit(message) == 32768
    assert describe(kind, message).startswith("context length exceeded (32768 tokens): ")


@pytest.mark.parametrize("words", [
    "Qwen/Qwen3-4B is not a multimodal model",
    "At most 0 image(s) may be provided in one prompt.",
    "messages.content.type is invalid, allowed values: ['text']",
    "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
])
def test_images_refused(words):
    assert classify_error(400, vllm_new(words, 400))[0] == "images_refused"


@pytest.mark.parametrize(("status", "body", "kind"), [
    (404, vllm_old("The model `qwen-9b` does not exist.", 404, "NotFoundError"), "model_not_found"),
    (404, {"detail": "Not Found"}, "model_not_found"),
    (400, vllm_new("The model `x` does not exist.", 400), "model_not_found"),
    (429, vllm_new("Rate limit reached for requests", 429, "RateLimitError"), "rate_limited"),
    (429, vllm_new("Too many tokens per minute", 429, "RateLimitError"), "rate_limited"),
    (401, vllm_new("Incorrect API key provided", 401, "AuthenticationError"), "bad_request"),
    (422, {"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}, "bad_request"),
    (500, vllm_old("Internal Server Error", 500, "InternalServerError"), "server_error"),
    (503, "upstream connect error", "server_error"),
    (None, "Connection refused", "unreachable"),
])
def test_status_and_words(status, body, kind):
    assert classify_error(status, body)[0] == kind


def test_the_servers_words_are_kept_short_on_one_line():
    kind, message = classify_error(500, vllm_new("boom\n" + "x" * 5000, 500))
    assert kind == "server_error" and "\n" not in message and len(message) <= 240


def test_every_call_kind_has_one_row_of_the_one_table():
    assert tuple(CALL_KINDS) == KINDS
    for kind, info in CALL_KINDS.items():
        assert (kind_label(kind), kind_short(kind), kind_counted(kind)) == (info.label, info.short, info.counted)
        assert info.label and info.short and info.counted and (info.fault is None) == (kind == "ok")
        assert call_fault(kind) is (info.fault or FaultKind.MODEL) and (info.remedy != "") == (kind != "ok")
    # a kind a record holds that this version does not know (an older or a newer writer's) is shown by its name
    assert (kind_label("gremlin"), kind_short("gremlin"), kind_counted("gremlin"), remedy("gremlin")) == \
        ("gremlin", "gremlin", "gremlin", "")
    assert call_fault("gremlin") is FaultKind.MODEL and call_fault("unreachable") is FaultKind.ENDPOINT


def test_every_failure_kind_is_the_endpoints_or_the_models_and_has_a_label_and_a_remedy():
    assert set(FAILURES) == ENDPOINT_KINDS | MODEL_KINDS and not ENDPOINT_KINDS & MODEL_KINDS
    for kind in FAILURES:
        assert kind_label(kind) and remedy(kind)
    assert "--reasoning-parser" in remedy("unparseable", "think: <think>I should")
    assert "guided decoding" in remedy("unparseable", "prose: I will click")
    assert "--max-model-len" in remedy("context_length") and "--no-vision" in remedy("images_refused")


@pytest.mark.parametrize(("content", "expected"), [
    ("<think>\nthe search box first\n</think>\n\n{\"action\": []}", ("the search box first", '{"action": []}')),
    ("  <THINK>a</THINK>{}", ("a", "{}")),
    # the chat template opened the block in the prompt: only its end is in the reply
    ("the search box first\n</think>\n\n{\"action\": []}", ("the search box first", '{"action": []}')),
    ("{\"action\": []}", None),
    ("{\"memory\": \"a <think> inside\"} </think>", None),
])
def test_split_thinking(content, expected):
    assert split_thinking(content) == expected


@pytest.mark.parametrize(("content", "finish", "structured", "kind", "start"), [
    ('{"action": [{"click": {"index": 3}}]}', "stop", True, None, None),
    ("I will click the search button.", "stop", True, "unparseable", "prose"),
    ('```json\n{"action": []}\n```', "stop", True, "unparseable", "fenced"),
    ('{"action": [', "stop", True, "unparseable", "invalid_json"),
    ('["click"]', "stop", True, "unparseable", "wrong_schema"),
    ("<think>hm</think>I will click", "stop", True, "unparseable", "think"),
    ('{"action": [{"click": {"ind', "length", True, "truncated", "finish_reason length"),
    ("", "stop", True, "empty", "finish_reason stop"),
    (None, None, False, "empty", "finish_reason none"),
    ("Some extracted text", "stop", False, None, None),
])
def test_reply_problem(content, finish, structured, kind, start):
    found = reply_problem(content, finish, structured)
    if kind is None:
        assert found is None
    else:
        assert found is not None and found[0] == kind and found[1].startswith(start)


def test_an_unparseable_reply_is_described_by_its_shape():
    assert describe("unparseable", "prose: I will click") == "reply not the action schema (prose): I will click"
    assert describe("unparseable", "think: <think>hm") == "reply not the action schema (a <think> block): <think>hm"
    assert describe("truncated", "") == "reply cut at max tokens"


def test_reply_shape_of_an_object_is_none():
    assert reply_shape('{"a": 1}') is None


def test_counts_and_the_streak_an_episode_ends_on():
    calls = ModelCalls()
    calls.add("ok", latency_s=1.5, prompt_tokens=100, completion_tokens=20)
    calls.add("unparseable", "prose: I will", step=True)
    calls.add("ok")
    assert calls.ended_on(3) is None and calls.streak == 0
    calls.add("context_length", "This model's maximum context length is 32768 tokens. first")
    calls.add("context_length", "second")
    calls.add("server_error", "boom", step=False)   # an extraction call: not the agent's step
    assert calls.ended_on(3) is None and calls.streak == 2            # two failures: not yet given up on
    calls.add("context_length", "third")
    assert calls.ended_on(3) == "context_length" and calls.streak == 3
    assert calls.calls == 7 and calls.ok == 2 and calls.failed == 5 and calls.step_calls == 6
    assert calls.failures == {"unparseable": 1, "context_length": 3, "server_error": 1}
    assert calls.first["context_length"].endswith("first")   # the first message of each kind is what is kept


def test_an_episode_ends_on_its_model_only_when_the_agent_gave_up_on_it():
    every = ModelCalls()
    for _ in range(2):
        every.add("unparseable", "prose: x")
    assert every.ended_on(3) == "unparseable"            # no valid reply at all, however short the budget
    last = ModelCalls()
    for kind in ("ok", "ok", "unparseable"):             # one bad reply as the budget ran out: the budget's end
        last.add(kind, "wrong_schema: {}")
    assert last.ended_on(3) is None
    down = ModelCalls()
    for kind in ("ok", "ok", "server_error"):            # the endpoint failed the last step: the attempt is tainted
        down.add(kind, "boom")
    assert down.ended_on(3) == "server_error"


# ── text that is not Unicode (issue 26 item 6) ─────────────
@pytest.mark.parametrize("text, mended", [
    ("plain ✓ text", "plain ✓ text"),
    ("half \ud800 a character", "half \ufffd a character"),
    ("\ud83d\ude00 as two halves", "😀 as two halves"),
    (r'{"t": "half \ud800 a character"}', r'{"t": "half \ufffd a character"}'),
    (r'{"t": "\udc00\ud800"}', r'{"t": "\ufffd\ufffd"}'),
    (r'{"t": "a pair \ud83d\ude00 stays"}', r'{"t": "a pair \ud83d\ude00 stays"}'),
    (r'{"t": "an escaped backslash \\ud800 is text"}', r'{"t": "an escaped backslash \\ud800 is text"}'),
])
def test_text_that_is_not_unicode_is_mended_and_the_rest_kept(text, mended):
    import json

    from om2w_tui.protocol.model import mend_text

    got, changed = mend_text(text)
    assert got == mended and changed == (text != mended)
    got.encode("utf-8")                                       # writable as UTF-8
    if got.startswith("{"):
        value = json.loads(got)
        json.dumps(value, ensure_ascii=False).encode("utf-8")   # and so is what it holds


def test_json_holding_a_lone_surrogate_is_named_for_it_not_another_shape():
    assert reply_shape(r'{"action": [{"done": {"text": "x \ud800"}}]}') == "not_unicode"
    assert describe("unparseable", "not_unicode: {...}").startswith(
        "reply not the action schema (JSON whose text is not Unicode (a lone surrogate))")


def test_a_reply_with_no_choices_is_the_endpoints_not_the_models():
    from types import SimpleNamespace

    from om2w_tui.episode.model_watch import ModelWatch, _Call

    watch = ModelWatch(lambda e: None)
    for reply in ("<html>It works</html>", SimpleNamespace(choices=None, usage=None)):
        call = _Call()
        watch._read_reply(reply, call, {})
        assert call.kind == "not_api" and call.kind in ENDPOINT_KINDS and "not a chat completion" in call.message


def test_a_reply_with_a_lone_surrogate_is_mended_where_the_worker_reads_it():
    from types import SimpleNamespace

    from om2w_tui.episode.model_watch import ModelWatch, _Call

    watch = ModelWatch(lambda e: None)
    message = SimpleNamespace(content='{"action": [{"done": {"text": "x \\ud800"}}]}', model_extra={})
    reply = SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason="stop")], usage=None)
    call = _Call()
    watch._read_reply(reply, call, {"response_format": {"type": "json_schema"}})
    assert call.kind is None and message.content == '{"action": [{"done": {"text": "x \\ufffd"}}]}'
    assert watch.calls.text_mended == 1


def test_files_and_judge_lines_are_written_whatever_text_they_hold(tmp_path):
    import json

    from om2w_tui.evaluation.judge_files import append_line, read_judged
    from om2w_tui.files import write_json_atomic

    write_json_atomic(tmp_path / "result.json", {"final_result_response": "half \ud800"})
    assert json.loads((tmp_path / "result.json").read_bytes())["final_result_response"] == "half \ud800"
    append_line(tmp_path / "judged.json", {"task_id": "t", "response": "Status: success \udfff"})
    assert read_judged(tmp_path / "judged.json")["t"]["response"].startswith("Status: success")
