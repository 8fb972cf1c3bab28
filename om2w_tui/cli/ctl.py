"""`om2w-tui ctl OUT CMD [ARG]`: steer a running run from a script through its control socket
(`engine/control_socket.py`): status, pause, resume, kill TASK, requeue TASK, workers N, retry, stop. A short line
for people, or the answer as JSON with --json. Exit 0 when the run did it, 1 when it refused, 2 on bad usage or
when no run listens in OUT.

The commands, their arguments and their help are the protocol's declarations (`protocol/control.py`: each
command's `USAGE`); this module only turns the arguments into one of them and the answer into lines."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, assert_never, cast

from om2w_tui import exits
from om2w_tui.engine.control_socket import NoRunListening, request
from om2w_tui.engine.events import RunSnapshot
from om2w_tui.engine.results import statuses_text
from om2w_tui.engine.settings import BY_KEY
from om2w_tui.engine.wire import MESSAGES, StatusReply
from om2w_tui.protocol.codec import to_json
from om2w_tui.protocol.control import COMMANDS, ArgKind, Done, Refused, RunInfo, Status, Steer, Usage

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = exits.OK, exits.FAILED, exits.USAGE
# the commands ctl sends, by name: those the protocol gives a ctl usage (protocol/control.py)
SENT = cast("dict[str, type[Status | Steer]]",   # USAGE None marks the only one that is not (subscribe)
            {name: cls for name, cls in COMMANDS.types.items() if cls.USAGE is not None})
ARG_TEXT: dict[ArgKind, str] = {"none": "", "task": "TASK", "optional task": "[TASK]", "count": "N"}


def _usage(name: str) -> Usage:
    usage = SENT[name].USAGE
    assert usage is not None   # SENT holds only the commands that have one
    return usage


def _help(name: str) -> str:
    usage = _usage(name)
    if usage.arg == "count":   # the setting's bounds, as --workers says them
        return f"{usage.help} ({BY_KEY[usage.setting].kind.bounds_text()})"
    return usage.help


def _takes_force() -> list[str]:
    return [name for name, cls in SENT.items() if "force" in {f.name for f in dataclasses.fields(cls)}]


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ctl", help="steer a running run from a script (status, pause, kill TASK, workers N, stop...)",
                       description="Send one command to the run whose --out is OUT, through its control socket "
                                   "(OUT/.om2w-control.sock), and print what it did. Exit 0: done; 1: the run "
                                   "refused (no such task running...); 2: bad usage, or no run listens in OUT.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="commands:\n" + "\n".join(f"  {name} {ARG_TEXT[_usage(name).arg]}".ljust(20) + _help(name)
                                                         for name in SENT))
    p.add_argument("out", type=Path, metavar="OUT", help="the running run's folder (its --out)")
    p.add_argument("action", choices=list(SENT), metavar="CMD", help="one of: " + ", ".join(SENT))
    p.add_argument("arg", nargs="?", default=None, metavar="ARG", help="TASK (a task id) or N, as the command takes")
    p.add_argument("--json", action="store_true", help="print the run's answer as one JSON object")
    p.add_argument("--force", action="store_true",
                   help=f"{' and '.join(_takes_force())}: end the running episodes' processes now")
    p.add_argument("--arm", default=None, metavar="NAME",
                   help="pause, resume: hold (or let go) a campaign's arm: its lane's name, or an arm (all repeats)")
    p.add_argument("--socket", default=None, metavar="NAME",
                   help="the socket's file name in OUT, when several runs share the folder (shards)")


def _fields(name: str, arg: str | None) -> dict[str, Any] | str:
    """The command's fields its argument gives, or what is wrong with the argument."""
    usage = _usage(name)
    match usage.arg:
        case "count":
            try:   # the setting's own parser and bounds (--workers')
                return {"n": BY_KEY[usage.setting].kind.parse(arg if arg is not None else "")}
            except ValueError as e:
                return f"{name} N: {e}"
        case "task":
            if not arg:
                return f"{name} TASK: which task? (`om2w-tui ctl OUT status` lists the running ones)"
            return {"task": arg}
        case "optional task":
            return {"task": arg} if arg else {}
        case "none":
            return f"{name} takes no argument (got {arg!r})" if arg is not None else {}
        case _:
            assert_never(usage.arg)


def _command(args: argparse.Namespace) -> Status | Steer | str:
    """The command to send, or what is wrong with the arguments."""
    fields = _fields(args.action, args.arg)
    if isinstance(fields, str):
        return fields
    if args.arm is not None:
        if args.action not in ("pause", "resume") or args.arm == "" or args.arg is not None:
            return "--arm NAME goes with pause or resume only, without a TASK"
        fields["arm"] = args.arm
    if args.force:
        if args.action not in _takes_force():
            return f"--force goes with {' or '.join(_takes_force())} only"
        fields["force"] = True
    return SENT[args.action](**fields)


def answer_json(answer: Done | Refused) -> dict[str, Any]:
    """An answer for scripts: `ok`, then what the run said (`message` and the command's fields, or `error`)."""
    said = {k: v for k, v in to_json(answer).items() if v is not None}
    return {"ok": isinstance(answer, Done), **said}


def _done(snap: RunSnapshot) -> int:
    """Tasks of the run settled, those done before it included (as the dashboard counts them)."""
    return sum(site.done for site in snap.sites)


def status_lines(run: RunInfo, snap: RunSnapshot) -> list[str]:
    s = snap.summary
    head = f"{run.out}: {_done(snap)}/{s.total} done, {snap.running} running, {s.pending} queued"
    if snap.stopping:
        dispatch = "stopping"
    elif snap.breaker:
        dispatch = f"paused: {snap.breaker}"
    elif snap.storage:
        dispatch = f"paused: {snap.storage}"
    elif snap.model.guard:
        dispatch = "paused: model guard"
    else:
        dispatch = "paused" if snap.paused else "running"
    lines = [head, f"dispatch {dispatch}; workers {snap.target_workers}; errors {snap.errors}"]
    if run.end is not None:
        lines.insert(1, f"run {run.end.words}")
    if s.by_status:
        lines.append(f"episodes this run: {statuses_text(s.by_status)}")
    m = snap.model
    if m.calls:
        failed = ", ".join(f"{k} {n}" for k, n in sorted(m.failures.items(), key=lambda kv: -kv[1]))
        lines.append(f"model: {m.calls} calls, {m.ok} answered" + (f", failed: {failed}" if failed else "")
                     + (f"; guard: {m.guard}" if m.guard else ""))
    for row in snap.slots:
        if row.task_id is None:
            lines.append(f"  slot {row.slot}  {row.state}")
        else:
            budget = f"/{row.max_steps}" if row.max_steps else ""
            lines.append(f"  slot {row.slot}  {row.state}  {row.task_id}  step {row.step}{budget}  ({row.site})")
    return lines


def status_json(run: RunInfo, snap: RunSnapshot) -> dict[str, Any]:
    """A status answer for scripts: the essentials at the top, the whole snapshot (as the socket carries it) beside
    them."""
    return {"ok": True, "out": run.out, "pid": run.pid,
            "done": _done(snap), "total": snap.summary.total,
            "pending": snap.summary.pending, "paused": snap.paused, "user_paused": snap.user_paused,
            "breaker": snap.breaker, "storage": snap.storage, "stopping": snap.stopping,
            "target_workers": snap.target_workers, "errors": snap.errors, "by_status": dict(snap.summary.by_status),
            "running": [{"slot": r.slot, "task_id": r.task_id, "state": r.state, "step": r.step,
                         "max_steps": r.max_steps, "site": r.site, "model_error": r.model_error}
                        for r in snap.slots if r.task_id is not None],
            "model": to_json(snap.model), "run": to_json(run), "snapshot": MESSAGES.encode(snap)}


def run(args: argparse.Namespace) -> int:
    command = _command(args)
    if isinstance(command, str):
        print(f"om2w-tui ctl: {command}", file=sys.stderr)
        return EXIT_USAGE
    try:
        answer = request(args.out, command, name=args.socket)
    except NoRunListening as e:
        print(f"om2w-tui ctl: {e}", file=sys.stderr)
        return EXIT_USAGE
    match answer:
        case Refused(error=error):
            if args.json:
                print(json.dumps(answer_json(answer)))
            print(f"om2w-tui ctl: the run refused: {error}", file=sys.stderr)
            return EXIT_REFUSED
        case StatusReply(run=info, snapshot=snap):
            print(json.dumps(status_json(info, snap)) if args.json else "\n".join(status_lines(info, snap)))
            return EXIT_OK
        case Done(message=message):
            print(json.dumps(answer_json(answer)) if args.json else message)
            return EXIT_OK
        case _:
            assert_never(answer)
