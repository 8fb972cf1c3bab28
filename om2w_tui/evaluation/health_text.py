"""The text of task health (`om2w-tui tasks health --format table|md|csv|json`): the (title, header, rows) sections
every format is drawn from, out of `evaluation/health.py`'s typed values; nothing here reads a folder."""

from __future__ import annotations

import csv
import io
import json

from om2w_tui.evaluation.health import ENDING_WORDS, ENDINGS, Attempt, Health
from om2w_tui.evaluation.text_formats import md_table, plural

Section = tuple[str, list[str], list[list[str]]]


def _counted(endings: dict[str, int]) -> str:
    return ", ".join(f"{ENDING_WORDS[e]} {n}" for e, n in endings.items())


def _seen(a: Attempt) -> str:
    who = a.lane or a.arm
    return f"{a.out} attempt {a.attempt}{' (' + who + ')' if who else ''}: {ENDING_WORDS[a.ending]}: {a.why}"


def sections(h: Health) -> list[Section]:
    """The runs read (a campaign's lanes by arm and repeat), every task's attempts (per arm when the runs differ by
    arm), and the candidates for label 2."""
    lanes = any(r.lane for r in h.runs)
    runs: Section = ("runs", ["out", *(["lane"] if lanes else []), "arm", "success read from", "tasks", "attempts"],
                     [[r.out, *([r.lane] if lanes else []), r.arm, r.measure, str(r.tasks), str(r.attempts)]
                      for r in h.runs])
    header = ["task", "site", "attempts", "solved", *(["arm"] if h.by_arm else []), "how they ended"]
    rows: list[list[str]] = []
    for t in h.tasks:
        cells = [t.task_id, t.site, str(len(t.attempts)), "yes" if t.solved else "no"]
        if h.by_arm:
            rows += [cells + [arm, _counted(n)] for arm, n in t.arms().items()]
        else:
            rows.append(cells + [_counted(t.endings())])
    candidates: Section = (f"candidates for label 2 (not executable): {plural(len(h.candidates), 'task')} no run "
                           f"solved that met the site failing", ["task", "site", "evidence"],
                           [[t.task_id, t.site, _seen(a)] for t in h.candidates for a in t.evidence])
    return [runs, ("tasks", header, rows), candidates]


def to_text(h: Health) -> str:
    """Plain columns, one section after another."""
    parts: list[str] = []
    for heading, header, rows in sections(h):
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
        parts.append(f"{heading}\n" + "\n".join(lines) + ("\n(none)" if not rows else "") + "\n")
    return "\n".join(parts)


def to_markdown(h: Health) -> str:
    return "\n".join(f"### {heading}\n\n{md_table(header, rows)}\n" for heading, header, rows in sections(h))


def to_csv(h: Health) -> str:
    """One attempt a line, its task's verdicts beside it."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task_id", "site", "out", "arm", "attempt", "status", "ending", "latest", "solved", "suspect", "why",
                "lane"])
    for t in h.tasks:
        for a in t.attempts:
            w.writerow([t.task_id, t.site, a.out, a.arm, a.attempt, a.status, a.ending, a.latest, t.solved, t.suspect,
                        a.why, a.lane])
    return buf.getvalue()


def to_json(h: Health) -> str:
    return json.dumps({"endings": list(ENDINGS), **h.to_json()}, indent=2) + "\n"
