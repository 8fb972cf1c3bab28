"""The site of `om2w-tui report OUT [OUT ...] --html DIR`: one folder that opens from file:// with no server and
asks for nothing outside itself (no CDN, no web font), from the same typed report `report` prints
(`evaluation/report.py`), the failure classes (`evaluation/failure.py`) and each episode's folder
(`benchmarks/episode_folder.py`).

    DIR/index.html               every run's numbers under both counting rules, by level and site (SVG bars and
                                 tables), statuses, failure classes, errors, the model, cost; with several runs,
                                 compare.html (the paired table, McNemar, the tasks only one run solved); a
                                 campaign's lanes, each arm's repeats and the pairing gap on both (campaign.html)
    DIR/r<k>/tasks.html          the run's tasks: sortable, filtered by status, site, level, verdict (the measure's,
                                 the judge's, the humans'), failure class and text
    DIR/r<k>/t/<task>.html       one task: the verdicts, the labels, the trajectory step by step beside each
                                 screenshot (j/k or the arrow keys move between steps), the record
    DIR/r<k>/s/<task>/<i>.t.jpg  thumbnails; <i>.png (a palette PNG, photos at half resolution, or the original) the
                                 full image, unless --link; one of each for screenshots with the same bytes
    DIR/pair/<task>.html         with several runs, a task's trajectories side by side, step by step, the first
                                 step where they go different ways marked
    DIR/assets/                  the CSS and the JavaScript

`build_task_page` writes one task's page alone (the console's `o`, on demand): the same template, its thumbnails,
the full screenshots linked to the run's own files.

The site is built in a folder beside DIR and renamed into place, so a failed build leaves no half site; DIR must be
absent, empty, or a site this wrote (its `.om2w-tui-site` file says so), and never inside a run folder (the official
evaluator takes every subfolder of a run for a task)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2

from om2w_tui.benchmarks.episode_folder import EpisodeFolder, read_episode
from om2w_tui.engine.results import EpisodeRecord, read_results
from om2w_tui.evaluation.compare import unique_names
from om2w_tui.evaluation.failure import CLASSES, WORDS, Failure, counted
from om2w_tui.evaluation.labels import VALUE_WORDS, Label, read_run_labels
from om2w_tui.evaluation.outcomes import RULE_ALL, RULE_EXECUTABLE
from om2w_tui.evaluation.report import read_judge_file
from om2w_tui.evaluation.summary import Comparison, Counts, Rate, RunReport
from om2w_tui.evaluation.text_formats import fmt_kappa, fmt_num, fmt_pp, fmt_seconds, signed
from om2w_tui.evaluation.verdicts import Settled
from om2w_tui.files import write_new
from om2w_tui.frontends.answer import ShownAnswer, shown_answer
from om2w_tui.frontends.web.images import THUMB_SUFFIX, Job, Made, first_copies, make_all
from om2w_tui.frontends.web.prices import Price
from om2w_tui.run_folder import inside_run, run_holding

MARKER = ".om2w-tui-site"
FORMAT = "om2w-tui-site"
ASSETS = ("site.css", "site.js")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


class SiteError(ValueError):
    """A site that must not be written there (inside a run folder, over another folder's files); the message
    names the folder and what to do."""


# ------------------------------------------------------------------------------------------ where it goes


def check_destination(dest: Path, outs: Sequence[Path]) -> None:
    """Raise SiteError where DIR must not be written: inside a run folder (one of `outs`, or any folder holding a
    run's own files), or a folder with files that is not a site of ours."""
    where = Path(os.path.abspath(dest))
    if (folder := run_holding(dest, outs)) is not None:
        raise SiteError(inside_run("--html", dest, folder, "write the site"))
    if where.is_symlink() or (where.exists() and not where.is_dir()):
        raise SiteError(f"--html {dest}: exists and is not a folder; give a new folder")
    if where.is_dir() and any(where.iterdir()) and not (where / MARKER).is_file():
        raise SiteError(f"--html {dest}: a folder with files that is not a site written by om2w-tui report --html; "
                        f"give a new or empty folder")


def slug(task_id: str, taken: set[str]) -> str:
    """A file name for a task: its id where that is a safe name, else made one (and numbered where two meet)."""
    base = _SLUG.sub("_", task_id).strip("._")[:80] or "task"
    name, n = base, 1
    while name.lower() in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name.lower())
    return name


# ------------------------------------------------------------------------------------------ what a page shows


@dataclass
class StepView:
    n: int
    actions: tuple[str, ...]
    thought: str
    url: str
    shot: str = ""          # the screenshot's file name in the run
    title: str = ""         # the page's title, where known (the final state's: the page the episode ended on)
    thumb: str = ""         # paths relative to the task's page
    full: str = ""
    lossy: str = ""         # what the full image lost against the run's file ('' where it is that file)
    score: Any = None       # the judge's score of this screenshot, and its reasoning
    reasoning: str = ""


@dataclass
class TaskView:
    task_id: str
    slug: str
    row: Any                                  # TaskRow
    record: EpisodeRecord | None
    episode: EpisodeFolder
    failure: Failure | None
    judge: dict[str, Any] | None
    labels: list[tuple[str, Label]]
    steps: list[StepView] = field(default_factory=list)
    attempts: int = 0
    humans: str = "not labelled"      # the humans' verdict: the reviewer's or the majority's, or "disputed"

    @property
    def verdict(self) -> str:
        """The report's measure's verdict (the judge's, the humans', or the reference answers')."""
        return self.row.outcome or "pending"

    @property
    def judged(self) -> str:
        """The judge's own verdict, whatever the report's measure is."""
        if not self.judge:
            return "not judged"
        return "success" if self.judge.get("predicted_label") == 1 else "failure"

    @property
    def text(self) -> str:
        return self.episode.task or str((self.record.extra if self.record else {}).get("task") or "")

    @property
    def website(self) -> str:
        return (self.record.website if self.record else "") or str(self.episode.result.get("website") or "")

    @property
    def answer(self) -> ShownAnswer:
        """The agent's answer, else why it has none (`no answer (killed)`): every view's rule."""
        return shown_answer(self.episode.answer, self.record, self.episode.cut_short)

    def fact(self, name: str) -> Any:
        """A field of the record as its writer wrote it; None (shown `-`, as `report` shows it) for one an older
        writer left out, and for no record."""
        rec = self.record
        return getattr(rec, name) if rec is not None and rec.recorded(name) else None


@dataclass
class Cost:
    """Tokens and seconds of the agent's model per episode and per success, the judge's apart, and dollars where a
    price is known."""

    episodes: int
    successes: int
    prompt: int
    completion: int
    model_s: float
    dollars: float | None
    judge_model: str | None = None
    judged: int = 0            # the episodes the judge's file has a line for: its per-episode figures' count
    judge_calls: int = 0
    judge_prompt: int = 0
    judge_completion: int = 0
    judge_dollars: float | None = None

    def per(self, value: float | None, n: int) -> float | None:
        return None if value is None or not n else value / n


@dataclass
class RunView:
    k: int
    prefix: str
    name: str
    report: RunReport
    tasks: list[TaskView]
    failures: dict[str, int]
    cost: Cost

    @cached_property
    def by_id(self) -> dict[str, TaskView]:
        return {t.task_id: t for t in self.tasks}


def _judge_steps(line: dict[str, Any] | None) -> dict[str, tuple[Any, str]]:
    """screenshot name -> (score, reasoning) from a judge line (WebJudge's per-screenshot record)."""
    if not line:
        return {}
    names = line.get("image_judge_screenshots") or []
    record = line.get("image_judge_record") or []
    if not isinstance(names, list) or not isinstance(record, list):
        return {}
    return {str(n): (r.get("Score"), str(r.get("Response") or "")) for n, r in zip(names, record)
            if isinstance(r, dict)}


def _usage(line: dict[str, Any]) -> tuple[int, int, int]:
    u = line.get("usage")
    if not isinstance(u, dict):
        return 0, 0, 0
    return tuple(v if isinstance(v, int) and not isinstance(v, bool) else 0   # type: ignore[return-value]
                 for v in (u.get("calls"), u.get("prompt_tokens"), u.get("completion_tokens")))


def _latency(record: EpisodeRecord | None) -> float:
    mc = record.model_calls if record else None
    v = mc.get("latency_s") if isinstance(mc, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def gather(report: RunReport, k: int, prices: Mapping[str, Price] | None, name: str = "",
           only: str | None = None) -> RunView:
    """A run's pages' contents: every task's record, folder, failure class, judge line and labels (`only`: that
    one task's alone; the run's figures then cover it alone)."""
    out = Path(report.out)
    log = read_results(out)
    latest = log.latest_records()
    attempts = log.attempts()
    judge_file = report.success.judge.file if report.success.judge is not None else None
    # the lines of the tasks' settling episodes only, as `report` counts them (verdicts.py)
    judged = Settled.read(out, log).current(read_judge_file(Path(judge_file))) \
        if judge_file and Path(judge_file).is_file() else {}
    labels = read_run_labels(out)
    taken: set[str] = set()
    tasks = []
    for tid, row in report.per_task.items():
        if only is not None and tid != only:
            continue
        rec = latest.get(tid)
        ep = read_episode(out / tid)
        failure = row.failure   # summarize() classified it (evaluation/failure.py), as `report` shows it
        who = [(a, labs[tid]) for a, labs in sorted(labels.annotators.items()) if tid in labs]
        if tid in labels.final:
            who.append(("final (reviewer)", labels.final[tid]))
        agreed = labels.consensus(tid)
        humans = VALUE_WORDS[agreed] if agreed in VALUE_WORDS else "disputed" if labels.values(tid) else "not labelled"
        view = TaskView(tid, slug(tid, taken), row, rec, ep, failure, judged.get(tid), who,
                        attempts=attempts.get(tid, 0), humans=humans)
        scores = _judge_steps(view.judge)
        n = max(len(ep.steps), len(ep.shots))
        for i in range(n):
            s = ep.steps[i] if i < len(ep.steps) else None
            shot = ep.shots[i].name if i < len(ep.shots) else ""
            sc = scores.get(shot, (None, ""))
            url, title = (s.url if s else ""), ""
            if i == n - 1 and shot and not (s and s.actions) and not url and ep.last_page is not None:
                url, title = ep.last_page.url, ep.last_page.title   # the final state: the page the episode ended on
            view.steps.append(StepView(i + 1, s.actions if s else (), s.thought if s else "", url, shot=shot,
                                       title=title if url else "", score=sc[0], reasoning=sc[1]))
        tasks.append(view)
    counts = report.success.counts or Counts()
    prompt = sum(_int(t.row.prompt_tokens) for t in tasks)
    completion = sum(_int(t.row.completion_tokens) for t in tasks)
    price = (prices or {}).get(report.model or "")
    cost = Cost(episodes=sum(1 for t in tasks if t.record is not None), successes=counts.success, prompt=prompt,
                completion=completion, model_s=round(sum(_latency(t.record) for t in tasks), 1),
                dollars=price.cost(prompt, completion) if price else None)
    if judged:
        in_run = [judged[t.task_id] for t in tasks if t.task_id in judged]
        calls, jp, jc = (sum(x) for x in zip(*(_usage(line) for line in in_run))) if in_run else (0, 0, 0)
        cost.judge_model = report.success.judge.model if report.success.judge else None
        cost.judged, cost.judge_calls, cost.judge_prompt, cost.judge_completion = len(in_run), calls, jp, jc
        jprice = (prices or {}).get(cost.judge_model or "")
        cost.judge_dollars = jprice.cost(jp, jc) if jprice else None
    failures = counted({t.task_id: t.failure for t in tasks})
    return RunView(k, f"r{k}", name or report.name, report, tasks, failures, cost)


# ------------------------------------------------------------------------------------------ formatting


def pct(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{100 * v:.{digits}f}%"


def num(v: Any, digits: int = 1) -> str:
    """A number as every report text writes it (`fmt_num`: 3, 6.2, 20,977); a flag as true/false, text as it is."""
    if isinstance(v, bool):
        return str(v).lower()
    if v is None or isinstance(v, (int, float)):
        return fmt_num(v, digits)
    return str(v)


def dollars(v: float | None) -> str:
    return "-" if v is None else (f"${v:,.4f}" if v < 1 else f"${v:,.2f}")


def when(v: Any) -> str:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(v))


def rate_rows(report: RunReport) -> list[tuple[str, str, Counts]]:
    """(group kind, label, counts): overall, each level, each site."""
    s = report.success
    if s.counts is None:
        return []
    return ([("overall", "overall", s.counts)] + [("level", k, c) for k, c in s.level_counts.items()]
            + [("site", k, c) for k, c in s.site_counts.items()])


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("om2w_tui.frontends.web", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.ChainableUndefined)
    env.filters.update(pct=pct, num=num, dollars=dollars, when=when, seconds=fmt_seconds, pp=fmt_pp,
                       signed=signed, kappa=fmt_kappa)
    env.globals.update(RULE_ALL=RULE_ALL, RULE_EXECUTABLE=RULE_EXECUTABLE, WORDS=WORDS, CLASSES=CLASSES,
                       VALUE_WORDS=VALUE_WORDS, rate_rows=rate_rows, Rate=Rate)
    return env


# ------------------------------------------------------------------------------------------ the build


def _pictures(runs: list[RunView], root: Path, link: bool, dest: Path, workers: int | None) -> None:
    """Thumbnails (and full images unless `link`) of every step's screenshot, one for each set of screenshots with
    the same bytes, in whichever run; each StepView gets its paths."""
    wanted: list[tuple[RunView, StepView, Path, Path]] = []   # the step, its screenshot, its pictures' stem
    for run in runs:
        for task in run.tasks:
            for i, step in enumerate(task.steps):
                if step.shot:
                    wanted.append((run, step, task.episode.shots[i], root / run.prefix / "s" / task.slug / f"{i}"))
    first = first_copies([src for _, _, src, _ in wanted])
    jobs: list[Job] = []
    job_of: dict[int, int] = {}
    for k, (_, _, src, stem) in enumerate(wanted):
        if first[k] == k:
            stem.parent.mkdir(parents=True, exist_ok=True)
            job_of[k] = len(jobs)
            jobs.append(Job(src, stem.with_name(stem.name + THUMB_SUFFIX), None if link else stem))
    made: list[Made] = make_all(jobs, workers)
    final_pages = Path(os.path.abspath(dest))
    for k, (run, step, src, _) in enumerate(wanted):
        job, m = jobs[job_of[first[k]]], made[job_of[first[k]]]
        # from the run's task pages (r<k>/t/) to the folder the pictures are in, maybe another task's or run's
        rel = Path(os.path.relpath(job.thumb.parent, root / run.prefix / "t")).as_posix() + "/"
        step.thumb = rel + m.thumb if m.thumb else ""
        if link:
            step.full = Path(os.path.relpath(os.path.abspath(src), final_pages / run.prefix / "t")).as_posix()
        else:
            step.full = rel + m.full if m.full else ""
            step.lossy = m.lossy


def build_site(dest: Path, reports: Sequence[RunReport], comparison: Comparison | None = None, *,
               link: bool = False, prices: Mapping[str, Price] | None = None, workers: int | None = None) -> Path:
    """Write the site of `reports` (and `comparison`, for several) to `dest`; -> dest. Raises SiteError (nothing
    written) where dest must not be written."""
    def fill(tmp: Path) -> None:
        names = unique_names(list(reports))
        runs = [gather(r, k + 1, prices, names[k]) for k, r in enumerate(reports)]
        _pictures(runs, tmp, link, Path(dest), workers)
        _render(tmp, runs, comparison, link, prices)

    _build(Path(dest), reports, fill)
    return Path(dest)


def build_task_page(dest: Path, report: RunReport, task_id: str, prices: Mapping[str, Price] | None = None) -> Path:
    """Write `task_id`'s page of the site alone to `dest` (its thumbnails made, its full screenshots linked to the
    run's files), the site's template with no links to pages it lacks; -> the page. Raises SiteError (nothing
    written) where dest must not be written or the report has no such task."""
    if task_id not in report.per_task:
        raise SiteError(f"{task_id}: not a task of {report.out} (yet: no folder and no record)")
    page: list[Path] = []

    def fill(tmp: Path) -> None:
        run = gather(report, 1, prices, only=task_id)
        _pictures([run], tmp, True, Path(dest), None)
        env = environment()
        _assets(env, tmp)
        task = run.tasks[0]
        (tmp / run.prefix / "t").mkdir(parents=True)
        _write(tmp / run.prefix / "t" / f"{task.slug}.html",
               env.get_template("task.html").render(root="../../", run=run, task=task, runs=[run], single=True,
                                                    paired={}, link=True, priced=bool(prices)))
        page.append(Path(dest) / run.prefix / "t" / f"{task.slug}.html")

    _build(Path(dest), [report], fill)
    return page[0]


def _build(dest: Path, reports: Sequence[RunReport], fill: Callable[[Path], None]) -> None:
    """`fill(folder)` writes the pages into a folder beside dest, renamed into dest's place when it is done."""
    check_destination(dest, [Path(r.out) for r in reports])
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        fill(tmp)
        write_new(tmp / MARKER, json.dumps({"format": FORMAT, "runs": [r.out for r in reports],
                                            "built_at": time.time()}) + "\n")
        _swap(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap(tmp: Path, dest: Path) -> None:
    """The new site in dest's place: an old site of ours is moved aside first and removed after."""
    old = None
    if dest.is_dir():
        if any(dest.iterdir()):
            old = dest.parent / f".{dest.name}.old-{os.getpid()}"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(dest, old)
        else:
            dest.rmdir()
    os.rename(tmp, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _render(root: Path, runs: list[RunView], comparison: Comparison | None, link: bool,
            prices: Mapping[str, Price] | None) -> None:
    env = environment()
    _assets(env, root)
    shared = _shared_tasks(runs) if len(runs) > 1 else []
    common: dict[str, Any] = {"runs": runs, "comparison": comparison, "link": link, "priced": bool(prices),
                              "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "paired": {tid: runs[0].by_id[tid].slug for tid in shared}}
    _write(root / "index.html", env.get_template("index.html").render(root="", **common))
    # each task every run has: its runs' pages and the first step where they go different ways
    pairs = [(views, first_divergence(views)) for views in ([r.by_id[tid] for r in runs] for tid in shared)]
    if comparison is not None and len(runs) > 1:
        only = _only_solved(runs, comparison)
        _write(root / "compare.html", env.get_template("compare.html").render(root="", only=only, pairs=pairs,
                                                                               **common))
    if shared:
        (root / "pair").mkdir()
        pair_page = env.get_template("pair.html")
        for views, first in pairs:
            rows = max(len(v.steps) for v in views)
            _write(root / "pair" / f"{views[0].slug}.html",
                   pair_page.render(root="../", views=views, rows=rows, first=first, **common))
    task_page = env.get_template("task.html")
    for run in runs:
        (root / run.prefix / "t").mkdir(parents=True, exist_ok=True)
        _write(root / run.prefix / "tasks.html",
               env.get_template("tasks.html").render(root="../", run=run, **common))
        for i, task in enumerate(run.tasks):
            prev = run.tasks[i - 1] if i > 0 else None
            nxt = run.tasks[i + 1] if i + 1 < len(run.tasks) else None
            _write(root / run.prefix / "t" / f"{task.slug}.html",
                   task_page.render(root="../../", run=run, task=task, prev=prev, next=nxt, **common))


def _assets(env: jinja2.Environment, root: Path) -> None:
    assets = root / "assets"
    assets.mkdir()
    for name in ASSETS:
        write_new(assets / name, env.loader.get_source(env, name)[0])   # type: ignore[union-attr]


def _shared_tasks(runs: list[RunView]) -> list[str]:
    """The tasks every run has, in the first run's order."""
    if not runs:
        return []
    ids = [set(r.by_id) for r in runs[1:]]
    return [t.task_id for t in runs[0].tasks if all(t.task_id in i for i in ids)]


def first_divergence(views: Sequence[TaskView]) -> int | None:
    """The number of the first step where the runs' trajectories of one task go different ways (their action lines
    differ, or one has ended); None where they are the same throughout."""
    longest = max((len(v.steps) for v in views), default=0)
    for i in range(longest):
        acts = {v.steps[i].actions if i < len(v.steps) else None for v in views}
        if len(acts) > 1:
            return i + 1
    return None


def _only_solved(runs: list[RunView], comparison: Comparison) -> list[dict[str, Any]]:
    """Each paired test's tasks only one side solved, with links to each side's page."""
    names = list(comparison.runs)
    out = []
    for t in comparison.tests:
        a, b = names.index(t.a) if t.a in names else -1, names.index(t.b) if t.b in names else -1
        if a < 0 or b < 0:
            continue
        out.append({"test": t, "a": runs[a], "b": runs[b]})
    return out


def _write(path: Path, text: str) -> None:
    write_new(path, text)


__all__ = ["MARKER", "SiteError", "build_site", "build_task_page", "check_destination", "first_divergence", "gather",
           "slug"]
