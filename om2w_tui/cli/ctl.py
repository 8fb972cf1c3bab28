"""`om2w-tui ctl OUT CMD [ARG]`: steer a running run from a script through its control socket
(`engine/control_socket.py`): status, pause, resume, kill TASK, requeue TASK, workers N, retry, stop. A short line
for people, or the answer as JSON with --json. Exit 0 when the run did it, 1 when it refused, 2 on bad usage or
when no run listens in OUT."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from om2w_tui import exits
from om2w_tui.engine.control_socket import NoRunListening, request
from om2w_tui.engine.events import RunSnapshot
from om2w_tui.engine.settings import BY_KEY
from om2w_tui.engine.wire import WireError, from_wire

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = exits.OK, exits.FAILED, exits.USAGE
# command -> (what its argument is, or None; help)
ACTIONS: dict[str, tuple[str | None, str]] = {
    "status": (None, "progress, running episodes with their step, dispatch, breaker, workers"),
    "pause": ("[TASK]", "start no new episode (running ones go on); with TASK: pause that episode"),
    "resume": ("[TASK]", "start episodes again; with TASK: resume that episode"),
    "kill": ("TASK", "end TASK's episode now, keeping its steps (recorded as killed)"),
    "requeue": ("TASK", "end TASK's episode now and put it back in the queue"),
    "workers": ("N", f"run N episodes at once from now on ({BY_KEY['workers'].kind.bounds_text()})"),
    "retry": (None, "put the tasks that ended in error back in the queue"),
    "stop": (None, "stop the run gracefully (running episodes end keeping their steps; --force: end them now)"),
}


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ctl", help="steer a running run from a script (status, pause, kill TASK, workers N, stop...)",
                       description="Send one command to the run whose --out is OUT, through its control socket "
                                   "(OUT/.om2w-control.sock), and print what it did. Exit 0: done; 1: the run "
                                   "refused (no such task running...); 2: bad usage, or no run listens in OUT.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="commands:\n" + "\n".join(f"  {k} {v[0] or ''}".ljust(20) + v[1]
                                                         for k, v in ACTIONS.items()))
    p.add_argument("out", type=Path, metavar="OUT", help="the running run's folder (its --out)")
    p.add_argument("action", choices=list(ACTIONS), metavar="CMD", help="one of: " + ", ".join(ACTIONS))
    p.add_argument("arg", nargs="?", default=None, metavar="ARG", help="TASK (a task id) or N, as the command takes")
    p.add_argument("--json", action="store_true", help="print the run's answer as one JSON object")
    p.add_argument("--force", action="store_true", help="stop: end the running episodes' processes now")
    p.add_argument("--socket", default=None, metavar="NAME",
                   help="the socket's file name in OUT, when several runs share the folder (shards)")


def _message(args: argparse.Namespace) -> dict[str, Any] | str:
    """The command to send, or what is wrong with the arguments."""
    what, _ = ACTIONS[args.action]
    msg: dict[str, Any] = {"cmd": args.action}
    if args.action == "workers":
        try:   # the --workers setting's own parser and bounds
            msg["n"] = BY_KEY["workers"].kind.parse(args.arg if args.arg is not None else "")
        except ValueError as e:
            return f"workers N: {e}"
    elif args.action in ("kill", "requeue"):
        if not args.arg:
            return f"{args.action} TASK: which task? (`om2w-tui ctl OUT status` lists the running ones)"
        msg["task"] = args.arg
    elif args.action in ("pause", "resume"):
        if args.arg:
            msg["task"] = args.arg
    elif args.arg is not None:
        return f"{args.action} takes no argument (got {args.arg!r})"
    if args.force:
        if args.action != "stop":
            return "--force goes with stop only"
        msg["force"] = True
    return msg


def _done(snap: RunSnapshot) -> int:
    """Tasks of the run settled, those done before it included (as the dashboard counts them)."""
    return sum(site.done for site in snap.sites)


def status_lines(run: dict[str, Any], snap: RunSnapshot) -> list[str]:
    s = snap.summary
    head = f"{run.get('out', '')}: {_done(snap)}/{s.total} done, {snap.running} running, {s.pending} queued"
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


def status_json(run: dict[str, Any], snap: RunSnapshot, wire: dict[str, Any]) -> dict[str, Any]:
    """A status answer for scripts: the essentials at the top, the whole snapshot beside them."""
    return {"ok": True, "out": run.get("out"), "pid": run.get("pid"),
            "done": _done(snap), "total": snap.summary.total,
            "pending": snap.summary.pending, "paused": snap.paused, "user_paused": snap.user_paused,
            "breaker": snap.breaker, "storage": snap.storage, "stopping": snap.stopping,
            "target_workers": snap.target_workers, "errors": snap.errors,
            "running": [{"slot": r.slot, "task_id": r.task_id, "state": r.state, "step": r.step,
                         "max_steps": r.max_steps, "site": r.site, "model_error": r.model_error}
                        for r in snap.slots if r.task_id is not None],
            "model": wire.get("model"), "run": run, "snapshot": wire}


def run(args: argparse.Namespace) -> int:
    msg = _message(args)
    if isinstance(msg, str):
        print(f"om2w-tui ctl: {msg}", file=sys.stderr)
        return EXIT_USAGE
    try:
        reply = request(args.out, msg, name=args.socket)
    except NoRunListening as e:
        print(f"om2w-tui ctl: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not reply.get("ok"):
        if args.json:
            print(json.dumps(reply))
        print(f"om2w-tui ctl: the run refused: {reply.get('error', '?')}", file=sys.stderr)
        return EXIT_REFUSED
    if args.action == "status":
        try:
            snap = from_wire(reply["snapshot"])
        except (KeyError, WireError) as e:
            print(f"om2w-tui ctl: the run's answer is not a status ({e})", file=sys.stderr)
            return EXIT_USAGE
        info = reply.get("run") or {}
        if args.json:
            print(json.dumps(status_json(info, snap, reply["snapshot"])))
        else:
            print("\n".join(status_lines(info, snap)))
        return EXIT_OK
    print(json.dumps(reply) if args.json else reply.get("message", "ok"))
    return EXIT_OK
