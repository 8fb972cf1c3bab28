"""Talking to an OpenAI-compatible endpoint (the model's or the judge's): every call bounded, every endpoint asked once
before the work.

`BoundedTransport` is the one mechanism under every client that calls a server (the judge's and the live judge's
AsyncOpenAI, browser-use's ChatOpenAI and the planner's client in a worker, the preflight's probe and its questions):
a call has a total deadline (connect and the whole reply, however slowly it trickles in) and a cap on the reply's
bytes (an endless or huge body is cut and refused, never stored), and a 2xx answer that is not JSON (an HTML page, a
proxy's text) is refused as the endpoint's, named for what it is ("the endpoint answered HTML, not the OpenAI API").
Its refusals are `EndpointReplyError`s (the openai client reports them as its timeout or connection errors, the
refusal as their cause: the endpoint's fault, never the model's). A reply's bytes that are not UTF-8 are mended
(U+FFFD) here, where replies are read.

`check_endpoint` asks `GET {base}/models` once, within a deadline: reachable, speaking the OpenAI API, serving the
model; and where `{base}/models` is 404 and `{base}/v1/models` answers, says to add `/v1`. Every command that takes an
endpoint (`run`/`doctor`'s `--vllm`, `judge`'s and a run's `--judge-url`) asks it before its work.

httpx is imported only when a call is made (its import loads rich where rich is installed: never the engine's).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
import time
import zlib
from collections.abc import Coroutine
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, TypeVar

from om2w_tui.secret import EndpointURL, redact_text

MODEL_REPLY_BYTES = 4 << 20     # a model's chat reply: a long reasoning trace is ~0.5 MB; 4 MiB is never a real one
JUDGE_REPLY_BYTES = 1 << 20     # a judge's reply (512 tokens asked): 1 MiB is already a server ignoring max_tokens
LIST_BYTES = 8 << 20            # GET /models: a gateway listing hundreds of models with their descriptions
CHECK_DEADLINE_S = 15.0         # the question before the work: a live server answers GET /models in milliseconds
SNIPPET = 80                    # characters of a refused body shown

ReplyProblem = Literal["deadline", "too_large", "not_api"]
T = TypeVar("T")


class EndpointReplyError(Exception):
    """A reply refused at the boundary: past its deadline, past its size cap, or not the OpenAI API's (JSON). The
    message says which and what was seen. Raised as one of the client's own library's errors too (`_raised`), so the
    openai client, on httpx or httpx2 by its version, reports it as its timeout or connection error, this its cause."""

    def __init__(self, message: str, problem: ReplyProblem):
        super().__init__(message)
        self.problem = problem


_KINDS: dict[tuple[str, bool], type[EndpointReplyError]] = {}


def _raised(lib: ModuleType, message: str, problem: ReplyProblem) -> EndpointReplyError:
    """The refusal as an error of `lib` as well: its TimeoutException for the deadline, its TransportError else."""
    key = (lib.__name__, problem == "deadline")
    if key not in _KINDS:
        base = lib.TimeoutException if problem == "deadline" else lib.TransportError
        _KINDS[key] = type("EndpointReplyError", (EndpointReplyError, base), {})
    return _KINDS[key](message, problem)


def what_body_is(body: bytes, content_type: str) -> str:
    """What a body that is not the API's JSON looks like, in a few words: HTML, an empty body, text."""
    head = body.lstrip()[:64].lower()
    if not head:
        return "an empty body"
    if "html" in content_type.lower() or head.startswith((b"<!doctype", b"<html", b"<head", b"<body", b"<")):
        return "HTML"
    return f"{content_type.split(';')[0].strip() or 'text'} that is not JSON"


def not_api_message(status: int, content_type: str, body: bytes) -> str:
    snippet = " ".join(body[:SNIPPET * 2].decode("utf-8", "replace").split())[:SNIPPET]
    return (f"the endpoint answered {what_body_is(body, content_type)}, not the OpenAI API (HTTP {status}"
            f"{', ' + content_type.split(';')[0] if content_type else ''}: {snippet!r}); is the URL the server's "
            f"OpenAI base URL (…/v1)?")


def _readable(body: bytes) -> bytes:
    """The body as valid UTF-8: bytes that are not (a server's broken encoding) become U+FFFD, the rest unchanged."""
    try:
        body.decode("utf-8")
        return body
    except UnicodeDecodeError:
        return body.decode("utf-8", "replace").encode("utf-8")


class _Inflate:
    """A gzip or deflate body inflated under the cap (a small compressed body must not grow past it)."""

    def __init__(self, encoding: str):
        self.z = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)

    def feed(self, chunk: bytes, room: int) -> bytes:
        return self.z.decompress(chunk, room + 1)


class BoundedTransport:
    """An httpx transport whose every request has `deadline` seconds in all (connect, send, the whole reply) and a
    reply of at most `max_bytes` (after inflating), read whole here; a 2xx reply must be JSON (`json_only`). `lib` is
    the httpx library of the client it serves (openai builds on httpx2 since its 3.x, on httpx before)."""

    def __init__(self, deadline: float, max_bytes: int, *, json_only: bool = True, lib: ModuleType | None = None):
        if lib is None:
            import httpx  # the library of our own questions (openai's clients give theirs)

            lib = httpx
        self.lib: ModuleType = lib
        self.deadline, self.max_bytes, self.json_only = deadline, max_bytes, json_only
        self.inner = lib.AsyncHTTPTransport()

    async def handle_async_request(self, request: Any) -> Any:
        request.headers["accept-encoding"] = "gzip, deflate"   # never a coding this transport cannot bound
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.deadline):
                response = await self.inner.handle_async_request(request)
                try:
                    body = await self._read(response)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise _raised(self.lib, f"no whole reply within the deadline of {self.deadline:g} s (connect and the "
                                    f"whole reply; {time.monotonic() - started:.1f} s spent)", "deadline") from None
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        body = _readable(body)
        if self.json_only and 200 <= response.status_code < 300 and response.status_code != 204:
            try:
                value = json.loads(body)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                raise _raised(self.lib, not_api_message(response.status_code, response.headers.get(
                    "content-type", ""), body), "not_api")
        return self.lib.Response(response.status_code, headers=headers, content=body, request=request,
                                 extensions=response.extensions)

    async def _read(self, response: Any) -> bytes:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", "deflate", ""):
            raise _raised(self.lib, f"the endpoint answered in a coding it was not asked for ({encoding})",
                          "not_api")
        inflate = _Inflate(encoding) if encoding in ("gzip", "deflate") else None
        parts: list[bytes] = []
        size = 0
        async for chunk in response.stream:
            if inflate is not None:
                chunk = inflate.feed(chunk, self.max_bytes - size)
            size += len(chunk)
            if size > self.max_bytes:
                raise _raised(self.lib, f"the reply passed {self.max_bytes:,} bytes (the cap on one reply): "
                                        f"refused, not stored", "too_large")
            parts.append(chunk)
        return b"".join(parts)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> BoundedTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)


def bounded_client(deadline: float, max_bytes: int, **kwargs: Any) -> Any:
    """An AsyncClient of the openai client's own httpx library on a BoundedTransport: give it to AsyncOpenAI or
    browser-use's ChatOpenAI as `http_client`. Its own timeouts are the deadline too (they bound each read; the
    transport bounds the whole)."""
    from openai import DefaultAsyncHttpxClient  # openai's defaults (redirects, limits) kept; loaded with its client

    lib = sys.modules[DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0]]
    transport: Any = BoundedTransport(deadline, max_bytes, lib=lib)   # duck-typed: httpx asks no base class
    return DefaultAsyncHttpxClient(transport=transport, timeout=lib.Timeout(deadline), **kwargs)


def _own_client(deadline: float, max_bytes: int) -> Any:
    """A plain httpx client on a BoundedTransport, for the questions asked without openai (the console stays light)."""
    import httpx  # see the module's docstring

    transport: Any = BoundedTransport(deadline, max_bytes)
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(deadline))


def openai_client(base_url: str, api_key: str, deadline: float, max_bytes: int, **kwargs: Any) -> Any:
    """An AsyncOpenAI client whose every call is bounded (deadline, reply cap, JSON only)."""
    from openai import AsyncOpenAI  # the model client only when a caller calls

    return AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=deadline,
                       http_client=bounded_client(deadline, max_bytes), **kwargs)


def reply_error(exc: BaseException) -> EndpointReplyError | None:
    """The EndpointReplyError behind an exception (the openai client wraps it as its connection error), or None."""
    seen: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in seen and len(seen) < 8:
        if isinstance(e, EndpointReplyError):
            return e
        seen.append(e)
        e = e.__cause__ or e.__context__
    return None


# ── the question before the work ───────────────────────────
@dataclass(frozen=True)
class Flags:
    """How the command names what it was given, for the messages: `--vllm`/`--model`/`--api-key-env` for a run's
    model, `--judge-url`/`--judge-model`/`--api-key-env` for `judge`..."""

    url: str = "--vllm"
    model: str = "--model"
    key: str = "--api-key-env"


JUDGE_FLAGS = Flags("--judge-url", "--judge-model", "--api-key-env")
RUN_JUDGE_FLAGS = Flags("--judge-url", "--judge-model", "--judge-api-key-env")


async def _get(client: Any, url: EndpointURL, api_key: str) -> Any:
    return await client.get(url.for_client(), headers={"Authorization": f"Bearer {api_key}"})


async def ask_endpoint(endpoint: EndpointURL, model: str, api_key: str, flags: Flags = Flags(),
                       deadline: float = CHECK_DEADLINE_S) -> str:
    """'' when `GET {endpoint}/models` answers the OpenAI API's list within `deadline` and it (or the model's own
    card) has `model`; else what is wrong and what to do, naming the command's flags (the URL shown redacted)."""
    import httpx  # see the module's docstring

    shown = f"{flags.url} {endpoint}"
    async with _own_client(deadline, LIST_BYTES) as client:
        try:
            r = await _get(client, endpoint.join("models"), api_key)
            if r.status_code == 404 and await _answers_with_v1(client, endpoint, api_key):
                return (f"{shown}: no OpenAI API at this path (GET /models: HTTP 404), but {endpoint.join('v1')} "
                        f"answers: add /v1 to the URL")
        except EndpointReplyError as e:
            if e.problem == "not_api" and await _answers_with_v1(client, endpoint, api_key):
                return f"{shown}: {e}; {endpoint.join('v1')} answers: add /v1 to the URL"
            return f"{shown}: GET /models: {e}"
        except (httpx.HTTPError, httpx.InvalidURL) as e:
            said = redact_text(str(e))   # an error's words may quote the URL: never its credentials
            return (f"{shown}: the endpoint does not answer ({type(e).__name__}{': ' + said if said else ''}). "
                    f"Start the server (vLLM: `vllm serve ... --served-model-name {model}`) or fix the URL")
        if r.status_code in (401, 403):
            return f"{shown}: refused the API key (HTTP {r.status_code}); set the variable named by {flags.key}"
        if r.status_code != 200:
            return (f"{shown}: GET /models answered HTTP {r.status_code}; is this the server's OpenAI base URL "
                    f"(…/v1)?")
        data = r.json().get("data")
        if not isinstance(data, list):
            return f"{shown}: GET /models answered JSON without a model list (`data`); is this an OpenAI endpoint?"
        served = [str(m.get("id")) for m in data if isinstance(m, dict)]
        if model in served:
            return ""
        try:   # a server that lists not every name it serves (LoRA adapters, aliases) answers the model's own card
            card = await _get(client, endpoint.join(f"models/{model}"), api_key)
            if card.status_code == 200:
                return ""
        except (httpx.HTTPError, EndpointReplyError):
            pass
        return (f"{flags.model} {model}: not served by {endpoint} (it serves: "
                f"{', '.join(served[:8]) or 'nothing'}{' …' if len(served) > 8 else ''})")


async def _answers_with_v1(client: Any, endpoint: EndpointURL, api_key: str) -> bool:
    """Whether `{endpoint}/v1/models` is the OpenAI API's list (the URL given without its /v1)."""
    import httpx  # see the module's docstring

    if endpoint.for_client().split("?")[0].rstrip("/").endswith("/v1"):
        return False
    try:
        r = await _get(client, endpoint.join("v1/models"), api_key)
    except (httpx.HTTPError, EndpointReplyError):
        return False
    return r.status_code == 200 and isinstance(r.json().get("data"), list)


def check_endpoint(endpoint: EndpointURL, model: str, api_key: str, flags: Flags = Flags(),
                   deadline: float = CHECK_DEADLINE_S) -> str:
    """`ask_endpoint` from synchronous code (a command before its work, the preflight in its thread)."""
    return run_sync(ask_endpoint(endpoint, model, api_key, flags, deadline))


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end from synchronous code: on a loop of its own, in a thread of its own when the caller's
    thread already runs one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@dataclass(frozen=True)
class Download:
    """A file's reply: its status and body (read whole, within the deadline and the cap)."""

    status: int
    body: bytes


def download(url: EndpointURL, headers: dict[str, str], deadline: float, max_bytes: int) -> Download:
    """GET a file (`tasks fetch`'s) within one deadline for everything (connect, redirects, the whole body however
    slowly it trickles in) and at most `max_bytes` (an endless body is cut, never stored): EndpointReplyError says
    which was passed; httpx's errors for a server not reached. Any body (a task file is JSON or JSONL)."""

    async def get() -> Download:
        import httpx  # see the module's docstring

        transport: Any = BoundedTransport(deadline, max_bytes, json_only=False)
        async with httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(deadline),
                                     follow_redirects=True) as client:
            try:
                async with asyncio.timeout(deadline):   # redirects too: one deadline for the whole download
                    r = await client.get(url.for_client(), headers=headers)
            except TimeoutError:
                raise EndpointReplyError(f"no whole reply within the deadline of {deadline:g} s", "deadline") from None
            except httpx.TransportError as e:
                if (why := reply_error(e)) is not None:
                    raise why from None
                raise
            return Download(r.status_code, r.content)

    return run_sync(get())


async def get_json(url: EndpointURL, api_key: str, deadline: float = CHECK_DEADLINE_S) -> Any:
    """GET a JSON answer of the API within `deadline` (None for anything else: an error status, a refusal)."""
    import httpx  # see the module's docstring

    async with _own_client(deadline, LIST_BYTES) as client:
        try:
            r = await _get(client, url, api_key)
        except (httpx.HTTPError, httpx.InvalidURL, EndpointReplyError):
            return None
        return r.json() if r.status_code == 200 else None


async def post_json(url: EndpointURL, api_key: str, body: dict[str, Any], deadline: float) -> int | None:
    """POST `body` within `deadline`: the status of the answer (None: none came, or not the API's)."""
    import httpx  # see the module's docstring

    async with _own_client(deadline, MODEL_REPLY_BYTES) as client:
        try:
            r = await client.post(url.for_client(), json=body, headers={"Authorization": f"Bearer {api_key}"})
        except (httpx.HTTPError, httpx.InvalidURL, EndpointReplyError):
            return None
        return int(r.status_code)
