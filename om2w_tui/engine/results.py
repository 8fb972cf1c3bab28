"""The run's record of finished attempts: `<out>/results.jsonl`, one JSON line per attempt, appended by the
scheduler alone. Resume reads every `results*.jsonl` of the folder (the seed's `results_<slot>.jsonl` too).

`EpisodeRecord` is one attempt as the engine hands it to its front ends and writes it (`to_json`, one line); the
log on disk is read back as plain JSON objects (`ResultsLog.records`), since older runs and the seed's runner wrote
other keys, and `EpisodeRecord.from_json` reads one of them as a record. Every reader (the engine's resume, evaluation,
the front ends) takes records (`ResultsLog.latest_records`, `episode_records`), never the JSON objects."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import weakref
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, cast

from om2w_tui.files import open_own
from om2w_tui.json_input import InputError, Shape, decode, may_overflow, read_bytes, wrong_fields
from om2w_tui.protocol.faults import FaultKind, fault_kind
from om2w_tui.protocol.worker import STATUSES as STATUSES
from om2w_tui.run_folder import RunFolder
from om2w_tui.secret import redact_text

RESULTS_LIMIT = 4 << 30   # bytes of one results file read back (a million records is ~1 GiB)
# a run stopped by its user (Ctrl-C, quit) ends its episodes with this error: they are not settled and run again
INTERRUPTED = "interrupted"
# an episode killed by its user to be run again
REQUEUED = "requeued"


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished attempt of a task: how it ended, what it did, and when (epoch seconds). The keys of its JSON line
    are its fields, in this order; the optional ones are written only when set."""

    task_id: str
    arm: str = ""
    website: str = ""
    level: str | None = None
    model: str = ""
    status: str = ""                  # one of STATUSES (a seed's record has none: "")
    error: str | None = None
    error_kind: FaultKind | None = None   # whose fault an error was (None: no error, or a kind this version lacks)
    steps: int = 0
    max_steps: int | None = None      # the step budget it ran under (its task's, Task.max_steps); older records lack it
    actions: int = 0
    screenshots: int = 0
    answer: str = ""                  # the agent's `done` text; "" for an episode that ended otherwise
    agent_done: bool = False          # the agent said it was done (rather than running out of steps or time)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_s: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0
    attempt: int = 1
    slot: int | None = None
    rows: int | None = None           # --record-rows: training rows written
    hint_left: bool | None = None     # --hint-field: hint text found in a recorded prompt
    blank_screenshot: bool | None = None   # the episode got no screenshot: its trajectory has a stand-in image
    model_calls: dict[str, Any] | None = None   # the episode's model calls by kind (protocol/model.py: ModelCalls)
    model_fault: str | None = None    # the call kind an episode that ended on its model (or endpoint) ended on
    correct: bool | None = None       # the run's reference judge's verdict, when it has one
    task_digest: str | None = None    # the task as it ran (Task.digest): a resume finds a settled task the file changed
    extra: dict[str, Any] = field(default_factory=dict, compare=False)   # keys of other writers, kept as read
    # a record read back: the fields its writer wrote (with a value of their type); a record built here: empty
    written: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def recorded(self, name: str) -> bool:
        """Whether the field `name` holds its writer's value rather than the default (an older writer's record may
        lack a key: its steps, say, are then the folder's)."""
        return not self.written or name in self.written

    @property
    def settles(self) -> bool:
        """Whether it finishes its task (see `settles`)."""
        return _settles(self.status, self.error, self.error_kind)

    @property
    def agents_answer(self) -> str:
        """The answer as the agent gave it: "" for an episode that did not end `done` by the agent's word (a record
        written before answers were only the agent's kept its last action's output); a seed's record (no status)
        as it is."""
        return self.answer if not self.status or (self.status == "done" and self.agent_done) else ""

    @property
    def error_kind_as_read(self) -> str:
        """The kind as its writer wrote it: a known kind's value, or one this version does not know (a newer
        writer's, kept in `extra` and shown as it is); "" for none."""
        if self.error_kind is not None:
            return self.error_kind.value
        raw = self.extra.get("error_kind")
        return raw if isinstance(raw, str) else ""

    @property
    def requeued(self) -> bool:
        """Ended by its run's stop or its user's requeue: it runs again, and is not the task's result."""
        return _requeued(self.status, self.error)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in _NOT_WRITTEN:
                continue
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and value is None:
                continue
            out[f.name] = value.value if isinstance(value, FaultKind) else value
        if self.error_kind is None and self.error_kind_as_read:   # a kind this version does not know: as it was read
            out["error_kind"] = self.error_kind_as_read
        return {**out, **{k: v for k, v in self.extra.items() if k not in out}}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> EpisodeRecord:
        """A record as some writer left it (this one, an older one, the seed's): known keys typed where they can be,
        others kept in `extra`; a value of the wrong type falls back to the field's default, and an `error_kind`
        this version does not know (a newer writer's) to None, the words kept in `extra` (`error_kind_as_read`)."""
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in _NOT_WRITTEN or f.name not in obj:
                continue
            value = _coerce(obj[f.name], _KINDS[f.name])
            if value is not _BAD:
                kw[f.name] = value
        kw["task_id"] = str(obj.get("task_id", ""))
        kw["status"] = str(obj.get("status") or "")
        kind = kw.get("error_kind")
        kw["error_kind"] = fault_kind(kind)
        extra = {k: v for k, v in obj.items() if k not in _NAMES}
        if kind is not None and kw["error_kind"] is None:
            extra["error_kind"] = kind
        written = frozenset(k for k, v in kw.items() if v is not None) | {"task_id"}
        return cls(**kw, extra=extra, written=written)


_BAD = object()
_NOT_WRITTEN = {"extra", "written"}   # the record's own bookkeeping, never a key of its line
_OPTIONAL = {"max_steps", "slot", "rows", "hint_left", "blank_screenshot", "model_calls", "model_fault", "correct",
             "task_digest"}
_KINDS: dict[str, type] = {
    "task_id": str, "status": str, "arm": str, "website": str, "level": str, "model": str, "error": str,
    "error_kind": str, "steps": int, "max_steps": int, "actions": int, "screenshots": int, "answer": str,
    "agent_done": bool,
    "prompt_tokens": int, "completion_tokens": int, "duration_s": float, "started_at": float, "finished_at": float,
    "attempt": int, "slot": int, "rows": int, "hint_left": bool, "blank_screenshot": bool, "model_calls": dict,
    "model_fault": str, "correct": bool, "task_digest": str,
}
_NAMES = set(_KINDS)
# what a record read back may hold under each known key: its own type, or what an older writer (the seed's) may
# have put there and `from_json` reads (null anywhere but the task's id, 3.0 for a count, 1 for true)
_READ_AS: dict[type, tuple[type, ...]] = {str: (str,), int: (int, float), float: (float,), bool: (bool, int),
                                          dict: (dict,)}
RECORD_SHAPE = Shape({
    k: (str, int) if k == "task_id" else (*_READ_AS[kind], type(None)) for k, kind in _KINDS.items()})


def _coerce(value: Any, kind: type) -> Any:
    if value is None:
        return None if kind is str else _BAD
    if kind is bool:
        return bool(value)
    if kind is str:
        return value if isinstance(value, str) else str(value)
    if kind is dict:
        return dict(value) if isinstance(value, dict) else _BAD
    try:
        return cast(Any, kind)(value)
    except (TypeError, ValueError):
        return _BAD


def statuses_text(by_status: dict[str, int]) -> str:
    """`done 3, out_of_steps 2, timeout 1`: counts by status in `STATUSES` order (others after, by name)."""
    order = sorted(by_status, key=lambda k: (STATUSES.index(k) if k in STATUSES else len(STATUSES), k))
    return ", ".join(f"{k} {by_status[k]}" for k in order if by_status[k])


def settles(record: dict[str, Any]) -> bool:
    """Whether a task's latest record means it is finished and must not run again: not when its run was stopped
    under it, nor when the harness failed it (an infra, endpoint or storage error is retried, never counted as the
    agent's; a model error is the model's own: settled, a failure). This is a row of the file as written (what the
    tests and the soak check); the engine asks a record's `settles`, the same rule."""
    return _settles(record.get("status"), record.get("error"), record.get("error_kind"))


def _requeued(status: object, error: object) -> bool:
    return status == "killed" and error in (INTERRUPTED, REQUEUED)


def _settles(status: object, error: object, error_kind: object) -> bool:
    """The one rule, for a record read as JSON and for an EpisodeRecord alike."""
    kind = fault_kind(error_kind)
    return not _requeued(status, error) and not (status == "error" and kind is not None and kind.harness)


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

    def latest_records(self) -> dict[str, EpisodeRecord]:
        """task_id -> its latest record (by finish time; file order breaks ties), as an `EpisodeRecord`: what the
        engine's resume, evaluation and the front ends read, never the JSON objects."""
        return {tid: EpisodeRecord.from_json(self.records[i]) for tid, i in self.latest_index().items()}

    def latest_index(self) -> dict[str, int]:
        """task_id -> where its latest record is in `records` (and `episode_records()`): the latest by finish time,
        file order breaking ties (the sort is stable)."""
        order = sorted(range(len(self.records)), key=lambda i: _finish_time(self.records[i]))
        return {str(self.records[i].get("task_id")): i for i in order}

    def episode_records(self) -> list[EpisodeRecord]:
        """Every record, as an `EpisodeRecord`, in file order."""
        return [EpisodeRecord.from_json(rec) for rec in self.records]

    def settled(self) -> set[str]:
        return {tid for tid, rec in self.latest_records().items() if rec.settles}

    def attempts(self) -> dict[str, int]:
        n: dict[str, int] = {}
        for rec in self.records:
            tid = str(rec.get("task_id"))
            n[tid] = max(n.get(tid, 0), _attempt(rec))
        return n


def read_results(out: Path) -> ResultsLog:
    """Every record in `out/results*.jsonl`, read through the one JSON decoder (`json_input`): a line that is not
    a whole JSON record (a torn last line after power loss, bytes that are not UTF-8, a line nested past any record's
    depth) is skipped with a warning rather than failing the run, its resume, `report` or `judge`; a file that is a
    symlink or no regular file is skipped whole, with a warning. The warnings are returned, never logged here: a
    command reads the log more than once, and says each warning once where it shows them (the run's resume, the
    report's warnings, `tasks health` on stderr)."""
    res = ResultsLog()
    for path in RunFolder(Path(out)).results_files():
        try:
            data = read_bytes(path, RESULTS_LIMIT, follow_symlinks=False)
        except InputError as e:
            res.warnings.append(f"{e}: skipped")
            continue
        floats = may_overflow(data)   # asked once for the file: most never hold an exponent of 3 digits
        where = str(path)
        for n, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                rec = decode(line, where, line=n, check_floats=floats)
            except InputError as e:   # torn, not UTF-8, nested too deep, a number past any sane size: as said of
                res.warnings.append(f"{e}; the line is skipped")   # a result.json (file, line, byte or column)
                continue
            if not isinstance(rec, dict) or rec.get("task_id") is None:
                continue
            wrong = wrong_fields(rec, RECORD_SHAPE)
            if wrong:   # `"status": 5` would be met later as a traceback of resume or report: named, read past
                res.warnings.append(f"{path}:{n}: skipped a record of the wrong shape ({'; '.join(wrong[:3])})")
                continue
            res.records.append(rec)
    return res


MANIFEST_LIMIT = 16 << 20   # bytes of a run.json read back
# what a run.json read back may hold under the keys its readers use, and its `task_file` and `config` under theirs
MANIFEST_SHAPE = Shape({"config": (dict,), "task_file": (dict,), "started_at": (float,),
                        "first_started_at": (float,), "measured": (dict,), "changes": (list,)})
_PART_SHAPES: dict[str, Shape] = {
    "task_file": Shape({"path": (str,), "sha256": (str,), "selected": (int,)}),
    "config": Shape({"arm": (str, type(None)), "model": (str, type(None)), "bench": (str, type(None))}),
}


def read_manifest(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A run.json read back (the run's own file: never through a symlink) -> (what of it is of the written shape,
    warnings naming the file and each part left out); None when it cannot be read or is no JSON object."""
    try:
        data = decode(read_bytes(path, MANIFEST_LIMIT, follow_symlinks=False), str(path))
    except InputError as e:
        return None, [f"{e}; ignored"]
    if not isinstance(data, dict):
        return None, [f"{path}: not a JSON object; ignored"]
    warnings = []
    for problem in wrong_fields(data, MANIFEST_SHAPE):
        warnings.append(f"{path}: {problem}; ignored")
        data.pop(problem.split(":")[0])
    for key, shape in _PART_SHAPES.items():
        part = data.get(key)
        wrong = wrong_fields(part, shape) if isinstance(part, dict) else []
        if wrong:
            warnings.append(f"{path}: {key}: {'; '.join(wrong)}; ignored")
            data.pop(key)
    return data, warnings


class ResultsStore:
    """Appends records to `<out>/results.jsonl`, each one whole line written, flushed and synced before the next.
    The file stays open between records, and a spare descriptor is kept for reopening it: a process out of file
    descriptors (a thousand connections held on the control socket) still writes its results."""

    def __init__(self, out: Path, name: str = "results.jsonl"):
        self.path = Path(out) / name   # a shard's own file is another `results*.jsonl`
        self._fds: list[int | None] = [None, _spare()]   # [the results file, the spare]
        self._id: tuple[int, int] | None = None
        weakref.finalize(self, _close_all, self._fds)
        self._repair_torn_tail()

    def _repair_torn_tail(self) -> None:
        # a torn last line has no newline: end it, so that the next record starts on a line of its own
        if os.path.lexists(self.path):
            with os.fdopen(open_own(self.path, os.O_RDWR), "rb+") as f:   # never through a symlink
                if f.seek(0, os.SEEK_END):
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        f.write(b"\n")

    def _fd(self) -> int:
        """The results file, open for appending: opened again when it is no longer the file at `path` (removed or
        replaced), with the spare descriptor given up for it when the process has no other."""
        fd = self._fds[0]
        if fd is not None:
            try:
                st = os.stat(self.path, follow_symlinks=False)
                same = (st.st_dev, st.st_ino) == self._id
            except OSError:
                same = False
            if same:
                return fd
            self._fds[0] = None
            os.close(fd)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        try:
            fd = open_own(self.path, flags, 0o644)
        except OSError as e:
            spare = self._fds[1]
            if e.errno not in (errno.EMFILE, errno.ENFILE) or spare is None:
                raise
            self._fds[1] = None
            os.close(spare)
            fd = open_own(self.path, flags, 0o644)
        st = os.fstat(fd)
        self._fds[0], self._id = fd, (st.st_dev, st.st_ino)
        if self._fds[1] is None:
            self._fds[1] = _spare()
        return fd

    def close(self) -> None:
        _close_all(self._fds)

    def append(self, record: EpisodeRecord | dict[str, Any]) -> None:
        """Append one whole line or nothing: a short write (a nearly full disk returns one instead of raising) is
        cut back off and raised as the OSError it is, so a torn line is never counted as written."""
        line = record_line(record)
        fd = self._fd()
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


def _spare() -> int | None:
    """A descriptor held in reserve, given up to open the results file when the process has no other."""
    try:
        return os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _close_all(fds: list[int | None]) -> None:
    for i, fd in enumerate(fds):
        if fd is not None:
            fds[i] = None
            with contextlib.suppress(OSError):
                os.close(fd)


def record_line(record: EpisodeRecord | dict[str, Any]) -> bytes:
    """A record as one UTF-8 JSON line. Model output is arbitrary text: a lone surrogate in it is written as its
    JSON escape (backslashreplace gives exactly `\\udXXX`, valid only inside a JSON string, where it is)."""
    obj = record.to_json() if isinstance(record, EpisodeRecord) else record
    if isinstance(obj.get("error"), str):   # an error may quote the endpoint's URL: never its credentials
        obj = {**obj, "error": redact_text(obj["error"])}
    return (json.dumps(obj, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")
