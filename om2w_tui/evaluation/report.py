"""Summaries of finished runs, one or several side by side: `om2w-tui report OUT [OUT ...]`.

The computation is plain functions returning the typed values of `evaluation/summary.py`, for the command line and
for a screen of the console: `summarize(out) -> RunReport` for one run folder (several side by side:
`evaluation/compare.py`). Their text (Markdown, CSV, JSON, and the sections a rich table is drawn from) is
`evaluation/report_text.py`; the command is `cli/report.py`; the rich table is `frontends/console/report_table.py`
and the console's screen `frontends/console/screens/report.py`: the engine imports no front end.

A run folder is anything in the Online-Mind2Web v1 (or v2) layout. With om2w-tui's `results.jsonl` and `run.json`
the summary has statuses, durations, tokens and errors; a folder written by another harness has only its task
folders (steps = the length of the action history). Success comes from a judge output file in the folder
(`*_auto_eval_results.json`: ours, the official evaluator's, or its copy `official_...` that `judge --official`
keeps; the newest, or the one given), else from the offline suite's `correct`; every other judge file in the folder
is summed up beside it, so our judge's rate and the official one's are read side by side. A file's mode and model
come from its lines (ours) or its name (the official evaluator's lines carry neither). Like the official
evaluator, a success rate divides by every task of the run, judged or not.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.conformance import read_run
from om2w_tui.benchmarks.episode_folder import read_episode
from om2w_tui.benchmarks.site_keys import site_name
from om2w_tui.benchmarks.tasks import LEVELS
from om2w_tui.engine.measured import changes_said
from om2w_tui.engine.results import STATUSES, EpisodeRecord, read_manifest, read_results
from om2w_tui.evaluation.agreement import agreement, judge_outcomes
from om2w_tui.evaluation.errors import UNKNOWN, error_groups, model_report
from om2w_tui.evaluation.failure import classify, max_steps_of
from om2w_tui.evaluation.judge_files import parse_output_name, read_judged
from om2w_tui.evaluation.judge_replies import compare_readings
from om2w_tui.evaluation.labels import HumanLabelFile, RunLabels, read_run_labels
from om2w_tui.evaluation.measure import KIND_OF_SOURCE, Measure
from om2w_tui.evaluation.outcomes import (
    RULE_ALL,
    RULES,
    count,
    count_by,
    judge_file_outcomes,
    label_outcome,
    run_outcome,
)
from om2w_tui.evaluation.summary import (
    Agreement,
    Conformance,
    JudgeInfo,
    Measured,
    Rate,
    RunReport,
    Stats,
    Success,
    TaskRow,
)
from om2w_tui.evaluation.task_outcome import Outcome
from om2w_tui.evaluation.verdicts import Settled, verdicts_of
from om2w_tui.json_input import InputError, decode, read_bytes, text_of
from om2w_tui.run_folder import RunFolder, shard_named

JUDGE_GLOB = "*_auto_eval_results.json"
METRICS = ("steps", "duration_s", "prompt_tokens", "completion_tokens")

# ------------------------------------------------------------------------------------------ small pieces


def quantile(values: list[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between the closest ranks (numpy's default); None when empty."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stats(values: Iterable[Any]) -> Stats:
    """Count, median, p90 and total of the numbers among `values` (anything else is skipped)."""
    xs = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return Stats(n=len(xs), median=quantile(xs, 0.5), p90=quantile(xs, 0.9), total=sum(xs) if xs else None)


def rate(successes: int, tasks: int) -> Rate:
    return Rate.of(successes, tasks)


def site_of(website: str | None) -> str:
    if not website:
        return UNKNOWN
    return site_name(website) or UNKNOWN   # the console's Sites panel names sites the same way


def shards_missing(manifests: list[Path]) -> list[str]:
    """A warning for a run split into shards some of which wrote no manifest in its folder (not started, or run in
    another folder): their tasks are missing from what is read. None when a whole run's manifest (run.json) or every
    shard of one split is there."""
    covered: dict[int, set[int]] = {}
    for p in manifests:
        shard = shard_named(p.name, "run", ".json")
        if shard is None:
            return []   # a whole run's: it took every task
        covered.setdefault(shard.n, set()).update(range(shard.lo, shard.hi))
    if not covered or any(len(ks) == n for n, ks in covered.items()):
        return []
    n, ks = max(covered.items(), key=lambda nk: len(nk[1]) / nk[0])
    missing = [str(k) for k in range(n) if k not in ks]
    return [f"{manifests[0].parent}: the run was split into {n} shards and shard{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} of {n} wrote no manifest here (not started, or run in another folder): "
            f"{'their' if len(missing) > 1 else 'its'} tasks are missing from this report"]


def task_meta(manifest: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """task_id -> {level, site} from the run's task file, when run.json names one that is still there. The offline
    suite's sites are named by their template ({shop} -> shop), not by this run's port."""
    path = ((manifest or {}).get("task_file") or {}).get("path")
    return task_file_meta(Path(path)) if path else {}


def task_file_meta(path: Path) -> dict[str, dict[str, Any]]:
    """task_id -> {level, site} from a task file (JSON or JSON lines); {} when it cannot be read."""
    if not Path(path).is_file():
        return {}
    rows: list[Any] = []
    text = None
    try:
        text = text_of(read_bytes(path), str(path))
        data = decode(text, str(path))
        rows = data if isinstance(data, list) else (data.get("tasks") or [] if isinstance(data, dict) else [])
    except InputError:
        for line in (text or "").splitlines():
            try:
                rows.append(decode(line, str(path)))
            except InputError:
                continue
    meta: dict[str, dict[str, Any]] = {}
    for row in rows:
        if not isinstance(row, dict):
            continue
        tid = row.get("task_id", row.get("id"))
        if tid is None:
            continue
        website = row.get("website", row.get("web"))
        meta[str(tid)] = {"level": row.get("level", row.get("web_name")), "site": site_of(website)}
    return meta


def find_judge_file(out: Path) -> Path | None:
    """The newest judge output file in the run's folder: whatever is there by such a name (its own time, a link's
    not its target's), so that one that is no regular file is named by its reader, never passed over in silence."""
    files = list(Path(out).glob(JUDGE_GLOB))
    return max(files, key=lambda p: (p.lstat().st_mtime, p.name)) if files else None


def read_judge_file(path: Path, warnings: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """A judge file's lines; a line skipped is said in `warnings` (file and line). Raises InputError for a file
    that is a symlink, a FIFO or a device."""
    return read_judged(path, None if warnings is None else warnings.append)


def judge_file_info(path: Path, judged: dict[str, dict[str, Any]], task_ids: Iterable[str]) -> JudgeInfo:
    """Whose judge file it is, its mode, model and threshold (from its lines, else its name), and its rate over
    the run's tasks."""
    tasks = set(task_ids)
    any_rec = next(iter(judged.values()), {})
    named = parse_output_name(path.name)
    ours = "judge_model" in any_rec
    in_run = [r for t, r in judged.items() if t in tasks]
    return JudgeInfo(file=str(path), mode=any_rec.get("mode") or (named.mode if named else None),
                     model=any_rec.get("judge_model") or (named.model if named else None),
                     threshold=any_rec.get("score_threshold", named.threshold if named else None),
                     by="om2w-tui" if ours else ("the official evaluator" if named and judged else None),
                     judged=len(in_run),
                     rate=rate(sum(1 for r in in_run if r.get("predicted_label") == 1), len(tasks)),
                     readings=compare_readings(in_run, any_rec.get("score_threshold", named.threshold if named
                                                                    else None)))


def _label(manifest: dict[str, Any] | None, out: Path) -> str:
    cfg = (manifest or {}).get("config") or {}
    if cfg.get("arm") or cfg.get("model"):
        return f"{cfg.get('arm') or '?'}/{cfg.get('model') or '?'}"
    return Path(out).name


# ------------------------------------------------------------------------------------------ one run


def _group_order(key: str) -> Callable[[str, int], Any]:
    """Levels easy to hard; sites by task count, most first; then by name."""
    if key == "level":
        return lambda g, n: (level_order(g), g)
    return lambda g, n: (-n, g)


def measure(source: str, name: str, outcomes: Mapping[str, Outcome | None], per_task: Mapping[str, TaskRow],
            judge: JudgeInfo | None = None) -> Measured:
    """One source's counts overall, per level and per site (and which measure it is, its outcomes by task)."""
    kind = KIND_OF_SOURCE[source]
    which = Measure(kind, judge.mode, judge.model) if kind == "judge" and judge is not None else Measure(kind)
    return Measured(source, name, count(outcomes.values()),
                    count_by(outcomes, lambda t: per_task[t].level, _group_order("level")),
                    count_by(outcomes, lambda t: per_task[t].site, _group_order("site")),
                    measure=which, judge=judge if kind == "judge" else None, outcomes=dict(outcomes))


def _judge_name(j: JudgeInfo) -> str:
    return f"judge {j.mode or '?'}/{j.model or '?'}" + (f" ({j.by})" if j.by == "the official evaluator" else "")


def _labels_name(labels: RunLabels) -> str:
    names = labels.names
    who = ", ".join(names) if names else "none"
    return f"human labels ({who}{'; reviewed' if labels.final else ''})"


def summarize(out: str | Path, judge_file: str | Path | None = None) -> RunReport:
    """One run's summary (`RunReport.to_json()` is its JSON). Raises FileNotFoundError for a judge file that is not
    there and `labels.LabelFileError` for a labels file that cannot be read."""
    out = Path(out)
    warnings: list[str] = []
    # a run split into shards has one manifest per shard (run.shard-K-of-N.json); any of them names the task file
    found = RunFolder(out).manifests()
    manifest = None
    if found:
        manifest, said = read_manifest(found[0])
        warnings += said
    if changed := list(dict.fromkeys(c for p in found for c in changes_said(
            manifest if p == found[0] else read_manifest(p)[0]))):
        warnings.append(f"{found[0].name}: the run went on under other settings than it began with "
                        f"(--resume-changed: {'; '.join(changed)}); its episodes mix two measurements")
    warnings += shards_missing(found)
    log = read_results(out)
    warnings += log.warnings
    latest = log.latest_records()
    records = log.episode_records()
    read = read_run(out)
    folders = set(read.task_dirs)
    task_ids = sorted(set(latest) | folders)
    meta = task_meta(manifest)
    cfg = (manifest or {}).get("config") or {}
    settled = Settled.read(out, log)
    keeps_records = settled.keeps_records   # a run's folder: a task without a record is still to run

    # success: human labels, a judge file, the offline suite's `correct` (every one there is, the first decides)
    labels = read_run_labels(out)
    jpath = Path(judge_file) if judge_file else find_judge_file(out)
    judged: dict[str, dict[str, Any]] = {}
    judge_info: JudgeInfo | None = None
    if jpath is not None:
        if not jpath.exists() and not jpath.is_symlink():
            raise FileNotFoundError(f"{jpath}: no such judge file")
        if jpath.is_dir() and not jpath.is_symlink():   # a FIFO, a device, a link: its reader names them
            raise FileNotFoundError(f"{jpath}: not a file but a folder; give a judge's output file")
        lines = read_judge_file(jpath, warnings)
        stray = sorted(set(lines) - set(task_ids))
        if stray:
            warnings.append(f"{jpath.name}: {len(stray)} judged task(s) are not in this run (e.g. {stray[0]})")
        judged = _settled_verdicts(jpath, lines, settled, task_ids, warnings)
        judge_info = judge_file_info(jpath, judged, task_ids)
    has_correct = any(r.correct is not None for r in latest.values())
    sources = [k for k, there in (("labels", bool(labels.labelled() & set(task_ids))), ("judge", jpath is not None),
                                  ("correct", has_correct)) if there]
    verdicts = verdicts_of(judged)
    outcome_of: dict[str, dict[str, Outcome | None]] = {
        "labels": {t: label_outcome(labels.consensus(t)) for t in task_ids},
        "judge": judge_file_outcomes(settled, judged, task_ids),   # the console's header counts by it too
        "correct": {t: run_outcome(latest.get(t), latest[t].correct if t in latest else None, keeps_records)
                    for t in task_ids},
    }
    primary = sources[0] if sources else None

    per_task: dict[str, TaskRow] = {}
    for tid in task_ids:
        rec = latest.get(tid)
        ep = read.episodes.get(tid)
        m = meta.get(tid, {})
        level = (rec.level if rec else None) or m.get("level")
        site = m.get("site") or site_of(rec.website if rec else None)
        outcome = outcome_of[primary][tid] if primary else None
        steps = rec.steps if rec and rec.recorded("steps") else (ep.steps if ep else None)
        per_task[tid] = TaskRow(
            level=str(level) if level is not None else UNKNOWN, site=site or UNKNOWN,
            status=(rec.status if rec else "") or ("unrecorded" if latest else "folder"),
            success=None if outcome is None else outcome == "success", steps=steps,
            duration_s=_recorded(rec, "duration_s"), prompt_tokens=_recorded(rec, "prompt_tokens"),
            completion_tokens=_recorded(rec, "completion_tokens"), has_folder=tid in folders, outcome=outcome,
        )

    other_lines = {f: _settled_verdicts(f, read_judge_file(f), settled, task_ids, warnings)
                   for f in sorted(out.glob(JUDGE_GLOB))
                   if f.is_file() and (jpath is None or f.resolve() != jpath.resolve())}
    others = tuple(judge_file_info(f, lines, task_ids) for f, lines in other_lines.items())
    names = {"labels": _labels_name(labels), "judge": _judge_name(judge_info) if judge_info else "judge",
             "correct": "reference answers"}
    measures = [measure(k, names[k], outcome_of[k], per_task, judge_info) for k in sources]
    for other, j in zip(other_lines.values(), others):
        outcomes = {t: run_outcome(latest.get(t), v, keeps_records) for t, v in verdicts_of(other).items()
                    if t in per_task}
        measures.append(measure("judge", f"{_judge_name(j)}, {Path(j.file).name}",
                                {t: outcomes.get(t) for t in task_ids}, per_task, j))
    success = Success(source=primary, judge=judge_info, other_judges=others)
    if primary:
        m0 = measures[0]
        success = replace(success, overall=m0.counts.overall, by_level={k: v.overall for k, v in m0.by_level.items()},
                          by_site={k: v.overall for k, v in m0.by_site.items()}, counts=m0.counts,
                          level_counts=m0.by_level, site_counts=m0.by_site)
    agree = _agreements(labels, verdicts, outcome_of["labels"], judge_info, per_task) if judge_info else ()
    _classify(out, per_task, settled, folders, measures)

    status = Counter(t.status for t in per_task.values())
    status_counts = {s: status.get(s, 0) for s in STATUSES}
    status_counts.update({k: v for k, v in status.items() if k not in STATUSES})

    return RunReport(
        out=str(out), name=_label(manifest, out), arm=cfg.get("arm"), model=cfg.get("model"),
        bench=cfg.get("bench"), task_file=(manifest or {}).get("task_file"),
        has_results=bool(records), has_manifest=manifest is not None,
        tasks=len(per_task), attempts=len(records),
        success=success, status=status_counts,
        # one set of episodes for every metric: each task's that counts (a pending task's folder, cut short, is none)
        metrics={k: stats(t.metric(k) for tid, t in per_task.items() if not settled.pending(tid)) for k in METRICS},
        errors=error_groups(records),
        conformance=Conformance(problems=len(read.problems), examples=tuple(read.problems[:5])),
        warnings=tuple(warnings),
        per_task=per_task,
        measures=tuple(measures),
        agreement=agree,
        annotators=_annotator_agreements(labels, task_ids, per_task),
        labelled=sum(1 for t in task_ids if labels.consensus(t) is not None),   # final labels: no dispute left
        disputed=tuple(labels.unresolved(task_ids)),
        model_health=model_report(records, latest),
        measure=measures[0].measure if measures else None,
    )


def _settled_verdicts(path: Path, lines: dict[str, dict[str, Any]], settled: Settled, task_ids: Iterable[str],
                      warnings: list[str]) -> dict[str, dict[str, Any]]:
    """A judge file's lines that judged the run's tasks as it settled them (verdicts.py); those of an episode that is
    no longer its task's settling one (run again since, or stopped under) are left out, and said."""
    current = settled.current(lines)
    if stale := sorted(t for t in set(task_ids) & set(lines) if t not in current):
        warnings.append(f"{path.name}: {len(stale)} verdict(s) not counted: of an episode that is not its task's "
                        f"settling one (e.g. {stale[0]}: run again since, or not settled); `om2w-tui judge` judges "
                        f"the settled ones again")
    return current


def _recorded(rec: EpisodeRecord | None, name: str) -> Any:
    """A number of the record as its writer recorded it (None: no record, or one without it)."""
    return getattr(rec, name) if rec is not None and rec.recorded(name) else None


def _classify(out: Path, per_task: dict[str, TaskRow], settled: Settled, folders: set[str],
              measures: list[Measured]) -> None:
    """Each task's failure class (evaluation/failure.py's rules) as a failure and while not judged, in place; a task
    every measure calls a success is not read, nor one still to run (`task_outcome.still_to_run`: no class)."""
    budget = max_steps_of(out)
    for tid, row in per_task.items():
        if settled.pending(tid) or (measures and all(m.outcomes.get(tid) == "success" for m in measures)):
            continue
        record = settled.latest.get(tid)
        ep = read_episode(out / tid) if tid in folders else None
        folder = ep if ep is not None and ep.layout is not None else None
        per_task[tid] = replace(row, failed_as=classify(record, folder, "failure", budget),
                                pending_as=classify(record, folder, None, budget))


def _agreements(labels: RunLabels, verdicts: Mapping[str, bool], humans: Mapping[str, Outcome | None],
                judge: JudgeInfo, per_task: Mapping[str, TaskRow]) -> tuple[Agreement, ...]:
    """The judge's verdicts against the humans' consensus, under both rules (none without labels)."""
    if not any(v is not None for v in humans.values()):
        return ()
    a = judge_outcomes(verdicts)
    return tuple(agreement(a, humans, rule, _judge_name(judge), "humans", lambda t: per_task[t].level,
                           lambda t: per_task[t].site, LEVEL_NAMES) for rule in RULES)


def _annotator_agreements(labels: RunLabels, task_ids: list[str], per_task: Mapping[str, TaskRow]) \
        -> tuple[Agreement, ...]:
    """Each pair of annotators against each other (over every task both labelled, all three labels kept apart
    under the executable rule)."""
    names = labels.names
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            oa = {t: label_outcome(lab.value) for t, lab in labels.annotators[a].items() if t in per_task}
            ob = {t: label_outcome(lab.value) for t, lab in labels.annotators[b].items() if t in per_task}
            out.append(agreement(oa, ob, RULE_ALL, a, b, lambda t: per_task[t].level, lambda t: per_task[t].site,
                                 LEVEL_NAMES))
    return tuple(out)


def summarize_labels(file: HumanLabelFile, agent: str, meta: Mapping[str, dict[str, Any]] | None = None,
                     judged: Path | None = None) -> RunReport:
    """One agent's column of an official human_label.json as a run's summary (no run folder needed): its counts
    under both rules, per level and per site from `meta` (a task file's, by task id), and with `judged` (a judge's
    output file, the official evaluator's auto-eval results) the judge's agreement with these labels."""
    meta = meta or {}
    labels = file.labels[agent]
    per_task: dict[str, TaskRow] = {}
    outcomes: dict[str, Outcome | None] = {}
    for tid in file.tasks:
        m = meta.get(tid, {})
        outcomes[tid] = label_outcome(labels.get(tid))
        per_task[tid] = TaskRow(level=str(m.get("level") or UNKNOWN), site=str(m.get("site") or UNKNOWN),
                                status="labelled" if tid in labels else "unlabelled",
                                success=None if outcomes[tid] is None else outcomes[tid] == "success", steps=None,
                                duration_s=None, prompt_tokens=None, completion_tokens=None, has_folder=False,
                                outcome=outcomes[tid])
    m0 = measure("labels", f"human labels, {agent}", outcomes, per_task)
    judge_info: JudgeInfo | None = None
    agree: tuple[Agreement, ...] = ()
    warnings: list[str] = []
    if judged is not None:
        lines = read_judge_file(judged)
        judge_info = judge_file_info(judged, lines, list(file.tasks))
        stray = [t for t in lines if t not in file.tasks]
        if stray:
            warnings.append(f"{judged.name}: {len(stray)} judged task(s) are not in {file.path.name} "
                            f"(e.g. {stray[0]})")
        agree = tuple(agreement(judge_outcomes(verdicts_of(lines)), outcomes, rule, _judge_name(judge_info),
                                "humans", lambda t: per_task[t].level if t in per_task else UNKNOWN,
                                lambda t: per_task[t].site if t in per_task else UNKNOWN, LEVEL_NAMES)
                      for rule in RULES)
    success = Success(source="labels", judge=judge_info, overall=m0.counts.overall,
                      by_level={k: v.overall for k, v in m0.by_level.items()},
                      by_site={k: v.overall for k, v in m0.by_site.items()}, counts=m0.counts,
                      level_counts=m0.by_level, site_counts=m0.by_site)
    return RunReport(
        out=str(file.path), name=agent, arm=None, model=None, bench=None, task_file=None, has_results=False,
        has_manifest=False, tasks=len(per_task), attempts=0, success=success, status={},
        metrics={k: stats([]) for k in METRICS}, errors=(), conformance=Conformance(0, ()),
        warnings=tuple(warnings), per_task=per_task, measures=(m0,), agreement=agree, labelled=len(labels),
        kind="labels", measure=m0.measure)


_LEVELS = {name: i for i, name in enumerate(LEVELS)}
LEVEL_NAMES = LEVELS


def level_order(level: str) -> int:
    """Where a level goes in a table: easy, medium, hard, then any other (a WebVoyager site's name)."""
    return _LEVELS.get(level.lower(), 3) if isinstance(level, str) else 3
