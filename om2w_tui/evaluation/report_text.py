"""The text of run reports: Markdown, CSV and JSON (`om2w-tui report --format md|csv|json`), the (title, header,
rows) sections every format and the rich table (`frontends/console/report_table.py`) are drawn from, a run's heading
and notes, and the short lines the console's report screen shows (`source_words`, `rules_lines`, `agreement_words`).
The numbers are `evaluation/report.py`'s typed values (`evaluation/summary.py`), written in `text_formats.py`'s
formats; nothing here computes or reads a folder."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from om2w_tui.evaluation.campaign_summary import CampaignView
from om2w_tui.evaluation.compare import unique_names
from om2w_tui.evaluation.failure import WORDS
from om2w_tui.evaluation.outcomes import RULE_ALL, RULE_EXECUTABLE
from om2w_tui.evaluation.stats import PairedDifference
from om2w_tui.evaluation.summary import (
    Agreement,
    CompareRow,
    Comparison,
    Counts,
    JudgeInfo,
    Measured,
    ModelReport,
    PairedTest,
    Pooled,
    Readings,
    Repeats,
    RunReport,
)
from om2w_tui.evaluation.text_formats import (
    RULE_HEADERS,
    Section,
    cell,
    fmt_delta,
    fmt_kappa,
    fmt_num,
    fmt_p,
    fmt_pp,
    fmt_rate,
    fmt_seconds,
    md_table,
    share,
    signed,
)
from om2w_tui.protocol.model import kind_counted
from om2w_tui.words import plural

RULES_NOTE = ("rates: over all = success / every task with an outcome (not executable counted as failure); "
              "executable only = not executable left out; [low, high] = 95% Wilson interval; pending = no "
              "outcome yet (running, not judged, not labelled), in no rate")


def _judge_words(j: JudgeInfo) -> str:
    by = f"by {j.by}, " if j.by else ""
    return f"{by}{j.mode or '?'}, {j.model or '?'}"


def readings_line(j: JudgeInfo) -> str:
    """How the judge file's replies read the other way ("" when they all read the same)."""
    r: Readings | None = j.readings
    if r is None or not (r.verdicts or r.scores):
        return ""
    used = r.parsing or "official"
    other = "lenient" if used == "official" else "official"
    head = f"{Path(j.file).name}: replies read the {used} way"
    if not r.verdicts_differ and not r.scores_differ:   # a mode without scores (webvoyager) says none
        return f"{head}; the {other} reading agrees on all " + " and ".join(
            f"{n} {what}" for n, what in ((r.verdicts, "verdicts"), (r.scores, "scores")) if n)
    tasks = f" ({', '.join(r.verdict_tasks[:5])}{' ...' if len(r.verdict_tasks) > 5 else ''})" \
        if r.verdict_tasks else ""
    parts = [f"{r.verdicts_differ} of {r.verdicts} verdicts{tasks}"] if r.verdicts else []
    parts += [f"{r.scores_differ} of {r.scores} screenshot scores ({r.scores_cross} across the threshold)"] \
        if r.scores else []
    return f"{head}; the {other} reading differs on " + " and ".join(parts)


def _source_line(s: RunReport) -> str:
    succ = s.success
    if succ.source == "judge" and succ.judge is not None:
        j = succ.judge
        return (f"success from the judge file {Path(j.file).name} ({_judge_words(j)}; {j.judged} of "
                f"{s.tasks} tasks judged)")
    if succ.source == "correct":
        return "success from the offline suite's reference answers (`correct`)"
    if succ.source == "labels":
        judged = "" if succ.judge is None else (f"; judged in {Path(succ.judge.file).name} ({_judge_words(succ.judge)}"
                                                f", {succ.judge.judged} of {s.tasks} tasks)")
        return f"success from the human labels ({s.labelled} of {s.tasks} tasks with a final label{judged})"
    return ("no success measure: no human labels, no judge file in the folder (run `om2w-tui judge` or "
            "`om2w-tui label`) and no `correct` field")


def source_words(s: RunReport) -> str:
    """`_source_line` in a few words, for the console's report screen: the measure success is read by and how much
    of the run it covers."""
    succ = s.success
    if succ.source == "judge" and succ.judge is not None:
        j = succ.judge
        return f"measure: judge {j.mode or '?'}/{j.model or '?'}, {j.judged} of {s.tasks} judged"
    if succ.source == "correct":
        return "measure: reference answers"
    if succ.source == "labels":
        disputed = f", {len(s.disputed)} disputed" if s.disputed else ""
        return f"measure: human labels (final), {s.labelled} of {s.tasks} labelled{disputed}"
    return "no success measure: run `om2w-tui judge` or `om2w-tui label`"


def pending(s: RunReport, total: int | None) -> int:
    """Tasks with no outcome yet: those of the folder without one, and of a live run of `total` tasks, those still
    queued (no record or folder yet, so not among the folder's tasks)."""
    c = s.success.counts
    return (c.pending if c is not None else 0) + max(0, (total or 0) - s.tasks)


def rules_lines(s: RunReport, total: int | None = None) -> list[tuple[str, str, str]]:
    """(label, value, style) lines of the success measure under both rules, and what is pending."""
    c = s.success.counts
    if c is None:
        return [("overall", "-", "bold")]
    lines = [("over all", fmt_rate(c.overall), "bold"), ("executable", fmt_rate(c.executable), "")]
    waiting = pending(s, total)
    extra = [f"{c.not_executable} not executable"] if c.not_executable else []
    extra += [f"{waiting} pending (queued, running or no outcome yet)"] if waiting else []
    if extra:
        lines.append(("", " · ".join(extra), "dim"))
    return lines


def agreement_words(s: RunReport) -> str:
    """'judge vs humans: 86.0% agree, kappa 0.712, 4 disagree' under the first rule ('' with nothing to compare)."""
    if not s.agreement:
        return ""
    a = s.agreement[0]
    agree = a.confusion.agreement
    pct = "-" if agree.rate is None else f"{100 * agree.rate:.1f}%"
    return (f"judge vs humans: {pct} agree ({a.confusion.n} tasks), kappa {fmt_kappa(a.kappa)}, "
            f"{len(a.disagreements)} disagree")


def counts_row(group: str, c: Counts) -> list[str]:
    return [group, fmt_rate(c.overall), fmt_rate(c.executable), str(c.not_executable), str(c.pending)]


COUNTS_HEADER = ["group", RULE_HEADERS[RULE_ALL], RULE_HEADERS[RULE_EXECUTABLE], "not executable", "pending"]


def measure_sections(m: Measured, site_limit: int | None = None) -> list[Section]:
    """One source's success under both rules: overall and per level, then per site."""
    rows = [counts_row("overall", m.counts)] + [counts_row(f"level {k}", v) for k, v in m.by_level.items()]
    out: list[Section] = [(f"success: {m.name}", COUNTS_HEADER, rows)]
    sites = list(m.by_site.items())
    shown = sites if site_limit is None else sites[:site_limit]
    site_rows = [counts_row(k, v) for k, v in shown]
    if len(shown) < len(sites):
        site_rows.append([f"... {len(sites) - len(shown)} more sites", "", "", "", ""])
    out.append((f"success by site: {m.name}", ["site", *COUNTS_HEADER[1:]], site_rows))
    return out


def agreement_sections(rows: tuple[Agreement, ...], title_: str, disagreements: int | None = 50) -> list[Section]:
    """Rater A against rater B: one line per rule, the confusion of the first rule, per level, the disagreements."""
    if not rows:
        return []
    a, b = rows[0].a, rows[0].b
    out: list[Section] = [(title_, ["rule", "tasks", "agreement", "Cohen's kappa", f"{a} rate", f"{b} rate",
                                    "gap"],
                           [[RULE_HEADERS.get(r.rule, r.rule), str(r.confusion.n), fmt_rate(r.confusion.agreement),
                             fmt_kappa(r.kappa), fmt_rate(r.a_rate), fmt_rate(r.b_rate),
                             "-" if r.gap_pp is None else f"{signed(r.gap_pp)} pp"] for r in rows])]
    first = rows[0]
    c = first.confusion
    out.append((f"confusion ({RULE_HEADERS.get(first.rule, first.rule)}): rows {a}, columns {b}",
                ["", f"{b}: success", f"{b}: failure"],
                [[f"{a}: success", str(c.both), str(c.only_a)], [f"{a}: failure", str(c.only_b), str(c.neither)]]))
    if first.by_level:
        out.append((f"agreement per level ({RULE_HEADERS.get(first.rule, first.rule)})",
                    ["level", "tasks", "agreement", "Cohen's kappa", "both success", f"only {a}", f"only {b}",
                     "both failure"],
                    [[k, str(v.n), fmt_rate(v.agreement), fmt_kappa(first.kappa_by_level.get(k)), str(v.both),
                      str(v.only_a), str(v.only_b), str(v.neither)] for k, v in first.by_level.items()]))
    if first.disagreements and disagreements:
        shown = first.disagreements[:disagreements]
        rows_ = [[d.task_id, d.a, d.b, d.level, d.site] for d in shown]
        if len(shown) < len(first.disagreements):
            rows_.append([f"... {len(first.disagreements) - len(shown)} more", "", "", "", ""])
        out.append((f"where they disagree ({len(first.disagreements)} tasks; `om2w-tui label OUT --filter "
                    f"judge` opens them)", ["task", a, b, "level", "site"], rows_))
    return out


def sections(summary: RunReport, site_limit: int | None = None) -> list[Section]:
    """(title, header, rows) tables of one run, shared by every text format."""
    s = summary
    out: list[Section] = []
    for m in s.measures:
        out += measure_sections(m, site_limit)
    out += agreement_sections(s.agreement, "the judge against the humans")
    if s.annotators:
        out.append(("annotators against each other", ["annotators", "tasks", "agreement", "Cohen's kappa"],
                    [[f"{r.a} / {r.b}", str(r.confusion.n), fmt_rate(r.confusion.agreement), fmt_kappa(r.kappa)]
                     for r in s.annotators]))
    if s.status and any(s.status.values()):
        out.append(("episodes by status", ["status", "tasks"], [[k, str(v)] for k, v in s.status.items() if v]))
    if s.failures:
        out.append(failure_section(s))
    metrics = [[k, fmt_num(m.median), fmt_num(m.p90), fmt_num(m.total)] for k, m in s.metrics.items() if m.n]
    if metrics:
        out.append(("per episode", ["metric", "median", "p90", "total"], metrics))
    if s.model_health is not None and s.model_health.calls:
        calls = s.model_health.calls
        total = sum(calls.values())
        out.append(("model calls (every attempt)", ["kind", "calls", "share"],
                    [[k, str(n), f"{n / total:.1%}"] for k, n in calls.items()]))
    if s.errors:
        out.append(("errors (every attempt, grouped)", ["count", "status", "kind", "message", "tasks"],
                    [[str(g.count), g.status, g.kind, g.message,
                      ", ".join(g.tasks) + (" ..." if g.task_count > len(g.tasks) else "")]
                     for g in s.errors]))
    return out


def failure_section(s: RunReport, examples: int = 3) -> Section:
    """Why the tasks that did not succeed failed: each failure class (evaluation/failure.py), its count and a few
    of its tasks (`om2w-tui label OUT --filter failure:CLASS` opens them)."""
    by: dict[str, list[str]] = {}
    for tid, row in s.per_task.items():
        f = row.failure
        if f is not None:
            by.setdefault(f.cls, []).append(tid)
    rows = [[cls, WORDS[cls], str(n), ", ".join(by[cls][:examples]) + (" ..." if n > examples else "")]
            for cls, n in s.failures.items()]
    return "why it failed (one class a task; `om2w-tui label OUT --filter failure:CLASS`)", \
        ["class", "meaning", "tasks", "e.g."], rows


def _difference(d: PairedDifference) -> str:
    return fmt_pp(d.difference, d.low, d.high)


def _listed(tasks: tuple[str, ...], limit: int) -> str:
    """The first `limit` tasks, `...` past them; `none` for no task (an empty cell reads as missing)."""
    return (", ".join(tasks[:limit]) + (" ..." if len(tasks) > limit else "")) if tasks else "none"


def test_sections(tests: tuple[PairedTest, ...], limit: int = 20,
                  heading: str = "task by task against the baseline (paired)") -> list[Section]:
    """Each arm against the baseline, task by task: both rates, the difference with its paired interval,
    McNemar's exact p, the tasks only one solved; per site under the first rule."""
    if not tests:
        return []
    out: list[Section] = [(heading,
                           ["arm", "baseline", "measure", "rule", "tasks", "arm's rate", "baseline's rate",
                            "difference", "McNemar p", "only the arm", "only the baseline"],
                           [[t.a, t.b, t.measure, RULE_HEADERS.get(t.rule, t.rule), str(t.difference.n),
                             fmt_rate(t.a_rate), fmt_rate(t.b_rate), _difference(t.difference),
                             fmt_p(t.difference.p), str(t.difference.only_a), str(t.difference.only_b)]
                            for t in tests])]
    for t in tests:
        if t.rule != RULE_ALL:
            continue
        only = [[f"only {t.a}", _listed(t.only_a_tasks, limit)], [f"only {t.b}", _listed(t.only_b_tasks, limit)]]
        out.append((f"tasks only one solved: {t.a} / {t.b}", ["", "tasks"], only))
        split = sorted(((k, d) for k, d in t.by_site.items() if d.only_a + d.only_b),
                       key=lambda kd: (-(kd[1].only_a + kd[1].only_b), kd[0]))
        rows = [[k, str(d.n), str(d.both), str(d.only_a), str(d.only_b), str(d.neither), _difference(d),
                 fmt_p(d.p)] for k, d in split[:limit]]
        if len(split) > len(rows):
            rows.append([f"... {plural(len(split) - len(rows), 'more site')} where they differ", *[""] * 7])
        out.append((f"per site where they differ: {t.a} / {t.b} ({t.measure}, {RULE_HEADERS[RULE_ALL]})"
                    + _same_sites(len(t.by_site) - len(split), bool(split)),
                    ["site", "tasks", "both", f"only {t.a}", f"only {t.b}", "neither", "difference", "McNemar p"],
                    rows))
    return out


def _same_sites(same: int, some_differ: bool) -> str:
    """What a per-site heading says of the sites where the two arms do not differ (not in its rows)."""
    if not same:
        return ""
    if some_differ:
        return f"; {plural(same, 'other site')} the same on each task"
    return "; none: its one site the same on each task" if same == 1 else f"; none: all {same} sites the same on " \
        "each task"


def pooled_sections(pooled: tuple[Pooled, ...]) -> list[Section]:
    """Each arm against the first over all their repeats, paired by task: each arm's mean rate on the tasks every
    repeat counts, the difference of each task's share solved averaged over the tasks with its t interval."""
    if not pooled:
        return []
    return [("each arm against the first over all its repeats (paired by task: each task's share of repeats solved; "
             "95% t interval over the tasks)",
             ["arm", "baseline", "measure", "rule", "repeats", "tasks", "arm's mean", "baseline's mean", "difference",
              "tasks more often solved", "less often"],
             [[p.a, p.b, p.measure, RULE_HEADERS.get(p.rule, p.rule), f"{len(p.a_runs)} / {len(p.b_runs)}",
               str(p.difference.n), share(p.a_mean), share(p.b_mean),
               fmt_pp(p.difference.mean, p.difference.low, p.difference.high), str(p.better), str(p.worse)]
              for p in pooled])]


def repeats_sections(reps: tuple[Repeats, ...], limit: int = 20) -> list[Section]:
    """Repeats of one configuration (or of each arm of a campaign): each run's rate, their mean, sd and range, each
    task solved always / sometimes / never, pass^k (every one of the k repeats solves it) and pass@k (one does)."""
    if not reps:
        return []
    by_arm = any(r.arm for r in reps)
    rows = []
    for r in reps:
        sp = r.spread
        rows.append([*([r.arm] if by_arm else []), r.measure, RULE_HEADERS.get(r.rule, r.rule), str(len(r.runs)),
                     "; ".join(fmt_rate(x, False) for x in r.rates),
                     "-" if sp.mean is None else f"{100 * sp.mean:.1f}%",
                     "-" if sp.stdev is None else f"{100 * sp.stdev:.1f} pp",
                     "-" if sp.low is None or sp.high is None else f"{100 * sp.low:.1f}-{100 * sp.high:.1f}%",
                     str(r.tasks), str(r.always), str(r.sometimes), str(r.never), share(r.pass_all),
                     share(r.pass_any)])
    title_ = "repeats of each arm" if by_arm else "repeats of one configuration"
    out: list[Section] = [(title_, [*(["arm"] if by_arm else []), "measure", "rule", "runs", "rates", "mean", "sd",
                                    "range", "tasks", "always", "sometimes", "never", "pass^k", "pass@k"], rows)]
    sometimes = [r for r in reps if r.rule == reps[0].rule and r.sometimes_tasks]
    if sometimes:
        out.append(("solved sometimes", [*(["arm"] if by_arm else []), "", "tasks"],
                    [[*([r.arm] if by_arm else []), RULE_HEADERS.get(r.rule, r.rule),
                      ", ".join(r.sometimes_tasks[:limit]) + (" ..." if len(r.sometimes_tasks) > limit else "")]
                     for r in sometimes]))
    return out


def campaign_sections(v: CampaignView) -> list[Section]:
    """A campaign's lanes (each arm's repeats, those not started yet) and its pairing gaps."""
    lanes: Section = (f"campaign {v.out}: {plural(len(v.lanes), 'lane')} (the first arm, {v.arms[0] if v.arms else '-'}"
                      f", is the baseline)", ["lane", "arm", "repeat", "folder", "shown as"],
                      [[lane.name, lane.arm, str(lane.repeat), lane.out,
                        lane.shown if lane.started else "not started yet (left out)"] for lane in v.lanes])
    return [lanes]


def pairing_sections(v: CampaignView, limit: int = 10) -> list[Section]:
    """How close in time the campaign ran the units it compares (median, p90, worst, the widest gaps) and, where it
    says more (more than two units a task, one arm's repeats), each task's span over them."""
    p = v.pairing
    left = f"; {plural(p.left_out, 'pair')} with one unit not settled yet, left out" if p.left_out else ""
    what = "compared pairs" if p.compared else "compared pairs (none: one arm)"
    shown = [(what, p.pairs)] + ([(f"a task's span over its {p.lanes} units", p.span)] if p.gaps().span_told else [])
    rows = [[name, str(f.n), *map(fmt_seconds, (f.median_s, f.p90_s, f.worst_s))] for name, f in shown]
    out: list[Section] = [(f"pairing gap: per task, the later start of each compared pair's units minus the earlier "
                           f"(an arm's repeat and the first arm's same repeat){left}",
                           ["gap", "measured", "median", "p90", "worst"], rows)]
    if p.largest:
        out.append(("the widest pairing gaps", ["task", "gap", "started first", "started last"],
                    [[g.task_id, fmt_seconds(g.gap_s), g.first, g.last] for g in p.largest[:limit]]))
    return out


def measure_words(c: Comparison) -> str:
    """The one measure every side of a comparison is read by, for a title."""
    return c.measure.name if c.measure is not None else "no measure (no run has one)"


def compare_sections(c: Comparison) -> list[Section]:
    names = list(c.runs)
    header = ["group"] + names + [f"Δ {n}" for n in names[1:]]

    def line(r: CompareRow) -> list[str]:
        return [r.group] + [fmt_rate(v) for v in r.values] + [fmt_delta(d) for d in r.delta_pp[1:]]

    rows = [line(r) for r in c.rows]
    p = c.paired
    rows.append([f"paired ({p.tasks} common tasks)"] + [fmt_rate(v) for v in p.values]
                + [fmt_delta(d) for d in p.delta_pp[1:]])
    out: list[Section] = campaign_sections(c.campaign) if c.campaign is not None else []
    out.append((f"success ({RULE_HEADERS[RULE_ALL]}) by {measure_words(c)}, against {c.baseline}", header, rows))
    if c.campaign is not None and c.campaign.arms:
        out += test_sections(c.tests, heading=f"each arm against {c.campaign.arms[0]}, repeat by repeat (paired: "
                                              f"the units run together on each site)")
    else:
        out += test_sections(c.tests)
    out += pooled_sections(c.pooled)
    out += repeats_sections(c.repeats)
    if c.campaign is not None:
        out += pairing_sections(c.campaign)
    statuses = [[k] + [str(x) for x in v] for k, v in c.status.items() if any(v)]
    if statuses:
        out.append(("episodes by status", ["status"] + names, statuses))
    medians = [[k] + [fmt_num(x) for x in v] for k, v in c.median.items() if any(x is not None for x in v)]
    if medians:
        out.append(("medians", ["metric"] + names, medians))
    return out


def title(s: RunReport) -> str:
    """One run's heading: its name, folder, task count, bench, and whether it has om2w-tui's results."""
    bits = [f"{s.name}", f"{s.out}", f"{s.tasks} tasks"]
    if s.kind == "labels":
        bits[1] = f"{Path(s.out).name}, column {s.name}_human_label"
    if s.bench:
        bits.append(f"bench {s.bench}")
    if not s.has_results and s.kind == "run":
        bits.append("no results.jsonl (task folders only)")
    return " | ".join(bits)


def model_notes(m: ModelReport | None) -> list[str]:
    """`12 episodes ended on model errors: context length 9, unparseable replies 3` (failures, in the rates), and
    the endpoint's failures (retried) and what was mended."""
    if m is None:
        return []
    out = []
    if m.ended_on:
        n = m.episodes_ended
        out.append(f"{n} episode{'s' if n != 1 else ''} ended on model errors (counted as failures): "
                   f"{counted_kinds(m.ended_on)}")
    if m.endpoint:
        out.append(f"{sum(m.endpoint.values())} attempt(s) ended on the model endpoint (retried): "
                   f"{counted_kinds(m.endpoint)}")
    mended = [f"{m.thinking_stripped} <think> blocks split off"] if m.thinking_stripped else []
    mended += [f"{m.reasoning_kept} replies' reasoning kept as the thought"] if m.reasoning_kept else []
    if mended:
        out.append("model replies mended: " + ", ".join(mended))
    return out


def counted_kinds(by_kind: Mapping[str, int]) -> str:
    return ", ".join(f"{kind_counted(k)} {n}" for k, n in by_kind.items())


def notes(s: RunReport) -> list[str]:
    """The lines under a run's heading: where success comes from, the other judge files, conformance, warnings."""
    return [*run_notes(s), *s.warnings]


def run_notes(s: RunReport) -> list[str]:
    """The lines under a run's heading but its warnings (the CSV says both on stderr, each as what it is)."""
    out = [_source_line(s)]
    for j in s.success.other_judges:
        rates = next((f"; success over all {fmt_rate(m.counts.overall)}, executable only "
                      f"{fmt_rate(m.counts.executable)}" for m in s.measures
                      if m.judge is not None and m.judge.file == j.file), "")   # as its table gives them
        out.append(f"also judged in {Path(j.file).name} ({_judge_words(j)}): {j.judged} of {s.tasks} tasks "
                   f"judged{rates}")
    for j in [x for x in [s.success.judge, *s.success.other_judges] if x is not None]:
        line = readings_line(j)
        if line:
            out.append(line)
    if (s.labelled or s.disputed) and s.kind == "run":
        out.append(f"human labels: {s.labelled} of {s.tasks} tasks with a final label"
                   + (f"; {len(s.disputed)} disputed, not reviewed (`om2w-tui label {s.out} --review`)"
                      if s.disputed else ""))
    out += model_notes(s.model_health)
    if s.success.source:
        out.append(RULES_NOTE)
    conf = s.conformance
    if conf.problems:
        out.append(f"{conf.problems} problem(s) for the official evaluator (see `om2w-tui check {s.out}`): "
                   f"{conf.examples[0]}")
    return out


def to_markdown(summaries: list[RunReport], comparison: Comparison | None) -> str:
    table = md_table
    parts: list[str] = []
    for s in summaries:
        parts.append(f"## {title(s)}\n")
        parts += [f"- {n}" for n in notes(s)]
        parts.append("")
        for heading, header, rows in sections(s):
            parts.append(f"### {heading}\n\n{table(header, rows)}\n")
    if comparison is not None:
        parts.append("## comparison\n")
        for heading, header, rows in compare_sections(comparison):
            parts.append(f"### {heading}\n\n{table(header, rows)}\n")
    return "\n".join(parts).rstrip() + "\n"


def to_csv(summaries: list[RunReport], comparison: Comparison | None) -> str:
    """Long form, one number a line: run, section, group, metric, value."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "out", "section", "group", "metric", "value"])
    for name, s in zip(unique_names(summaries), summaries):
        for i, meas in enumerate(s.measures):
            section = "success" if i == 0 else f"success ({meas.name})"
            groups = [("overall", meas.counts)] + [(f"level {k}", v) for k, v in meas.by_level.items()]
            groups += [(f"site {k}", v) for k, v in meas.by_site.items()]
            for g, c in groups:
                for metric, value in counts_cells(c):
                    w.writerow([name, s.out, section, g, metric, cell(value)])
        for a in [*s.agreement, *s.annotators]:
            for metric, value in agreement_cells(a):
                w.writerow([name, s.out, f"agreement {a.a} / {a.b}", a.rule, metric, cell(value)])
        for k, n in s.status.items():
            w.writerow([name, s.out, "status", k, "tasks", n])
        for k, m in s.metrics.items():
            for metric, value in (("n", m.n), ("median", m.median), ("p90", m.p90), ("total", m.total)):
                w.writerow([name, s.out, "metrics", k, metric, cell(value)])
        for e in s.errors:
            w.writerow([name, s.out, "errors", f"{e.status}/{e.kind}: {e.message}", "count", e.count])
        for cls, n in s.failures.items():
            w.writerow([name, s.out, "failures", cls, "tasks", n])
    if comparison is not None:
        by = measure_words(comparison)    # every compared row names the measure both sides are read by
        for r in [*comparison.rows, comparison.paired.as_row()]:
            for name, d in zip(comparison.runs[1:], r.delta_pp[1:]):
                w.writerow([name, "", "delta_pp", r.group, f"vs {comparison.baseline} by {by}", cell(d)])
        for t in comparison.tests:
            for metric, value in test_cells(t):
                w.writerow([t.a, "", f"paired vs {t.b} by {by}", t.rule, metric, cell(value)])
        for pool in comparison.pooled:
            for metric, value in pooled_cells(pool):
                w.writerow([pool.a, "", f"over repeats vs {pool.b} by {by}", pool.rule, metric, cell(value)])
        for rep in comparison.repeats:
            for metric, value in repeat_cells(rep):
                w.writerow([rep.arm or " + ".join(rep.runs), "", f"repeats by {by}", rep.rule, metric, cell(value)])
        if comparison.campaign is not None:
            camp = comparison.campaign
            for lane in camp.lanes:
                for metric, value in (("arm", lane.arm), ("repeat", lane.repeat), ("started", lane.started)):
                    w.writerow([lane.shown, lane.out, "campaign lane", lane.name, metric, value])
            p = camp.pairing
            for of, f in (("pairs", p.pairs), ("span", p.span)):
                for metric, value in (("n", f.n), ("median_s", f.median_s), ("p90_s", f.p90_s), ("worst_s", f.worst_s)):
                    w.writerow(["", camp.out, "pairing gap", of, metric, cell(value)])
            w.writerow(["", camp.out, "pairing gap", "pairs", "left_out", p.left_out])
            for gap in p.largest:
                w.writerow([f"{gap.first} .. {gap.last}", camp.out, "pairing gap", gap.task_id, "gap_s", gap.gap_s])
    return buf.getvalue()


def counts_cells(c: Counts) -> list[tuple[str, Any]]:
    """A group's counts and both rules' rates with their intervals, as (metric, value) cells."""
    out: list[tuple[str, Any]] = [("success", c.success), ("failure", c.failure),
                                  ("not_executable", c.not_executable), ("pending", c.pending),
                                  ("successes", c.overall.successes), ("tasks", c.overall.tasks)]
    for prefix, r in (("", c.overall), ("executable_", c.executable)):
        out += [(f"{prefix}rate", r.rate), (f"{prefix}low", r.low), (f"{prefix}high", r.high)]
    return out


def agreement_cells(a: Agreement) -> list[tuple[str, Any]]:
    c = a.confusion
    return [("tasks", c.n), ("agreement", c.agreement.rate), ("agreement_low", c.agreement.low),
            ("agreement_high", c.agreement.high), ("kappa", a.kappa), ("both_success", c.both),
            ("only_a_success", c.only_a), ("only_b_success", c.only_b), ("both_failure", c.neither),
            ("a_rate", a.a_rate.rate), ("b_rate", a.b_rate.rate), ("gap_pp", a.gap_pp)]


def test_cells(t: PairedTest) -> list[tuple[str, Any]]:
    d = t.difference
    return [("tasks", d.n), ("both", d.both), ("only_a", d.only_a), ("only_b", d.only_b), ("neither", d.neither),
            ("a_rate", t.a_rate.rate), ("b_rate", t.b_rate.rate), ("difference", d.difference),
            ("difference_low", d.low), ("difference_high", d.high), ("mcnemar_p", d.p)]


def pooled_cells(p: Pooled) -> list[tuple[str, Any]]:
    d = p.difference
    return [("repeats", len(p.a_runs)), ("baseline_repeats", len(p.b_runs)), ("tasks", d.n), ("mean", p.a_mean),
            ("baseline_mean", p.b_mean), ("difference", d.mean), ("se", d.se), ("low", d.low), ("high", d.high),
            ("better", p.better), ("worse", p.worse)]


def repeat_cells(r: Repeats) -> list[tuple[str, Any]]:
    sp = r.spread
    return [("runs", len(r.runs)), ("mean", sp.mean), ("stdev", sp.stdev), ("lowest", sp.low),
            ("highest", sp.high), ("tasks", r.tasks), ("always", r.always), ("sometimes", r.sometimes),
            ("never", r.never), ("pass^k", r.pass_all), ("pass@k", r.pass_any)]


def to_json(summaries: list[RunReport], comparison: Comparison | None, per_task: bool = True) -> str:
    """`--format json`: every run's `to_json()` and the comparison's; `per_task=False` leaves the per-task rows out."""
    data = {"runs": [s.to_json(per_task) for s in summaries],
            "compare": None if comparison is None else comparison.to_json()}
    return json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n"
