"""The report of a run: success by level and by site as bar charts, the status counts, the medians per episode, the
grouped errors and the tasks that did not succeed, from which `enter` opens the episode view.

The numbers are `report.summarize(out)`'s, computed in a thread (a large run's folder takes a while to read), read
by the measure `evaluation/measure.py` chooses (the one asked for with `--measure`, else the best the run has), named
on the screen. For the live run it is computed again when episodes finish, at most once every `throttle_s` seconds.
`L` labels as the annotator given (`--annotator`) or asked once, never silently as the system's user. `w` writes
the run's web report (`report OUT --html DIR`'s site) beside the run as `<run>-site`, and names it.

Its data is `report_data.compute`'s, its short lines `evaluation/report_text.py`'s, its tables
`widgets/report_tables.py`; `t` opens every table (`screens/report_tables.py`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Container
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Label, Static

from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.label_session import LabelSession
from om2w_tui.evaluation.labels import FINAL, annotator_files
from om2w_tui.evaluation.report_text import agreement_words, model_notes, pending, rules_lines, source_words
from om2w_tui.evaluation.summary import RunReport
from om2w_tui.evaluation.text_formats import fmt_num, short_rate
from om2w_tui.frontends.console.commands import Command, CommandTable
from om2w_tui.frontends.console.host import ConsoleHost, OpenEpisode, QuitAsked
from om2w_tui.frontends.console.messages import EpisodeChange
from om2w_tui.frontends.console.report_data import Computed, compute
from om2w_tui.frontends.console.screens.label import LabelScreen
from om2w_tui.frontends.console.screens.label_dialogs import AskAnnotator
from om2w_tui.frontends.console.screens.report_tables import ReportTables
from om2w_tui.frontends.console.task_page import write_whole_site
from om2w_tui.frontends.console.widgets.footer import LeanFooter
from om2w_tui.frontends.console.widgets.panels import STATUS_STYLE
from om2w_tui.frontends.console.widgets.rate_chart import RateChart
from om2w_tui.frontends.console.widgets.report_tables import ErrorsTable, FailuresTable, FittedTable
from om2w_tui.frontends.formatting import clip, clock_text
from om2w_tui.words import plural

WIDE = 120
THROTTLE_S = 5.0


METRIC_NAMES = {"steps": "steps", "duration_s": "duration", "prompt_tokens": "prompt tok",
                "completion_tokens": "compl. tok"}


def metric_text(key: str, value: float | None) -> str:
    return clock_text(value) if key == "duration_s" and value is not None else fmt_num(value)


def summary_text(summary: RunReport, wide: bool, total: int | None = None) -> Text:
    """Overall success, statuses and medians: a column on a wide terminal, three lines on a narrow one. `total`: the
    live run's task count (its queued tasks are pending too)."""
    statuses = [(k, v) for k, v in summary.status.items() if v]
    metrics = [(k, m) for k, m in summary.metrics.items() if m.n]
    rules = rules_lines(summary, total)
    agree = agreement_words(summary)
    t = Text(no_wrap=not wide, overflow="ellipsis")
    if not wide:
        c = summary.success.counts
        t.append("over all ", style="bold cyan")
        t.append(short_rate(c.overall) if c else "-", style="bold")
        if c is not None:
            t.append(" · executable ", style="bold cyan")
            t.append(short_rate(c.executable))
            t.append(f" · {c.not_executable} not exec." if c.not_executable else "", style="dim")
            waiting = pending(summary, total)
            t.append(f" · {waiting} pending" if waiting else "", style="dim")
        t.append("\nstatus  ", style="bold cyan")
        for i, (k, v) in enumerate(statuses):
            t.append(" · " if i else "", style="dim")
            t.append(k, style=STATUS_STYLE.get(k, ""))
            t.append(f" {v}")
        t.append(f" · {source_words(summary)}", style="dim")
        t.append("\nmedian  ", style="bold cyan")
        t.append(" · ".join(f"{METRIC_NAMES.get(k, k)} {metric_text(k, m.median)}" for k, m in metrics)
                 or "-")
        return t
    for label, value, style in rules:
        t.append(f"{label:<11}", style="bold cyan")
        t.append(value + "\n", style=style)
    t.append(f"           {source_words(summary)}\n", style="dim")
    if agree:
        t.append(f"           {agree}\n", style="")
    t.append("Tasks     ", style="bold cyan")
    t.append(f"{summary.tasks} ({summary.attempts} attempts)\n")
    t.append("Status\n", style="bold cyan")
    for k, v in statuses:
        t.append(f"  {k:<12}", style=STATUS_STYLE.get(k, ""))   # out_of_steps, the longest
        t.append(f"{v:>4}\n")
    t.append(f"{'Per episode':<13}{'median':>8}{'p90':>9}\n", style="bold cyan")
    for k, m in metrics:
        t.append(f"  {METRIC_NAMES.get(k, k):<11}")
        t.append(f"{metric_text(k, m.median):>8}{metric_text(k, m.p90):>9}\n")
    model = summary.model_health
    if model is not None and (model.ended_on or model.endpoint):
        t.append("Model\n", style="bold cyan")
        for line in model_notes(model):   # the episodes that ended on model errors, apart from the agent's
            t.append(f"  {line}\n", style="red" if "model errors" in line else "yellow")
    problems = summary.conformance.problems
    if problems:
        t.append(f"\n{problems} problem(s) for the official evaluator\n", style="yellow")
    return t


class ReportScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE, "-wide")]
    # the report's commands (commands.py): key, action, footer label, palette title and help, when it applies
    COMMAND_TABLE: ClassVar[CommandTable[ReportScreen]] = CommandTable(
        Command("enter", "open_failure", "Open", "Open the selected episode",
                "Task, actions, thoughts, answer, files and screenshots",
                lambda s: s._row_task(s.focused) is not None, id="report-open-episode", key_display="⏎",
                priority=True),
        Command("r", "refresh_report", "Refresh", "Refresh the report", "Read the run's folder again now",
                id="report-refresh"),
        Command("L", "label_tasks", "Label", "Label the episodes by hand", "1 success, 0 failure, 2 not executable; "
                "the tasks where the judge and the humans disagree first", id="report-label"),
        Command("t", "tables", "Tables", "Every table of the report", "Both counting rules per level and site for "
                "every source, the judge against the humans, with 95% intervals", lambda s: s.data is not None,
                id="report-tables"),
        Command("w", "write_site", "Web page", "Write the web report",
                "The run as a static site beside it (<run>-site/index.html)", lambda s: s.data is not None,
                id="report-site"),
        Command("escape", "back", "Back", "Back to the dashboard", "Close the report", lambda s: not s.standalone,
                id="report-back"),
        Command("escape", "close", "Quit", when=lambda s: s.standalone, id="report-close", show=False),
    )
    BINDINGS = COMMAND_TABLE.bindings()

    def __init__(self, out: Path, *, live: bool = False, total: int | None = None, judge: Path | None = None,
                 standalone: bool = False, throttle_s: float = THROTTLE_S, measure: str | None = None):
        """out: the run's folder. live: the run is going on (recompute when episodes finish). total: the run's
        task count. judge: the judge file to take success from. standalone: the app opened on the report (escape
        quits). measure: the measure's kind asked for (humans, judge, reference; None: the best the run has)."""
        super().__init__()
        self.out = Path(out)
        self.measure = measure
        self.live = live
        self.total = total
        self.judge = judge
        self.standalone: bool = standalone
        self.throttle_s = throttle_s
        self.data: Computed | None = None
        self.site: Path | None = None     # the web report's index `w` wrote last (the tests read it)
        self.problem = ""
        self.computed = 0                 # how many times the report was computed (the throttle's tests read it)
        self._generation = 0
        self._last_started = float("-inf")
        self._due: Timer | None = None

    @property
    def host(self) -> ConsoleHost:
        return cast("ConsoleHost", self.app)

    @property
    def wide(self) -> bool:
        return self.has_class("-wide")

    def compose(self) -> ComposeResult:
        yield Label("", id="report-title")
        with Container(id="report-top"):
            yield RateChart("Success by level (over all)", "levels", id="by-level", classes="panel")
            yield RateChart("Success by site (over all)", "sites", id="by-site", classes="panel")
            summary = Static("", id="report-summary", classes="panel")
            summary.border_title = "Run"
            yield summary
        failures = FailuresTable(id="failures", classes="panel")
        failures.border_title = "Not successful"
        yield failures
        errors = ErrorsTable(id="errors", classes="panel")
        errors.border_title = "Errors"
        yield errors
        yield LeanFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one(FailuresTable).focus()
        self.show_report()
        self.refresh_report()
        signal = getattr(self.app, "episode_signal", None)
        if signal is not None and self.live:
            signal.subscribe(self, self._episode_changed, immediate=True)

    def _episode_changed(self, change: EpisodeChange) -> None:
        if change.record is not None:
            self.episode_finished()

    def on_unmount(self) -> None:
        if self._due is not None:
            self._due.stop()
            self._due = None

    def on_resize(self) -> None:
        self.call_after_refresh(self.show_report)

    # ── computing (in a thread: a large run's folder takes a while) ──
    def refresh_report(self) -> None:
        """Compute the report again now."""
        if self._due is not None:
            self._due.stop()
            self._due = None
        self._last_started = time.monotonic()
        self._generation += 1
        self.computed += 1
        self._compute(self._generation)

    def episode_finished(self) -> None:
        """An episode of the run ended: compute again, at most once every `throttle_s` seconds."""
        if self._due is not None:
            return
        wait = self._last_started + self.throttle_s - time.monotonic()
        if wait <= 0:
            self.refresh_report()
        else:
            self._due = self.set_timer(wait, self.refresh_report)

    @work(thread=True, exclusive=True, group="report", exit_on_error=False)
    def _compute(self, generation: int) -> None:
        try:
            data: Computed | None = compute(self.out, self.judge, self.measure)
            problem = ""
        except Exception as e:   # a folder being written or gone; the report says so and keeps its last numbers
            data, problem = None, f"{type(e).__name__}: {e}"
        self.app.call_from_thread(self._computed, generation, data, problem)

    def _computed(self, generation: int, data: Computed | None, problem: str) -> None:
        if generation != self._generation or not self.is_attached:
            return
        if data is not None:
            self.data = data
        self.problem = problem
        self.show_report()
        self.refresh_bindings()

    # ── rendering ──────────────────────────────────────────
    def show_report(self) -> None:
        wide = self.wide
        with self.app.batch_update():
            title = Text()
            title.append("Report  ", style="bold")
            data = self.data
            if data is None:
                title.append(self.out.name, style="bold")
                title.append("  reading…" if not self.problem else "", style="dim")
            else:
                s = data.summary
                title.append(s.name, style="bold")
                if s.name != self.out.name:
                    title.append(f"  {self.out.name}", style="dim")
                of = f" of {self.total}" if self.total is not None and self.total != s.tasks else ""
                title.append(f"  {s.tasks}{of} tasks")
                phase = self.host.run_phase if self.live else "finished"
                title.append(f"  {phase}", style="green" if phase in ("starting", "running") else "dim")
                if data.why:
                    title.append(f"  {clip(data.why, 90)}", style="yellow")
                elif s.warnings:
                    title.append(f"  {len(s.warnings)} warning(s): {clip(s.warnings[0], 60)}", style="yellow")
            if self.problem:
                title.append(f"  cannot read: {clip(self.problem, 80)}", style="red")
            self.query_one("#report-title", Label).update(title)
            for table in self.query(FittedTable):
                table.set_wide(wide)
                table.fit(table.content_size.width)
            if data is None:
                return
            s = data.summary
            succ = s.success
            why = (data.why or "no success measure: no labels, no judge file and no `correct`") \
                if not succ.source else ""
            self.query_one("#by-level", RateChart).show(succ.by_level, why)
            self.query_one("#by-site", RateChart).show(succ.by_site, why)
            self.query_one("#report-summary", Static).update(summary_text(s, wide, self.total if self.live else None))
            failures = self.query_one(FailuresTable)
            failures.show(data.failures)
            failures.border_subtitle = f"{len(data.failures)} of {s.tasks} tasks"
            errors = self.query_one(ErrorsTable)
            errors.show(s.errors)
            n, attempts = len(s.errors), sum(g.count for g in s.errors)
            errors.border_subtitle = f"{plural(n, 'group')}, {plural(attempts, 'attempt')}" if n else "none"

    # ── keys ───────────────────────────────────────────────
    def _row_task(self, widget: Any) -> tuple[str, EpisodeRecord | None] | None:
        """(task id, its latest record) of the row under the cursor: a failure, or an error group's first task."""
        if self.data is None:
            return None
        if isinstance(widget, FailuresTable):
            key = widget.cursor_key()
            f = next((f for f in self.data.failures if f.task_id == key), None)
            return (f.task_id, f.record) if f else None
        if isinstance(widget, ErrorsTable):
            key = widget.cursor_key()
            g = widget.groups.get(key) if key else None
            if g and g.tasks:
                return g.tasks[0], self.data.latest.get(g.tasks[0])
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    def action_write_site(self) -> None:
        if self.data is not None:
            self.notify("writing the web report …", timeout=3)
            self._write_site(self.data.summary)

    @work(thread=True, group="report-site", exclusive=True, exit_on_error=False)
    def _write_site(self, summary: RunReport) -> None:
        """The whole site (slow: every task's page and thumbnails), in a thread; its index named when done."""
        try:
            index = write_whole_site(self.out, summary)
        except Exception as e:   # a folder there that is not a site of ours, a full disk: said, nothing half-written
            self.app.call_from_thread(self.notify, f"the web report was not written: {e}", severity="error",
                                      timeout=12)
            return
        self.site = index
        self.app.call_from_thread(self.notify, f"wrote the web report: {index}", timeout=12)

    def action_open_failure(self) -> None:
        found = self._row_task(self.focused)
        if found is not None:
            self.post_message(OpenEpisode(*found))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # a click on the highlighted row
        found = self._row_task(event.data_table)
        if found is not None:
            self.post_message(OpenEpisode(*found))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.refresh_bindings()

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()

    def action_refresh_report(self) -> None:
        self.refresh_report()

    def action_tables(self) -> None:
        if self.data is not None:
            self.app.push_screen(ReportTables(self.data.summary))

    def action_label_tasks(self) -> None:
        """The labelling screen on this run as the annotator given (`--annotator`), or asked for once: a key press
        never labels as the system's user."""
        annotator = self.host.annotator
        if annotator:
            self._label_as(annotator)
            return
        known = [a for a in annotator_files(self.out) if a != FINAL]
        self.app.push_screen(AskAnnotator(known), self._annotator_given)

    def _annotator_given(self, name: str | None) -> None:
        if not name:
            return
        self.host.annotator = name      # asked once: the console's annotator from now on
        self._label_as(name)

    def _label_as(self, annotator: str) -> None:
        """On the selected task, walking the tasks where the judge and the humans disagree when there are any (the
        report's list of them), else every task."""
        summary = self.data.summary if self.data is not None else None
        disagree = bool(summary and summary.agreement and summary.agreement[0].disagreements)
        session = LabelSession(self.out, annotator, judge=self.judge, flt="judge" if disagree else "all")
        found = self._row_task(self.focused)
        if found is not None:
            session.go(found[0])
        self.app.push_screen(LabelScreen(session, renderer=getattr(self.app, "image_renderer", "auto")),
                             lambda _: self.refresh_report())

    def action_back(self) -> None:
        self.dismiss()

    def action_close(self) -> None:
        self.post_message(QuitAsked())
