"""One annotator labelling one run, with no screen in it: `LabelSession` holds the run's tasks (each one's level,
site and latest record), the labels given (each written to the annotator's file at once, `evaluation/labels.py`),
the other annotators' labels, the judge's verdicts, the filters (unlabelled, a site, a level, a failure class,
disagreeing with the judge or another annotator, with a note, a candidate for label 2 by `evaluation/health.py`)
and the position in the filtered tasks. The console's label screen (`frontends/console/screens/label.py`) draws it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.conformance import task_dirs
from om2w_tui.engine.results import EpisodeRecord, read_manifest, read_results
from om2w_tui.evaluation.failure import CLASSES, WORDS
from om2w_tui.evaluation.health import HealthInputError, suspects
from om2w_tui.evaluation.judge_files import read_judged
from om2w_tui.evaluation.labels import FINAL, LabelFile, LabelFileError, majority, read_run_labels
from om2w_tui.evaluation.labels import Label as TaskLabel
from om2w_tui.evaluation.report import LEVEL_NAMES, find_judge_file, site_of, summarize, task_meta
from om2w_tui.evaluation.verdicts import Settled
from om2w_tui.json_input import InputError
from om2w_tui.run_folder import RunFolder

FILTERS = ("all", "unlabelled", "judge", "annotators", "notes", "suspect")
FILTER_WORDS = {"all": "every task", "unlabelled": "not labelled yet", "judge": "disagreeing with the judge",
                "annotators": "disagreeing with another annotator", "notes": "with a note",
                "suspect": "not solved, met the site failing (label 2?)"}
READ_AHEAD = 2          # tasks read ahead on each side of the current one


def filter_words(flt: str) -> str:
    """What a filter shows, in words: `disagreeing with the judge`, `site booking.com`, `failed: loop`."""
    kind, _, value = flt.partition(":")
    if kind == "failure" and value in WORDS:
        return f"failed: {WORDS[value]}"
    return FILTER_WORDS.get(flt, flt.replace(":", " "))


@dataclass(frozen=True)
class TaskInfo:
    """What the run knows of a task beside its folder: its level and site, and its latest record."""

    task_id: str
    level: str
    site: str
    website: str
    record: EpisodeRecord | None


class LabelSession:
    """One annotator labelling one run (or the reviewer giving final labels): the run's tasks, the labels given,
    the other annotators' labels, the judge's verdicts, and the filtered list of tasks being walked through."""

    def __init__(self, out: Path, annotator: str, *, review: bool = False, judge: Path | None = None,
                 flt: str = "all"):
        self.out = Path(out)
        self.review = review
        self.annotator = FINAL if review else annotator
        self.mine = LabelFile.open(self.out, self.annotator)
        log = read_results(self.out)
        latest = log.latest_records()
        self.tasks = sorted(set(task_dirs(self.out)) | set(latest))
        meta = task_meta(_manifest(self.out))
        self.info = {t: _task_info(t, latest.get(t), meta.get(t, {})) for t in self.tasks}
        self.judge_path = judge or find_judge_file(self.out)
        try:   # a judge file that is a symlink or a FIFO is not read: no verdicts shown
            # the verdicts of the tasks' settling episodes only, as `report` counts them (verdicts.py)
            judged = Settled.read(self.out, log).current(read_judged(self.judge_path)) if self.judge_path else {}
        except InputError:
            judged = {}
        self.verdicts = {t: r.get("predicted_label") == 1 for t, r in judged.items()
                         if r.get("predicted_label") in (0, 1)}
        self.others: dict[str, dict[str, TaskLabel]] = {}
        self.reload_others()
        self._failures: dict[str, str] | None = None
        self._suspects: set[str] | None = None
        self.filter = "all"
        self.view: list[str] = []
        self.pos = 0
        self.apply_filter("annotators" if review and flt == "all" else flt)

    # ── what is known ──
    def reload_others(self) -> None:
        """The other annotators' labels as their files now say (they may be labelling at the same time)."""
        labels = read_run_labels(self.out)
        self.others = {a: labs for a, labs in labels.annotators.items() if a != self.annotator}

    @property
    def current(self) -> str | None:
        return self.view[self.pos] if self.view else None

    def label_of(self, task_id: str) -> TaskLabel | None:
        return self.mine.get(task_id)

    def value_of(self, task_id: str) -> str | None:
        lab = self.mine.get(task_id)
        return lab.value if lab is not None else None

    def other_values(self, task_id: str) -> dict[str, str]:
        return {a: lab.value for a, labs in self.others.items()
                if (lab := labs.get(task_id)) is not None and lab.value is not None}

    @property
    def labelled(self) -> int:
        """Tasks this annotator labelled; in review, tasks with a final label (the reviewer's, else the annotators'
        consensus), so that a dispute left counts as not labelled."""
        if self.review:
            return sum(1 for t in self.tasks if (self.value_of(t) or majority(self.other_values(t).values())))
        return sum(1 for t in self.tasks if self.value_of(t) is not None)

    def summary_line(self) -> str:
        """What the session leaves on disk, in a sentence (`label`'s last line): the tasks this annotator labelled in
        its file; in review, the tasks with a final label, told apart: set in the reviewer's file or the annotators'
        consensus (that file holds only the former)."""
        if not self.review:
            return f"{self.labelled} of {len(self.tasks)} tasks labelled in {self.mine.path}"
        own = sum(1 for t in self.tasks if self.value_of(t))
        agreed = self.labelled - own
        return (f"{self.labelled} of {len(self.tasks)} tasks have a final label ({own} set in {self.mine.path}, "
                f"{agreed} by the annotators' consensus)")

    @property
    def failures(self) -> dict[str, str]:
        """Each task's failure class as `report` reads the run (its measure, `evaluation/failure.py`'s rules),
        worked out when first asked for and kept: a label given meanwhile does not move a task out of the view."""
        if self._failures is None:
            try:
                s = summarize(self.out, self.judge_path)
                self._failures = {t: r.failure.cls for t, r in s.per_task.items() if r.failure is not None}
            except (OSError, InputError, LabelFileError):   # a judge or labels file gone bad: no classes, said by 0s
                self._failures = {}
        return self._failures

    @property
    def suspects(self) -> set[str]:
        """The tasks `om2w-tui tasks health` names candidates for label 2 in this run (not solved, and an attempt met
        a bot wall, an error page or the site down), worked out when first asked for and kept, as `failures`."""
        if self._suspects is None:
            try:
                self._suspects = set(suspects(self.out, self.judge_path))
            except (OSError, InputError, LabelFileError, HealthInputError):   # as `failures`: none, said by a 0
                self._suspects = set()
        return self._suspects

    # ── filters ──
    def filters(self) -> list[tuple[str, str, int]]:
        """(filter, what it shows, how many tasks) for every filter there is: the fixed ones, then each level and
        site of the run, then each failure class its tasks have."""
        out = [(f, FILTER_WORDS[f], sum(1 for t in self.tasks if self.matches(t, f))) for f in FILTERS
               if f != "judge" or self.verdicts]
        levels = sorted({i.level for i in self.info.values()},
                        key=lambda v: (LEVEL_NAMES.index(v) if v in LEVEL_NAMES else len(LEVEL_NAMES), v))
        for kind, values in (("level", levels), ("site", sorted({i.site for i in self.info.values()}))):
            for v in values:
                key = f"{kind}:{v}"
                out.append((key, f"{kind} {v}", sum(1 for t in self.tasks if self.matches(t, key))))
        failed = set(self.failures.values())
        out += [(f"failure:{c}", filter_words(f"failure:{c}"), sum(1 for t in self.tasks if self.failures.get(t) == c))
                for c in CLASSES if c in failed]
        return out

    def matches(self, task_id: str, flt: str) -> bool:
        mine = self.value_of(task_id)
        if flt == "all":
            return True
        if flt == "unlabelled":
            return mine is None
        if flt == "judge":                        # this annotator's label, else the others' consensus
            verdict = self.verdicts.get(task_id)
            human = mine if mine is not None else majority(self.other_values(task_id).values())
            return human is not None and verdict is not None and (human == "1") != verdict
        if flt == "annotators":
            values = set(self.other_values(task_id).values())
            if self.review:                       # the reviewer's tasks: those the annotators split on
                return len(values) > 1
            return mine is not None and bool(values - {mine})
        if flt == "suspect":
            return task_id in self.suspects
        if flt == "notes":
            lab = self.mine.get(task_id)
            return bool(lab and lab.note) or any(bool((labs.get(task_id) or TaskLabel(None)).note)
                                                 for labs in self.others.values())
        kind, _, value = flt.partition(":")
        if kind == "failure":
            return self.failures.get(task_id) == value
        info = self.info[task_id]
        return (kind == "level" and info.level == value) or (kind == "site" and info.site == value)

    def apply_filter(self, flt: str, keep: str | None = None) -> None:
        """Walk the tasks `flt` chooses, from `keep` when it is one of them (else from the first this annotator
        has not labelled, so that a new session resumes where the last one stopped)."""
        self.filter = flt
        self.view = [t for t in self.tasks if self.matches(t, flt)]
        if keep in self.view:
            self.pos = self.view.index(keep)
        else:
            self.pos = next((i for i, t in enumerate(self.view) if self.value_of(t) is None), 0)

    def go(self, task_id: str) -> bool:
        """Move to `task_id` (leaving the filter for `all` when it is not in the view)."""
        if task_id not in self.tasks:
            return False
        if task_id not in self.view:
            self.apply_filter("all")
        self.pos = self.view.index(task_id)
        return True

    def step(self, delta: int) -> bool:
        """Move by `delta` in the view; False at either end."""
        to = self.pos + delta
        if not self.view or not 0 <= to < len(self.view):
            return False
        self.pos = to
        return True

    def next_unlabelled(self) -> bool:
        """After a label: the next task of the view that this annotator has not labelled (the next one at all when
        every later task is labelled); False at the end."""
        for i in range(self.pos + 1, len(self.view)):
            if self.value_of(self.view[i]) is None:
                self.pos = i
                return True
        return self.step(1)

    def around(self) -> list[str]:
        """The tasks to read ahead: the next ones first, then the previous ones."""
        ahead = [self.view[i] for i in range(self.pos + 1, min(len(self.view), self.pos + 1 + READ_AHEAD))]
        behind = [self.view[i] for i in range(max(0, self.pos - READ_AHEAD), self.pos)][::-1]
        return ahead + behind

    # ── labelling (each one written at once) ──
    def give(self, value: str, reason: str | None = None) -> TaskLabel | None:
        task = self.current
        return self.mine.set(task, value, reason=reason) if task is not None else None

    def note(self, text: str) -> TaskLabel | None:
        task = self.current
        return self.mine.set(task, note=text) if task is not None else None

    def clear(self) -> None:
        if self.current is not None:
            self.mine.clear(self.current)


def _manifest(out: Path) -> dict[str, Any] | None:
    for p in RunFolder(out).manifests():
        data, _ = read_manifest(p)   # the one reader: what is of the wrong shape is left out
        if data is not None:
            return data
    return None


def _task_info(task_id: str, rec: EpisodeRecord | None, meta: dict[str, Any]) -> TaskInfo:
    website = rec.website if rec else ""
    level = (rec.level if rec and rec.level else None) or meta.get("level") or "-"
    return TaskInfo(task_id, str(level), str(meta.get("site") or site_of(website)), website, rec)

