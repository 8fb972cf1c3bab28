"""`om2w-tui attach OUT`: the console's dashboard on a run going on elsewhere (headless, or another console), through
its control socket, with every control; `q` detaches and the run goes on. Several consoles may attach at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from om2w_tui import exits
from om2w_tui.engine.control_socket import NoRunListening
from om2w_tui.frontends.remote import RemoteRun

EXIT_USAGE = exits.USAGE


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("attach", help="open the dashboard on a running run (q detaches; the run goes on)",
                       description="Open the console's dashboard on the run whose --out is OUT (headless or in "
                                   "another console), through its control socket (OUT/.om2w-control.sock). Every "
                                   "control works; q detaches and leaves the run going; the palette's \"Stop the "
                                   "run\" stops it for everyone.")
    p.add_argument("out", type=Path, metavar="OUT", help="the running run's folder (its --out)")
    p.add_argument("--socket", default=None, metavar="NAME",
                   help="the socket's file name in OUT, when several runs share the folder (shards)")


def run(args: argparse.Namespace) -> int:
    remote = RemoteRun(args.out, args.socket)
    # is a run there? asked before the screen opens, so that the answer is a plain line and exit code 2
    try:
        remote.check()
    except NoRunListening as e:
        print(f"om2w-tui attach: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(f"om2w-tui attach: the console needs a terminal; without one use `om2w-tui ctl {args.out} status`",
              file=sys.stderr)
        return EXIT_USAGE
    from om2w_tui.frontends.console.app import run_console  # Textual only when the console opens

    return run_console(None, attach=remote)
