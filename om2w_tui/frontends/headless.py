"""The --no-ui front end: a line per finished episode, a progress line, a summary; Ctrl-C or SIGTERM stops the run
gracefully (running episodes end keeping their steps and run again next time), a second Ctrl-C ends them at once.
A campaign judged as it goes (--judge-url) ends with each arm's rate by its judge and each arm against the baseline
on it, once the judge is done (the console's comparison, `campaign_board.py`, read from the lanes' folders)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, assert_never

from om2w_tui import exits, pipes
from om2w_tui.engine.events import (
    DispatchChanged,
    EpisodeFinished,
    EpisodeModelCall,
    EpisodePutBack,
    EpisodeStarted,
    EpisodeStep,
    Event,
    LaneRow,
    Log,
    RunFinished,
    RunSnapshot,
    RunStarted,
    RunSummary,
    SlotChanged,
)
from om2w_tui.engine.launch import WARNING, Preflight, open_run
from om2w_tui.engine.pairing import pairing_words
from om2w_tui.engine.results import read_results, statuses_text
from om2w_tui.evaluation.live_judge import live_judge_file
from om2w_tui.evaluation.outcomes import RULES
from om2w_tui.evaluation.text_formats import fmt_p, fmt_pp, fmt_rate, fmt_seconds
from om2w_tui.frontends.campaign_board import CampaignBoard
from om2w_tui.frontends.formatting import clock_text
from om2w_tui.frontends.run_state import RunState, episode_line, lane_line, model_summary
from om2w_tui.protocol.run_end import RunEnd
from om2w_tui.words import plural

EXIT_MODEL_GUARD = exits.MODEL_GUARD   # the model guard ended the run: the server answers, wrongly for this harness


class HeadlessLog:
    """A sink that prints plain lines (cluster logs are files, not terminals). A campaign's (`lanes`: each lane's
    name, units and settled before) says each lane's progress too, and at the end each lane's counts and the
    pairing gaps."""

    def __init__(self, stream: IO[str] | None = None, lanes: Sequence[tuple[str, int, int]] = (), shard: str = ""):
        self.stream = stream or sys.stdout
        self.unread = False   # the stream's reader went away: nothing more is printed, and the run exits 1
        self.out = ""         # the run's out folder, once it started
        self.snapshot: Callable[[], RunSnapshot] | None = None   # the run's, once open: what the ETA is told
        self.shard = shard   # this process's share of the run (RunConfig.shard: 'K/N', 'a:b/N'); '' the whole
        self.state = RunState()
        self.t0 = time.monotonic()
        self.lane_total = {name: total for name, total, _ in lanes}
        self.lane_done = {name: settled for name, _, settled in lanes}

    def _print(self, text: str) -> None:
        if self.unread:
            return
        try:
            print(text, file=self.stream, flush=True)
        except BrokenPipeError:
            if not pipes.gone(self.stream):
                raise
            # its reader went away (`| head`, a `tee` that died): the run goes on, its records are its word; the log
            # says where they are, once, and the exit code that the output was not all read
            self.unread = True
            pipes.to_devnull(self.stream)
            with contextlib.suppress(OSError):
                print(f"om2w-tui: standard output closed: the run goes on without its log (its records are in "
                      f"{self.out or 'its out folder'}; `om2w-tui ctl` steers it, Ctrl-C stops it)",
                      file=sys.stderr, flush=True)

    def handle(self, ev: Event) -> None:
        self.state.apply(ev, time.time())
        match ev:
            case RunStarted():
                self.out = ev.out
                self._print(self._start_line(ev))
            case EpisodeFinished():
                lane = f"[{ev.lane}] " if ev.lane else ""
                self._print(lane + episode_line(ev.slot, ev.record) + ("  (will run again)" if ev.requeued else ""))
                if ev.lane in self.lane_done and not ev.requeued:
                    self.lane_done[ev.lane] += 1
                self._progress()
            case EpisodePutBack():
                self._print(f"[slot {ev.slot}] {ev.task_id}  put back in the queue before it started ({ev.reason})")
                self._progress()
            case DispatchChanged():
                self._print(f"dispatch {'paused' if ev.paused else 'resumed'}{': ' + ev.reason if ev.reason else ''}")
            case Log():   # every line the run says (the judge's progress is info)
                self._print(f"{ev.level}: {ev.message}")
            case RunFinished():
                self._summary(ev.summary)
            case SlotChanged() | EpisodeStarted() | EpisodeStep() | EpisodeModelCall():
                pass   # a line per episode when it ends, not per step (cluster logs stay readable)
            case _:
                assert_never(ev)

    def _start_line(self, ev: RunStarted) -> str:
        """`run: 4 tasks, ...`; a campaign's counts its tasks and its lanes (`campaign: 4 tasks x 4 lanes = 16 units`:
        a unit is one lane's run of one task, what its totals count); a shard's names itself (`run (shard 1/2): ...`:
        its counts are its share's)."""
        totals = set(self.lane_total.values())
        kind = ("campaign" if totals else "run") + (f" (shard {self.shard})" if self.shard else "")
        if not totals:
            what, unit = f"{kind}: {plural(ev.total, 'task')}", ""
        elif len(totals) == 1:   # every lane runs the campaign's selection
            what = (f"{kind}: {plural(totals.pop(), 'task')} x {plural(len(self.lane_total), 'lane')} = "
                    f"{plural(ev.total, 'unit')}")
            unit = " units"
        else:
            what, unit = f"{kind}: {plural(len(self.lane_total), 'lane')}, {plural(ev.total, 'unit')}", " units"
        resume = f", resuming: {ev.settled} of {ev.total}{unit} already done" if ev.settled else ""
        return f"{what}, {plural(ev.workers, 'worker')}, out {ev.out}{resume}"

    def _progress(self) -> None:
        lanes = ", ".join(f"{name} {self.lane_done[name]}/{total}" for name, total in self.lane_total.items())
        eta = self._eta()   # the snapshot first: the counts below are the same moment's
        self._print(f"progress: {self.state.done}/{self.state.total} done, {self.state.errors} errors, "
                    f"elapsed {clock_text(time.monotonic() - self.t0)}{eta}"
                    + (f"; lanes: {lanes}" if lanes else ""))

    def _eta(self) -> str:
        """`, ETA 1:02:05` as the console's header says it (`held`, `paused` where the end waits on a resume); ""
        before an episode has ended, or with no run to ask."""
        if self.snapshot is None:
            return ""
        now = time.time()
        self.state.apply_snapshot(self.snapshot(), now)
        if waits := self.state.waits():
            return f", ETA {waits}"
        eta = self.state.eta(now)
        return f", ETA {clock_text(eta)}" if eta is not None and eta > 0 else ""

    def _summary(self, s: RunSummary) -> None:
        statuses = statuses_text(s.by_status) or "nothing run"
        self._print(f"summary: {s.finished} episodes this run ({statuses}); "
                    f"{s.settled_before} done before; {s.pending} left; {clock_text(s.elapsed_s)}")
        if s.judged and not s.lanes:   # a campaign's verdicts are each lane's (below): summed, both arms' in one
            before = ", those done before included" if s.settled_before else ""   # every settled task's verdict
            self._print(f"correct: {s.correct} of {s.judged} (reference judge{before})")
        for line in model_summary(s):
            self._print(line)
        results = s.results or f"{s.out}/results.jsonl"
        if not s.lanes:   # a campaign's lanes each name their own, below
            self._print(f"results: {results}")
        if s.unwritten:
            self._print(f"error: {s.unwritten} record(s) could not be written to {results} "
                        f"(listed above); those tasks run again next time")
        if s.end is RunEnd.STOPPED:
            left = plural(s.pending, "unit" if self.lane_total else "task")
            self._print(f"{'campaign' if self.lane_total else 'run'} {s.end.words}: {left} left, to run at the next "
                        "start")
        if s.model_guard:
            self._print(f"error: model guard: {s.model_guard}; the run stopped here (exit code "
                        f"{EXIT_MODEL_GUARD}): fix the model server, then the same command resumes")
        for lane in s.lanes:
            self._print(lane_line(lane, results=True))
        if s.lanes:
            self._print(pairing_words(s.pairing, fmt_seconds))


async def run_headless(pre: Preflight, stream: IO[str] | None = None) -> int:
    sink = HeadlessLog(stream, [(lane.name, len(lane.pre.tasks), lane.pre.settled) for lane in pre.lanes],
                       pre.config.shard)
    for what, detail in dict.fromkeys((what, detail) for what, ok, detail in pre.checks
                                      if ok == WARNING):   # the run starts, but a log read later says what to mind
        sink._print(f"warning: {what}: {detail}")
    async with open_run(pre, [sink], guard_ends_run=True) as run:
        sink.snapshot = run.snapshot
        loop = asyncio.get_running_loop()
        interrupted = False

        def interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            if run.interrupt() == "stopping":
                sink._print("stopping: running episodes end keeping their steps (Ctrl-C again to end them now)")

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, interrupt)
        try:
            await run.run()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
    if pre.lanes and (judged := live_judge_file(pre.config)):
        for line in judge_lines(pre, judged):
            sink._print(line)
    summary = sink.state.summary
    code = exit_code(summary.end if summary is not None else None, interrupted)
    return exits.FAILED if sink.unread and code == exits.OK else code


def judge_lines(pre: Preflight, judge_file: str) -> list[str]:
    """A campaign's arms by its live judge's verdicts (in `judge_file` of each lane's folder), read from the lanes'
    folders as they stand: each lane's rate under both counting rules, then each lane against its repeat's baseline
    on the tasks both have an outcome for (the difference with its 95% interval, McNemar's p, the tasks only one
    solved), and where an arm repeats each arm against the first over all its repeats (paired by task)."""
    board = CampaignBoard(campaign_out=pre.config.out, live_judge=judge_file, wanted="judge")
    board.rows = {lp.name: LaneRow(lp.name, lp.arm, lp.repeat, str(lp.pre.config.out)) for lp in pre.lanes}
    for lp in pre.lanes:
        board.earlier(lp.name, list(read_results(lp.pre.config.out).latest_records().values()))
    c = board.comparison()
    if c.measure is None:
        return [f"judge: {c.problem}"]
    lines = []
    for arm in c.arms:
        rates = ", ".join(f"{rule} {fmt_rate(arm.counts.rate(rule))}" for rule in RULES)
        lines.append(f"{c.measure.name}: {arm.label}: {rates}; {arm.counts.pending} not judged")
    for t in c.tests:
        d = t.difference
        lines.append(f"{c.measure.name}: {t.a} - {t.b} ({t.rule}, {d.n} tasks): {fmt_pp(d.difference, d.low, d.high)}, "
                     f"McNemar p {fmt_p(d.p)}, only {t.a} solved {d.only_a}, only {t.b} solved {d.only_b}")
    for p in c.pooled:
        m = p.difference
        lines.append(f"{c.measure.name}: {p.a} - {p.b} over {len(p.a_runs)} and {len(p.b_runs)} repeats ({p.rule}, "
                     f"{m.n} tasks, paired by task): {fmt_pp(m.mean, m.low, m.high)}, solved more often {p.better}, "
                     f"less often {p.worse}")
    return lines


def exit_code(end: RunEnd | None, interrupted: bool) -> int:
    """A headless run's exit code from how it ended (None: it said nothing) and whether this process was interrupted
    (Ctrl-C, SIGTERM: a `ctl stop` is not, and exits 0). An episode's error is a result, not a failure of the run."""
    if end is RunEnd.ERROR:   # records lost to a full disk: the run did not keep its word
        return exits.FAILED
    if interrupted:
        return exits.INTERRUPTED
    return EXIT_MODEL_GUARD if end is RunEnd.GUARD else exits.OK
