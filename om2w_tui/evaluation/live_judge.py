"""Judging a run as it goes (`om2w-tui run --judge-url URL --judge-model M`): every episode that settles its task is
judged in the background, by the same method and into the same file as `om2w-tui judge` (`judge.py`), while the
run goes on.

It is a sink of the run's events: an `EpisodeFinished` that settles its task puts the task in a queue and returns
at once; `workers` judges take from it, each making its model calls on the event loop and doing the disk and
image work (reading the folder, encoding the screenshots, appending the line) in threads, so that judging never
holds a slot, never delays a dispatch, and never takes the loop from the console. At the start the file's tasks are
known judged: the tasks the folder has already settled and the file lacks a verdict of their settling episode for are
judged first (a run stopped before its judge caught up), and none is judged twice on resume; of those, only the run's
own tasks (its selection: a shard's share, each shard's judge catching up on its own, so a folder several shards write
has each task judged once); a task run again (retried, or resumed after a run killed under it) is judged again, its
new line the one that counts. Which line judged which episode is `verdicts.py`'s rule, `om2w-tui judge`'s and
`report`'s too: each line names the episode it judged. A task the judge endpoint fails
on is left out of the file and said in the log: `om2w-tui judge OUT` (the same settings) judges it later from the
same file.

A campaign's judge (`LaneJudges`) is one `LiveJudge` per lane (each into its own lane's run folder, by the same
rule) sharing one client and one `Caller`, so `--judge-workers` bounds the calls of every lane together and one
endpoint judges every arm: the arms are compared on one measure.

`JudgedRun` is the run a front end holds then: its `run()` lets the judge finish its queue once the scheduler is done
(saying how many are left), and its `stop()` (quit, Ctrl-C, `ctl stop`) ends that wait too; the tasks still queued
are judged at the next start.

`LIVE_JUDGE` is how a front end asks for it: given to `engine.launch.run_checks` (a launch `Companion`), it refuses a
judge file the run must not append to before anything is written, and judges each run with --judge-url as it goes;
launch runs it without importing evaluation (which sits above the engine)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from om2w_tui.benchmarks.conformance import load_episode
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.control import Interrupt, Run
from om2w_tui.engine.events import EpisodeFinished, Event, Log, RunSnapshot
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.judge import Caller, JudgeFatal, judge_client, judge_episode
from om2w_tui.evaluation.judge_files import (
    RESULTS_SUFFIX,
    adopt_legacy_output,
    append_line,
    line_shape,
    mixed_reading,
    output_path,
    read_judged,
)
from om2w_tui.evaluation.judge_settings import Settings
from om2w_tui.evaluation.outcomes import count, judge_file_outcomes
from om2w_tui.evaluation.verdicts import Settled, episode_mark, judges, verdicts_of
from om2w_tui.files import open_own, unsafe_entry
from om2w_tui.json_input import InputError, decode
from om2w_tui.run_folder import RunFolder

READ_LIMIT = 16 << 20   # bytes of the judge file read at one look (the rest at the next)
RECORDS_COST = 20.0     # the header's judge rate reads a run's records at most once in 20 times as long as they take

Emit = Callable[[Event], None]


@dataclass
class LiveCounts:
    """What the live judge has done so far: judged (successes among them), failed calls, tasks waiting."""

    judged: int = 0
    successes: int = 0
    failed: int = 0
    skipped: int = 0            # already in the file at the start
    waiting: int = 0
    failures: dict[str, str] = field(default_factory=dict)


class LiveJudge:
    """The run's background judge: a sink (`handle`) that queues each settled episode, and the workers that judge
    them (`start`, then `drain` once the run is over, `close` at the end)."""

    def __init__(self, out: Path, settings: Settings, client: Any, emit: Emit = lambda e: None,
                 sleep: Callable[[float], Any] = asyncio.sleep, *, lane: str = "", caller: Caller | None = None,
                 selection: Collection[str] | None = None):
        """`lane`: a campaign's lane this judge judges (only its episodes; its log lines name it); `caller`: one
        shared with the other lanes' judges (their calls bounded together; its owner closes the client);
        `selection`: the ids of the tasks the run runs, the only ones caught up on at the start (None: every task the
        folder settled)."""
        self.out = Path(out)
        self.s = settings
        self.client = client
        self.emit = emit
        self.lane = lane
        self.selection = None if selection is None else frozenset(selection)
        self._owns_client = caller is None
        self.path = output_path(self.out, settings)
        self.queue: asyncio.Queue[EpisodeRecord] = asyncio.Queue()
        self.judged: dict[str, dict[str, Any]] = {}   # task -> its line in the file (the episode it judged)
        self.counts = LiveCounts()
        self.fatal = ""
        self._caller = caller or Caller(client, settings, sleep, self._log)
        self._queued: set[tuple[str, int, float]] = set()   # (task, attempt, start): the episodes queued
        self._workers: list[asyncio.Task[None]] = []

    # ── the sink ──
    def handle(self, event: Event) -> None:
        if (isinstance(event, EpisodeFinished) and event.lane == self.lane and not event.requeued
                and event.record.settles):
            self.put(event.record)

    def put(self, record: EpisodeRecord) -> None:
        """Queue the episode of a task's settling record to judge, unless that very episode is judged or queued (a
        task run again is judged again: `verdicts.judges`, the rule of `om2w-tui judge` and `report` too)."""
        key = (record.task_id, record.attempt, record.started_at)
        if self.fatal or key in self._queued or judges(self.judged.get(record.task_id), record):
            return
        self._queued.add(key)
        self.queue.put_nowait(record)
        self.counts.waiting = self.queue.qsize()

    # ── the workers ──
    async def start(self) -> None:
        """Read what the file holds, queue what the folder settled and it lacks, start the workers."""
        await asyncio.to_thread(adopt_legacy_output, self.out, self.s, self._log)
        try:
            already = await asyncio.to_thread(read_judged, self.path, lambda m: self._log(m, "warning"))
        except InputError as e:   # a symlink, a FIFO by the judge file's name: never read or written through
            already, self.fatal = {}, str(e)
        settled = await asyncio.to_thread(Settled.read, self.out)
        # verdicts it would take as they are, read another way than its own: the file is left as it is
        self.fatal = self.fatal or mixed_reading(self.path, settled.current(already), self.s)
        if self.fatal:
            self._log(f"the judge stops: {self.fatal}", "error")
            return
        self.judged = dict(already)
        self.counts.skipped = len(already)
        latest = settled.latest
        for tid, rec in latest.items():
            if self.selection is not None and tid not in self.selection:
                continue   # another shard's task: its own judge catches up on it
            if rec.settles:
                self.put(rec)   # unless its line judged this very episode
        backlog = self.queue.qsize()
        self._log(f"judging each episode as it ends with {self.s.model} ({self.s.mode_name}, {self.s.workers} "
                  f"calls at once) into {self.path.name}" + (f"; {backlog} settled before, not judged yet, first"
                                                        if backlog else "")
                  + (f"; {len(already)} already judged" if already else ""))
        self._workers = [asyncio.ensure_future(self._work()) for _ in range(max(1, self.s.workers))]

    async def drain(self, stopped: Callable[[], bool], poll_s: float = 0.5) -> bool:
        """After the run: judge what is left, until it is done or `stopped()` (the run's user stopped it, a
        `ctl stop`); -> whether everything was judged."""
        left = self.queue.qsize() + self._busy()
        if self.fatal or not left:
            return not left
        self._log(f"the run is over; judging the {left} episode(s) left (quit or Ctrl-C leaves them for the next "
                  f"start)")
        done = asyncio.ensure_future(self.queue.join())
        try:
            while not done.done():
                if stopped():
                    self._log(f"stopped judging; {self.queue.qsize() + self._busy()} episode(s) are judged at "
                              f"the next start (or by `om2w-tui judge {self.out}`)")
                    return False
                await asyncio.wait({done}, timeout=poll_s)
        finally:
            done.cancel()
        return True

    async def close(self) -> None:
        """End the workers (a judgement under way is dropped: its task is judged at the next start)."""
        for w in self._workers:
            w.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        if self._owns_client:
            with contextlib.suppress(Exception):
                await self.client.close()
        c = self.counts
        left = self.queue.qsize() + self._busy()
        self._log(f"judged {c.judged} episode(s) during the run ({c.successes} successes) into {self.path.name}"
                  + (f"; {c.failed} failed and {left} not reached: `om2w-tui judge {self.out} --judge-model "
                     f"{self.s.model} --judge-url URL` judges them" if c.failed or left else ""),
                  "warning" if c.failed or left else "info")

    def hold(self, run: Run) -> JudgedRun:
        """The run its front end holds while this judge runs beside it."""
        return JudgedRun(run, self)

    def _busy(self) -> int:
        return len(self._queued) - self.queue.qsize()

    async def _work(self) -> None:
        while True:
            record = await self.queue.get()
            task_id = record.task_id
            try:
                await self._judge(record)
            except asyncio.CancelledError:
                raise
            except JudgeFatal as e:
                self.fatal = str(e)
                self._log(f"the judge stops: {e}", "error")
                _drain(self.queue)
                self._queued.clear()
            except Exception as e:   # noqa: BLE001 - one task's failure must not cost the others, nor the run
                self.counts.failed += 1
                self.counts.failures[task_id] = f"{type(e).__name__}: {e}"
                self._log(f"{task_id}: not judged ({self.counts.failures[task_id]})", "warning")
            finally:
                self._queued.discard((task_id, record.attempt, record.started_at))
                self.counts.waiting = self.queue.qsize()
                self.queue.task_done()

    async def _judge(self, record: EpisodeRecord) -> None:
        problems: list[str] = []
        ep = await asyncio.to_thread(load_episode, self.out / record.task_id, problems)
        if ep is None:
            raise ValueError("; ".join(problems) or "the folder cannot be read as the evaluator reads it")
        rec = await judge_episode(ep, self.s, self._caller)
        rec.update(episode_mark(record))
        await asyncio.to_thread(append_line, self.path, rec)
        self.judged[record.task_id] = rec
        self.counts.judged += 1
        self.counts.successes += rec.get("predicted_label") == 1

    def _log(self, message: str, level: str = "info") -> None:
        self.emit(Log(level, f"judge [{self.lane}]: {message}" if self.lane else f"judge: {message}"))


def _drain(queue: asyncio.Queue[Any]) -> None:
    while True:
        try:
            queue.get_nowait()
        except asyncio.QueueEmpty:
            return
        queue.task_done()


class LaneJudges:
    """A campaign's live judge: one `LiveJudge` per lane, each judging its lane's episodes into its lane's run folder
    (as a run's judge does: `report OUT/<lane>` reads it), all sharing one client and one `Caller` (`--judge-workers`
    calls at once over every lane). A sink and a companion run as `LiveJudge` is."""

    def __init__(self, lanes: Sequence[tuple[str, Path]], settings: Settings, client: Any,
                 emit: Emit = lambda e: None, sleep: Callable[[float], Any] = asyncio.sleep,
                 selection: Collection[str] | None = None):
        """`selection`: the tasks the campaign runs (every lane's: the selection is a shared setting), as
        `LiveJudge`'s."""
        self.s = settings
        self.client = client
        caller = Caller(client, settings, sleep, lambda m: emit(Log("info", f"judge: {m}")))
        self.lanes = {name: LiveJudge(out, settings, client, emit, sleep, lane=name, caller=caller,
                                      selection=selection)
                      for name, out in lanes}

    def handle(self, event: Event) -> None:
        judge = self.lanes.get(event.lane) if isinstance(event, EpisodeFinished) else None
        if judge is not None:
            judge.handle(event)

    async def start(self) -> None:
        for judge in self.lanes.values():
            await judge.start()

    async def drain(self, stopped: Callable[[], bool], poll_s: float = 0.5) -> bool:
        """Every lane's judge finishes its queue (they judge at once; waited for one after the other, each even when
        another could not finish: a lane's judge that stopped costs the others nothing)."""
        done = True
        for judge in self.lanes.values():
            done = await judge.drain(stopped, poll_s) and done
        return done

    async def close(self) -> None:
        for judge in self.lanes.values():
            await judge.close()
        with contextlib.suppress(Exception):
            await self.client.close()

    def hold(self, run: Run) -> JudgedRun:
        return JudgedRun(run, self)


class Drains(Protocol):
    """A judge that finishes its queue after the run (a run's `LiveJudge`, a campaign's `LaneJudges`)."""

    async def drain(self, stopped: Callable[[], bool], poll_s: float = 0.5) -> bool: ...


class JudgedRun:
    """The run with its judge: `run()` runs the scheduler to its end and then lets the judge finish its queue;
    `stop()` (the console's quit, Ctrl-C, `ctl stop`) stops either. Every other command is the scheduler's."""

    def __init__(self, run: Run, judge: Drains):
        self.inner, self.judge = run, judge
        self._stopped = False

    async def run(self) -> object:
        result = await self.inner.run()
        await self.judge.drain(lambda: self._stopped or bool(getattr(self.inner, "stopping", False)))
        return result

    def stop(self, force: bool = False) -> None:
        self._stopped = True
        self.inner.stop(force)

    def interrupt(self) -> Interrupt:
        self._stopped = True
        return self.inner.interrupt()

    def snapshot(self) -> RunSnapshot:
        return self.inner.snapshot()

    def pause_dispatch(self, paused: bool = True, reason: str = "") -> None:
        self.inner.pause_dispatch(paused, reason)

    def pause_episode(self, slot_id: int, paused: bool = True) -> bool:
        return self.inner.pause_episode(slot_id, paused)

    def pause_lane(self, name: str, paused: bool = True) -> bool:
        return self.inner.pause_lane(name, paused)

    def kill(self, slot_id: int, requeue: bool = False) -> bool:
        return self.inner.kill(slot_id, requeue)

    def set_workers(self, n: int) -> str:
        return self.inner.set_workers(n)

    def retry_errors(self) -> int:
        return self.inner.retry_errors()


class LiveJudging:
    """The live judge as a launch `Companion`: for a run with --judge-url and --judge-model (by --judge-mode's method,
    the official WebJudge unless told, read as the official evaluator reads it, into the file `om2w-tui judge` with
    that mode writes)."""

    def check(self, cfg: RunConfig) -> str:
        """The judge's file is appended to: a symlink or a FIFO there is refused as the run's own files are."""
        if not cfg.judge_url or not cfg.judge_model:
            return ""
        problem = unsafe_entry(output_path(cfg.out, Settings.of_run(cfg)))
        return f"--out {cfg.out}: {problem}" if problem else ""

    def open(self, cfg: RunConfig, emit: Emit, selection: Collection[str]) -> LiveJudge | None:
        """`selection`: the run's tasks (its shard's share), the only ones its judge catches up on."""
        if not cfg.judge_url or not cfg.judge_model:
            return None
        settings = Settings.of_run(cfg)
        client = judge_client(cfg.judge_url.for_client(), cfg.judge_api_key(), settings)
        return LiveJudge(cfg.out, settings, client, emit, selection=selection)

    def open_lanes(self, cfg: RunConfig, lanes: Sequence[tuple[str, Path]], emit: Emit, selection: Collection[str]
                   ) -> LaneJudges | None:
        """A campaign's (`cfg` its shared settings, where the judge is set for every arm): each lane (its name, its
        run folder) judged into its own folder by the one judge; `selection` as `open`'s."""
        if not cfg.judge_url or not cfg.judge_model:
            return None
        settings = Settings.of_run(cfg)
        client = judge_client(cfg.judge_url.for_client(), cfg.judge_api_key(), settings)
        return LaneJudges(lanes, settings, client, emit, selection=selection)


LIVE_JUDGE = LiveJudging()


_READER: ThreadPoolExecutor | None = None


def _records_reader() -> ThreadPoolExecutor:
    """The one thread the console's judge rates read runs' records in (started at the first read it takes)."""
    global _READER
    if _READER is None:
        _READER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="om2w-verdicts")
    return _READER


def _timed_read(out: Path, seen: object) -> tuple[Settled, object, float]:
    began = time.perf_counter()
    settled = Settled.read(out)
    return settled, seen, time.perf_counter() - began


class VerdictTail:
    """The verdicts of a run's newest judge file, read as the file grows (the console's header shows them): only
    the new bytes are read, whole lines only, the last line of a task the one `report` reads too; the folder is looked
    at for a newer file every `every_s` seconds. Whoever judges (this run's judge, `om2w-tui judge` in another
    terminal, another node of the run) shows. `name`: that file only (a campaign's live judge's, the measure its
    arms are compared on), not the newest, looked for at each poll until it is there.

    It counts as `report` does (`outcomes.judge_file_outcomes`): each task's verdict of the episode that settled it,
    one per task, beside the task's latest record; a verdict of an attempt run again since, or of a task running
    again, does not count. The run's records are read again when their files changed (looked at with the folder,
    and whenever the judge file grew): the first time at once, then (`background`, the console's way) in a thread
    of their own, counted at the first poll after the read ended, so a long run's log never holds the console's
    drawing."""

    def __init__(self, out: Path, every_s: float = 5.0, name: str | None = None, background: bool = True):
        self.background = background
        self._reading: Future[tuple[Settled, object, float]] | None = None   # a read under way in its thread
        self.out = Path(out)
        self.every_s = every_s
        self.name = name
        self.path: Path | None = None
        self.lines: dict[str, dict[str, Any]] = {}   # each task's last line in the file, as read so far
        self.verdicts: dict[str, bool] = {}           # the verdicts that count: of each task's settling episode
        self._counted = (0, 0)
        self._offset = 0
        self._rest = b""
        self._looked = float("-inf")
        self._settled: Settled | None = None
        self._records_seen: object = None             # the run's record files as last read (name, size, time)
        self._records_due = float("-inf")             # when they may be read again

    def poll(self, now: float) -> tuple[int, int]:
        """(successes, judged) as the file says now: `report`'s rate over every task with an outcome by the file."""
        looked = switched = False
        # a named file is looked for at every poll until it is there (one stat); the newest every `every_s` (a glob)
        if (self.name is not None and self.path is None) or now - self._looked >= self.every_s:
            self._looked, looked = now, True
            newest = find_newest_judge_file(self.out) if self.name is None else _file_or_none(self.out / self.name)
            if newest != self.path:
                self.path, self.lines, self._offset, self._rest = newest, {}, 0, b""
                switched = True
        if self.path is None:
            self.verdicts, self._counted = {}, (0, 0)
            return self._counted
        grew = self._read_new()
        due = self._reading is not None or (
            (grew or looked or self._settled is None) and now >= self._records_due)   # a read ended, or one is due
        records = due and self._read_records(now)
        if self._settled is not None and (records or grew or switched):
            self._count(self._settled)
        return self._counted

    def _read_records(self, now: float) -> bool:
        """Read the run's records again where their files (its results, its run.json) changed; -> whether a read
        was taken. A long run's log takes a while (2,000 records: about 0.15 s): it is read at most once in
        `RECORDS_COST` times as long as it took, and after the first read in a thread (`background`)."""
        if self._reading is not None:
            if not self._reading.done():
                return False
            reading, self._reading = self._reading, None
            try:
                return self._took(now, *reading.result())
            except (OSError, InputError):   # the folder went while it was read: the next change reads it again
                return False
        try:
            folder = RunFolder(self.out)
            seen: object = tuple((p.name, st.st_size, st.st_mtime_ns)
                                 for p in folder.results_files() + folder.manifests() for st in (p.stat(),))
        except OSError:
            seen = None
        if self._settled is not None and seen == self._records_seen:
            return False
        if self._settled is not None and self.background:
            self._reading = _records_reader().submit(_timed_read, self.out, seen)
            return False
        return self._took(now, *_timed_read(self.out, seen))

    def _took(self, now: float, settled: Settled, seen: object, took: float) -> bool:
        self._settled, self._records_seen = settled, seen
        self._records_due = now + RECORDS_COST * took
        return True

    def wait(self) -> None:
        """Wait for a read under way in its thread (a test's way to see what the next poll counts)."""
        if self._reading is not None:
            wait_futures([self._reading])

    def _count(self, settled: Settled) -> None:
        tasks = set(settled.latest) | (set() if settled.keeps_records else set(self.lines))
        outcomes = judge_file_outcomes(settled, self.lines, tasks)
        self.verdicts = verdicts_of(settled.current(self.lines))
        rate = count(outcomes.values()).overall
        self._counted = (rate.successes, rate.tasks)

    def _read_new(self) -> bool:
        """Read what the file added; -> whether a line came (or the file was rewritten)."""
        assert self.path is not None
        try:
            size = self.path.stat().st_size
            rewritten = size < self._offset
            if rewritten:                    # rewritten from scratch: read it again
                self.lines, self._offset, self._rest = {}, 0, b""
            if size == self._offset:
                return rewritten
            with os.fdopen(open_own(self.path, os.O_RDONLY), "rb") as f:   # never through a symlink, never a FIFO
                f.seek(self._offset)
                data = f.read(min(size - self._offset, READ_LIMIT))
        except OSError:
            return False
        self._offset += len(data)
        *lines, self._rest = (self._rest + data).split(b"\n")
        for line in lines:
            try:
                rec = decode(line, str(self.path))   # the one decoder: NaN, deep or huge numbers are no verdict
            except InputError:
                continue
            if not line_shape(rec):                  # the lines `report` reads (`judge_files.read_judged`)
                self.lines[str(rec["task_id"])] = rec
        return True


def _file_or_none(path: Path) -> Path | None:
    try:
        return path if path.is_file() else None
    except OSError:
        return None


def live_judge_file(cfg: RunConfig) -> str | None:
    """The file name the live judge of `cfg` (--judge-url, --judge-model) writes in each run folder, or None."""
    if not cfg.judge_url or not cfg.judge_model:
        return None
    return output_path(Path("."), Settings.of_run(cfg)).name


def find_newest_judge_file(out: Path) -> Path | None:
    try:
        files = [p for p in Path(out).glob(f"*{RESULTS_SUFFIX}") if p.is_file()]
        return max(files, key=lambda p: (p.stat().st_mtime, p.name)) if files else None
    except OSError:
        return None
