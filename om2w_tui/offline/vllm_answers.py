"""What vLLM's OpenAI-compatible server answers, body for body, for the oracle's vLLM-faithful model names.

Every body here was checked against vLLM's own source (vllm-project/vllm) and against replies users quoted from
running servers; each function names where its words come from. vLLM changed its error body at 0.10.1 (PR #22099):

    shape "flat"    vLLM <= 0.10.0   {"object": "error", "message": ..., "type": ..., "param": null, "code": 400}
                                     (vllm/entrypoints/openai/protocol.py: ErrorResponse, its fields at top level)
    shape "nested"  vLLM >= 0.10.1   {"error": {"message": ..., "type": ..., "param": ..., "code": 400}}
                                     (vllm/entrypoints/openai/engine/protocol.py: ErrorResponse{error: ErrorInfo})

and its wordings with it. Each shape here comes with the wordings of its era: "flat" with the chat endpoint's
`create_error_response(f"{e} {e.__cause__}")` (serving_chat.py), which ends every preprocessing error in " None";
"nested" with the `VLLMValidationError` era (vllm/exceptions.py), whose `__str__` appends `(parameter=..., value=...)`
and whose `parameter` fills the body's `param`. (Between 0.10.1 and the VLLMValidationError era vLLM sent the nested
body with the " None" ending and `param: null`; protocol/model.py's tests read that middle form too.)

The HTTP status is the body's `code` (api_server.py: `JSONResponse(content=..., status_code=...code)`); uvicorn
answers with `server: uvicorn`. vLLM itself rarely sends 429: a proxy in front does (LiteLLM's body is here).
"""

from __future__ import annotations

import base64
import math
import re
import struct
import time
import uuid
from typing import Any

Body = dict[str, Any]
SHAPES = ("nested", "flat")
MAX_MODEL_LEN = 32768          # what the oracle's model cards list, as a 32k Qwen served by vLLM does
VISION_ROOT = "Qwen/Qwen2.5-VL-7B-Instruct"   # ModelCard.root is the served model's path (`vllm serve <path>`)
TEXT_ROOT = "Qwen/Qwen3-8B"                   # a text-only reasoning model (the `think` and `text-only` cases)
CHARS_PER_TOKEN = 4            # what the oracle counts a token as: no tokenizer, a stable estimate
TEMPLATE_TOKENS = 8            # a chat template's role markers around each message
IMAGE_PATCH = 28               # Qwen2-VL's processor: one token per 28x28 pixels (14-px patches merged 2x2)
_DATA_URL = re.compile(r"^data:image/[\w.+-]+;base64,(.*)$", re.S)


# ── error bodies ─────────────────────────────────────────
def error_body(shape: str, message: str, err_type: str, code: int, param: str | None = None) -> Body:
    """vLLM's ErrorResponse in `shape` (see the module's table); `param` is always null in the flat era."""
    if shape == "flat":
        return {"object": "error", "message": message, "type": err_type, "param": None, "code": code}
    return {"error": {"message": message, "type": err_type, "param": param, "code": code}}


def _validation(shape: str, message: str, parameter: str | None = None, value: object = None) -> tuple[str, str | None]:
    """(message, param) of a request vLLM refuses while preprocessing a chat request: in the flat era the chat
    endpoint's f"{e} {e.__cause__}" (serving_chat.py, " None" when nothing caused it); in the nested era
    `VLLMValidationError.__str__` (vllm/exceptions.py) and its `parameter` as the body's param."""
    if shape == "flat":
        return f"{message} None", None
    extras = [f"parameter={parameter}"] if parameter is not None else []
    extras += [f"value={value}"] if value is not None else []
    return (f"{message} ({', '.join(extras)})" if extras else message), parameter


def model_not_found(shape: str, model: str) -> tuple[int, Body]:
    """`_check_model` (serving_engine.py; models/serving.py since): 404 NotFoundError; param "model" since it was
    given one (engine/serving.py), null before."""
    return 404, error_body(shape, f"The model `{model}` does not exist.", "NotFoundError", 404,
                           None if shape == "flat" else "model")


def context_exceeded(shape: str, limit: int, prompt_tokens: int, max_tokens: int | None) -> tuple[int, Body]:
    """The 400 of a prompt (with the completion's budget) longer than max_model_len: `_validate_input`
    (serving_engine.py, <= 0.10.0: "you requested N tokens (P in the messages, M in the completion)"; engine/serving.py
    in the VLLMValidationError era: "your request has P input tokens", or "'max_tokens' or 'max_completion_tokens' is
    too large" when the prompt alone fits). vLLM PR #33425 quotes the second era's first body from a live server."""
    p, m, el = prompt_tokens, max_tokens, limit
    if shape == "flat":
        if m is None:
            words = (f"This model's maximum context length is {el} tokens. However, you requested {p} tokens in the "
                     f"messages, Please reduce the length of the messages.")
        else:
            words = (f"This model's maximum context length is {el} tokens. However, you requested {p + m} tokens "
                     f"({p} in the messages, {m} in the completion). Please reduce the length of the messages or "
                     f"completion.")
        message, param = _validation(shape, words)
    elif p >= el or m is None:
        message, param = _validation(shape, f"This model's maximum context length is {el} tokens. However, your "
                                            f"request has {p} input tokens. Please reduce the length of the input "
                                            f"messages.", "input_tokens", p)
    else:
        message, param = _validation(shape, f"'max_tokens' or 'max_completion_tokens' is too large: {m}. This "
                                            f"model's maximum context length is {el} tokens and your request has {p} "
                                            f"input tokens ({m} > {el} - {p}).", "max_tokens", m)
    return 400, error_body(shape, message, "BadRequestError", 400, param)


def not_multimodal(shape: str, root: str) -> tuple[int, Body]:
    """An image sent to a text-only model: vllm/multimodal/registry.py `create_processor` raises
    ValueError(f"{model_config.model} is not a multimodal model") when the chat parser (chat_utils.py,
    MultiModalItemTracker.mm_processor) meets the first image part; a ValueError is a 400 BadRequestError."""
    message, _ = _validation(shape, f"{root} is not a multimodal model")
    return 400, error_body(shape, message, "BadRequestError", 400)


RETRY_AFTER_S = 1


def proxy_rate_limited() -> tuple[int, Body, dict[str, str]]:
    """What LiteLLM's proxy (the usual one in front of vLLM) answers past a key's limits: its documented 429 body
    (docs: proxy "Expected Response"; CommonProxyErrors.max_parallel_request_limit_reached) and the `retry-after`
    header it sends since BerriAI/litellm PR #4706 (whole seconds; 1 here, so a client's retries are seen fast)."""
    message = ("LiteLLM Rate Limit Handler for rate limit type = key. Crossed TPM / RPM / Max Parallel Request Limit. "
               "current rpm: 61, rpm limit: 60, current tpm: 35211, tpm limit: 9223372036854775807, current "
               "max_parallel_requests: 0, max_parallel_requests: 9223372036854775807")
    body = {"error": {"message": message, "type": "None", "param": "None", "code": "429"}}
    return 429, body, {"retry-after": str(RETRY_AFTER_S)}


# ── model cards ──────────────────────────────────────────
def model_card(name: str, root: str, max_model_len: int | None = MAX_MODEL_LEN) -> Body:
    """One entry of GET /v1/models: vLLM's ModelCard (engine/protocol.py: owned_by "vllm", root the model's path,
    parent null for a base model, max_model_len, one ModelPermission)."""
    created = int(time.time())
    permission = {"id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission", "created": created,
                  "allow_create_engine": False, "allow_sampling": True, "allow_logprobs": True,
                  "allow_search_indices": False, "allow_view": True, "allow_fine_tuning": False, "organization": "*",
                  "group": None, "is_blocking": False}
    return {"id": name, "object": "model", "created": created, "owned_by": "vllm", "root": root, "parent": None,
            "max_model_len": max_model_len, "permission": [permission]}


# ── completions ──────────────────────────────────────────
def completion(model: str, content: str | None, prompt_tokens: int, completion_tokens: int, *,
               finish_reason: str = "stop", reasoning: str | None = None,
               reasoning_field: str = "reasoning") -> Body:
    """A chat completion as vLLM's ChatCompletionResponse serialises it (chat_completion/protocol.py): the message's
    vLLM-only reasoning field is `reasoning_content` up to 0.15 (alone through 0.11; PR #27752 added `reasoning`
    beside it) and `reasoning` alone once PR #33402 removed the old one."""
    message: Body = {"role": "assistant", "content": content, "refusal": None, "annotations": None, "audio": None,
                     "function_call": None, "tool_calls": [], reasoning_field: reasoning}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason,
                     "stop_reason": None}],
        "service_tier": None, "system_fingerprint": None,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
                  "completion_tokens": completion_tokens, "prompt_tokens_details": None},
        "prompt_logprobs": None, "kv_transfer_params": None,
    }


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def image_tokens(data: bytes) -> int:
    """The tokens a vision model's processor makes of one image: one per 28x28 pixels (Qwen2-VL and Qwen2.5-VL),
    from a PNG's size in its header; 1024 for an image whose size cannot be read."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = (int(n) for n in struct.unpack(">II", data[16:24]))
        return math.ceil(width / IMAGE_PATCH) * math.ceil(height / IMAGE_PATCH) + 2   # + vision start and end
    return 1024


def prompt_tokens(body: Body) -> int:
    """The prompt's tokens as the oracle counts them: its text at CHARS_PER_TOKEN, a template's markers per message,
    and every image as a vision model's processor expands it."""
    total = 0
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        total += TEMPLATE_TOKENS
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for part in parts:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                total += text_tokens(str(part.get("text") or ""))
            elif part.get("type") == "image_url":
                total += image_tokens(_image_bytes(part))
    return total


def has_image(body: Body) -> bool:
    return any(isinstance(m, dict) and isinstance(m.get("content"), list)
               and any(isinstance(p, dict) and p.get("type") == "image_url" for p in m["content"])
               for m in body.get("messages") or [])


def _image_bytes(part: Body) -> bytes:
    url = (part.get("image_url") or {}).get("url") if isinstance(part.get("image_url"), dict) else None
    match = _DATA_URL.match(url) if isinstance(url, str) else None
    if match is None:
        return b""
    try:
        return base64.b64decode(match.group(1), validate=False)
    except ValueError:
        return b""


def max_tokens(body: Body) -> int | None:
    """The completion's budget as vLLM reads it: `max_completion_tokens or max_tokens` (engine/serving.py)."""
    value = body.get("max_completion_tokens") or body.get("max_tokens")
    return int(value) if isinstance(value, int | float) and value > 0 else None
