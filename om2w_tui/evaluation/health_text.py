"""The text of task health (`om2w-tui tasks health --format table|md|csv|json`): the (title, header, rows) sections
every format is drawn from, out of `evaluation/health.py`'s typed values; nothing here reads a folder."""

from __future__ import annotations

import csv
import io
import json

from om2w_tui.evaluation.health import ENDING_WORDS, ENDINGS, Attempt, Health
from om2w_tui.evaluation.text_formats import md_table
from om2w_tui.words import plural

Section = tuple[str, list[str], list[list[str]]]


ALL_ARMS = "all arms"   # the task's row over every arm, above each arm's own


def _yes(solved: bool) -> str:
    return "yes" if solved else "no"


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
    header = ["task", "site", *(["arm"] if h.by_arm else []), "attempts", "solved", "how they ended"]
    rows: list[list[str]] = []
    for t in h.tasks:
        # the task's totals once, then (runs of several arms) each arm's own numbers under it
        rows.append([t.task_id, t.site, *([ALL_ARMS] if h.by_arm else []), str(len(t.attempts)), _yes(t.solved),
                     _counted(t.endings())])
        if h.by_arm:
            rows += [["", "", a.arm, str(a.attempts), _yes(a.solved), _counted(a.endings)] for a in t.per_arm()]
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
    """One attempt a line, its task's verdicts beside it (`solved`, `suspect`: over every arm; `arm_solved`: by the
    attempt's own arm)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task_id", "site", "out", "arm", "attempt", "status", "ending", "latest", "solved", "suspect", "why",
                "lane", "arm_solved"])
    for t in h.tasks:
        arm_solved = {a.arm: a.solved for a in t.per_arm()}
        for a in t.attempts:
            w.writerow([t.task_id, t.site, a.out, a.arm, a.attempt, a.status, a.ending, a.latest, t.solved, t.suspect,
                        a.why, a.lane, arm_solved[a.arm]])
    return buf.getvalue()


def to_json(h: Health) -> str:
    return json.dumps({"endings": list(ENDINGS), **h.to_json()}, indent=2) + "\n"
