"""`om2w-tui ctl OUT CMD [ARG]`: steer a running run from a script through its control socket
(`engine/control_socket.py`): status, pause, resume, kill TASK, requeue TASK, workers N, retry, stop; in a campaign
`pause --arm NAME` / `resume --arm NAME` hold and let go one arm's units. A short line
for people, or the answer as JSON with --json. Exit 0 when the run did it, 1 when it refused, 2 on bad usage or
when no run listens in OUT.

OUT a campaign's lane's folder (`OUT/<lane>`, `campaign_folder.lane_of`) addresses that lane: the command carries
it, so kill, requeue, pause and resume TASK act on that lane's episode of the task only (refused when the lane runs
none), and pause or resume without a TASK hold or let go that lane's arm; status, workers, retry and stop mean the
whole campaign from any of its folders.

A campaign (or run) split with `--shard K/N` into processes sharing OUT is one process per shard, each on its own
socket: `status` and `pause|resume --arm NAME` (or a lane's folder's pause|resume) mean the whole campaign, so
without --socket they go to every shard's process there, each answer named by its shard, and a shard no process
serves now is named as not running (an error only when none answers). Any other command reaches one shard, named
with --socket.

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
from om2w_tui.campaign_folder import lane_of
from om2w_tui.engine.control_socket import NoRunListening, ShardListening, request, shards
from om2w_tui.engine.events import RunSnapshot
from om2w_tui.engine.pairing import pairing_words
from om2w_tui.engine.results import statuses_text
from om2w_tui.engine.settings import BY_KEY
from om2w_tui.engine.wire import MESSAGES, Answer, StatusReply
from om2w_tui.frontends.run_state import lane_line
from om2w_tui.protocol.codec import to_json
from om2w_tui.protocol.control import COMMANDS, ArgKind, Done, Pause, Refused, Resume, RunInfo, Status, Steer, Usage

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
    p.add_argument("out", type=Path, metavar="OUT",
                   help="the running run's folder (its --out); a campaign's lane's folder (OUT/<lane>): that lane's "
                        "episode of TASK only, and pause|resume without TASK hold that lane's arm")
    p.add_argument("action", choices=list(SENT), metavar="CMD", help="one of: " + ", ".join(SENT))
    p.add_argument("arg", nargs="?", default=None, metavar="ARG", help="TASK (a task id) or N, as the command takes")
    p.add_argument("--json", action="store_true", help="print the run's answer as one JSON object")
    p.add_argument("--force", action="store_true",
                   help=f"{' and '.join(_takes_force())}: end the running episodes' processes now")
    p.add_argument("--arm", default=None, metavar="NAME",
                   help="pause, resume: hold (or let go) a campaign's arm: its lane's name, or an arm (all repeats)")
    p.add_argument("--socket", default=None, metavar="NAME",
                   help="the socket's file name in OUT, when several runs share the folder (shards); without it "
                        "status and pause|resume --arm go to every shard's run there")


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
            return ("--arm NAME goes with pause or resume only, without a TASK (one lane's episode of a task: give "
                    "that lane's folder as OUT)")
        fields["arm"] = args.arm
    if args.force:
        if args.action not in _takes_force():
            return f"--force goes with {' or '.join(_takes_force())} only"
        fields["force"] = True
    if (lane := lane_of(args.out)) is not None and "lane" in {f.name for f in dataclasses.fields(SENT[args.action])}:
        fields["lane"] = lane   # addressed to a lane's folder: that lane's episode, or its arm, only
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
    where = run.out
    if snap.lanes and (lane := lane_of(Path(run.out))) is not None:   # the counts are the whole campaign's
        where = f"{Path(run.out).parent} (the campaign, through its lane {lane})"
    head = f"{where}: {_done(snap)}/{s.total} done, {snap.running} running, {s.pending} queued"
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
    lines += [lane_line(lane) for lane in snap.lanes]   # a campaign: each arm's repeat, as the headless log says it
    if snap.summary.pairing.pairs.n or snap.summary.pairing.span.n:
        from om2w_tui.evaluation.text_formats import fmt_seconds  # the reports' durations, only when a gap is said

        lines.append(pairing_words(snap.summary.pairing, fmt_seconds))
    for row in snap.slots:
        if row.task_id is None:
            lines.append(f"  slot {row.slot}  {row.state}")
        else:
            budget = f"/{row.max_steps}" if row.max_steps else ""
            task = f"{row.lane}/{row.task_id}" if row.lane else row.task_id
            lines.append(f"  slot {row.slot}  {row.state}  {task}  step {row.step}{budget}  ({row.site})")
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
                         "max_steps": r.max_steps, "site": r.site, "model_error": r.model_error,
                         **({"lane": r.lane} if r.lane else {})}
                        for r in snap.slots if r.task_id is not None],
            "model": to_json(snap.model), "run": to_json(run), "snapshot": MESSAGES.encode(snap)}


def for_every_shard(command: Status | Steer) -> bool:
    """Whether the command means the whole campaign (its state, an arm held), so every shard's process is asked."""
    return isinstance(command, Status) or (isinstance(command, Pause | Resume) and command.task is None
                                           and (command.arm is not None or command.lane is not None))


def _ask_each(out: Path, command: Status | Steer, split: list[ShardListening]) -> list[tuple[str, Answer | str]]:
    """Each shard's answer, or why it gave none (not running, or it ended before it answered)."""
    answers: list[tuple[str, Answer | str]] = []
    for shard in split:
        if shard.listener is None:
            answers.append((shard.label, "not running"))
            continue
        try:
            answers.append((shard.label, request(out, command, name=shard.listener.socket)))
        except NoRunListening as e:
            answers.append((shard.label, f"not answering ({e})"))
    return answers


def _shard_json(answer: Answer | str) -> dict[str, Any]:
    match answer:
        case str():
            return {"ok": False, "answered": False, "error": answer}
        case StatusReply(run=info, snapshot=snap):
            return {"answered": True, **status_json(info, snap)}
        case Done() | Refused():
            return {"answered": True, **answer_json(answer)}
        case _:
            assert_never(answer)


def each_shard(args: argparse.Namespace, command: Status | Steer, split: list[ShardListening]) -> int:
    """The command sent to every shard's process in OUT: each answer under its shard's name; exit 0 when every
    running shard did it, 1 when one refused, 2 when none answered."""
    answers = _ask_each(args.out, command, split)
    if all(isinstance(a, str) for _, a in answers):
        said = "; ".join(f"{label}: {a}" for label, a in answers)
        print(f"om2w-tui ctl: {args.out}: no shard of the campaign answered ({said})", file=sys.stderr)
        return EXIT_USAGE
    refused = any(isinstance(a, Refused) for _, a in answers)
    if args.json:
        print(json.dumps({"ok": not refused, "shards": [{"shard": label, **_shard_json(a)} for label, a in answers]}))
    for label, answer in answers:
        match answer:
            case Refused(error=error):
                print(f"om2w-tui ctl: {label}: the run refused: {error}", file=sys.stderr)
            case _ if args.json:
                pass
            case str():
                print(f"{label}: {answer}")
            case StatusReply(run=info, snapshot=snap):
                print("\n".join([f"{label}:", *(f"  {line}" for line in status_lines(info, snap))]))
            case Done(message=message):
                print(f"{label}: {message}")
    return EXIT_REFUSED if refused else EXIT_OK


def run(args: argparse.Namespace) -> int:
    command = _command(args)
    if isinstance(command, str):
        print(f"om2w-tui ctl: {command}", file=sys.stderr)
        return EXIT_USAGE
    if args.socket is None and for_every_shard(command) and (split := shards(args.out)):
        return each_shard(args, command, split)
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
