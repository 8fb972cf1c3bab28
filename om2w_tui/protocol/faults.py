"""Whose fault an attempt that ended in error was (`FaultKind`), declared once with what follows from it: whether it
is the harness's (the task then counts as not executable, and the attempt never settles it), whether it is retried
within `--retries`, and how a person is told it. The worker says it (`protocol/worker.py: Outcome.fault`), the
results record keeps it (`engine/results.py: EpisodeRecord.error_kind`), the scheduler and the report act on it.

On the wire and in results.jsonl a kind is its value (`"infra"`); `fault_kind` reads one back, and a kind this
version does not know (a newer writer's) reads as None: the error's fault unknown, settled as the agent's was before
kinds existed, never a crash of a report.

A site that does not answer its page load (`SITE_NET_ERRORS`: Chromium's network error codes of the site itself) is
the site's evidence, whatever the fault kind the attempt was recorded with: the worker records it as `infra`, so that
a site down for a moment gets its retries, and the failure classes read it as the site's (`evaluation/failure.py`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class FaultKind(StrEnum):
    AGENT = "agent"          # the agent's own failure: settled as the task's result
    MODEL = "model"          # the model answers, but wrongly for this harness (the same request fails again): settled
    INFRA = "infra"          # the harness's (the browser, the worker): retried, never settled
    ENDPOINT = "endpoint"    # the model endpoint's (down, overloaded): retried; the circuit breaker counts these
    STORAGE = "storage"      # the out folder's (full, read-only): runs again, costing no try, once it can be written

    @property
    def harness(self) -> bool:
        """The harness's (or its services') fault, not the agent's nor its model's: the attempt never settles its
        task, and a task left so counts as not executable."""
        return _TRAITS[self].harness

    @property
    def retried(self) -> bool:
        """Run again at the cost of one of `--retries` (the folder's fault runs again at no cost)."""
        return _TRAITS[self].retried

    @property
    def label(self) -> str:
        """Whose fault, in words."""
        return _TRAITS[self].label


@dataclass(frozen=True)
class _Traits:
    harness: bool
    retried: bool
    label: str


_TRAITS: dict[FaultKind, _Traits] = {
    FaultKind.AGENT: _Traits(harness=False, retried=False, label="the agent's"),
    FaultKind.MODEL: _Traits(harness=False, retried=False, label="the model's"),
    FaultKind.INFRA: _Traits(harness=True, retried=True, label="the harness's"),
    FaultKind.ENDPOINT: _Traits(harness=True, retried=True, label="the model endpoint's"),
    FaultKind.STORAGE: _Traits(harness=True, retried=False, label="the out folder's"),
}


def fault_kind(value: object) -> FaultKind | None:
    """A kind as a record or a message holds it (its value, or the kind itself); None for none, and for a value this
    version does not know."""
    if isinstance(value, FaultKind):
        return value
    try:
        return FaultKind(value) if isinstance(value, str) else None
    except ValueError:
        return None


# Chromium's net::ERR_ codes that say the site did not answer (its name, its address, its connection, its TLS, its
# reply); not those of the browser or the machine (ERR_ABORTED, ERR_BLOCKED_BY_CLIENT, ERR_INSUFFICIENT_RESOURCES,
# ERR_INTERNET_DISCONNECTED, ERR_PROXY_CONNECTION_FAILED ...): those stay the harness's
SITE_NET_ERRORS = re.compile(
    r"net::ERR_(?:NAME_NOT_RESOLVED|NAME_RESOLUTION_FAILED|DNS_\w+|CONNECTION_(?:REFUSED|RESET|CLOSED|FAILED|"
    r"TIMED_OUT)|ADDRESS_UNREACHABLE|ADDRESS_INVALID|EMPTY_RESPONSE|TIMED_OUT|INVALID_RESPONSE|TOO_MANY_REDIRECTS|"
    r"INVALID_HTTP_RESPONSE|RESPONSE_HEADERS_TRUNCATED|CONTENT_LENGTH_MISMATCH|INCOMPLETE_CHUNKED_ENCODING|"
    r"HTTP2_\w+|QUIC_PROTOCOL_ERROR|SSL_\w+|CERT_\w+|BAD_SSL_CLIENT_AUTH_CERT)\b")
SITE_DOWN = "the site did not answer"   # how the worker words a site's network error at its page load


def site_net_error(text: str | None) -> str:
    """The code of Chromium's network error of the site itself that `text` names (`net::ERR_CONNECTION_REFUSED`),
    '' for none."""
    found = SITE_NET_ERRORS.search(text or "")
    return found.group(0) if found else ""
