"""The run's record of finished attempts: `<out>/results.jsonl`, one JSON line per attempt, appended by the
scheduler alone. Resume reads every `results*.jsonl` of the folder (the seed's `results_<slot>.jsonl` too)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STATUSES = ("done", "timeout", "killed", "error", "blocked")
# a run stopped by its user (Ctrl-C, quit) ends its episodes with this error: they are not settled and run again
INTERRUPTED = "interrupted"
# an episode killed by its user to be run again
REQUEUED = "requeued"
# how an episode ended by its model endpoint's failures is worded: the circuit breaker counts these
ENDPOINT_ERROR = "model endpoint: "


def settles(record: dict[str, Any]) -> bool:
    """Whether a task's latest record means it is finished and must not run again: not when its run was stopped
    under it, nor when the harness failed it (an infra error is retried, never counted as the agent's)."""
    if record.get("status") == "killed" and record.get("error") in (INTERRUPTED, REQUEUED):
        return False
    return not (record.get("status") == "error" and record.get("error_kind") == "infra")


def _finish_time(record: dict[str, Any]) -> float:
    """A record's finish time for ordering; 0 for a record without one (the seed's) or with one that is no number."""
    try:
        return float(record.get("finished_at") or 0)
    except (TypeError, ValueError):
        return 0.0


def _attempt(record: dict[str, Any]) -> int:
    try:
        return max(1, int(record.get("attempt") or 1))
    except (TypeError, ValueError):
        return 1


@dataclass
class ResultsLog:
    records: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def latest(self) -> dict[str, dict[str, Any]]:
        """task_id -> its latest record (by finish time; file order breaks ties)."""
        out: dict[str, dict[str, Any]] = {}
        for rec in sorted(self.records, key=_finish_time):
            out[str(rec.get("task_id"))] = rec
        return out

    def settled(self) -> set[str]:
        return {tid for tid, rec in self.latest().items() if settles(rec)}

    def attempts(self) -> dict[str, int]:
        n: dict[str, int] = {}
        for rec in self.records:
            tid = str(rec.get("task_id"))
            n[tid] = max(n.get(tid, 0), _attempt(rec))
        return n


def read_results(out: Path) -> ResultsLog:
    """Every record in `out/results*.jsonl`; a line that is not JSON (a torn last line after power loss) is skipped
    with a warning rather than failing the run."""
    res = ResultsLog()
    for path in sorted(Path(out).glob("results*.jsonl")):
        if not path.is_file():
            continue
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                res.warnings.append(f"{path}:{n}: skipped a line that is not a whole JSON record (a torn write?)")
                continue
            if isinstance(rec, dict) and rec.get("task_id") is not None:
                res.records.append(rec)
    for w in res.warnings:
        log.warning(w)
    return res


class ResultsStore:
    """Appends records to `<out>/results.jsonl`, each one whole line written, flushed and synced before the next."""

    def __init__(self, out: Path, name: str = "results.jsonl"):
        self.path = Path(out) / name   # a shard's own file is another `results*.jsonl`
        self._repair_torn_tail()

    def _repair_torn_tail(self) -> None:
        # a torn last line has no newline: end it, so that the next record starts on a line of its own
        if self.path.exists() and self.path.stat().st_size:
            with open(self.path, "rb+") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")

    def append(self, record: dict[str, Any]) -> None:
        """Append one whole line or nothing: a short write (a nearly full disk returns one instead of raising) is
        cut back off and raised as the OSError it is, so a torn line is never counted as written."""
        line = record_line(record)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            written = 0
            try:
                while written < len(line):
                    n = os.write(fd, line[written:])
                    if n <= 0:
                        raise OSError(errno.ENOSPC, "No space left on device (short write)", str(self.path))
                    written += n
                os.fsync(fd)
            except OSError:
                if written:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)


def record_line(record: dict[str, Any]) -> bytes:
    """A record as one UTF-8 JSON line. Model output is arbitrary text: a lone surrogate in it is written as its
    JSON escape (backslashreplace gives exactly `\\udXXX`, valid only inside a JSON string, where it is)."""
    return (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")
