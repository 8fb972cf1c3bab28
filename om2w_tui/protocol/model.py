"""A model call's outcome, named once: what a call to the model endpoint can come to (`CallKind`) and, in one
table (`CALL_KINDS`), what follows from each (its label, short name and plural, whose fault it is, its remedy); the
per-episode counts that travel in an episode's outcome (`ModelCalls`); and the pure rules that name a server's
answer: an HTTP error from its status and body (`classify_error`), a reply from its content and finish reason
(`reply_problem`), and a `<think>` block split off a reply (`split_thinking`).

The rules read what servers really send: vLLM's error bodies in both of its shapes (`{"object": "error",
"message": ...}` and `{"error": {"message": ...}}`), its context-length and "is not a multimodal model" wordings,
OpenAI's and proxies' (LiteLLM, gateways) variants of the same. No I/O, no openai or browser-use import: the worker
(episode/model_watch.py) feeds them what its client saw, the preflight (engine/model_check.py) what one request got.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from om2w_tui.protocol.faults import FaultKind

CallKind = Literal["ok", "context_length", "images_refused", "model_not_found", "bad_request", "rate_limited",
                   "server_error", "unreachable", "timeout", "not_api", "unparseable", "truncated", "empty"]
KINDS: tuple[CallKind, ...] = get_args(CallKind)

# the shape of a reply that is not the action schema (the `unparseable` kind's detail)
Shape = Literal["think", "fenced", "invalid_json", "not_unicode", "wrong_schema", "prose"]


@dataclass(frozen=True)
class CallKindInfo:
    """What follows from a call kind: its words (a record's error, a table cell's one word, a report's count) and,
    for a failure, whose fault an episode that ended on it was and what a user does about it."""
    label: str                  # a record's error names it so: `context length exceeded: ...`
    short: str                  # a word, where a table cell has room for one (a slot's `running !context`)
    counted: str                # the plural a report counts them in (`context length 9, unparseable replies 3`)
    # the endpoint's (down, overloaded: the same request may pass later, so the episode is retried and the circuit
    # breaker counts it) or the model's (the same request fails again: settled as a failure, the model guard counts
    # it); None for a call that answered
    fault: FaultKind | None
    remedy: str = ""


_E, _M = FaultKind.ENDPOINT, FaultKind.MODEL
# every kind a model call can come to, with all that follows from it: the one table
CALL_KINDS: dict[CallKind, CallKindInfo] = {
    "ok": CallKindInfo("answered", "ok", "answered", None),
    # the prompt (with the completion's budget) is longer than the model's context
    "context_length": CallKindInfo(
        "context length exceeded", "context", "context length", _M,
        "the prompt outgrew the model's context: raise vLLM's --max-model-len (as far as the model allows), or send "
        "less per step (fewer --max-steps, --no-vision)"),
    # a text-only model (or a server that takes no images) was sent a screenshot
    "images_refused": CallKindInfo(
        "images refused (not a multimodal model)", "images", "images refused", _M,
        "the served model takes no images: serve a vision model, or run with --no-vision"),
    # HTTP 404: the server does not serve this model name (or this path)
    "model_not_found": CallKindInfo(
        "model not served (HTTP 404)", "404", "model not served", _M,
        "the server does not serve this --model: compare it with GET /v1/models (vLLM's --served-model-name)"),
    # another 4xx: the request as sent is refused (auth, a parameter, a template)
    "bad_request": CallKindInfo(
        "request refused (HTTP 4xx)", "4xx", "requests refused", _M,
        "the server refuses the request as sent: read its message (the model's chat template, a parameter it does "
        "not take, the API key)"),
    # HTTP 429, after the client's own retries (Retry-After honoured)
    "rate_limited": CallKindInfo(
        "rate limited (HTTP 429)", "429", "rate limited", _E,
        "the server is rate limiting: fewer --workers, or raise the server's limits"),
    # HTTP 5xx, after the client's retries
    "server_error": CallKindInfo(
        "server error (HTTP 5xx)", "5xx", "server errors", _E,
        "the model server fails: see its log; the run retries these episodes"),
    # the connection was refused, reset or never made
    "unreachable": CallKindInfo(
        "endpoint unreachable", "down", "unreachable", _E,
        "the model server does not answer: start it or fix --vllm; the run retries these episodes"),
    # no whole answer within --llm-timeout (the call's deadline), after the client's retries
    "timeout": CallKindInfo(
        "timed out", "timeout", "timeouts", _E,
        "the model server is too slow: raise --llm-timeout, or give the server more capacity"),
    # an answer that is not the OpenAI API's: HTML, text, JSON without choices, past the size cap
    "not_api": CallKindInfo(
        "not the OpenAI API's answer", "not-api", "answers not the API's", _E,
        "the URL answers, but not as the OpenAI API (an HTML page, a proxy's text): give --vllm the server's OpenAI "
        "base URL (…/v1); the run retries these episodes"),
    # a reply that is not the action schema: prose, fenced, invalid JSON, other JSON
    "unparseable": CallKindInfo(
        "reply not the action schema", "parse", "unparseable replies", _M,
        "the model does not follow the action schema (response_format): turn on guided decoding (structured "
        "outputs) on the server, or use a model that follows JSON schemas"),
    # finish_reason "length": the reply was cut at the max-tokens cap
    "truncated": CallKindInfo(
        "reply cut at max tokens", "cut", "truncated replies", _M,
        "replies hit the max-tokens cap: raise --max-completion-tokens"),
    # a reply with no content at all
    "empty": CallKindInfo(
        "empty reply", "empty", "empty replies", _M,
        "the model answers nothing: see the server's log and the model's chat template"),
}
FAILURES: tuple[CallKind, ...] = tuple(k for k in KINDS if CALL_KINDS[k].fault is not None)
ENDPOINT_KINDS: frozenset[CallKind] = frozenset(k for k in KINDS if CALL_KINDS[k].fault is FaultKind.ENDPOINT)
MODEL_KINDS: frozenset[CallKind] = frozenset(k for k in KINDS if CALL_KINDS[k].fault is FaultKind.MODEL)

_THINK_REMEDY = ("a reasoning model served without a reasoning parser: start vLLM with --reasoning-parser "
                 "(qwen3, deepseek_r1, ...); om2w-tui splits <think> blocks off unless --no-mend-thinking")
MESSAGE_CHARS = 240   # what is kept of a server's words: enough to name the problem, never a whole prompt


_BY_NAME: dict[str, CallKindInfo] = {str(k): v for k, v in CALL_KINDS.items()}   # by a name as a record holds it


def _info(kind: str) -> CallKindInfo | None:
    """A kind's row; None for one this version does not know (an older or newer record's): shown as it is."""
    return _BY_NAME.get(kind)


def kind_label(kind: str) -> str:
    info = _info(kind)
    return info.label if info else kind


def kind_short(kind: str) -> str:
    info = _info(kind)
    return info.short if info else kind


def kind_counted(kind: str) -> str:
    info = _info(kind)
    return info.counted if info else kind


def call_fault(kind: str) -> FaultKind:
    """Whose fault an episode that ended on a failed call of `kind` was: the endpoint's, or else the model's."""
    info = _info(kind)
    return info.fault if info and info.fault else FaultKind.MODEL


def remedy(kind: str, message: str = "") -> str:
    """What a user does about `kind` (the first message of it can refine it: a `<think>` prefix)."""
    if kind == "unparseable" and message.startswith("think"):
        return _THINK_REMEDY
    info = _info(kind)
    return info.remedy if info else ""


def endpoint_kind(kind: str) -> bool:
    return call_fault(kind) is FaultKind.ENDPOINT


# ── HTTP errors ──────────────────────────────────────────
_CONTEXT = re.compile(
    r"maximum context length|context length|context window|max_model_len|maximum model length|"
    r"(prompt|input)( \(\d+ tokens\))? is too long|too many (input )?tokens|longer than the maximum|"
    r"reduce the length of the (input )?messages", re.I)
_CONTEXT_LIMIT = re.compile(r"(?:maximum context length is|maximum model length of|exceeds limit of|"
                            r"context length is only|max_model_len(?: is|=| of)?) ?(\d+)", re.I)
_IMAGES = re.compile(
    r"not a multimodal model|does not support (images?|vision|multi-?modal|image input)|image input is not "
    r"supported|at most 0 image|images? (are|is) not supported|allowed values: \['text'\]|image_url is only "
    r"supported|unknown part type:? ?'?image|only text (content|input)|text-only model", re.I)
_MODEL_MISSING = re.compile(r"model .{0,80}(does not exist|not found|is not served)|no such model|unknown model",
                            re.I)


def server_message(body: Any) -> str:
    """The server's own words in an error body: vLLM's `{"object": "error", "message": ...}`, OpenAI's (and newer
    vLLM's) `{"error": {"message": ...}}`, FastAPI's `{"detail": ...}`, or the text itself."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("message", "detail", "msg"):
                if isinstance(words := inner.get(key), str) and words:
                    return words
        elif isinstance(inner, str) and inner:
            return inner
        if isinstance(body.get("detail"), str):
            return str(body["detail"])
        return json.dumps(body, default=str)[:MESSAGE_CHARS]
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return str(body or "").strip()


def classify_error(status: int | None, body: Any) -> tuple[CallKind, str]:
    """The kind of an HTTP error answer (`status` None: no answer came) and the server's words, shortened. The words
    decide where they are plain (a context-length error sent as a 500 is still one); the status otherwise."""
    message = short(server_message(body))
    if status == 429:
        return "rate_limited", message
    if _IMAGES.search(message):
        return "images_refused", message
    if _CONTEXT.search(message) and (status is None or status < 500 or "token" in message.lower()):
        return "context_length", message
    if status == 404 or (status is not None and 400 <= status < 500 and _MODEL_MISSING.search(message)):
        return "model_not_found", message
    if status is not None and 400 <= status < 500:
        return "bad_request", message
    if status is not None and status >= 500:
        return "server_error", message
    return "unreachable", message


def context_limit(message: str) -> int | None:
    """The model's context in tokens, where a context-length message says it."""
    m = _CONTEXT_LIMIT.search(message)
    return int(m.group(1)) if m else None


SHAPES: dict[str, str] = {"think": "a <think> block", "fenced": "fenced JSON", "invalid_json": "invalid JSON",
                          "not_unicode": "JSON whose text is not Unicode (a lone surrogate)",
                          "wrong_schema": "JSON of another shape", "prose": "prose"}


def describe(kind: str, message: str) -> str:
    """`kind` as a record's error names it, with the server's words: `context length exceeded (32768 tokens): ...`,
    `reply not the action schema (prose): I will click ...`."""
    words = kind_label(kind)
    if kind == "context_length" and (limit := context_limit(message)):
        words = f"{words} ({limit} tokens)"
    shape, sep, rest = message.partition(": ")
    if kind == "unparseable" and sep and shape in SHAPES:
        words, message = f"{words} ({SHAPES[shape]})", rest
    return f"{words}: {message}" if message else words


def short(text: str, limit: int = MESSAGE_CHARS) -> str:
    """One line of at most `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ── replies ──────────────────────────────────────────────
_THINK_OPEN = re.compile(r"^\s*<think>", re.I)
_THINK_CLOSE = re.compile(r"</think>", re.I)
_FENCE = re.compile(r"^\s*```")


def split_thinking(content: str) -> tuple[str, str] | None:
    """(the thought, the rest) of a reply that starts with a `<think>...</think>` block (a reasoning model served
    without a reasoning parser), or that holds only its end (a chat template that opened the block in the prompt,
    as Qwen3's thinking models and DeepSeek-R1's do); None for a reply without one."""
    close = _THINK_CLOSE.search(content)
    if close is None:
        return None
    head, rest = content[: close.start()], content[close.end():]
    opened = _THINK_OPEN.match(head)
    if opened is None and "<think>" in head.lower():
        return None   # a block that is not at the start: the reply is something else
    thought = head[opened.end():] if opened else head
    return thought.strip(), rest.strip()


def reply_problem(content: str | None, finish_reason: str | None, structured: bool) -> tuple[CallKind, str] | None:
    """What is wrong with a reply that came (HTTP 200), or None when it can be what was asked: for a structured call
    (the agent's step, `response_format` set) a JSON object; otherwise any text. The message says what was seen."""
    text = content or ""
    if finish_reason == "length":
        return "truncated", short(f"finish_reason length after {len(text)} characters: {text[-80:]}")
    if not text.strip():
        return "empty", f"finish_reason {finish_reason or 'none'}, no content"
    if not structured:
        return None
    shape = reply_shape(text)
    return None if shape is None else ("unparseable", short(f"{shape}: {text[:160]}"))


def reply_shape(text: str) -> Shape | None:
    """Why `text` is not a JSON object, or None when it is one (of text that is Unicode: a lone surrogate, which
    Python's JSON reader takes and a schema's parser refuses, is `not_unicode`)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    else:
        if not isinstance(value, dict):
            return "wrong_schema"
        return "not_unicode" if _has_surrogate(value) else None
    if _THINK_CLOSE.search(text) or _THINK_OPEN.match(text):
        return "think"
    if _FENCE.match(text):
        return "fenced"
    if text.lstrip()[:1] in ("{", "["):
        return "invalid_json"
    return "prose"


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


_U_ESCAPE = re.compile(r"(\\+)u([0-9a-fA-F]{4})")


def mend_text(text: str) -> tuple[str, bool]:
    """`text` as Unicode that can be written as UTF-8, and whether anything was mended: a lone surrogate (a
    character, or a `\\uD800` escape of the JSON a reply holds) becomes U+FFFD; a surrogate pair written as two
    characters becomes the one character it stands for. Valid text comes back as it is."""
    mended = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if _has_surrogate(text) else text
    if "\\u" not in mended:
        return mended, mended != text
    out: list[str] = []
    last = 0
    escapes = [m for m in _U_ESCAPE.finditer(mended) if len(m[1]) % 2 == 1]   # an odd run: the last \\ escapes u
    skip = False
    for i, m in enumerate(escapes):
        if skip:
            skip = False
            continue
        unit = int(m[2], 16)
        if not 0xD800 <= unit <= 0xDFFF:
            continue
        following = escapes[i + 1] if i + 1 < len(escapes) else None
        if (unit < 0xDC00 and following is not None and following.start() == m.end() and len(following[1]) == 1
                and 0xDC00 <= int(following[2], 16) <= 0xDFFF):
            skip = True   # a pair: one character, as it stands
            continue
        out.append(mended[last:m.end() - 6] + "\\ufffd")
        last = m.end()
    out.append(mended[last:])
    result = "".join(out)
    return result, result != text


# ── the counts an episode's outcome carries ───────────────
@dataclass
class ModelCalls:
    """Every model call of one episode, by kind; the first message of each failure kind (short, no secrets: a
    server's words, never the request); what was mended. `streak` is the run of failed agent steps at the end
    (their last kind in `last_failure`): an episode not done whose last step call failed ended on its model."""

    calls: int = 0
    ok: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)
    thinking_stripped: int = 0     # replies whose <think> block was split off (the thought kept)
    reasoning_kept: int = 0        # replies whose reasoning_content was kept as the step's thought
    text_mended: int = 0           # replies whose text was not Unicode (a lone surrogate): mended to U+FFFD, kept
    latency_s: float = 0.0         # seconds spent waiting for replies, all calls
    prompt_tokens: int = 0
    completion_tokens: int = 0
    step_calls: int = 0            # calls that were the agent's step (not an extraction or a side call)
    streak: int = 0                # failed agent-step calls since the last good one
    last_failure: str | None = None

    def add(self, kind: str, message: str = "", latency_s: float = 0.0, *, step: bool = True,
            prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        """Count one call; `step`: it was the agent's step (not an extraction or a planner's side call)."""
        self.calls += 1
        self.latency_s += latency_s
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.step_calls += step
        if kind == "ok":
            self.ok += 1
            if step:
                self.streak, self.last_failure = 0, None
            return
        self.failures[kind] = self.failures.get(kind, 0) + 1
        self.first.setdefault(kind, short(message))
        if step:
            self.streak += 1
            self.last_failure = kind

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def record(self) -> dict[str, Any]:
        """What a results record keeps of the counts: calls by kind, the first words of each failure, what was
        mended, and the time spent waiting (the running streak is the episode's business only)."""
        out: dict[str, Any] = {"calls": self.calls, "ok": self.ok, "failures": dict(self.failures),
                               "first": dict(self.first), "latency_s": round(self.latency_s, 3)}
        if self.thinking_stripped:
            out["thinking_stripped"] = self.thinking_stripped
        if self.reasoning_kept:
            out["reasoning_kept"] = self.reasoning_kept
        if self.text_mended:
            out["text_mended"] = self.text_mended
        return out

    def ended_on(self, give_up_after: int) -> str | None:
        """The failure kind an episode that stopped short of done ended on, or None. The endpoint's when its last
        step's call failed through the endpoint (down, overloaded: the attempt is tainted, and retried); the
        model's when the agent gave up on failing calls (`give_up_after` in a row, browser-use's limit) or got no
        valid reply at all. One bad reply at the end of a spent budget is the budget's end, not the model's."""
        kind = self.last_failure if self.streak else None
        if kind is None or endpoint_kind(kind):
            return kind
        return kind if self.streak >= give_up_after or self.streak == self.step_calls else None
