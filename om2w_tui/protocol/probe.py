"""The preflight's question to the model, as it crosses into the probe process (`python -m
om2w_tui.episode.model_probe`, started by engine/model_check.py): one JSON object on the probe's stdin, through the
one codec (protocol/codec.py), with no defaults of its own on either side: every value is the run's, as its
workers get them in their `WorkerSpec`. The key travels here only, never in the probe's (Chromium's) environment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from om2w_tui.protocol.worker import BrowserSettings


@dataclass(frozen=True)
class ProbeQuestion:
    """The run's first step, to be built by browser-use and sent to the run's model."""
    model: str
    base_url: str = field(repr=False)      # as the client opens it (credentials in it, if any)
    api_key: str = field(repr=False)
    instruction: str                       # the run's first task through the run's template
    temperature: float
    max_completion_tokens: int
    vision: bool
    coordinates: Literal["off", "pixels", "normalized"]
    max_steps: int
    llm_timeout: float
    llm_retries: int
    chromium: str
    browser: BrowserSettings | None        # None: the browser's own defaults
