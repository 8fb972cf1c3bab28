"""Command line: parses arguments into a RunConfig and hands it to a front end. Nothing else lives here.

    om2w-tui                      the console (launch screen)
    om2w-tui run [flags]          a run: the console's dashboard, or --no-ui for the headless log
    om2w-tui demo [--no-ui]       the offline suite with the oracle into a new folder under runs/
    om2w-tui oracle --port P      the offline sites and the oracle model server, standalone
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from pathlib import Path

from . import tools_cli
from .argtypes import count as _count
from .argtypes import csv as _csv
from .argtypes import positive_int as _positive_int
from .argtypes import seconds as _seconds
from .config import BENCHES, COORDINATES, DEFAULT_VLLM, EXECUTORS, SCHEMAS, RunConfig
from .episode.browser import DEFAULT_LOCALE, DEFAULT_TIMEZONE, DEFAULT_VIEWPORT
from .episode.instruction import TemplateError, read_template
from .headless import run_headless
from .launch import UsageError, preflight, run_checks

EXIT_USAGE = 2


def add_run_flags(p: argparse.ArgumentParser, *, demo: bool = False) -> None:
    g = p.add_argument_group("what to run")
    if not demo:
        g.add_argument("--bench", choices=BENCHES, default="om2w",
                       help="om2w | webvoyager | offline (the built-in suite; no model or internet needed)")
        g.add_argument("--tasks", type=Path, default=None,
                       help="task file: Online-Mind2Web JSON, WebVoyager JSONL, or plain JSON/JSONL of that shape")
        g.add_argument("--task-ids", type=_csv, default=[], help="comma-separated task ids to run")
        g.add_argument("--level", dest="levels", type=_csv, default=[], help="only these levels (easy,medium,hard)")
        g.add_argument("--site", dest="sites", type=_csv, default=[], help="only tasks on these sites (host names)")
        g.add_argument("--limit", type=_count("--limit"), default=0, help="at most this many tasks (0: all)")
    g.add_argument("--out", type=Path, default=None if not demo else None,
                   help="the run's folder: one subfolder per task, results.jsonl, run.json" +
                   (" (default: runs/demo-<time>)" if demo else ""))
    m = p.add_argument_group("the agent")
    if not demo:
        m.add_argument("--arm", default="base", help="the agent: base (one browser-use Agent) or a plugin arm")
        m.add_argument("--model", default="qwen35-4b",
                       help="served model name (oracle, oracle-slow, ... start the built-in oracle)")
        m.add_argument("--vllm", default=None,
                       help=f"OpenAI-compatible endpoint (base URL) ({DEFAULT_VLLM}); with an oracle model and no "
                            f"--vllm, om2w-tui serves the oracle itself")
        m.add_argument("--api-key-env", default="OPENAI_API_KEY",
                       help="the environment variable holding the API key (never written anywhere)")
        m.add_argument("--temperature", type=_seconds("--temperature", True), default=0.0,
                       help="sampling temperature (0)")
        m.add_argument("--no-vision", dest="vision", action="store_false",
                       help="send no screenshots to the model (text-only models)")
    if not demo:
        a = p.add_argument_group("arms and training rows")
        a.add_argument("--planner-name", default=None, help="--arm agent: the planner's served model (--model)")
        a.add_argument("--adapters", default="drag,io,select,rest,reasoning",
                       help="--arm agent: specialist families served under their own names")
        a.add_argument("--fallback", default=None, help="--arm agent: the model for other families (--model)")
        a.add_argument("--planner-turns", type=_positive_int("--planner-turns"), default=8,
                       help="--arm agent: the planner's turns (8)")
        a.add_argument("--record-rows", action="store_true",
                       help="record every model call as a training row in <out>/<task>/rows/")
        a.add_argument("--hint-field", default=None,
                       help="a task field appended to the instruction while acting, stripped from the rows")
    m.add_argument("--instruction-template", dest="instruction_template_file", type=Path, default=None, metavar="FILE",
                   help="a file with the agent's instruction, {task} and {website} filled in (default: the seed's: "
                        "the task, then the website it starts on)")
    m.add_argument("--coordinates", choices=COORDINATES, default="normalized",
                   help="clicks and drags by coordinates: off, pixels of the screenshot, or normalized to a 0-1000 "
                        "grid as Qwen-VL models answer (normalized, as the seed)")
    b = p.add_argument_group("the browser (the same on every host)")
    b.add_argument("--viewport", default=DEFAULT_VIEWPORT, metavar="WxH",
                   help=f"WIDTHxHEIGHT in CSS pixels ({DEFAULT_VIEWPORT})")
    b.add_argument("--user-agent", default="auto",
                   help="the user agent string (auto: a desktop Chrome of the browser's own version)")
    b.add_argument("--locale", default=DEFAULT_LOCALE,
                   help=f"the browser's language and Accept-Language ({DEFAULT_LOCALE})")
    b.add_argument("--timezone", default=DEFAULT_TIMEZONE, help=f"an IANA time zone ({DEFAULT_TIMEZONE})")
    m.add_argument("--max-steps", type=_positive_int("--max-steps"), default=30,
                   help="agent steps per episode (a task's own max_steps wins)")
    m.add_argument("--timeout", type=_seconds("--timeout", False), default=1800.0,
                   help="seconds per episode (its finished steps are kept)")
    m.add_argument("--llm-timeout", type=_seconds("--llm-timeout", False), default=120.0,
                   help="seconds for one model call before it is retried (120)")
    m.add_argument("--trajectory-schema", choices=SCHEMAS, default="v1",
                   help="result.json layout: v1 (the evaluator's classic) or v2 (online-mind2web-v2 steps)")
    m.add_argument("--retries", type=_count("--retries"), default=1,
                   help="new attempts for an episode the harness failed (browser crash, endpoint down) (1)")
    s = p.add_argument_group("pacing and slots")
    s.add_argument("--workers", type=_positive_int("--workers"), default=2 if demo else 4,
                   help="episodes at once (one worker process each)")
    s.add_argument("--pace-cooldown", type=_seconds("--pace-cooldown", True), default=0.0 if demo else 120.0,
                   help="seconds from the end of one episode on a site to the start of the next")
    s.add_argument("--site-slots", type=_count("--site-slots"), default=1, metavar="N",
                   help="episodes at once on one site (1; 0: no limit)")
    s.add_argument("--no-pacing", action="store_true",
                   help="no pacing at all: as many episodes on a site as slots, no cooldown (the seed's default)")
    f = p.add_argument_group("faults")
    f.add_argument("--breaker-after", type=_positive_int("--breaker-after"), default=3,
                   help="infra errors in a row that pause dispatch until the endpoint answers again (3)")
    f.add_argument("--probe-interval", type=_seconds("--probe-interval", False), default=30.0,
                   help="seconds between endpoint probes while dispatch is paused by the breaker (30)")
    s.add_argument("--chromium", default=None, help="path to Chromium/Chrome (default: found automatically)")
    x = p.add_argument_group("where episodes run")
    x.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: worker processes on this machine; ray: one Ray actor per slot anywhere in a Ray "
                        "cluster (pip install 'om2w-tui[ray]'; nodes advertise --resources '{\"browser\": N}')")
    x.add_argument("--ray-address", default=None, metavar="auto|HOST:PORT",
                   help="--executor ray: the cluster to join (default: $RAY_ADDRESS, else auto: the one on this node)")
    x.add_argument("--ray-cpus", type=_seconds("--ray-cpus", False), default=1.0, metavar="N",
                   help="--executor ray: CPUs each actor (one worker and its Chromium) asks, besides a browser (1)")
    p.add_argument("--no-ui", action="store_true", help="no console: plain log lines (for clusters and CI)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="om2w-tui", description="A console for live web-agent benchmark runs.")
    sub = ap.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a benchmark (or the offline suite)")
    add_run_flags(run)
    demo = sub.add_parser("demo", help="the offline suite with the oracle model, into a new folder")
    add_run_flags(demo, demo=True)
    doctor = sub.add_parser("doctor", help="check a run's settings before starting it (task file, endpoint, browser)")
    add_run_flags(doctor)
    oracle = sub.add_parser("oracle", help="serve the offline sites and the oracle model server")
    oracle.add_argument("--port", type=int, default=8400, help="the oracle's port (default 8400)")
    oracle.add_argument("--host", default="127.0.0.1")
    tools_cli.register(sub)
    return ap


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """Every RunConfig field the command's flags name (flag dest == field name); the demo fixes the rest."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(RunConfig) if hasattr(args, f.name)}
    if getattr(args, "no_pacing", False):
        given.update(site_slots=0, pace_cooldown=0.0)
    if args.command == "demo":
        given.update(out=args.out or Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S"), bench="offline",
                     model="oracle")
    elif args.out is None:
        raise SystemExit(f"om2w-tui {args.command}: --out is required (the run's folder)")
    if given.get("instruction_template_file") is not None:
        try:
            given["instruction_template"] = read_template(given["instruction_template_file"])
        except TemplateError as e:
            raise SystemExit(str(e)) from None
    return RunConfig(**given)


def has_terminal() -> bool:
    """Whether the console can run here: keys come from a terminal and the screen goes to one."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _fail(message: str) -> int:
    print(f"om2w-tui: {message}", file=sys.stderr)
    return EXIT_USAGE


def doctor(cfg: RunConfig) -> int:
    """The preflight checks as a table; exit 0 when a run could start, 2 when not."""
    # rich only for this table: the other commands start without it
    from rich.console import Console
    from rich.table import Table

    pre, checks = run_checks(cfg)
    table = Table(title="om2w-tui doctor", show_lines=False)
    table.add_column("check")
    table.add_column("", width=2)
    table.add_column("detail", overflow="fold")
    for name, ok, detail in checks:
        table.add_row(name, "[green]ok[/]" if ok else "[red]no[/]", detail)
    Console(soft_wrap=False).print(table)
    return 0 if pre is not None else EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "oracle":
        from .offline.oracle import main as oracle_main  # the oracle's modules only for this subcommand

        return oracle_main(["--port", str(args.port), "--host", args.host]) or 0
    code = tools_cli.run(args)
    if code is not None:
        return code
    if args.command is None:
        if not has_terminal():
            return _fail("the console needs a terminal; without one (nohup, Slurm, cron) use "
                         "`om2w-tui run --no-ui ...`")
        from .ui.app import run_console  # Textual only for the console

        return run_console(None)
    try:
        cfg = config_from_args(args)
    except SystemExit as e:
        return _fail(str(e))
    if args.command == "doctor":
        return doctor(cfg)
    try:
        pre = preflight(cfg)
    except UsageError as e:
        return _fail(str(e))
    if not args.no_ui and not has_terminal():
        # batch use (nohup, Slurm, cron): the console cannot draw, so the run goes on headless and says so first
        print("om2w-tui: no terminal, so running headless (as with --no-ui)", flush=True)
        args.no_ui = True
    if args.no_ui:
        try:
            return asyncio.run(run_headless(pre))
        except UsageError as e:   # found only as the run opens (another run took the out folder meanwhile)
            return _fail(str(e))
    from .ui.app import run_console  # Textual only for the console

    return run_console(pre)


if __name__ == "__main__":
    sys.exit(main())
