"""Every model call of an episode, seen where browser-use's client is: counted by kind (protocol/model.py), mended
where the harness can mend it, recorded as a training row where rows are recorded, and told to the scheduler as it
happens (a `ModelCall` event).

A call is one `ainvoke` of browser-use's `ChatOpenAI` (the agent's step, or an extraction), or one request of a bare
OpenAI client (the planner's turn). Its kind is decided from what the HTTP exchange came to (an error status and
body, a transport failure, the reply's content and finish reason) and, for the agent's step, from whether
browser-use could read the reply as its action schema. The openai client's own retries (429 with Retry-After, 5xx,
connection errors) happen inside one call: a call that failed is one that failed after them.

Mending: a `<think>...</think>` block before the reply (a reasoning model served without a reasoning parser) is
split off before browser-use parses the reply, and `reasoning_content` is read; either is kept as the step's thought
(`take_thought`) and in the row. `mend_thinking` False leaves replies as they came (and such a reply is then
counted `unparseable`, shape `think`). Text that is not Unicode (a lone surrogate, as a character or as a `\ud800`
escape in the reply's JSON) is always mended to U+FFFD (`protocol.model.mend_text`): the answer is kept and every file
it reaches can be written as UTF-8. What the endpoint answered that is not the API's (HTML, JSON without choices, past
the reply cap or the deadline: endpoint.py) is `not_api` or `timeout`, the endpoint's fault."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from om2w_tui.episode.rows import CallLog
from om2w_tui.protocol.model import (
    ModelCalls,
    classify_error,
    mend_text,
    reply_problem,
    reply_shape,
    short,
    split_thinking,
)
from om2w_tui.protocol.worker import Event, ModelCall

Emit = Callable[[Event], None]


@dataclass
class _Call:
    """What one call came to, filled in as it goes (the HTTP exchange first, then browser-use's parse)."""
    structured: bool = False
    kind: str | None = None
    message: str = ""
    content: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    row: dict[str, Any] | None = None


_CURRENT: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("om2w_model_call", default=None)


def classify_exception(exc: BaseException) -> tuple[str, str]:
    """The kind of a call that raised, and the server's (or the transport's) words. Reads the exception and its
    causes: openai's status errors (their body is the server's), timeouts, connection failures, and what browser-use
    raises of its own (a truncated reply; a reply its schema refused)."""
    import httpx  # the client's own modules, already loaded in a worker that makes calls
    import openai
    from browser_use.llm.exceptions import ModelOutputTruncatedError, ModelProviderError
    from pydantic import ValidationError

    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in chain and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    from om2w_tui.endpoint import reply_error  # the bounded transport's refusals, loaded with the client

    if (refused := reply_error(exc)) is not None:   # the endpoint's answer refused where replies are read
        return ("timeout" if refused.problem == "deadline" else "not_api"), short(str(refused))
    for e in chain:
        if isinstance(e, openai.APIStatusError):
            return classify_error(e.status_code, e.body if e.body is not None else e.message)
        if isinstance(e, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
            return "timeout", short(str(e) or type(e).__name__)
        if isinstance(e, openai.APIConnectionError | httpx.TransportError | ConnectionError):
            return "unreachable", short(f"{type(e).__name__}: {e}")
        if isinstance(e, ModelOutputTruncatedError):
            return "truncated", short(e.message)
        if isinstance(e, ValidationError):
            first: dict[str, Any] = dict(e.errors()[0]) if e.errors() else {}
            shape = "invalid_json" if first.get("type") == "json_invalid" else "wrong_schema"
            where = ".".join(str(p) for p in first.get("loc", ()))
            return "unparseable", short(f"{shape}: {where + ': ' if where else ''}{first.get('msg', e)}")
    if isinstance(exc, ModelProviderError):
        return classify_error(exc.status_code, exc.message)
    return "bad_request", short(f"{type(exc).__name__}: {exc}")


def _reasoning(message: Any) -> str | None:
    """vLLM's reasoning parser's output beside the content (`reasoning_content`, newer versions also `reasoning`)."""
    extra = getattr(message, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key, getattr(message, key, None))
        if isinstance(value, str) and value.strip():
            return mend_text(value.strip())[0]
    return None


class ModelWatch:
    """One episode's model calls. `watch(llm)` wraps a browser-use ChatOpenAI, `client(c)` a bare AsyncOpenAI."""

    def __init__(self, emit: Emit, mend_thinking: bool = True, call_log: CallLog | None = None):
        self.emit = emit
        self.mend = mend_thinking
        self.call_log = call_log
        self.calls = ModelCalls()
        self._thought: str | None = None

    # ── what the runner reads ──────────────────────────────
    def take_thought(self) -> str | None:
        """The reasoning the model gave with its last step call (a <think> block, reasoning_content), once."""
        thought, self._thought = self._thought, None
        return thought

    # ── wrapping ───────────────────────────────────────────
    def watch(self, llm: Any) -> Any:
        """Make a browser-use ChatOpenAI's calls seen here: its client (one for the episode: ChatOpenAI makes one a
        call otherwise) and its `ainvoke`, before browser-use's token counter wraps it in turn."""
        real_client = llm.get_client()
        wrapped = self.client(real_client)
        llm.get_client = lambda: wrapped
        real_ainvoke = llm.ainvoke

        async def ainvoke(messages: Any, output_format: Any = None, **kwargs: Any) -> Any:
            return await self._invoke(real_ainvoke, messages, output_format, kwargs)

        llm.ainvoke = ainvoke
        return llm

    def client(self, real: Any) -> Any:
        """An object with `chat.completions.create` like `real`'s, every request of it seen here."""
        async def create(**params: Any) -> Any:
            return await self._create(real.chat.completions.create, params)

        return SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))

    # ── one call ───────────────────────────────────────────
    async def _invoke(self, real: Callable[..., Awaitable[Any]], messages: Any, output_format: Any,
                      kwargs: dict[str, Any]) -> Any:
        call = _Call()
        token = _CURRENT.set(call)
        started = time.monotonic()
        try:
            result = await real(messages, output_format, **kwargs)
        except BaseException as e:
            if isinstance(e, Exception) and call.kind in (None, "ok"):
                call.kind, call.message = self._refused(e, call)
            if isinstance(e, Exception):
                self._count(call, started, step=_is_step(output_format))
            raise
        finally:
            _CURRENT.reset(token)
        self._count(call, started, step=_is_step(output_format))
        return result

    @staticmethod
    def _refused(exc: Exception, call: _Call) -> tuple[str, str]:
        """A reply came, and browser-use refused it: say what it looked like."""
        kind, message = classify_exception(exc)
        if kind == "unparseable" and call.content is not None:
            shape = reply_shape(call.content)
            if shape is None:   # JSON the schema's parser refused: its own words say why (a field, an escape)
                return kind, short(f"{message}; the reply: {call.content[:120]}")
            return kind, short(f"{shape}: {call.content[:160]}")
        return kind, message

    async def _create(self, real: Callable[..., Awaitable[Any]], params: dict[str, Any]) -> Any:
        call = _CURRENT.get()
        own = call is None   # a bare client's request is a call of its own; inside ainvoke it is that call's
        started = time.monotonic()
        if call is None:
            call = _Call()
        call.structured = params.get("response_format") is not None
        try:
            reply = await real(**params)
        except Exception as e:
            call.kind, call.message = classify_exception(e)
            if own:
                self._count(call, started, step=True)
            raise
        self._read_reply(reply, call, params)
        if own:
            self._count(call, started, step=True)
        return reply

    def _read_reply(self, reply: Any, call: _Call, params: dict[str, Any]) -> None:
        """Mend the reply in place where it can be mended; note its usage and what is wrong with it."""
        usage = getattr(reply, "usage", None)
        call.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        call.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(reply, "choices", None)
        choice = choices[0] if isinstance(choices, list) and choices else None
        if choice is None or getattr(choice, "message", None) is None:   # the endpoint's answer, not the model's
            seen = reply if isinstance(reply, str) else "JSON without choices"
            call.kind, call.message = "not_api", short(f"the endpoint answered {seen!s:.120}, not a chat completion")
            return
        message = choice.message
        content = message.content
        if isinstance(content, str) and content:
            content, mended = mend_text(content)
            if mended:   # escapes or characters that are not Unicode: U+FFFD, the reply kept
                message.content = content
                self.calls.text_mended += 1
        thought = _reasoning(message)
        if thought:
            self.calls.reasoning_kept += 1
        if content and self.mend and (split := split_thinking(content)) is not None:
            thinking, content = split
            message.content = content
            thought = thinking or thought
            self.calls.thinking_stripped += 1
        call.content = content
        problem = reply_problem(content, choice.finish_reason, call.structured)
        if problem is not None:
            call.kind, call.message = problem
        if call.structured:
            self._thought = thought
        if self.call_log is not None:
            call.row = self.call_log.add(params.get("messages"), params.get("response_format"), content,
                                         thinking=thought)

    def _count(self, call: _Call, started: float, *, step: bool) -> None:
        kind = call.kind or "ok"
        latency = round(time.monotonic() - started, 3)
        first = kind != "ok" and kind not in self.calls.failures
        self.calls.add(kind, call.message, latency, step=step, prompt_tokens=call.prompt_tokens,
                       completion_tokens=call.completion_tokens)
        if call.row is not None:
            call.row["call"] = kind
        self.emit(ModelCall(kind, latency, call.prompt_tokens, call.completion_tokens,
                            call.message if first else ""))


def _is_step(output_format: Any) -> bool:
    """Whether a structured call is the agent's step (its action schema), not an extraction's own schema."""
    if output_format is None:
        return False
    from browser_use.agent.views import AgentOutput  # loaded with the agent that makes the call

    return isinstance(output_format, type) and issubclass(output_format, AgentOutput)
