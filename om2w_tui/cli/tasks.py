"""`om2w-tui tasks fetch`, `om2w-tui tasks refresh-dates` and `om2w-tui tasks health`: their flags, what they print
and their exit codes. The work itself is `benchmarks/fetch.py` (downloads with pins), `benchmarks/dates.py` (past
dates moved) and `evaluation/health.py` (every attempt over runs, the candidates for label 2), which neither print
nor exit."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from om2w_tui import exits
from om2w_tui.benchmarks.dates import DEFAULT_SITES, RefreshError, refresh_file
from om2w_tui.benchmarks.fetch import SOURCES, FetchError, fetch
from om2w_tui.resources import data_dir

EXIT_FAIL = exits.USAGE


def add_arguments(sub: Any) -> None:
    p = sub.add_parser("tasks", help="task files: fetch the official ones, refresh past booking dates; tasks' health "
                                     "over runs")
    tsub = p.add_subparsers(dest="tasks_command", metavar="{fetch,refresh-dates,health}")
    f = tsub.add_parser("fetch", help="download an official task file, check and validate it",
                        description="Download Online-Mind2Web (Hugging Face; may be gated: set HF_TOKEN) or "
                                    "WebVoyager (GitHub); a pinned revision is checked by sha256.")
    f.add_argument("bench", choices=sorted(SOURCES), help="om2w | webvoyager")
    f.add_argument("--revision", default=None,
                   help="om2w: a branch, tag or commit, or 2026-03 (pinned by sha256) (main); "
                        "webvoyager: a commit (5a78967, pinned)")
    f.add_argument("--to", type=Path, default=None,
                   help="the folder to write into (the data/ folder runs read by default)")
    f.add_argument("--sha256", default=None, help="the sha256 the file must have (pins any revision)")
    f.add_argument("--force", action="store_true", help="replace an existing file with other content")
    f.add_argument("--base-url", default=None,
                   help="scheme://host to fetch from instead of huggingface.co / raw.githubusercontent.com "
                        "(a mirror; the path stays the same)")
    r = tsub.add_parser("refresh-dates", help="move the past dates of booking tasks into the future",
                        description="Shift every dated phrase of the chosen tasks (Booking and Google Flights by "
                                    "default) by the smallest whole number of years that puts the task's earliest "
                                    "date on or after --today; ranges keep their length.")
    r.add_argument("input", type=Path, metavar="IN", help="a JSON lines task file (WebVoyager_data.jsonl)")
    r.add_argument("--out", type=Path, required=True, help="the refreshed file (never IN)")
    r.add_argument("--today", type=_date, default=None, help="YYYY-MM-DD (default: today)")
    r.add_argument("--sites", type=_csv, default=None,
                   help="comma-separated web_name values to refresh (Booking,Google Flights); 'none' for none")
    r.add_argument("--task-ids", type=_csv, default=[], help="comma-separated task ids to refresh as well")
    h = tsub.add_parser("health", help="every task's attempts over runs, and the candidates for label 2",
                        description="Per task, its attempts over the runs (and arms) and how each ended (bot wall, "
                                    "site error page, site down, timeout, model error, done, success); the tasks "
                                    "no run solved that met the site failing are listed as candidates for label 2 "
                                    "(not executable) with that evidence.")
    h.add_argument("outs", type=Path, nargs="+", metavar="OUT",
                   help="run folders, folders of runs, or campaigns' folders (each lane by arm and repeat; any dates)")
    h.add_argument("--format", choices=("table", "md", "csv", "json"), default="table", help="output format (table)")
    p.set_defaults(tasks_parser=p)


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _date(s: str) -> dt.date:
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s}: not a date (YYYY-MM-DD)") from None


def run(args: argparse.Namespace) -> int:
    if args.tasks_command == "fetch":
        return _run_fetch(args)
    if args.tasks_command == "refresh-dates":
        return _run_refresh(args)
    if args.tasks_command == "health":
        return _run_health(args)
    args.tasks_parser.print_help(sys.stderr)
    return EXIT_FAIL


def _run_fetch(args: argparse.Namespace) -> int:
    source = SOURCES[args.bench]
    rev = args.revision or source.default_rev
    print(f"fetching {source.name} revision {rev} ...", flush=True)
    try:
        to = args.to if args.to is not None else data_dir()   # refresh the files runs read without --tasks
        got = fetch(args.bench, args.revision, to, base_url=args.base_url, sha256=args.sha256, force=args.force)
    except FetchError as e:
        print(f"om2w-tui tasks fetch: {e}", file=sys.stderr)
        return EXIT_FAIL
    if got.pinned:
        check = "checksum ok (pinned)"
    elif got.known:
        check = f"not pinned; this is the known {got.known}"
    else:
        check = "not pinned and not a known revision: runs record its sha256 in run.json"
    verb = "already up to date:" if got.unchanged else "wrote"
    print(f"{verb} {got.path}: {got.tasks} tasks, sha256 {got.sha256}; {check}")
    return exits.OK


def _run_refresh(args: argparse.Namespace) -> int:
    today = args.today or dt.date.today()
    sites = list(DEFAULT_SITES) if args.sites is None else [s for s in args.sites if s.lower() != "none"]
    try:
        changes = refresh_file(args.input, args.out, today, sites, args.task_ids)
    except RefreshError as e:
        print(f"om2w-tui tasks refresh-dates: {e}", file=sys.stderr)
        return EXIT_FAIL
    moved = [c for c in changes if c["fragments"]]
    for c in changes:
        if c["fragments"]:
            frags = "; ".join(f"{old!r} -> {new!r}" for old, new in c["fragments"])
            print(f"{c['task_id']}: +{c['years']} year{'s' if c['years'] != 1 else ''}: {frags}")
        for note in c["notes"]:
            print(f"{c['task_id']}: note: {note}")
    print(f"{len(moved)} task(s) changed (today {today.isoformat()}, sites {', '.join(sites) or 'none'}"
          f"{', ids ' + ', '.join(args.task_ids) if args.task_ids else ''}) -> {args.out}")
    return exits.OK


def _run_health(args: argparse.Namespace) -> int:
    # evaluation is imported when the command runs: `om2w-tui run` builds this parser and pays nothing for it
    from om2w_tui.evaluation import health_text
    from om2w_tui.evaluation.health import HealthInputError, health

    try:
        found = health(args.outs)
    except HealthInputError as e:
        print(f"om2w-tui tasks health: {e}", file=sys.stderr)
        return EXIT_FAIL
    write = {"table": health_text.to_text, "md": health_text.to_markdown, "csv": health_text.to_csv,
             "json": health_text.to_json}[args.format]
    for w in found.warnings:   # on stderr, each once: the table, CSV or JSON on stdout stays whole
        print(f"warning: {w}", file=sys.stderr)
    sys.stdout.write(write(found))
    return exits.OK
