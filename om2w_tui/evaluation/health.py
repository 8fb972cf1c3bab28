"""Task health across runs: every attempt of every task over one or more run folders (any dates, any arms) and how
each ended, and the tasks no run solved that show evidence of the site, the candidates for label 2 (not executable).

How an attempt ended (`ENDINGS`), by the failure rules of `evaluation/failure.py` on the attempt's record and its
folder (the task's folder for its latest attempt, `attempts/<n>` for an earlier one kept there):

  success        the task's latest attempt, and the run's measure of success (`evaluation/measure.py`: labels,
                 a judge, the reference answers) calls the task a success
  bot_wall       a bot wall or CAPTCHA (status blocked)
  site_error     the site answered with an HTTP error page (`failure.error_page`: a 4xx/5xx named in the error,
                 the last page's main document's HTTP status as the worker recorded it, the last page's title, or
                 the last step's thought reading one)
  site_down      the site did not answer (a network error of its own: at its page load, a refused connection is
                 one though the harness retried it as infra; the browser's error page; never a page at all)
  harness_error  the harness or its services failed (infra, endpoint, storage)
  model_error    the model failed (status error of kind model, or a model fault)
  timeout        the episode's time ran out
  out_of_steps   the step budget was used up without an answer
  stopped        killed by its user, or requeued / interrupted (run again), or a task folder its run recorded no
                 end of (killed under it, or running): never the site's failure, whatever its page showed
  error          an error of the agent's own
  done           the agent finished (an answer not judged a success, or not judged)

An attempt not judged yet that ended on the site's error page (or on none) is `site_error` / `site_down` all the same:
health reads the site's evidence whatever the verdict, where a report's failure classes wait for one.

The evidence of the site is an attempt that ended in `SITE_ENDINGS`. A campaign's folder (`campaign_folder.py`) is
read as its lanes (`evaluation/campaign_report.py`), each attempt named by the lane's arm and repeat; a lane not
started yet is listed with nothing read. Reading only: nothing printed, nothing written; `HealthInputError` says
which folder is not a run (or which campaign's plan is malformed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.episode_folder import (
    EpisodeFolder,
    attempt_folder,
    begun_attempts,
    read_episode,
)
from om2w_tui.campaign_folder import is_campaign
from om2w_tui.engine.results import EpisodeRecord, read_results
from om2w_tui.evaluation.campaign_report import LaneRun, read_lanes
from om2w_tui.evaluation.failure import Failure, classify, error_page, max_steps_of
from om2w_tui.evaluation.report import summarize
from om2w_tui.evaluation.task_outcome import Outcome
from om2w_tui.evaluation.verdicts import Settled
from om2w_tui.json_input import InputError
from om2w_tui.run_folder import what_is

ENDINGS: tuple[str, ...] = ("success", "done", "bot_wall", "site_error", "site_down", "harness_error", "model_error",
                            "timeout", "out_of_steps", "stopped", "error")
ENDING_WORDS: dict[str, str] = {
    "success": "success", "done": "done", "bot_wall": "bot wall", "site_error": "site error page",
    "site_down": "site down", "harness_error": "harness error", "model_error": "model error", "timeout": "timeout",
    "out_of_steps": "step budget used up", "stopped": "stopped", "error": "agent error",
}
SITE_ENDINGS: tuple[str, ...] = ("bot_wall", "site_error", "site_down")


HINT = "give a run's --out folder, a campaign's, or a folder that holds runs or campaigns"


class HealthInputError(ValueError):
    """A folder given that is neither a run nor a folder of runs; the message names it."""


@dataclass(frozen=True)
class Attempt:
    """One attempt of a task in one run: which run (its folder and arm; a campaign's lane: the campaign's arm and
    the lane's name by arm and repeat), its number, how it ended and why."""

    out: str
    arm: str
    attempt: int
    status: str
    ending: str
    why: str
    latest: bool
    lane: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"out": self.out, "arm": self.arm, "attempt": self.attempt, "status": self.status,
                "ending": self.ending, "why": self.why, "latest": self.latest, "lane": self.lane}


def _counted(endings: Iterable[str]) -> dict[str, int]:
    """How many of `endings` ended each way, in ENDINGS order (none: left out)."""
    n = Counter(endings)
    return {e: n[e] for e in ENDINGS if n[e]}


@dataclass(frozen=True)
class ArmTally:
    """One arm's attempts of one task: how many, how they ended, and whether that arm solved it."""

    arm: str
    attempts: int
    solved: bool
    endings: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.arm, "attempts": self.attempts, "solved": self.solved, "endings": self.endings}


@dataclass(frozen=True)
class TaskHealth:
    """A task's attempts over every run read, in the runs' order."""

    task_id: str
    site: str
    attempts: tuple[Attempt, ...]

    @property
    def solved(self) -> bool:
        return any(a.ending == "success" for a in self.attempts)

    @property
    def evidence(self) -> tuple[Attempt, ...]:
        """The attempts that met the site failing: a bot wall, an error page, the site not answering."""
        return tuple(a for a in self.attempts if a.ending in SITE_ENDINGS)

    @property
    def suspect(self) -> bool:
        """A candidate for label 2 (not executable): no run solved it, and an attempt met the site failing."""
        return not self.solved and bool(self.evidence)

    def endings(self) -> dict[str, int]:
        """How many attempts ended each way, in ENDINGS order (none: left out)."""
        return _counted(a.ending for a in self.attempts)

    def arms(self) -> dict[str, dict[str, int]]:
        """Per arm (in the order first met), how its attempts ended."""
        return {t.arm: t.endings for t in self.per_arm()}

    def per_arm(self) -> tuple[ArmTally, ...]:
        """Each arm's own numbers (in the order first met): its attempts, how they ended, whether it solved the task."""
        by: dict[str, list[Attempt]] = {}
        for a in self.attempts:
            by.setdefault(a.arm, []).append(a)
        return tuple(ArmTally(arm, len(got), any(a.ending == "success" for a in got),
                              _counted(a.ending for a in got)) for arm, got in by.items())

    def to_json(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "site": self.site, "solved": self.solved, "suspect": self.suspect,
                "endings": self.endings(), "arms": self.arms(), "per_arm": [t.to_json() for t in self.per_arm()],
                "attempts": [a.to_json() for a in self.attempts]}


@dataclass(frozen=True)
class RunRead:
    """One run read: its folder, its arm (run.json's, or a campaign's arm; '' for none), the measure its success was
    read by, counts; a campaign's lane: its name by arm and repeat (`base r2`)."""

    out: str
    arm: str
    measure: str
    tasks: int
    attempts: int
    lane: str = ""
    warnings: tuple[str, ...] = ()   # what reading it skipped (a line of its results, of its judge file), as `report`

    def to_json(self) -> dict[str, Any]:
        return {"out": self.out, "arm": self.arm, "measure": self.measure, "tasks": self.tasks,
                "attempts": self.attempts, "lane": self.lane}


@dataclass(frozen=True)
class Health:
    """Every task's attempts over the runs read, and the runs."""

    runs: tuple[RunRead, ...]
    tasks: tuple[TaskHealth, ...]

    @property
    def candidates(self) -> tuple[TaskHealth, ...]:
        """The tasks no run solved that show evidence of the site: candidates for label 2."""
        return tuple(t for t in self.tasks if t.suspect)

    @property
    def by_arm(self) -> bool:
        """Whether the runs differ by arm (then the attempts are shown per arm too)."""
        return len({r.arm for r in self.runs}) > 1

    @property
    def warnings(self) -> tuple[str, ...]:
        """What reading the runs skipped, each once, in the order of the runs."""
        return tuple(dict.fromkeys(w for r in self.runs for w in r.warnings))

    def to_json(self) -> dict[str, Any]:
        return {"runs": [r.to_json() for r in self.runs], "tasks": [t.to_json() for t in self.tasks],
                "candidates": [{"task_id": t.task_id, "site": t.site,
                                "evidence": [a.to_json() for a in t.evidence]} for t in self.candidates],
                "warnings": list(self.warnings)}


def run_folders(folders: Iterable[Path]) -> list[Path]:
    """The runs `folders` name: each a run, a campaign's (its lanes that have started), or a folder that holds runs
    or campaigns (its runs by name, then each campaign's lanes). Raises HealthInputError naming a folder that is
    none of these."""
    return [out for out, lane in _sources(folders) if lane is None or lane.is_run]


def _sources(folders: Iterable[Path]) -> list[tuple[Path, LaneRun | None]]:
    """Each run to read, and the campaign's lane it is (None: a run given, or in a folder of runs)."""
    runs: dict[Path, LaneRun | None] = {}

    def campaign(folder: Path) -> None:
        try:
            lanes = read_lanes(folder)
        except InputError as e:
            raise HealthInputError(str(e)) from None
        for lane in lanes:
            if runs.get(lane.out) is None:   # a lane given as a run too is still named by arm and repeat
                runs[lane.out] = lane

    for folder in map(Path, folders):
        if is_campaign(folder):       # before what_is: a campaign's lanes are read with their arm and repeat
            campaign(folder)
            continue
        found = what_is(folder)
        campaigns = sorted(d for d in folder.iterdir() if d.is_dir() and is_campaign(d)) \
            if found.exists and not found.is_run else []
        if found.is_run:
            runs.setdefault(folder, None)
        elif found.runs_inside or campaigns:   # a folder of runs, of campaigns, or of both
            for name in found.runs_inside:
                if not is_campaign(folder / name):
                    runs.setdefault(folder / name, None)
            for c in campaigns:
                campaign(c)
        else:
            raise HealthInputError(found.problem(HINT))
    return list(runs.items())


def ending_of(record: EpisodeRecord | None, episode: EpisodeFolder | None, outcome: Outcome | None,
              max_steps: int | None = None) -> tuple[str, str]:
    """How one attempt ended (one of ENDINGS) and why, in words. `outcome`: the run's outcome of the task when this
    is its latest attempt (None otherwise: an earlier attempt is never judged)."""
    if outcome == "success":
        return "success", "the run's measure calls the task a success"
    failure: Failure | None = classify(record, episode, outcome, max_steps)
    if failure is None and outcome is None:   # done, not judged yet: what its last page shows of the site still counts
        if (seen := classify(record, episode, "failure", max_steps)) is not None and seen.cls == "site_error":
            failure = seen
    status = record.status if record is not None else ""
    if failure is not None and failure.cls == "stopped":   # before the site's: a page cut short is not the site's
        return "stopped", failure.why + (" (run again)" if record is not None and record.requeued else "")
    if failure is not None and failure.cls == "site_error":
        return ("site_error" if error_page(record, episode) else "site_down"), failure.why
    if failure is not None and failure.cls in ("bot_wall", "harness_error", "model_error"):
        return failure.cls, failure.why
    by_status = {"timeout": "timeout", "out_of_steps": "out_of_steps", "error": "error"}
    if status in by_status:
        return by_status[status], failure.why if failure is not None else f"status {status}"
    if failure is not None and failure.cls == "out_of_steps":
        return "out_of_steps", failure.why
    why = failure.words if failure is not None else ("not judged" if outcome is None else "judged")
    return "done", why


def _episode(out: Path, rec: EpisodeRecord, latest: bool) -> EpisodeFolder | None:
    """The attempt's folder read (None: an earlier attempt kept no folder, or the folder has no result)."""
    folder = attempt_folder(out, rec.task_id, rec.attempt, latest)
    if not folder.is_dir():
        return None
    ep = read_episode(folder)
    return ep if ep.layout is not None else None


def _unrecorded(task: Path, recorded: set[int], arm: str, shown: str) -> list[Attempt]:
    """The attempts of `task` whose files are kept (`attempts/<n>`, or the task's folder by its mark) but no record
    says their end: `stopped`, their run cut under them."""
    began = begun_attempts(task)
    return [Attempt(str(task.parent), arm, n, "", "stopped",
                    "no record: its run stopped under it (its console killed), and the task was run again"
                    if n < max(began) or n < max(recorded) else
                    "no record: its run stopped under it (its console killed), or it is still running",
                    False, shown) for n in sorted(began - recorded)]


def _read_run(out: Path, judge: Path | None = None, lane: LaneRun | None = None) \
        -> tuple[RunRead, dict[str, tuple[str, list[Attempt]]]]:
    if lane is not None and not lane.is_run:
        return RunRead(str(out), lane.lane.arm, "not started yet", 0, 0, lane.shown), {}
    summary = summarize(out, judge)
    arm = lane.lane.arm if lane is not None else summary.arm or ""
    shown = lane.shown if lane is not None else ""
    log = read_results(out)
    budget = max_steps_of(out)
    found: dict[str, tuple[str, list[Attempt]]] = {tid: (row.site, []) for tid, row in summary.per_task.items()}
    records = log.episode_records()
    last = log.latest_index()   # each task's latest record, by the results log's own rule
    for i, rec in enumerate(records):
        is_latest = last[rec.task_id] == i
        row = summary.per_task.get(rec.task_id)
        outcome = row.outcome if row is not None and is_latest else None
        ending, why = ending_of(rec, _episode(out, rec, is_latest), outcome, budget)
        site = row.site if row is not None else rec.website
        found.setdefault(rec.task_id, (site, []))[1].append(
            Attempt(str(out), arm, rec.attempt, rec.status, ending, why, is_latest, shown))
    keeps_records = Settled.read(out, log).keeps_records
    for tid, (_, attempts) in found.items():
        if attempts and keeps_records:   # attempts its run recorded no end of: cut with their console (kill -9)
            attempts += _unrecorded(out / tid, {a.attempt for a in attempts}, arm, shown)
            attempts.sort(key=lambda a: a.attempt)
        if not attempts and keeps_records:   # a folder its run recorded no end of: stopped under it, or running
            ep = read_episode(out / tid)
            how = f"its folder says cut short: {ep.cut_short}" if ep.cut_short else "or it is still running"
            attempts.append(Attempt(str(out), arm, 1, "", "stopped", f"no record: its run stopped under it ({how})",
                                    True, shown))
        elif not attempts:   # another harness's folder: its task folders only, one attempt each
            ep = read_episode(out / tid)
            ending, why = ending_of(None, ep if ep.layout is not None else None, summary.per_task[tid].outcome,
                                    budget)
            attempts.append(Attempt(str(out), arm, 1, "", ending, why, True, shown))
    measure = summary.measure.name if summary.measure is not None else (
        summary.success.source if summary.success.source else "none")
    run = RunRead(str(out), arm, measure, len(found), sum(len(a) for _, a in found.values()), shown,
                  summary.warnings)   # the results log's own warnings among them: said once, not once a reading
    return run, found


def health(outs: Sequence[Path]) -> Health:
    """Every task's attempts over the runs `outs` names (runs, folders of runs, campaigns' folders). Raises
    HealthInputError for a folder that is none of these."""
    runs: list[RunRead] = []
    tasks: dict[str, tuple[str, list[Attempt]]] = {}
    for out, lane in _sources(outs):
        run, found = _read_run(out, lane=lane)
        runs.append(run)
        for tid, (site, attempts) in found.items():
            tasks.setdefault(tid, (site, []))[1].extend(attempts)
    rows = tuple(TaskHealth(tid, site, tuple(attempts)) for tid, (site, attempts) in sorted(tasks.items()))
    return Health(tuple(runs), rows)


def suspects(out: Path, judge: Path | None = None) -> list[str]:
    """The tasks of one run that are candidates for label 2 (the label screen's `suspect` filter); `judge`: the judge
    file success is read from (default: the run's newest)."""
    _, found = _read_run(Path(out), judge)
    rows = [TaskHealth(tid, site, tuple(attempts)) for tid, (site, attempts) in sorted(found.items())]
    return [t.task_id for t in rows if t.suspect]


__all__ = ["ENDINGS", "ENDING_WORDS", "HINT", "SITE_ENDINGS", "ArmTally", "Attempt", "Health", "HealthInputError",
           "RunRead", "TaskHealth", "ending_of", "health", "run_folders", "suspects"]
