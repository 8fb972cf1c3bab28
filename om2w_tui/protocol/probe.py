"""The preflight's probe process (`python -m om2w_tui.episode.model_probe`, started by engine/model_check.py), both
ways through the one codec (protocol/codec.py): its question, one JSON object on its stdin, with no defaults of its
own on either side (every value is the run's, as its workers get them in their `WorkerSpec`; the key travels here
only, never in the probe's, and so Chromium's, environment); and its answer, one JSON line on its stdout: what the
first step sent and what the server answered, read apart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from om2w_tui.protocol.model_settings import ModelSettings
from om2w_tui.protocol.worker import BrowserSettings


@dataclass(frozen=True)
class ProbeQuestion:
    """The run's first step, to be built by browser-use and sent to the run's model."""
    llm: ModelSettings                     # the run's model settings, whole
    base_url: str = field(repr=False)      # as the client opens it (credentials in it, if any)
    api_key: str = field(repr=False)
    instruction: str                       # the run's first task through the run's template
    max_steps: int
    chromium: str
    browser: BrowserSettings | None        # None: the browser's own defaults


# ── the answer: probe -> preflight (one JSON line on its stdout) ──
@dataclass(frozen=True)
class Sent:
    """What the first step sent, as browser-use built it."""
    messages: int
    images: int
    text_chars: int
    schema: str                            # the action model's name (its JSON schema was the response_format)
    max_completion_tokens: int
    sampling: dict[str, Any]               # temperature (and top_p, seed where the run sets them) as sent


@dataclass(frozen=True)
class Retried:
    """An HTTP answer the client retried before the last one (a 429, a 5xx)."""
    status: int
    retry_after: str | None


@dataclass(frozen=True)
class ActionCheck:
    """The reply against the step's action model: valid as sent or once mended (`how`), or the first refusal."""
    valid: bool
    how: str = ""                          # as sent | after the <think> block | inside the code fence
    actions: list[str] = field(default_factory=list)
    problem: str = ""


@dataclass(frozen=True)
class ProbeAnswer:
    """What was sent and what came back. `ok` False: the step could not be asked (`stage` probe | browser, `error`
    why); else `status` is the last HTTP answer's (None: none came, `error` the client's words; not 200: `error` the
    server's body) and, for a 200, the reply read apart."""
    ok: bool
    stage: str = ""
    error: str = ""
    sent: Sent | None = None
    latency_s: float = 0.0
    status: int | None = None
    server: str | None = None
    retried: list[Retried] = field(default_factory=list)
    content: str | None = None             # kept to its first and last characters when long
    content_chars: int = 0
    finish_reason: str | None = None
    prompt_tokens: int | None = None       # the reply's usage, where the server said it
    reasoning_field: str | None = None     # reasoning_content | reasoning, where the server split a thought off
    action: ActionCheck | None = None
    unreadable: str | None = None          # a 200 whose body is not a chat completion


def not_asked(stage: str, error: str) -> ProbeAnswer:
    return ProbeAnswer(ok=False, stage=stage, error=error)
