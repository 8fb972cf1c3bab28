"""`om2w-tui check OUT [OUT ...]`: its flags, the problems printed one a line, exit 1 when a run has one. What a
problem is (reading a run's folder exactly as the official evaluator does) is `benchmarks/conformance.py`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from om2w_tui import exits
from om2w_tui.benchmarks.conformance import read_run
from om2w_tui.evaluation.campaign_report import one_run_problem
from om2w_tui.run_folder import what_is


def add_arguments(sub: Any) -> None:
    p = sub.add_parser("check", help="check run folders against what the official evaluator reads",
                       description="Read run folders exactly as the official Online-Mind2Web evaluator does and "
                                   "list every problem (exit 1 when there is one).")
    p.add_argument("outs", type=Path, nargs="+", metavar="OUT", help="run folders")


def run(args: argparse.Namespace) -> int:
    outs: list[Path] = args.outs
    for out in outs:
        problem = one_run_problem(out, "check") or what_is(out).problem()
        if problem:     # a campaign, an empty folder or a folder of runs would "pass" or list its runs as bad tasks
            print(f"om2w-tui check: {problem}", file=sys.stderr)
            return exits.USAGE
    return run_check(outs)


def run_check(outs: list[Path]) -> int:
    bad = 0
    for out in outs:
        r = read_run(out)
        if r.problems:
            bad += 1
            print(f"{out}: {len(r.problems)} problem(s) for the official evaluator "
                  f"({len(r.task_dirs)} task folders, {len(r.episodes)} readable):")
            for p in r.problems:
                print(f"  - {p}")
        else:
            print(f"{out}: ok: {len(r.task_dirs)} task folders, all read by the official evaluator as written")
        if r.notes:
            print(f"  {len(r.notes)} note(s), read right all the same:")
            for n in r.notes:
                print(f"  - {n}")
    return exits.FAILED if bad else exits.OK
