"""The errors a run met, read from its records (`EpisodeRecord`s, never the JSON lines): every attempt's error
grouped by status, fault kind and message with what varies in it replaced (`error_groups`, `normalise_error`), and
the model's side of the run (`model_report`): its calls by kind, the endpoint's failures, the tasks it ended."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.summary import ErrorGroup, ModelReport
from om2w_tui.protocol.faults import FaultKind

UNKNOWN = "-"   # what a report shows for a value no record gives (a kind, a level, a site)

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>)\]]*[^\s'\"<>)\].,:;!?]", re.IGNORECASE)
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b", re.IGNORECASE)
_HOSTPORT = re.compile(r"\b((?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9a-f:]+\])(?::\d+)?", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w<])(?:/[\w.@+-]+){2,}/?")
_NUM = re.compile(r"(?<![\w<])[-+]?\d+(?:[.,]\d+)*(?![\w>])")


def normalise_error(message: str | None) -> str:
    """An error message with what varies from one occurrence to the next (URLs, paths, ids, hosts and ports,
    numbers) replaced by placeholders, so that the same error groups together."""
    text = " ".join(str(message or "").split())
    text = _URL.sub("<url>", text)
    text = _UUID.sub("<id>", text)
    text = _HEX.sub("<id>", text)
    text = _HOSTPORT.sub("<host>", text)
    text = _PATH.sub("<path>", text)
    text = _NUM.sub("<n>", text)
    return text[:300] or "(no message)"


def model_report(records: list[EpisodeRecord], latest: Mapping[str, EpisodeRecord]) -> ModelReport | None:
    """The model's side of a run from its records: every attempt's calls by kind, the endpoint's failures (retried),
    and each task's latest attempt that ended on its model (settled, counted as a failure); None when no record
    carries model calls (an older run, another harness)."""
    calls: Counter[str] = Counter()
    endpoint: Counter[str] = Counter()
    thinking = reasoning = 0
    seen = False
    for r in records:
        mc = r.model_calls
        if mc is not None:
            seen = True
            calls["ok"] += _count(mc.get("ok"))
            for kind, n in (mc.get("failures") or {}).items() if isinstance(mc.get("failures"), dict) else ():
                calls[str(kind)] += _count(n)
            thinking += _count(mc.get("thinking_stripped"))
            reasoning += _count(mc.get("reasoning_kept"))
        if r.status == "error" and r.error_kind is FaultKind.ENDPOINT:
            endpoint[r.model_fault or "unknown"] += 1
    ended = Counter(r.model_fault or "unknown" for r in latest.values()
                    if r.status == "error" and r.error_kind is FaultKind.MODEL)
    if not seen and not ended and not endpoint:
        return None
    return ModelReport(ended_on=dict(ended.most_common()), endpoint=dict(endpoint.most_common()),
                       calls={k: n for k, n in calls.most_common() if n}, thinking_stripped=thinking,
                       reasoning_kept=reasoning)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def error_groups(records: list[EpisodeRecord]) -> tuple[ErrorGroup, ...]:
    """Errors over every attempt (a retried infra error is still an error the run met), grouped by status, kind
    and normalised message, the most frequent first."""
    groups: dict[tuple[str, str, str], tuple[int, list[str]]] = {}   # key -> (attempts, tasks in order)
    for r in records:
        if r.status == "done" and not r.error:
            continue
        if not r.error and r.status not in ("error", "blocked", "timeout", "killed"):
            continue
        msg = normalise_error(r.error)
        key = (r.status, r.error_kind_as_read or UNKNOWN, msg)
        count_, tids = groups.get(key, (0, []))
        tid = r.task_id
        if tid not in tids:
            tids.append(tid)
        groups[key] = (count_ + 1, tids)
    return tuple(sorted((ErrorGroup(status=k[0], kind=k[1], message=k[2], count=n, tasks=tuple(tids[:3]),
                                    task_count=len(tids)) for k, (n, tids) in groups.items()),
                        key=lambda g: (-g.count, g.status, g.message)))


# ------------------------------------------------------------------------------------------ a human_label.json
