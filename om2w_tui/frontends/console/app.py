"""The console app. The engine runs as one worker owned by the app; its events reach the screens as messages.

`make_app` builds it the same way for the command line and for tests: with a Preflight it opens the dashboard and
starts the run; with a finished run's folder it opens that run's report; with neither, the launch form. Quitting
stops the run gracefully and waits for the engine to end (every episode recorded, every process ended) before the
app exits. Attached to a run going on elsewhere (`attach`, a RemoteRun) it follows and steers that run, and quitting
detaches: the run goes on (stopping it is the palette's "Stop the run"). The screens never import it: what they ask
of it arrives as the messages of `host.py` (handled by its `on_...` methods), and they read it as a `ConsoleHost`."""

from __future__ import annotations

import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.reactive import reactive
from textual.screen import Screen
from textual.signal import Signal
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from om2w_tui import exits
from om2w_tui.benchmarks.episode_folder import attempt_folder
from om2w_tui.campaign_folder import lane_of
from om2w_tui.engine.control import RunControl
from om2w_tui.engine.events import LaneRow, Sink
from om2w_tui.engine.launch import Preflight, UsageError, open_run, run_checks
from om2w_tui.engine.results import EpisodeRecord, read_results
from om2w_tui.evaluation.live_judge import LIVE_JUDGE, live_judge_file
from om2w_tui.frontends.console.collector import Collector
from om2w_tui.frontends.console.commands import Command, CommandTable, palette_of
from om2w_tui.frontends.console.host import (
    ChecksFn,
    Clock,
    ConsoleHost,
    OpenEpisode,
    OpenReport,
    QuitAsked,
    SnapshotWanted,
    StartRun,
)
from om2w_tui.frontends.console.launch_values import last_launch_path, load_values, save_values, values_from_config
from om2w_tui.frontends.console.messages import EngineSink, EpisodeChange
from om2w_tui.frontends.console.screens.dashboard import DashboardScreen
from om2w_tui.frontends.console.screens.episode import EpisodeScreen
from om2w_tui.frontends.console.screens.launch_form import LaunchScreen
from om2w_tui.frontends.console.screens.quit import ConfirmQuit
from om2w_tui.frontends.console.screens.report import ReportScreen
from om2w_tui.frontends.remote import RemoteRun
from om2w_tui.protocol.run_end import RunEnd
from om2w_tui.resources import styles_dir

STYLES = styles_dir()
EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = exits.OK, exits.FAILED, exits.INTERRUPTED


class ConsoleApp(App[int]):
    TITLE = "om2w-tui"
    CSS_PATH = [STYLES / "app.tcss", STYLES / "launch.tcss", STYLES / "dashboard.tcss", STYLES / "episode.tcss",
                STYLES / "report.tcss"]
    # quitting: the run is stopping to quit (the footer's commands follow it: a reactive with bindings=True)
    quitting: reactive[bool] = reactive(False, bindings=True)

    # the app's commands, on every screen (commands.py); the palette's Quit runs Textual's `quit` (-> quit_run)
    COMMAND_TABLE: ClassVar[CommandTable[ConsoleApp]] = CommandTable(
        # q is a letter too: on the form it types (escape or ctrl+q quit there)
        Command("q", "quit_run", "Quit", when=lambda a: not a.typing(), id="quit", priority=True),
        Command("ctrl+c", "interrupt", "Stop", id="interrupt", show=False, priority=True),
        Command("", "stop_attached", "", "Stop the run", "Stop the attached run gracefully, for every console (its "
                "episodes end keeping their steps)", lambda a: a.attach is not None and a.control is not None),
        Command("", "quit", "", "Quit", "Detach: quit and leave the run going", lambda a: a.attach is not None),
        Command("", "quit", "", "Quit", "Stop the run gracefully (asks first while episodes run) and quit",
                lambda a: a.attach is None),
    )
    BINDINGS = COMMAND_TABLE.bindings()

    def __init__(self, pre: Preflight | None, *, clock: Clock | None = None,
                 checks_fn: ChecksFn | None = None, image_renderer: str = "auto",
                 start_engine: bool = True, last_launch: Path | None = None, sinks: Iterable[Sink] = (),
                 auto_check: bool = True, cursor_blink: bool = True, report: Path | None = None,
                 judge: Path | None = None, attach: RemoteRun | None = None, measure: str | None = None,
                 annotator: str | None = None):
        super().__init__()
        self.pre = pre
        self.attach: RemoteRun | None = attach
        self.report_out = report
        self.judge = judge
        self.measure = measure           # the report's measure asked for (evaluation/measure.py; None: the best)
        self.annotator = annotator       # who labels from the report (`L`): asked once when not given
        self.clock: Clock = clock or time.time
        # the launch form's checks: the live judge runs beside a run that asks for it (--judge-url)
        self.checks_fn: ChecksFn = checks_fn or partial(run_checks, companions=(LIVE_JUDGE,))
        self.image_renderer = image_renderer
        self.start_engine = start_engine
        self.last_launch = last_launch
        self.extra_sinks = list(sinks)
        self.auto_check = auto_check
        self.cursor_blink = cursor_blink
        self.sink = EngineSink()
        # a step or the end of an episode, for the screens that follow them (an episode's view, the live report)
        self.episode_signal: Signal[EpisodeChange] = Signal(self, "episode-changed")
        self.control: RunControl | None = None   # the live run while the engine runs: commands go through it
        self.dashboard: DashboardScreen | None = None
        self.engine: Worker[Any] | None = None
        self.failed = False
        self.exit_code = EXIT_OK
        self._tasks: dict[str, str] = {}
        self.collector = Collector()

    # ── screens ────────────────────────────────────────────
    def on_mount(self) -> None:
        self.collector.start()
        self.call_after_refresh(self.collector.freeze)   # once the first screen is drawn
        if self.attach is not None:
            self.start_attached(self.attach)
        elif self.pre is not None:
            self.start_run(self.pre, None)
        elif self.report_out is not None:
            self.push_screen(ReportScreen(self.report_out, judge=self.judge, standalone=True,
                                          measure=self.measure))
        else:
            self.push_screen(LaunchScreen(load_values(self.last_launch), auto_check=self.auto_check,
                                          cursor_blink=self.cursor_blink))

    def on_unmount(self) -> None:
        self.collector.stop()

    def start_run(self, pre: Preflight, values: dict[str, str] | None) -> None:
        """Open the dashboard for `pre` and start the engine (the launch form's values are remembered)."""
        self.pre = pre
        cfg = pre.config
        try:
            save_values(self.last_launch, values or values_from_config(cfg))
        except OSError as e:
            self.notify(f"could not remember this launch: {e}", severity="warning")
        self._tasks = {t.task_id: t.confirmed_task for t in pre.tasks}
        self.dashboard = DashboardScreen(Path(cfg.out).name or str(cfg.out), len(pre.tasks), out=Path(cfg.out))
        self.dashboard.board.live_judge = live_judge_file(cfg)   # a campaign's arms compared on its verdicts
        if pre.lanes:
            self.dashboard.campaign_planned([LaneRow(lp.name, lp.arm, lp.repeat, str(lp.pre.config.out),
                                                     total=len(lp.pre.tasks), settled_before=lp.pre.settled,
                                                     done=lp.pre.settled) for lp in pre.lanes])
        self.sink.target = self.dashboard
        if isinstance(self.screen, LaunchScreen):
            self.switch_screen(self.dashboard)
        else:
            self.push_screen(self.dashboard)
        self.call_after_refresh(self._load_earlier_records, Path(cfg.out))
        if self.start_engine:
            self.engine = self.run_engine(pre)

    def _load_earlier_records(self, out: Path) -> None:
        if self.dashboard is None:
            return
        try:
            records = read_results(out).episode_records() if out.is_dir() else []
        except OSError:
            records = []
        self.dashboard.add_earlier_records(records)

    def open_report(self) -> None:
        """The report of the run going on (or just ended); it follows the run's finished episodes."""
        if self.pre is not None:
            self.push_screen(ReportScreen(self.pre.config.out, live=True, total=len(self.pre.tasks),
                                          judge=self.judge, measure=self.measure))
        elif self.attach is not None and self.dashboard is not None:
            self.push_screen(ReportScreen(self.attach.out, live=True, total=self.dashboard.state.total,
                                          judge=self.judge, measure=self.measure))

    def on_open_report(self, _: OpenReport) -> None:
        self.open_report()

    def open_episode(self, task_id: str, record: EpisodeRecord | None, lane: str = "") -> None:
        """The view of `task_id`'s episode (`lane`: a campaign's lane, whose run folder holds it)."""
        out = Path(self.pre.config.out) if self.pre is not None else self.report_out
        board = self.dashboard.board if self.dashboard is not None else None
        if lane and board is not None:
            out = board.out_of(lane) or (out / lane if out is not None else None)
        if out is None:
            return
        # running: on a slot now (in a campaign, on a slot of its lane: another arm may run the same task)
        running = self.dashboard is not None and any(
            s.task_id == task_id and (not lane or board is None or board.slot_lane.get(s.slot) == lane)
            for s in self.dashboard.state.slots.values())
        folder = out / task_id
        if record is not None and self.dashboard is not None:
            # an earlier attempt's files were moved to <task>/attempts/<n> when the next one began
            attempt = record.attempt
            later = running or any(r.attempt > attempt and r.task_id == task_id
                                   for r in self.dashboard.known_records(lane))
            folder = attempt_folder(out, task_id, attempt, latest=not later)
        self.push_screen(EpisodeScreen(folder, task_id, record=record, task_text=self._tasks.get(task_id, ""),
                                       renderer=self.image_renderer, running=running and record is None,
                                       lane=lane, lane_label=board.label(lane) if lane and board else ""))

    def on_open_episode(self, m: OpenEpisode) -> None:
        self.open_episode(m.task_id, m.record, m.lane)

    def on_start_run(self, m: StartRun) -> None:
        self.start_run(m.pre, m.values)

    @property
    def run_phase(self) -> str:
        return self.dashboard.state.phase if self.dashboard is not None else ""

    # ── attached to a run elsewhere (om2w-tui attach) ──────
    def start_attached(self, remote: RemoteRun) -> None:
        """Open the dashboard on the run `remote` reaches and follow it; its folder serves the episode views."""
        self.report_out = remote.out
        # a lane's folder reaches its whole campaign: named as the campaign, its lanes beside the lane's folder
        lane = lane_of(remote.out)
        where = remote.out.parent if lane is not None else remote.out
        self.dashboard = DashboardScreen(where.name or str(where), 0, out=where)
        self.sink.target = self.dashboard
        self.push_screen(self.dashboard)
        self.call_after_refresh(self._load_earlier_records, remote.out)
        self.engine = self.follow_run(remote)

    @work(exclusive=True, exit_on_error=False, group="engine", name="engine")
    async def follow_run(self, remote: RemoteRun) -> None:
        remote.sinks = [self.sink, *self.extra_sinks]
        try:
            await remote.connect()
            self.control = remote
            await remote.run()
            self.pull_snapshot()   # the run's last word (sent after its last event): the dashboard ends on it
            if remote.end is None:
                self.notify("the run's control socket closed before the run said it finished", severity="warning")
        finally:
            self.control = None
            remote.detach()

    def action_stop_attached(self) -> None:
        """Stop the attached run for everyone (the palette's "Stop the run"): gracefully, as its own Ctrl-C does."""
        if self.control is not None:
            self.control.stop()
            self.notify("stopping the run: its episodes end keeping their steps")

    # ── the engine ─────────────────────────────────────────
    @work(exclusive=True, exit_on_error=False, group="engine", name="engine")
    async def run_engine(self, pre: Preflight) -> None:
        async with open_run(pre, [self.sink, *self.extra_sinks]) as run:
            self.control = run
            if self.quitting:      # quit while the run's services started
                run.stop()
            try:
                await run.run()
            finally:
                self.control = None

    def pull_snapshot(self) -> bool:
        """Post the run's snapshot to the dashboard; False when no run is live."""
        if self.control is None:
            return False
        self.sink.snapshot(self.control.snapshot(), self.clock())
        return True

    def on_snapshot_wanted(self, _: SnapshotWanted) -> None:
        if not self.pull_snapshot() and self.dashboard is not None:   # the run just ended: the clocks move on
            self.dashboard.render_all()

    @property
    def engine_running(self) -> bool:
        return self.engine is not None and not self.engine.is_finished

    @property
    def stopping(self) -> bool:
        return self.quitting

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.engine or event.state not in (
                WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        self.control = None
        why = ""
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            why = str(err) if isinstance(err, UsageError) else f"the run failed: {type(err).__name__}: {err}"
            self.failed = True
            self.notify(why, severity="error", timeout=30)
        if self.dashboard is not None:
            end = {WorkerState.ERROR: RunEnd.ERROR, WorkerState.CANCELLED: RunEnd.STOPPED}.get(event.state,
                                                                                                RunEnd.FINISHED)
            self.dashboard.engine_stopped(end, why)
        self.refresh_bindings()
        if self.quitting:
            self._exit_with_code()

    def _exit_with_code(self) -> None:
        code = self.exit_code if self.exit_code != EXIT_OK else (EXIT_FAILED if self.failed else EXIT_OK)
        self.exit(code, return_code=code)

    # ── quitting ───────────────────────────────────────────
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    def typing(self) -> bool:
        """Letters type here (a field has the focus, or the launch form is shown)."""
        return isinstance(self.focused, Input) or isinstance(self.screen, LaunchScreen)

    def on_quit_asked(self, _: QuitAsked) -> None:
        self.action_quit_run()

    def action_quit_run(self) -> None:
        if self.attach is not None:   # attached: quitting detaches, the run goes on
            self.attach.detach()
            self._exit_with_code()
            return
        if isinstance(self.screen, ConfirmQuit):
            self.screen.dismiss(True)
            return
        if self.quitting:
            return
        if not self.engine_running:
            self._exit_with_code()
            return
        running = self.control.snapshot().running if self.control is not None else 0
        if running:
            self.push_screen(ConfirmQuit(running), self._quit_answered)
        else:
            self._stop_then_exit(EXIT_OK)

    async def action_quit(self) -> None:
        self.action_quit_run()

    def _quit_answered(self, yes: bool | None) -> None:
        if yes:
            self._stop_then_exit(EXIT_OK)

    def action_interrupt(self) -> None:
        """ctrl+c: stop gracefully, without asking; a second one ends the episodes' processes at once."""
        if self.attach is not None:   # attached: a run this console does not own is stopped only by command
            self.action_quit_run()
            return
        if isinstance(self.screen, ConfirmQuit):
            self.screen.dismiss(False)
        if not self.engine_running:
            self._exit_with_code()
        elif not self.quitting:
            self._stop_then_exit(EXIT_INTERRUPTED)
        else:
            self._force_stop()

    def _stop_then_exit(self, code: int) -> None:
        self.quitting = True
        self.exit_code = code
        if self.control is not None:
            self.control.stop()
        if self.dashboard is not None:
            self.dashboard.stopping()

    def _force_stop(self) -> None:
        if self.control is not None:
            self.control.interrupt()
        self.notify("ending the episodes' processes now", severity="warning")

    # ── command palette ────────────────────────────────────
    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The screen's commands that apply, then the app's (Stop the run, Quit), then Textual's but its Quit."""
        yield from palette_of(screen)
        if isinstance(screen, DashboardScreen):
            yield from screen.lane_commands()
        yield from self.COMMAND_TABLE.palette(self)
        for cmd in super().get_system_commands(screen):
            if cmd.title != "Quit":
                yield cmd


if TYPE_CHECKING:
    _HOST: type[ConsoleHost] = ConsoleApp   # the app is what its screens take it for (host.py)


def make_app(pre: Preflight | None, *, clock: Clock | None = None, checks_fn: ChecksFn | None = None,
             image_renderer: str = "auto", start_engine: bool = True, last_launch: Path | None | bool = True,
             sinks: Iterable[Sink] = (), auto_check: bool = True, cursor_blink: bool = True,
             report: Path | None = None, judge: Path | None = None, attach: RemoteRun | None = None,
             measure: str | None = None, annotator: str | None = None) -> ConsoleApp:
    """The console app, built the same way for the command line and tests.

    pre: a checked run to open on the dashboard, or None for the launch form. clock: epoch seconds (tests freeze
    it). checks_fn: the launch form's preflight (launch.run_checks). image_renderer: auto | halfcell | unicode.
    start_engine: False for a dashboard fed by hand (tests). last_launch: where the launch form's values are
    remembered (True: the XDG default; None or False: nowhere). sinks: more engine sinks (a test recorder).
    auto_check, cursor_blink: the form checks as you type; the text cursor blinks (tests turn both off).
    report: with no `pre`, a finished run's folder to open the report of. judge: the judge file the report takes
    success from (default: the newest in the folder). attach: with no `pre`, a run going on elsewhere to follow
    and steer through its control socket (`make_app(None, attach=RemoteRun(out))`). measure: the report's measure
    (humans, judge, reference; None: the best the run has). annotator: who labels from the report (None: asked once)."""
    path = last_launch_path() if last_launch is True else (last_launch or None)
    return ConsoleApp(pre, clock=clock, checks_fn=checks_fn, image_renderer=image_renderer,
                      start_engine=start_engine, last_launch=path, sinks=sinks, auto_check=auto_check,
                      cursor_blink=cursor_blink, report=report, judge=judge, attach=attach,
                      measure=measure, annotator=annotator)


def run_console(pre: Preflight | None, *, report: Path | None = None, judge: Path | None = None,
                attach: RemoteRun | None = None, measure: str | None = None, annotator: str | None = None) -> int:
    """The console on `pre`'s run, on the report of the finished run in `report`, on a run going on elsewhere
    (`attach`), or on the launch form."""
    app = make_app(pre, report=report, judge=judge, attach=attach, measure=measure, annotator=annotator)
    result = app.run()
    if result is None:
        return int(app.return_code or 0)
    return int(result)
