"""Secrets out of what a run writes: the engine's name for `om2w_tui.secret` (the redacted URL type and the
redaction of URLs and command lines live there, below the engine and the episode packages, which both use them)."""

from __future__ import annotations

from om2w_tui.secret import MASK, EndpointURL, redact_argv, redact_text, redact_url

__all__ = ["MASK", "EndpointURL", "redact_argv", "redact_text", "redact_url"]
