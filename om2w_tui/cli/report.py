"""`om2w-tui report [OUT ...] [--labels FILE --agent A ...]`: its flags, and the summaries written as a table (rich,
`frontends/console/report_table.py`), Markdown, CSV or JSON, or opened in the console (`--ui`). The numbers
themselves are `evaluation/report.py` and their text `evaluation/report_text.py`, which import no front end.

Runs are read from their folders; an official `human_label.json` (`--labels`) gives one run per agent column, with
no folder at all; several runs are compared against the first (task by task: McNemar and the paired interval), or
with `--repeats` summed up as repeats of one configuration, every run read by the one measure
`evaluation/measure.py` chooses (or `--measure`). A campaign's folder (`campaign_folder.is_campaign`) is given alone:
its lanes are its runs, compared arm by arm with each arm's repeats and the pairing gaps
(`evaluation/campaign_report.py`)."""

from __future__ import annotations

import argparse
import copy
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from om2w_tui.campaign_folder import is_campaign
from om2w_tui.evaluation.campaign_report import LaneRun, campaign_view, compare_campaign, lanes_words, read_lanes
from om2w_tui.evaluation.compare import choose_measure, compare, with_measure
from om2w_tui.evaluation.labels import FINAL, LABELS_LIMIT, LabelFileError, check_annotator, column, read_human_labels
from om2w_tui.evaluation.measure import KINDS, NoCommonMeasure
from om2w_tui.evaluation.report import summarize, summarize_labels, task_file_meta
from om2w_tui.evaluation.report_text import run_notes, to_csv, to_json, to_markdown
from om2w_tui.evaluation.summary import Comparison, RunReport
from om2w_tui.files import given_file
from om2w_tui.frontends.web import command as web
from om2w_tui.json_input import InputError
from om2w_tui.resources import default_task_file
from om2w_tui.run_folder import what_is

EXIT_USAGE = 2


def add_arguments(sub: Any) -> None:
    p = sub.add_parser("report", help="summarise runs or human labels (one, or several side by side)",
                       description="Success rates under both counting rules with 95% intervals (overall, by level "
                                   "and site), the judge's agreement with human labels, statuses, steps, durations, "
                                   "tokens and grouped errors of runs; several runs are compared against the first.")
    p.add_argument("outs", type=Path, nargs="*", metavar="OUT",
                   help="run folders (the first is the baseline), or one campaign's folder (its lanes: every arm "
                        "and repeat, the arms compared, each arm's repeats, the pairing gaps)")
    p.add_argument("--format", choices=("table", "md", "csv", "json"), default="table", help="output format (table)")
    p.add_argument("--judge", type=Path, action="append", default=[],
                   help="the judge output file to take success from (default: the newest *_auto_eval_results.json "
                        "in each folder; given, success is the judge's unless --measure says otherwise); give it "
                        "once per OUT, in order, or once for all")
    p.add_argument("--measure", choices=KINDS, default=None,
                   help="what success is read from, the same for every run compared: humans (final labels), "
                        "judge (one mode and model), reference (the offline suite's answers); default: the best "
                        "every run has, in that order")
    p.add_argument("--labels", type=Path, default=None, metavar="FILE",
                   help="an official human_label.json: each agent column is a run (no run folder needed)")
    p.add_argument("--agent", action="append", default=[], metavar="NAME",
                   help="with --labels: the agent column(s) to report (<NAME>_human_label; default: every one); "
                        "two or more are compared task by task")
    p.add_argument("--judged", type=Path, default=None, metavar="FILE",
                   help="with --labels: a judge's output file (the official evaluator's auto-eval results, or "
                        "ours) to measure against the agent's labels: agreement, Cohen's kappa, confusion")
    p.add_argument("--tasks", type=Path, default=None, metavar="FILE",
                   help="with --labels: the task file giving each task's level and site (default: the shipped "
                        "Online-Mind2Web file)")
    p.add_argument("--repeats", action="store_true",
                   help="the runs are repeats of one configuration: mean and spread, tasks solved always, "
                        "sometimes, never")
    p.add_argument("--ui", action="store_true",
                   help="open the report in the console (one OUT): charts, failures and their episodes")
    p.add_argument("--annotator", default=None, metavar="NAME",
                   help="with --ui: who labels when `L` opens the label screen (asked once otherwise)")
    p.add_argument("--no-per-task", action="store_true", help=argparse.SUPPRESS)
    web.add_arguments(p)


def _fail(message: str) -> int:
    print(f"om2w-tui report: {message}", file=sys.stderr)
    return EXIT_USAGE


def _run_summaries(outs: list[Path], judges: list[Path]) -> list[RunReport]:
    """Each run folder's summary; raises ValueError with the message to show."""
    summaries = []
    for i, out in enumerate(outs):
        problem = what_is(out).problem()
        if problem:
            raise ValueError(problem)
        judge = (judges[i] if len(judges) == len(outs) else judges[0]) if judges else None
        if judge is not None and not judge.is_file() and (out / judge).is_file():
            judge = out / judge
        try:
            summaries.append(summarize(out, judge))
        except (FileNotFoundError, LabelFileError) as e:
            raise ValueError(str(e)) from None
    return summaries


def _label_summaries(args: Any) -> list[RunReport]:
    """One summary per agent column of --labels; raises ValueError with the message to show."""
    path: Path = args.labels
    problem = given_file(path, "--labels", LABELS_LIMIT)   # a FIFO, a device, a folder: said as what it is
    if problem or not path.is_file():
        raise ValueError(problem or f"--labels {path}: no such file")
    try:
        file = read_human_labels(path)
    except LabelFileError as e:
        raise ValueError(f"--labels {e}") from None
    agents = args.agent or list(file.agents)
    missing = [a for a in agents if a not in file.labels]
    if missing:
        raise ValueError(f"--agent {missing[0]}: no column {column(missing[0])} in {path} (it has: "
                         f"{', '.join(file.agents)})")
    judged: Path | None = args.judged
    if judged is not None:
        if not judged.is_file():
            raise ValueError(f"--judged {judged}: no such file")
        if len(agents) != 1:
            raise ValueError(f"--judged: name the agent it judged with --agent (the file has {len(agents)}: "
                             f"{', '.join(agents)})")
    tasks = args.tasks or default_task_file("om2w")
    if args.tasks is not None and not args.tasks.is_file():
        raise ValueError(f"--tasks {args.tasks}: no such file")
    meta = task_file_meta(tasks) if tasks is not None else {}
    return [summarize_labels(file, a, meta, judged) for a in agents]


def _campaign_problem(args: Any, camp: Path, lanes: list[LaneRun]) -> str:
    """Why the flags do not go with a campaign's folder ('' when they do)."""
    example = lanes[0].out if lanes else camp / "ARM"
    if len(args.outs) > 1:
        others = [o for o in args.outs if o != camp]
        return (f"{camp} is a campaign's folder: give it alone (its lanes {lanes_words(lanes)} are reported and "
                f"compared arm by arm), or give its lanes as run folders beside the others (e.g. {example} "
                f"{others[0]})")
    if args.labels is not None:
        return f"{camp} is a campaign's folder: --labels goes with run folders (give its lanes, e.g. {example})"
    if args.agent or args.judged or args.tasks:   # they go with --labels, which a campaign's folder does not take
        return "--agent, --judged and --tasks go with --labels FILE"
    if args.repeats:
        return f"{camp} is a campaign's folder: its repeats are its plan's (each arm's, summed up without --repeats)"
    if getattr(args, "ui", False):
        return f"{camp} is a campaign's folder; --ui shows one run: give one of its lanes, e.g. {example}"
    if len(args.judge) > 1:
        return (f"--judge given {len(args.judge)} times for the campaign {camp}: give it once (a judge file's name "
                f"each lane has)")
    return ""


def _campaign(args: Any, wanted: str | None) -> tuple[list[RunReport], Comparison]:
    """A campaign's started lanes' summaries and their comparison; raises ValueError with the message to show."""
    camp: Path = args.outs[0]
    try:
        lanes = read_lanes(camp)
    except InputError as e:
        raise ValueError(str(e)) from None
    if problem := _campaign_problem(args, camp, lanes):
        raise ValueError(problem)
    runs = [lane for lane in lanes if lane.is_run]
    summaries = _run_summaries([lane.out for lane in runs], args.judge)
    started = [(lane, s) for lane, s in zip(runs, summaries) if s.tasks]
    if not started:
        raise ValueError(f"{camp}: a campaign none of whose lanes ({lanes_words(lanes)}) has a task yet; nothing "
                         f"to report")
    measure = choose_measure([s for _, s in started], wanted)
    view = campaign_view(camp, lanes, [lane for lane, _ in started])
    comparison = compare_campaign(view, [s for _, s in started], measure)
    names = dict(zip(comparison.outs, comparison.runs))
    return [replace(with_measure(s, measure), name=names[s.out]) for _, s in started], comparison


def run(args: Any) -> int:
    outs: list[Path] = args.outs
    judges: list[Path] = args.judge
    campaign = next((o for o in outs if is_campaign(o)), None)
    if campaign is not None:
        return _run_campaign(args, campaign)
    if not outs and args.labels is None:
        return _fail("give run folders (OUT ...) or --labels FILE")
    if args.labels is None and (args.agent or args.judged or args.tasks):
        return _fail("--agent, --judged and --tasks go with --labels FILE")
    if judges and len(judges) not in (1, len(outs)):
        return _fail(f"--judge given {len(judges)} times for {len(outs)} runs; give it once per run or once")
    ui = getattr(args, "ui", False)
    if ui and (len(outs) != 1 or args.labels is not None):
        return _fail(f"--ui shows one run folder; {len(outs)} given" + (" and --labels" if args.labels else ""))
    if ui and not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail("--ui opens the console, which needs a terminal: run it in one, or drop --ui for the report "
                     "as text (--format table|md|csv|json)")
    if problem := web.problem(args):
        return _fail(problem)
    annotator = getattr(args, "annotator", None)
    if annotator is not None and not ui:
        return _fail("--annotator goes with --ui (the label screen `L` opens)")
    # --judge FILE: success is that judge's (labels in the folder do not override it), unless --measure says
    wanted = getattr(args, "measure", None) or ("judge" if judges else None)
    try:
        if annotator is not None:
            check_annotator(annotator)
            if annotator == FINAL:
                raise ValueError(f"--annotator {FINAL}: the reviewer's file; `om2w-tui label OUT --review` gives "
                                 f"final labels")
        summaries = _run_summaries(outs, judges)
        if args.labels is not None:
            summaries += _label_summaries(args)
        measure = choose_measure(summaries, wanted)
        summaries = [with_measure(s, measure) for s in summaries]
    except (ValueError, LabelFileError, NoCommonMeasure) as e:
        return _fail(str(e))
    if ui:
        from om2w_tui.frontends.console.app import run_console  # Textual only when the console is asked for

        judge = judges[0] if judges else None
        if judge is not None and not judge.is_file() and (outs[0] / judge).is_file():
            judge = outs[0] / judge
        return run_console(None, report=outs[0], judge=judge, measure=wanted, annotator=annotator)
    comparison = compare(summaries, repeated=args.repeats, measure=measure) if len(summaries) > 1 else None
    return _write(args, summaries, comparison)


def _run_campaign(args: Any, camp: Path) -> int:
    """`report CAMPAIGN`: its lanes reported and compared (every format, the site)."""
    if args.outs[0] != camp:
        return _fail(f"{camp} is a campaign's folder: give it alone (its lanes are reported and compared arm by arm), "
                     f"or give its lanes as run folders beside the others (e.g. {camp / 'ARM'} {args.outs[0]})")
    wanted = getattr(args, "measure", None) or ("judge" if args.judge else None)
    if getattr(args, "annotator", None) is not None:
        return _fail("--annotator goes with --ui (the label screen `L` opens)")
    try:
        if getattr(args, "html", None) is not None:     # the site's folder is checked against the lanes' folders
            lanes = read_lanes(camp)
            flags = copy.copy(args)
            flags.outs = [lane.out for lane in lanes]
            if problem := web.problem(flags):
                return _fail(problem)
        elif problem := web.problem(args):
            return _fail(problem)
        summaries, comparison = _campaign(args, wanted)
    except (ValueError, LabelFileError, NoCommonMeasure) as e:
        return _fail(str(e))
    return _write(args, summaries, comparison)


def _write(args: Any, summaries: list[RunReport], comparison: Comparison | None) -> int:
    """The report in the format asked for, or its site."""
    if getattr(args, "html", None) is not None:
        return web.write_site(args, summaries, comparison)
    if args.format == "table":
        from om2w_tui.frontends.console.report_table import print_table  # rich only for a table

        print_table(summaries, comparison)
    elif args.format == "md":
        sys.stdout.write(to_markdown(summaries, comparison))
    elif args.format == "csv":
        sys.stdout.write(to_csv(summaries, comparison))
        _say_notes(summaries)
    else:
        sys.stdout.write(to_json(summaries, comparison, per_task=not args.no_per_task))
    return 0


def _say_notes(summaries: list[RunReport]) -> None:
    """A run's notes and warnings, the lines the other formats write under its heading, on stderr for the CSV (its
    stdout stays one table), each naming its run: `note: OUT: ...`, then `warning: OUT: ...` as `tasks health` says
    its own."""
    for s in summaries:
        for kind, lines in (("note", run_notes(s)), ("warning", s.warnings)):
            for line in lines:
                named = line if line.startswith(f"{s.out}:") else f"{s.out}: {line}"
                print(f"{kind}: {named}", file=sys.stderr)
