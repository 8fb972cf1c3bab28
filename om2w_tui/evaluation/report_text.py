"""The text of run reports: Markdown, CSV and JSON (`om2w-tui report --format md|csv|json`), the (title, header,
rows) sections every format and the rich table (`frontends/console/report_table.py`) are drawn from, a run's heading
and notes, and the number formats the console's report screen shares. The numbers are `evaluation/report.py`'s typed
values (`evaluation/summary.py`); nothing here computes or reads a folder."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from om2w_tui.evaluation.report import unique_names
from om2w_tui.evaluation.summary import CompareRow, Comparison, JudgeInfo, Rate, RunReport


def fmt_rate(v: Rate | None) -> str:
    if v is None or v.rate is None:
        return "-"
    return f"{100 * v.rate:.1f}% ({v.successes}/{v.tasks})"


def fmt_num(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.{digits}f}"
    return str(int(x))


def fmt_delta(d: float | None) -> str:
    return "" if d is None else f"{d:+.1f} pp"


def _judge_words(j: JudgeInfo) -> str:
    by = f"by {j.by}, " if j.by else ""
    return f"{by}{j.mode or '?'}, {j.model or '?'}"


def _source_line(s: RunReport) -> str:
    succ = s.success
    if succ.source == "judge" and succ.judge is not None:
        j = succ.judge
        return (f"success from the judge file {Path(j.file).name} ({_judge_words(j)}; {j.judged} of "
                f"{s.tasks} tasks judged)")
    if succ.source == "correct":
        return "success from the offline suite's reference answers (`correct`)"
    return "no success measure: no judge file in the folder (run `om2w-tui judge`) and no `correct` field"


Section = tuple[str, list[str], list[list[str]]]


def sections(summary: RunReport, site_limit: int | None = None) -> list[Section]:
    """(title, header, rows) tables of one run, shared by every text format."""
    s = summary
    out: list[Section] = []
    succ = s.success
    if succ.source:
        rows = [["overall", fmt_rate(succ.overall)]]
        rows += [[f"level {k}", fmt_rate(v)] for k, v in succ.by_level.items()]
        out.append(("success", ["group", "success"], rows))
        sites = list(succ.by_site.items())
        shown = sites if site_limit is None else sites[:site_limit]
        rows = [[k, fmt_rate(v)] for k, v in shown]
        if len(shown) < len(sites):
            rows.append([f"... {len(sites) - len(shown)} more sites", ""])
        out.append(("success by site", ["site", "success"], rows))
    out.append(("episodes by status", ["status", "tasks"], [[k, str(v)] for k, v in s.status.items() if v]))
    out.append(("per episode", ["metric", "median", "p90", "total"],
                [[k, fmt_num(m.median), fmt_num(m.p90), fmt_num(m.total)]
                 for k, m in s.metrics.items() if m.n]))
    if s.errors:
        out.append(("errors (every attempt, grouped)", ["count", "status", "kind", "message", "tasks"],
                    [[str(g.count), g.status, g.kind, g.message,
                      ", ".join(g.tasks) + (" ..." if g.task_count > len(g.tasks) else "")]
                     for g in s.errors]))
    return out


def compare_sections(c: Comparison) -> list[Section]:
    names = list(c.runs)
    header = ["group"] + names + [f"Δ {n}" for n in names[1:]]

    def line(r: CompareRow) -> list[str]:
        return [r.group] + [fmt_rate(v) for v in r.values] + [fmt_delta(d) for d in r.delta_pp[1:]]

    rows = [line(r) for r in c.rows]
    p = c.paired
    rows.append([f"paired ({p.tasks} common tasks)"] + [fmt_rate(v) for v in p.values]
                + [fmt_delta(d) for d in p.delta_pp[1:]])
    out: list[Section] = [(f"success, against {c.baseline}", header, rows)]
    out.append(("episodes by status", ["status"] + names,
                [[k] + [str(x) for x in v] for k, v in c.status.items() if any(v)]))
    out.append(("medians", ["metric"] + names, [[k] + [fmt_num(x) for x in v] for k, v in c.median.items()]))
    return out


def title(s: RunReport) -> str:
    """One run's heading: its name, folder, task count, bench, and whether it has om2w-tui's results."""
    bits = [f"{s.name}", f"{s.out}", f"{s.tasks} tasks"]
    if s.bench:
        bits.append(f"bench {s.bench}")
    if not s.has_results:
        bits.append("no results.jsonl (task folders only)")
    return " | ".join(bits)


def notes(s: RunReport) -> list[str]:
    """The lines under a run's heading: where success comes from, the other judge files, conformance, warnings."""
    out = [_source_line(s)]
    for j in s.success.other_judges:
        out.append(f"also judged in {Path(j.file).name} ({_judge_words(j)}): {fmt_rate(j.rate)}, {j.judged} of "
                   f"{s.tasks} tasks judged")
    conf = s.conformance
    if conf.problems:
        out.append(f"{conf.problems} problem(s) for the official evaluator (see `om2w-tui check {s.out}`): "
                   f"{conf.examples[0]}")
    out += s.warnings
    return out


def to_markdown(summaries: list[RunReport], comparison: Comparison | None) -> str:
    def table(header: list[str], rows: list[list[str]]) -> str:
        esc = [[c.replace("|", "\\|") for c in r] for r in [header, *rows]]
        lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
        return "\n".join(lines)

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


def _cell(x: Any) -> Any:
    return "" if x is None else x


def to_csv(summaries: list[RunReport], comparison: Comparison | None) -> str:
    """Long form, one number a line: run, section, group, metric, value."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "out", "section", "group", "metric", "value"])
    for name, s in zip(unique_names(summaries), summaries):
        succ = s.success
        if succ.source:
            groups: list[tuple[str, Rate | None]] = [("overall", succ.overall)]
            groups += [(f"level {k}", v) for k, v in succ.by_level.items()]
            groups += [(f"site {k}", v) for k, v in succ.by_site.items()]
            for g, v in groups:
                if v is None:
                    continue
                for metric, value in (("successes", v.successes), ("tasks", v.tasks), ("rate", v.rate)):
                    w.writerow([name, s.out, "success", g, metric, _cell(value)])
        for k, n in s.status.items():
            w.writerow([name, s.out, "status", k, "tasks", n])
        for k, m in s.metrics.items():
            for metric, value in (("n", m.n), ("median", m.median), ("p90", m.p90), ("total", m.total)):
                w.writerow([name, s.out, "metrics", k, metric, _cell(value)])
        for e in s.errors:
            w.writerow([name, s.out, "errors", f"{e.status}/{e.kind}: {e.message}", "count", e.count])
    if comparison is not None:
        for r in [*comparison.rows, comparison.paired.as_row()]:
            for name, d in zip(comparison.runs[1:], r.delta_pp[1:]):
                w.writerow([name, "", "delta_pp", r.group, f"vs {comparison.baseline}", _cell(d)])
    return buf.getvalue()


def to_json(summaries: list[RunReport], comparison: Comparison | None, per_task: bool = True) -> str:
    """`--format json`: every run's `to_json()` and the comparison's; `per_task=False` leaves the per-task rows out."""
    data = {"runs": [s.to_json(per_task) for s in summaries],
            "compare": None if comparison is None else comparison.to_json()}
    return json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n"
