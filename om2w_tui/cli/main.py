"""Command line: parses arguments into a RunConfig and hands it to a front end. Nothing else lives here.

    om2w-tui                      the console (launch screen)
    om2w-tui run [flags]          a run: the console's dashboard, or --no-ui for the headless log
    om2w-tui campaign PLAN.toml   several arms and repeats paired on one queue and pacer (run --arm A --arm B too)
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
from typing import Any

from om2w_tui import exits, pipes
from om2w_tui.cli import tools as tools_cli
from om2w_tui.cli.argtypes import number, setting_type
from om2w_tui.engine.campaign_launch import campaign_checks, campaign_preflight
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import WARNING, Preflight, UsageError, preflight, run_checks
from om2w_tui.engine.measured import resumes_changed
from om2w_tui.engine.plan import (
    Campaign,
    PlanError,
    config_from_values,
    read_plan,
    resolve,
    short_form,
    unknown_arms,
)
from om2w_tui.engine.settings import BEYOND, SETTINGS, Choice, Switch, changed
from om2w_tui.evaluation.live_judge import LIVE_JUDGE
from om2w_tui.frontends.headless import run_headless

EXIT_USAGE = exits.USAGE
COMPANIONS = (LIVE_JUDGE,)   # what runs beside a run: its judge, when it asks for one (--judge-url)


class _Arms(argparse.Action):
    """--arm: the run's arm (the last given), and every arm given kept in `arms` (two or more: the short form of a
    campaign, `run --arm base --arm agent`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.arms = [*(getattr(namespace, "arms", None) or []), values]


def add_run_flags(p: argparse.ArgumentParser, *, demo: bool = False, arms: bool = False) -> None:
    """The run's flags, from the one declaration of each setting (engine/settings.py); the demo fixes a few. `arms`:
    --arm may be given again (`run --arm base --arm agent`: a campaign of those arms, the short form)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for st in SETTINGS:
        if demo and not st.demo:
            continue
        g = groups.get(st.group) or groups.setdefault(st.group, p.add_argument_group(st.group))
        default = st.demo_default if demo and st.demo_default is not None else st.default
        if st.bench_defaults and not demo:   # unset: the benchmark's own default, filled in by config_from_args
            default = None
        help_text = st.help_text(demo)
        if isinstance(st.kind, Switch):
            g.add_argument(st.flag, dest=st.key, action="store_true" if st.kind.sets else "store_false",
                           help=help_text)
        elif isinstance(st.kind, Choice):
            g.add_argument(st.flag, dest=st.key, choices=st.choices, default=default, help=help_text)
        elif arms and st.key == "arm":
            g.add_argument(st.flag, dest=st.key, type=setting_type(st), action=_Arms, default=default,
                           metavar=st.metavar, help=help_text)
        else:
            g.add_argument(st.flag, dest=st.key, type=setting_type(st), default=default, metavar=st.metavar,
                           help=help_text)
        if st.key == "site_slots":
            g.add_argument("--no-pacing", action="store_true",
                           help="no pacing at all: as many episodes on a site as slots, no cooldown (the seed's "
                                "default)")
    if not demo:   # this node's share of the task file: the RunConfig's `shard`, from either form
        c = groups[BEYOND]
        c.add_argument("--shard", default=None, metavar="K/N",
                       help="run only shard K of N (K counts from 0: 0..N-1): whole sites, split by task count the "
                            "same way on every node; shards may share one --out")
        c.add_argument("--slot-range", default=None, metavar="A:B",
                       help="the seed's form: shards A..B-1 of --workers W on this node, with B-A workers")
    p.add_argument("--no-ui", action="store_true", help="no console: plain log lines (for clusters and CI)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="om2w-tui", description="A console for live web-agent benchmark runs.")
    sub = ap.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a benchmark (or the offline suite)")
    add_run_flags(run, arms=True)
    campaign = sub.add_parser("campaign", help="several arms (and repeats) of one benchmark paired on one queue and "
                                               "pacer, from a plan (TOML); flags given after it replace its top "
                                               "level")
    campaign.add_argument("plan", type=Path, metavar="PLAN.toml",
                          help="the plan: shared settings by their flags' names, repeats = K, one [arms.NAME] table "
                               "per arm with what it changes (docs/campaigns.md)")
    add_run_flags(campaign)
    for action in campaign._actions:   # only the flags given: they replace the plan's top level
        if action.dest not in ("help", "plan"):
            action.default = argparse.SUPPRESS
    demo = sub.add_parser("demo", help="the offline suite with the oracle model, into a new folder")
    add_run_flags(demo, demo=True)
    doctor = sub.add_parser("doctor", help="check a run's settings, or a campaign's plan, before starting it (task "
                                           "file, endpoints, browser)")
    doctor.add_argument("plan", type=Path, metavar="PLAN.toml", nargs="?",
                        help="a campaign's plan, checked as `om2w-tui campaign PLAN.toml [flags]` would check it")
    add_run_flags(doctor, arms=True)
    oracle = sub.add_parser("oracle", help="serve the offline sites and the oracle model server")
    oracle.add_argument("--port", type=number("--port", int, 0, maximum=65535), default=8400,
                        help="the oracle's port (0-65535, 0: any free one; default: 8400)")
    oracle.add_argument("--host", default="127.0.0.1")
    tools_cli.register(sub)
    return ap


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, parsed; an argument the subcommand does not know is refused with that subcommand's usage
    (argparse hands a subcommand's unknown arguments up to the main parser, which printed the main usage)."""
    ap = build_parser()
    args, unknown = ap.parse_known_args(argv)
    if unknown:
        command_parser(ap, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def command_parser(ap: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)subcommand `args` chose: `tasks fetch`'s, `run`'s, or the main one."""
    parser = ap
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = sub.choices.get(getattr(args, sub.dest, None) or "") if sub is not None else None
        if not isinstance(chosen, argparse.ArgumentParser):
            return parser
        parser = chosen


def config_from_args(args: argparse.Namespace, share: bool = True) -> RunConfig:
    """Every RunConfig field the command's flags name (flag dest == field name); the demo fixes the rest. `share`
    False: without this node's share (--shard, --slot-range), as every node of a campaign is given it."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(RunConfig) if hasattr(args, f.name)}
    if hasattr(args, "shard") and share:   # this node's share: '' for the whole task file
        given.update(shard=args.shard or "", slot_range=args.slot_range)
    given["no_pacing"] = getattr(args, "no_pacing", False)
    if args.command == "demo":
        given.update(out=args.out or Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S"), bench="offline",
                     model="oracle")
    elif args.out is None:
        raise SystemExit(f"om2w-tui {args.command}: --out is required (the run's folder)")
    try:   # the same reading of the flags' values a campaign's plan gets (engine/plan.py)
        return config_from_values(given)
    except ValueError as e:
        raise SystemExit(str(e)) from None


def arms_given(args: argparse.Namespace) -> list[str]:
    """The arms --arm named, in order, as given ([] when it was not given): one named twice is the short form's to
    refuse (engine/plan.py's short_form), never dropped here."""
    return list(getattr(args, "arms", None) or [])


def campaign_from_args(args: argparse.Namespace) -> Campaign | None:
    """`campaign PLAN.toml [flags]`: the plan, the flags given replacing its top level; `run --arm A --arm B`: the
    short form; None for a run. Raises PlanError (a usage error: exit 2)."""
    if args.command == "campaign":
        overrides = {k: v for k, v in vars(args).items() if k not in ("command", "plan", "no_ui")}
        return resolve(read_plan(args.plan), overrides)
    arms = arms_given(args)
    if len(arms) > 1 and (problem := unknown_arms(arms)):   # every one named (the checks stop at the first)
        raise PlanError(problem)
    return short_form(config_from_args(args), arms, config_from_args(args, share=False)) if len(arms) > 1 else None


def has_terminal() -> bool:
    """Whether the console can run here: keys come from a terminal and the screen goes to one."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _fail(message: str) -> int:
    print(f"om2w-tui: {message}", file=sys.stderr)
    return EXIT_USAGE


def doctor(cfg: RunConfig | Campaign) -> int:
    """The preflight checks as a table (a campaign's: its own, the shared ones, each lane's); exit 0 when a run
    could start (warnings too: they say what will go wrong and its remedy), 2 when not."""
    from rich.table import Table  # rich only for this table: the other commands start without it

    from om2w_tui.frontends.console.report_table import printed_console  # as above

    pre, checks = (campaign_checks(cfg, companions=COMPANIONS) if isinstance(cfg, Campaign)
                  else run_checks(cfg, companions=COMPANIONS))
    table = Table(title="om2w-tui doctor", show_lines=False)
    table.add_column("check")
    table.add_column("", width=4)
    table.add_column("detail", overflow="fold")
    for name, ok, detail in checks:
        mark = "[yellow]warn[/]" if ok == WARNING else "[green]ok[/]" if ok else "[red]no[/]"
        table.add_row(name, mark, detail)
    configs = [lane.config for lane in cfg.lanes] if isinstance(cfg, Campaign) else [cfg]
    for c in configs:   # a folder resumed with --resume-changed before: said each time, as `report` warns of it
        for said in resumes_changed(c.out):
            table.add_row("resumed changed" if c is cfg else f"{c.out.name}: resumed changed", "[yellow]warn[/]",
                          said)
    for c in configs:
        table.add_row("settings" if c is cfg else f"{c.out.name}: its flags", "",
                      " ".join(changed(c)) or "every setting at its default")
    printed_console().print(table)   # a file or a pipe gets the whole rows, never folded at 80 columns
    return exits.OK if pre is not None else EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    """The command line's one entry point (`om2w-tui`, `python -m om2w_tui`): the command, and a reader of its output
    that went away (`om2w-tui ctl OUT status | head -1`) ends it quietly, whichever command printed."""
    try:
        code = _command(argv)
        sys.stdout.flush()   # what is still buffered meets a closed pipe here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        if not pipes.gone(sys.stdout):   # another pipe broke (a socket, a child's stdin): an error to show, not this
            raise
        # stdout onto /dev/null and exit 1 (exits.FAILED: the output was not all read), as rich's console does for
        # `report`'s table; not 141 (128 + SIGPIPE, a shell's "killed by a signal"), which no om2w-tui command exits
        # with
        pipes.to_devnull(sys.stdout)
        return exits.FAILED


def _command(argv: list[str] | None) -> int:
    args = parse_args(argv)
    if args.command == "oracle":
        from om2w_tui.offline.oracle import main as oracle_main  # the oracle's modules only for this subcommand

        return oracle_main(["--port", str(args.port), "--host", args.host]) or exits.OK
    code = tools_cli.run(args)
    if code is not None:
        return code
    if args.command is None:
        if not has_terminal():
            return _fail("the console needs a terminal; without one (nohup, Slurm, cron) use "
                         "`om2w-tui run --no-ui ...`")
        from om2w_tui.frontends.console.app import run_console  # Textual only for the console

        return run_console(None)
    checked = args.command == "doctor"
    if checked and args.plan is not None:   # the plan and its flags read as `campaign` reads them
        given = list(sys.argv[1:] if argv is None else argv)
        at = given.index("doctor")
        args = parse_args([*given[:at], "campaign", *given[at + 1:]])
    try:
        campaign = campaign_from_args(args)
        cfg: RunConfig | Campaign = campaign or config_from_args(args)
    except SystemExit as e:
        return _fail(str(e))
    except PlanError as e:
        return _fail(str(e))
    if campaign is None and getattr(args, "pair_hold", None):   # a run has no units of one task to pair
        return _fail("--pair-hold: a campaign's (several arms or repeats: `om2w-tui campaign PLAN.toml`, or "
                     "`run --arm A --arm B`); a run has no units of one task to keep a slot for")
    if checked:
        return doctor(cfg)
    try:
        pre = (campaign_preflight(cfg, companions=COMPANIONS) if isinstance(cfg, Campaign)
               else preflight(cfg, companions=COMPANIONS))
    except UsageError as e:
        return _fail(str(e))
    return launch(pre, getattr(args, "no_ui", False))


def launch(pre: Preflight, no_ui: bool) -> int:
    """A checked run (or campaign) in the console, or headless with --no-ui or without a terminal."""
    if not no_ui and not has_terminal():
        # batch use (nohup, Slurm, cron): the console cannot draw, so the run goes on headless and says so first
        print("om2w-tui: no terminal, so running headless (as with --no-ui)", flush=True)
        no_ui = True
    if no_ui:
        try:
            return asyncio.run(run_headless(pre))
        except UsageError as e:   # found only as the run opens (another run took the out folder meanwhile)
            return _fail(str(e))
    from om2w_tui.frontends.console.app import run_console  # Textual only for the console

    return run_console(pre)


if __name__ == "__main__":
    sys.exit(main())
