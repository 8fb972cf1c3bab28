"""`om2w-tui report OUT [OUT ...]`: its flags, and the summaries written as a table (rich,
`frontends/console/report_table.py`), Markdown, CSV or JSON, or opened in the console (`--ui`). The numbers
themselves are `evaluation/report.py` and their text `evaluation/report_text.py`, which import no front end."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from om2w_tui.evaluation.report import compare, summarize
from om2w_tui.evaluation.report_text import to_csv, to_json, to_markdown


def add_arguments(sub: Any) -> None:
    p = sub.add_parser("report", help="summarise finished runs (one, or several side by side)",
                       description="Success rates (overall, by level and site), statuses, steps, durations, tokens "
                                   "and grouped errors of runs; several runs are compared against the first.")
    p.add_argument("outs", type=Path, nargs="+", metavar="OUT", help="run folders (the first is the baseline)")
    p.add_argument("--format", choices=("table", "md", "csv", "json"), default="table", help="output format (table)")
    p.add_argument("--judge", type=Path, action="append", default=[],
                   help="the judge output file to take success from (default: the newest *_auto_eval_results.json "
                        "in each folder); give it once per OUT, in order, or once for all")
    p.add_argument("--ui", action="store_true",
                   help="open the report in the console (one OUT): charts, failures and their episodes")
    p.add_argument("--no-per-task", action="store_true", help=argparse.SUPPRESS)


def run(args: Any) -> int:
    outs: list[Path] = args.outs
    judges: list[Path] = args.judge
    if judges and len(judges) not in (1, len(outs)):
        print(f"om2w-tui report: --judge given {len(judges)} times for {len(outs)} runs; give it once per run "
              f"or once", file=sys.stderr)
        return 2
    if getattr(args, "ui", False) and len(outs) != 1:
        print(f"om2w-tui report: --ui shows one run; {len(outs)} given", file=sys.stderr)
        return 2
    summaries = []
    for i, out in enumerate(outs):
        if not out.is_dir():
            print(f"om2w-tui report: {out}: no such folder", file=sys.stderr)
            return 2
        judge = (judges[i] if len(judges) == len(outs) else judges[0]) if judges else None
        if judge is not None and not judge.is_file() and (out / judge).is_file():
            judge = out / judge
        try:
            summaries.append(summarize(out, judge))
        except FileNotFoundError as e:
            print(f"om2w-tui report: {e}", file=sys.stderr)
            return 2
    if getattr(args, "ui", False):
        from om2w_tui.frontends.console.app import run_console  # Textual only when the console is asked for

        return run_console(None, report=outs[0], judge=judge)
    comparison = compare(summaries) if len(summaries) > 1 else None
    if args.format == "table":
        from om2w_tui.frontends.console.report_table import print_table  # rich only for a table

        print_table(summaries, comparison)
    elif args.format == "md":
        sys.stdout.write(to_markdown(summaries, comparison))
    elif args.format == "csv":
        sys.stdout.write(to_csv(summaries, comparison))
    else:
        sys.stdout.write(to_json(summaries, comparison, per_task=not args.no_per_task))
    return 0
