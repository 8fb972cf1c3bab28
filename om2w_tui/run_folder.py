"""Every name a run gives the files it keeps in its out folder, in one place: `RunFolder(out, shard)`.

A run (or one shard of a run split with `--shard K/N`, `--slot-range a:b`) keeps beside its task folders: its
results (`results.jsonl`; a shard's `results.shard-K-of-N.jsonl`), its manifest (`run.json`; `run.shard-K-of-N.json`),
the lock it holds for its life (`.om2w-run.lock`; `.om2w-run.shard-K-of-N.lock`, every shard of a range one each),
its control socket (`.om2w-control.sock`; `.om2w-control.shard-K-of-N.sock`), a log per worker
(`worker_<slot>.log`; `worker_<slot>.shard-K-of-N.log`), a space probe while the disk is full
(`.om2w-space-probe`), and the labellers' files (`labels.<annotator>.json`).
Each is a file, never a folder: the official evaluator takes every subfolder of a run's folder as a task.

Readers of a whole run (resume, `report`, `label`) read every shard's files: `results_files`, `manifests`.

What a run's folder is, the one rule every command that reads a run asks (`what_is(folder)`): a folder with a run's
results (`results*.jsonl`) or manifest (`run.json`, a shard's), or, from another harness, a folder of task folders
in the benchmark's layout (a subfolder with a `result.json`). Anything else is not a run: an empty folder, or a
folder that holds runs (`label` on it would take each run for a task); the readers refuse it with `Found.problem`,
which names the runs inside, or what is there instead of a folder (`folder_problem`: nothing, or a file, for every
command taking a run's folder, `ctl` too). No I/O here but globs, one listing and a stat; the module sits below the
engine, the executors and evaluation."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = ".om2w-run.lock"
SOCKET_NAME = ".om2w-control.sock"
RESULTS_GLOB = "results*.jsonl"        # every shard's results, and the seed runner's results_<slot>.jsonl
LABELS_PREFIX = "labels."
MANIFEST_GLOBS = ("run.json", "run.shard*.json")   # a whole run's manifest, each shard's
WORKER_LOGS_GLOB = "worker_*.log"      # every slot's log, a shard's too
JUDGE_GLOB = "*_auto_eval_results.json"   # a judge's verdicts (evaluation/judge_files.py names them)
# every name a run keeps beside its task folders, whatever its shard, slot, annotator or judge (case folded: one file
# on a case-insensitive disk), and anything hidden (its locks, control sockets, space probe): no task's folder, no
# campaign lane's may be so named (the task-id check and campaign_folder.py's arm check read this list)
CAMPAIGN_PLAN = "campaign.json"   # a campaign's folder holds its plan by this name (campaign_folder.py): no run's
OWN_GLOBS = (RESULTS_GLOB, "run.json", "run.*.json", WORKER_LOGS_GLOB, f"{LABELS_PREFIX}*.json", JUDGE_GLOB,
             ".*")


def is_own_name(name: str, globs: tuple[str, ...] = OWN_GLOBS) -> bool:
    """Whether `name` is (or, but for case, is) one of the names in `globs` (a run's own, by default)."""
    return any(fnmatch.fnmatchcase(name.lower(), glob.lower()) for glob in globs)
_SPEC = re.compile(r"(\d+)(?::(\d+))?/(\d+)")


@dataclass(frozen=True)
class Shard:
    """Shards lo..hi-1 of n (one shard: hi == lo + 1)."""

    lo: int
    hi: int
    n: int

    @property
    def spec(self) -> str:
        """As RunConfig.shard keeps it: 'K/N', or 'a:b/N' for a range."""
        return f"{self.lo}/{self.n}" if self.hi == self.lo + 1 else f"{self.lo}:{self.hi}/{self.n}"

    @property
    def label(self) -> str:
        if self.hi == self.lo + 1:
            return f"shard-{self.lo}-of-{self.n}"
        return f"shards-{self.lo}-to-{self.hi - 1}-of-{self.n}"

    def __contains__(self, k: object) -> bool:
        return isinstance(k, int) and self.lo <= k < self.hi


def parse_spec(spec: str) -> Shard | None:
    """RunConfig.shard -> Shard (None for '': the whole task file). Raises ValueError for a malformed one."""
    if not spec:
        return None
    m = _SPEC.fullmatch(spec)
    if not m:
        raise ValueError(f"shard {spec!r}: not K/N or a:b/N")
    lo, hi, n = int(m[1]), int(m[2]) if m[2] else int(m[1]) + 1, int(m[3])
    if not 0 <= lo < hi <= n:
        raise ValueError(f"shard {spec!r}: needs 0 <= a < b <= N")
    return Shard(lo, hi, n)


_LABEL = re.compile(r"shard-(\d+)-of-(\d+)|shards-(\d+)-to-(\d+)-of-(\d+)")


def shard_named(name: str, stem: str, suffix: str) -> Shard | None:
    """The shard (or range) whose own file `name` is, as `RunFolder` names one (`<stem>.<Shard.label><suffix>`:
    `.om2w-control.shard-1-of-2.sock`); None for any other name (a whole run's)."""
    label = name.removeprefix(f"{stem}.").removesuffix(suffix) if name.startswith(f"{stem}.") and \
        name.endswith(suffix) else ""
    m = _LABEL.fullmatch(label)
    if m is None:
        return None
    lo, hi, n = (int(m[1]), int(m[1]) + 1, int(m[2])) if m[1] is not None else (int(m[3]), int(m[4]) + 1, int(m[5]))
    return Shard(lo, hi, n) if 0 <= lo < hi <= n else None


@dataclass(frozen=True)
class RunFolder:
    out: Path
    shard: str = ""                    # RunConfig.shard: '' (the whole run), 'K/N' or 'a:b/N'

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", Path(self.out))

    @property
    def parsed(self) -> Shard | None:
        return parse_spec(self.shard)

    def _own(self, plain: str, stem: str, suffix: str) -> Path:
        shard = self.parsed
        return self.out / (plain if shard is None else f"{stem}.{shard.label}{suffix}")

    # ── what this run (or shard) writes ────────────────────
    @property
    def results(self) -> Path:
        return self._own("results.jsonl", "results", ".jsonl")

    @property
    def manifest(self) -> Path:
        return self._own("run.json", "run", ".json")

    @property
    def lock(self) -> Path:
        """The lock it holds for its life (a shard's own; a range's names the range, its shards' locks are
        `shard_locks`); the control socket's name follows it."""
        return self._own(LOCK_NAME, ".om2w-run", ".lock")

    @property
    def shard_locks(self) -> list[Path]:
        """The locks a shard (or each shard of a range) holds exclusive, beside the folder's lock held shared."""
        shard = self.parsed
        return [] if shard is None else [self.out / f".om2w-run.shard-{k}-of-{shard.n}.lock"
                                         for k in range(shard.lo, shard.hi)]

    @property
    def folder_lock(self) -> Path:
        """The folder's own lock: held by an unsharded run, shared by shards."""
        return self.out / LOCK_NAME

    @property
    def socket(self) -> Path:
        return self._own(SOCKET_NAME, ".om2w-control", ".sock")

    @property
    def space_probe(self) -> Path:
        return self.out / ".om2w-space-probe"

    def task(self, task_id: str) -> Path:
        return self.out / task_id

    def worker_log(self, slot: int) -> Path:
        """A worker's log (a shard's own: shards of one folder number their slots alike)."""
        return self._own(f"worker_{slot}.log", f"worker_{slot}", ".log")

    def labels(self, annotator: str) -> Path:
        """An annotator's labels (evaluation/labels.py checks the name; `final` is the reviewer's)."""
        return self.out / f"{LABELS_PREFIX}{annotator}.json"

    def own_files(self) -> list[Path]:
        """The files it keeps by name: each must be absent or a regular file (the preflight refuses a symlink, a
        folder or a device there)."""
        # the worker logs already there (any slot's: the console may add workers up to the bound) are appended to
        return [self.results, self.manifest, self.folder_lock, *self.shard_locks,
                *sorted(self.out.glob(WORKER_LOGS_GLOB))]

    # ── what a reader of the whole run reads ──────────────
    def results_files(self) -> list[Path]:
        """Every shard's results (and the seed runner's), in name order: whatever is there by such a name (the
        reader says what is not a regular file)."""
        return sorted(self.out.glob(RESULTS_GLOB))

    def manifests(self) -> list[Path]:
        """The run's manifest, or every shard's."""
        plain, shards = MANIFEST_GLOBS
        return [p for p in [self.out / plain, *sorted(self.out.glob(shards))] if p.is_file()]


@dataclass(frozen=True)
class Found:
    """What a folder given as a run is: `is_run`, and the subfolders that are runs themselves (by name)."""

    folder: Path
    is_run: bool
    exists: bool
    runs_inside: tuple[str, ...] = ()        # the runs and campaigns in it, by name
    campaigns: int = 0                       # how many of those are campaigns

    def problem(self, hint: str = "give a run's --out folder") -> str:
        """Why it is not a run, naming the folder and the runs inside it ('' for a run)."""
        if self.is_run:
            return ""
        if not self.exists and (problem := folder_problem(self.folder, hint)):   # nothing there, or a file
            return problem
        if self.runs_inside:
            shown = ", ".join(self.runs_inside[:8]) + (f" and {len(self.runs_inside) - 8} more"
                                                       if len(self.runs_inside) > 8 else "")
            kind = ("campaigns" if self.campaigns == len(self.runs_inside) else
                    "runs and campaigns" if self.campaigns else "runs")
            return (f"{self.folder}: not a run but a folder of {kind} ({len(self.runs_inside)}: {shown}); give "
                    f"one of them, e.g. {self.folder / self.runs_inside[0]}")
        return (f"{self.folder}: not a run (no results*.jsonl, no run.json, no task folder with a result.json); "
                f"{hint}")


def folder_problem(folder: Path, hint: str) -> str:
    """'' for a folder (or a link to one); else what is there instead, naming it: nothing, or a file (a device, a
    broken link) where every command taking a run's folder wants a folder; `hint`: what to give."""
    folder = Path(folder)
    if folder.is_dir():
        return ""
    if not os.path.lexists(folder):
        return f"{folder}: no such folder ({hint})"
    return f"{folder}: {'is a file, not' if folder.is_file() else 'is not'} a folder ({hint})"


def _own_files(folder: Path) -> bool:
    return bool(RunFolder(folder).results_files()) or bool(RunFolder(folder).manifests())


def _has_task_folders(subs: list[Path]) -> bool:
    return any((d / "result.json").is_file() for d in subs)


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(d for d in folder.iterdir() if d.is_dir())
    except OSError:
        return []


def run_holding(path: Path, runs: Sequence[Path] = (), *, itself: bool = True) -> Path | None:
    """The run folder `path` is inside (or is, with `itself`), None when none: the nearest folder on its way up that
    holds a run's own files (results*.jsonl, run.json) or is one of `runs`. The rule for what may be written
    somewhere: never a folder inside a run's (the official evaluator takes every subfolder of a run for a task)."""
    where = Path(os.path.abspath(path))
    given = {Path(os.path.abspath(r)) for r in runs}
    for folder in [where, *where.parents] if itself else where.parents:
        if folder in given or (folder.is_dir() and _own_files(folder)):
            return folder
    return None


def inside_run(flag: str, path: Path, folder: Path, what: str) -> str:
    """The words for `path` (given with `flag`) inside the run folder `folder`; `what` to write outside it."""
    return (f"{flag} {path}: inside the run folder {folder}; the official evaluator takes every subfolder of a run "
            f"for a task: {what} outside it")


def what_is(folder: Path) -> Found:
    """The rule: a run's own files (results*.jsonl, run.json), else another harness's task folders (a subfolder
    with a result.json); a folder whose subfolders are runs or campaigns (their plan) is a folder of them, not one."""
    folder = Path(folder)
    if not folder.is_dir():
        return Found(folder, False, False)
    if _own_files(folder):
        return Found(folder, True, True)
    subs = _subfolders(folder)
    if _has_task_folders(subs):
        return Found(folder, True, True)
    campaigns = {d.name for d in subs if (d / CAMPAIGN_PLAN).is_file()}
    inside = tuple(d.name for d in subs if d.name in campaigns or _own_files(d) or _has_task_folders(_subfolders(d)))
    return Found(folder, False, True, inside, len(campaigns))


LOCKS_GLOB = ".om2w-run*.lock"          # every run's and shard's lock in a folder
# a socket name a lock may name: `.om2w-control<X>.sock`, a plain name inside the folder (no separator, bounded)
SOCKET_NAMES = re.compile(r"\.om2w-control[A-Za-z0-9._-]{0,80}\.sock")


def run_locks(out: Path) -> list[Path]:
    """The run locks in `out` (held or not), in name order."""
    return sorted(Path(out).glob(LOCKS_GLOB))


def socket_for_lock(lock_name: str) -> str:
    """The socket's file name for a run holding the lock file `lock_name` (`.om2w-run<X>.lock` ->
    `.om2w-control<X>.sock`): one socket per run in a folder."""
    middle = lock_name.removeprefix(".om2w-run").removesuffix(".lock")
    return f".om2w-control{middle}.sock"
