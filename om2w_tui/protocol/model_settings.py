"""The run's model settings, declared once with their defaults: `ModelSettings` (the model, its key's variable, what
each request is sent besides its messages, and how the client behaves). The run's config is built on it
(`engine/config.py: RunConfig`), so each field is a run setting by its name alone, with the default written here and
nowhere else; a worker's spec, the preflight probe's question and an arm's context carry it whole.

Where the model is (the endpoint as its client opens it) and the key itself are decided at the last moment, so they
travel beside it, never in it: a `ModelSettings` holds no secret and is recorded in `run.json` as it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Coordinates = Literal["off", "pixels", "normalized"]


@dataclass(kw_only=True)
class ModelSettings:
    """How the run's model is asked. A field left None is not sent at all (the server's own default holds)."""
    model: str = "qwen35-4b"              # the served model's name
    api_key_env: str = "OPENAI_API_KEY"   # the environment variable holding its key (the key itself: never here)
    temperature: float = 0.0
    top_p: float | None = None            # nucleus sampling; None: not sent
    seed: int | None = None               # the sampling seed vLLM honours; None: not sent
    max_completion_tokens: int = 4096     # a reply's cap, as browser-use sends it
    vision: bool = True                   # screenshots sent to the model
    coordinates: Coordinates = "normalized"   # off | pixels | normalized (clicks and drags on a 0-1000 grid)
    llm_timeout: float = 120.0            # seconds for one call before it is retried
    llm_retries: int = 2                  # the client's own retries of one call (429 with Retry-After, 5xx, refused)
    mend_thinking: bool = True            # a <think> block before a reply is split off (and kept as the thought)

    def sampling(self) -> dict[str, Any]:
        """What every request of the run's model is sent besides its messages, by the request's own names (browser-
        use's `ChatOpenAI` takes them as fields of the same names); a setting left None is left out."""
        sent: dict[str, Any] = {"temperature": self.temperature, "top_p": self.top_p, "seed": self.seed}
        return {k: v for k, v in sent.items() if v is not None}
