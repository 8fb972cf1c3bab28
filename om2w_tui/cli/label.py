"""`om2w-tui label OUT`: human labels of a run, in the console (one file per annotator in OUT, written at every key
press), and `--export FILE --agent NAME` to the official human_label.json. The labels' files and the official
format are `evaluation/labels.py`; the screen is `frontends/console/screens/label.py`."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.conformance import task_dirs
from om2w_tui.benchmarks.episode_folder import load_result
from om2w_tui.engine.results import read_results
from om2w_tui.evaluation.campaign_report import one_run_problem
from om2w_tui.evaluation.failure import CLASSES
from om2w_tui.evaluation.label_session import FILTERS
from om2w_tui.evaluation.labels import FINAL, LabelFileError, check_annotator, default_annotator, export_labels
from om2w_tui.run_folder import what_is

EXIT_USAGE = 2


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("label", help="label a run's episodes by hand (1 success, 0 failure, 2 not executable), "
                                     "or export the labels as the official human_label.json",
                       description="Human labels of a run's episodes in the console, saved at every key press in "
                                   "OUT/labels.<annotator>.json (resumable; one file per annotator); --export "
                                   "writes them as the official human_label.json.")
    p.add_argument("out", type=Path, help="the run's folder (one subfolder per task)")
    p.add_argument("--annotator", default=None, metavar="NAME",
                   help="who labels (default: your user name); each annotator has a file of their own")
    p.add_argument("--show-judge", action="store_true",
                   help="show the judge's verdict beside each task (hidden by default, so labels stay blind)")
    p.add_argument("--judge", type=Path, default=None, metavar="FILE",
                   help="the judge output file whose verdicts --show-judge and the `judge` filter use (default: "
                        "the newest *_auto_eval_results.json in OUT)")
    p.add_argument("--filter", default="all", metavar="WHICH",
                   help="which tasks to show first: all, unlabelled, judge (disagreeing with the judge), "
                        "annotators (disagreeing with another annotator), notes, suspect (not solved, met a bot "
                        "wall, an error page or the site down: candidates for label 2, as `tasks health` says), "
                        "site:HOST, level:LEVEL, "
                        f"failure:CLASS (why it failed, as `report` says: {', '.join(CLASSES)})")
    p.add_argument("--review", action="store_true",
                   help="review: the tasks where annotators disagree; the label given is the final one "
                        f"(OUT/labels.{FINAL}.json)")
    p.add_argument("--task", default=None, metavar="TASK_ID", help="open on this task")
    p.add_argument("--export", type=Path, default=None, metavar="FILE",
                   help="write the labels to FILE as the official human_label.json (its other agents' columns "
                        "are kept) instead of opening the console")
    p.add_argument("--agent", default=None, metavar="NAME",
                   help="--export: the column's agent name (<NAME>_human_label)")
    p.add_argument("--partial", action="store_true",
                   help="--export: write even when some tasks have no label (their rows lack the column)")
    p.add_argument("--renderer", choices=("auto", "halfcell", "unicode"), default="auto",
                   help="how screenshots are drawn: the terminal's graphics where it has them (auto), or block "
                        "characters")


def check_filter(text: str) -> str:
    if text in FILTERS or re.fullmatch(r"(site|level):\S+", text):
        return text
    kind, _, cls = text.partition(":")
    if kind == "failure":
        if cls in CLASSES:
            return text
        raise ValueError(f"--filter {text}: no failure class {cls!r}; the classes are {', '.join(CLASSES)} "
                         f"(e.g. --filter failure:{CLASSES[4]})")
    raise ValueError(f"--filter {text}: one of {', '.join(FILTERS)}, site:HOST, level:LEVEL or failure:CLASS")


def run_tasks(out: Path) -> list[str]:
    """The run's tasks: its task folders and the tasks its results name (a line of its results skipped is said on
    stderr, once: the command reads them here first)."""
    log = read_results(out)
    for w in log.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return sorted(set(task_dirs(out)) | set(log.latest_records()))


def task_texts(out: Path, task_ids: list[str]) -> dict[str, str]:
    """Each task's text, as its result.json has it (what the official file's confirmed_task holds)."""
    texts = {}
    for t in task_ids:
        result = load_result(out / t).result or {}
        texts[t] = str(result.get("task") or result.get("confirmed_task") or "")
    return texts


def _fail(message: str) -> int:
    print(f"om2w-tui label: {message}", file=sys.stderr)
    return EXIT_USAGE


def export(args: Any, out: Path) -> int:
    if not args.agent:
        return _fail("--export needs --agent NAME: the column's agent (<NAME>_human_label)")
    tasks = run_tasks(out)
    try:
        res = export_labels(out, tasks, task_texts(out, tasks), args.export, args.agent,
                            annotator=args.annotator, partial=args.partial)
    except LabelFileError as e:
        return _fail(str(e))
    except OSError as e:
        return _fail(f"--export {args.export}: cannot write it ({e})")
    if not res.written and not res.labelled:
        return _fail(f"nothing written to {res.path}: no task of {out} has a label yet"
                     + (f" ({len(res.disputed)} disputed: `om2w-tui label {out} --review`)" if res.disputed else "")
                     + f"; label them first (`om2w-tui label {out}`)")
    if not res.written:
        why = []
        if res.missing:
            why.append(f"{len(res.missing)} task(s) have no label (e.g. {', '.join(res.missing[:3])})")
        if res.disputed:
            why.append(f"{len(res.disputed)} are disputed and not reviewed (e.g. {', '.join(res.disputed[:3])}; "
                       f"`om2w-tui label {out} --review`)")
        return _fail(f"nothing written to {res.path}: {'; '.join(why)}; label them, or pass --partial")
    left = len(res.missing) + len(res.disputed)
    print(f"wrote {res.column} for {res.labelled} of {len(tasks)} tasks to {res.path}"
          + (" (replacing the column that was there)" if res.replaced else "")
          + (f"; {left} left without a label (their rows without the column)" if left else ""))
    return 0


def run(args: Any) -> int:
    out: Path = args.out
    problem = one_run_problem(out, "label", " (--export too, each lane its own --agent column); `om2w-tui tasks "
                              f"health {out}` lists the tasks to look at over every lane") or what_is(out).problem()
    if problem:      # a campaign, a folder of runs, empty or missing: its subfolders would be taken for tasks
        return _fail(problem)
    try:
        if args.annotator is not None and not (args.export and args.annotator == FINAL):
            check_annotator(args.annotator)
            if args.annotator == FINAL:
                raise LabelFileError(f"--annotator {FINAL}: the reviewer's file; use --review to give final labels")
        flt = check_filter(args.filter)
    except (LabelFileError, ValueError) as e:
        return _fail(str(e))
    if args.export is not None:
        return export(args, out)
    tasks = run_tasks(out)
    if not tasks:
        return _fail(f"{out}: no task folders to label")
    if args.task is not None and args.task not in tasks:
        return _fail(f"--task {args.task}: no such task in {out} ({len(tasks)} tasks, e.g. "
                     f"{', '.join(tasks[:3])})")
    if args.judge is not None and not args.judge.is_file() and not (out / args.judge).is_file():
        return _fail(f"--judge {args.judge}: no such file")
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        return _fail("labelling needs a terminal (use --export to write the official file without one)")
    from om2w_tui.frontends.console.label_app import run_labeller  # Textual only when the console opens

    judge = args.judge if args.judge is None or args.judge.is_file() else out / args.judge
    return run_labeller(out, args.annotator or default_annotator(), review=args.review, show_judge=args.show_judge,
                        judge=judge, flt=flt, task=args.task, renderer=args.renderer)
