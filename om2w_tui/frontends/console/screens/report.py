"""The report of a run: success by level and by site as bar charts, the status counts, the medians per episode, the
grouped errors and the tasks that did not succeed, from which `enter` opens the episode view.

The numbers are `report.summarize(out)`'s, computed in a thread (a large run's folder takes a while to read), read
by the measure `evaluation/measure.py` chooses (the one asked for with `--measure`, else the best the run has), named
on the screen. For the live run it is computed again when episodes finish, at most once every `throttle_s` seconds.
`L` labels as the annotator given (`--annotator`) or asked once, never silently as the system's user. `w` writes
the run's web report (`report OUT --html DIR`'s site) beside the run as `<run>-site`, and names it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, cast

from rich.table import Table as RichTable
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Label, Static

from om2w_tui.benchmarks.episode_folder import no_answer, read_answer
from om2w_tui.engine.results import EpisodeRecord, read_results
from om2w_tui.evaluation.labels import FINAL, LabelFileError, annotator_files, check_annotator
from om2w_tui.evaluation.measure import NoCommonMeasure
from om2w_tui.evaluation.report import choose_measure, summarize, with_measure
from om2w_tui.evaluation.report_text import fmt_num, fmt_rate, model_notes, notes, sections, title
from om2w_tui.evaluation.summary import ErrorGroup, Rate, RunReport, TaskRow
from om2w_tui.frontends.console.commands import Command, CommandTable
from om2w_tui.frontends.console.host import ConsoleHost, OpenEpisode, QuitAsked
from om2w_tui.frontends.console.messages import EpisodeChange
from om2w_tui.frontends.console.screens.label import LabelScreen, LabelSession
from om2w_tui.frontends.console.task_page import write_whole_site
from om2w_tui.frontends.console.widgets.footer import LeanFooter
from om2w_tui.frontends.console.widgets.keyed_table import Col, KeyedTable
from om2w_tui.frontends.console.widgets.panels import STATUS_STYLE, styled
from om2w_tui.frontends.console.widgets.rate_chart import RateChart
from om2w_tui.frontends.formatting import clip, clock_text

WIDE = 120
THROTTLE_S = 5.0


@dataclass
class Failure:
    """A task that did not succeed: its summary line and its latest record (None for another harness's folder)."""

    task_id: str
    status: str
    success: bool | None
    record: EpisodeRecord | None
    answer: str
    outcome: str | None = None       # evaluation/outcomes.py: failure, not_executable, or None (none yet)
    why: str = ""                    # its failure class (evaluation/failure.py's CLASSES; '' when none yet)


@dataclass
class Computed:
    summary: RunReport
    latest: dict[str, EpisodeRecord]
    failures: list[Failure]
    why: str = ""          # why the measure asked for is not the one read ('' when it is)


def failed(task: TaskRow) -> bool:
    """Judged unsuccessful, or not judged and ended by a status other than done (a task with no record yet may be
    running: it is not counted)."""
    if task.success is not None:
        return not task.success
    return task.status not in ("done", "folder", "unrecorded")


def answer_of(folder: Path) -> str:
    return read_answer(folder)


def compute(out: Path, judge: Path | None = None, measure: str | None = None) -> Computed:
    """The report's data: summarize()'s numbers read by the chosen measure (`measure`: the kind asked for, else the
    best the run has), the latest record of each task and the failures."""
    summary = summarize(out, judge)
    why = ""
    try:
        summary = with_measure(summary, choose_measure([summary], measure))
    except NoCommonMeasure as e:   # asked for a measure the run lacks (yet): said, never another one in its place
        why = str(e)
        summary = replace(summary, success=replace(summary.success, source=None), measure=None)
    latest = {tid: EpisodeRecord.from_json(r) for tid, r in read_results(out).latest().items()}
    rows = []
    for tid, t in summary.per_task.items():
        if not failed(t):
            continue
        rec = latest.get(tid)
        # the record says whether the agent answered; a folder without one is read as it is
        answer = rec.agents_answer if rec else (answer_of(out / tid) if t.has_folder else "")
        rows.append(Failure(tid, t.status, t.success, rec, answer, t.outcome, t.failure.cls if t.failure else ""))
    return Computed(summary, latest, rows, why)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def source_text(summary: RunReport) -> str:
    """The measure success is read by, named, and how much of the run it covers."""
    succ = summary.success
    if succ.source == "judge" and succ.judge is not None:
        j = succ.judge
        return f"measure: judge {j.mode or '?'}/{j.model or '?'}, {j.judged} of {summary.tasks} judged"
    if succ.source == "correct":
        return "measure: reference answers"
    if succ.source == "labels":
        disputed = f", {len(summary.disputed)} disputed" if summary.disputed else ""
        return f"measure: human labels (final), {summary.labelled} of {summary.tasks} labelled{disputed}"
    return "no success measure: run `om2w-tui judge` or `om2w-tui label`"


def pending(summary: RunReport, total: int | None) -> int:
    """Tasks with no outcome yet: those of the folder without one, and of a live run of `total` tasks, those still
    queued (no record or folder yet, so not among the folder's tasks)."""
    c = summary.success.counts
    return (c.pending if c is not None else 0) + max(0, (total or 0) - summary.tasks)


def rules_lines(summary: RunReport, total: int | None = None) -> list[tuple[str, str, str]]:
    """(label, value, style) lines of the success measure under both rules, and what is pending."""
    c = summary.success.counts
    if c is None:
        return [("overall", "-", "bold")]
    lines = [("over all", fmt_rate(c.overall), "bold"), ("executable", fmt_rate(c.executable), "")]
    waiting = pending(summary, total)
    extra = [f"{c.not_executable} not executable"] if c.not_executable else []
    extra += [f"{waiting} pending (queued, running or no outcome yet)"] if waiting else []
    if extra:
        lines.append(("", " · ".join(extra), "dim"))
    return lines


def agreement_text(summary: RunReport) -> str:
    """'judge vs humans: 86.0% agree, kappa 0.712, 4 disagree' under the first rule ('' with nothing to compare)."""
    if not summary.agreement:
        return ""
    a = summary.agreement[0]
    kappa = "-" if a.kappa is None else f"{a.kappa:.3f}"
    agree = a.confusion.agreement
    pct = "-" if agree.rate is None else f"{100 * agree.rate:.1f}%"
    return f"judge vs humans: {pct} agree ({a.confusion.n} tasks), kappa {kappa}, {len(a.disagreements)} disagree"


METRIC_NAMES = {"steps": "steps", "duration_s": "duration", "prompt_tokens": "prompt tok",
                "completion_tokens": "compl. tok"}


def metric_text(key: str, value: float | None) -> str:
    return clock_text(value) if key == "duration_s" and value is not None else fmt_num(value)


def short_rate(v: Rate) -> str:
    """`37.5% 3/8 [14-69]`: a rate for a narrow line, its interval in whole percents."""
    if v.rate is None or v.interval is None:
        return "-"
    return f"{100 * v.rate:.1f}% {v.successes}/{v.tasks} [{100 * v.interval[0]:.0f}-{100 * v.interval[1]:.0f}]"


def summary_text(summary: RunReport, wide: bool, total: int | None = None) -> Text:
    """Overall success, statuses and medians: a column on a wide terminal, three lines on a narrow one. `total`: the
    live run's task count (its queued tasks are pending too)."""
    statuses = [(k, v) for k, v in summary.status.items() if v]
    metrics = [(k, m) for k, m in summary.metrics.items() if m.n]
    rules = rules_lines(summary, total)
    agree = agreement_text(summary)
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
        t.append(f" · {source_text(summary)}", style="dim")
        t.append("\nmedian  ", style="bold cyan")
        t.append(" · ".join(f"{METRIC_NAMES.get(k, k)} {metric_text(k, m.median)}" for k, m in metrics)
                 or "-")
        return t
    for label, value, style in rules:
        t.append(f"{label:<11}", style="bold cyan")
        t.append(value + "\n", style=style)
    t.append(f"           {source_text(summary)}\n", style="dim")
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


class FittedTable(KeyedTable):
    """A KeyedTable whose FLEX columns share, by weight, the width the other columns leave (never narrower than
    their own width): the text columns use a terminal of any width."""

    FLEX: dict[str, int] = {}
    SCROLLBAR = 2

    def __init__(self, **kw: Any):
        self._fitted: dict[str, int] = {}
        super().__init__(**kw)

    def width_of(self, key: str) -> int:
        return self._fitted.get(key) or super().width_of(key)

    def fit(self, width: int) -> bool:
        """Share `width` (the table's inside) out; -> whether the table was rebuilt (its rows must be synced)."""
        if width <= 0:
            return False
        fixed = sum(super(FittedTable, self).width_of(c.key) for c in self.COLUMNS if c.key not in self.FLEX)
        free = width - fixed - 2 * len(self.COLUMNS) - self.SCROLLBAR     # each cell has a column of padding each side
        weights = sum(self.FLEX.values())
        widths = {k: max(super(FittedTable, self).width_of(k), free * w // weights) for k, w in self.FLEX.items()}
        if widths == self._fitted:
            return False
        kept = self.cursor_key()
        self._fitted = widths
        self.clear(columns=True)
        self._cells.clear()
        self._add_columns()
        self._keep_cursor = kept
        return True

    def set_wide(self, wide: bool) -> bool:
        if wide != self.wide:
            self._fitted = {}      # fitted again next
        return super().set_wide(wide)


class FailuresTable(FittedTable):
    """The tasks that did not succeed, by task id, with why (their failure class)."""

    COLUMNS = (Col("task", "task", 22, 34), Col("ok", "ok", 2), Col("status", "status", 7, 12),
               Col("why", "why", 10, 14), Col("error", "error", 16), Col("answer", "answer", 18))
    FLEX = {"error": 1, "answer": 1}

    def show(self, failures: list[Failure]) -> None:
        rows = {}
        for f in failures:
            mark = (Text("⊘", style="yellow") if f.outcome == "not_executable" else Text("?", style="dim")
                    if f.success is None else Text("✗", style="red") if not f.success else "")
            answer = Text(clip(f.answer, self.width_of("answer")) or no_answer(f.status),
                          style="" if f.answer else "dim")
            rows[f.task_id] = (clip(f.task_id, self.width_of("task")), mark,
                               styled(clip(f.status, self.width_of("status")), STATUS_STYLE, f.status),
                               clip(f.why, self.width_of("why")),
                               clip(f.record.error or "" if f.record else "", self.width_of("error")), answer)
        self.sync(rows)


class ErrorsTable(FittedTable):
    """summarize()'s errors: every attempt's, grouped by status, kind and message."""

    COLUMNS = (Col("count", "n", 4), Col("status", "status", 7, 9), Col("kind", "kind", 6, 8),
               Col("message", "message", 30), Col("tasks", "tasks", 12))
    FLEX = {"message": 5, "tasks": 2}

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.groups: dict[str, ErrorGroup] = {}

    def show(self, errors: Sequence[ErrorGroup]) -> None:
        self.groups = {g.key: g for g in errors}
        rows = {}
        for key, g in self.groups.items():
            tasks = ", ".join(g.tasks) + (" …" if g.task_count > len(g.tasks) else "")
            rows[key] = (str(g.count), styled(clip(g.status, self.width_of("status")), STATUS_STYLE, g.status),
                         clip(g.kind, self.width_of("kind")), clip(g.message, self.width_of("message")),
                         clip(tasks, self.width_of("tasks")))
        self.sync(rows)


class ReportTables(Screen[None]):
    """Every table of the report (`om2w-tui report --format table`'s): each success measure under both rules per
    level and per site, the judge against the humans, the annotators, statuses, medians and errors."""

    BINDINGS = [Binding("escape,t", "back", "Back", id="tables-back")]
    DEFAULT_CSS = """
    ReportTables #tables-title { width: 1fr; height: 1; padding: 0 1; background: $panel; }
    ReportTables VerticalScroll { padding: 0 1; }
    ReportTables .tables-note { color: $text-muted; }
    ReportTables .tables-section { margin-bottom: 1; }
    """

    def __init__(self, summary: RunReport):
        super().__init__()
        self.summary = summary

    def compose(self) -> ComposeResult:
        yield Label(Text(title(self.summary), style="bold"), id="tables-title")
        with VerticalScroll():
            for line in notes(self.summary):
                yield Static(Text(line), classes="tables-note")
            for heading, header, rows in sections(self.summary, site_limit=40):
                yield Static(rich_table(heading, header, rows), classes="tables-section")
        yield LeanFooter(compact=True)

    def action_back(self) -> None:
        self.dismiss()


def rich_table(heading: str, header: list[str], rows: list[list[str]]) -> RichTable:
    t = RichTable(title=heading, title_justify="left", show_edge=False, min_width=40)
    for h in header:
        t.add_column(h, overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


class AskAnnotator(ModalScreen["str | None"]):
    """Who is labelling: asked once before the first label from the report (the labels file is named after it)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    AskAnnotator { align: center middle; }
    AskAnnotator > Container { width: 72; height: auto; border: round $accent; padding: 0 1; background: $panel; }
    AskAnnotator #ask-why { color: $error; }
    """

    def __init__(self, known: list[str]):
        super().__init__()
        self.known = known

    def compose(self) -> ComposeResult:
        with Container():
            yield Label("Who is labelling? (your labels go to labels.<name>.json)")
            if self.known:
                yield Label(Text(f"annotators of this run: {', '.join(self.known)}", style="dim"))
            yield Input(placeholder="name", id="ask-name")
            yield Label("", id="ask-why")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        name = event.value.strip()
        try:
            check_annotator(name)
            if name == FINAL:
                raise LabelFileError(f"{FINAL!r} is the reviewer's file: `om2w-tui label OUT --review`")
        except LabelFileError as e:
            self.query_one("#ask-why", Label).update(str(e).replace("--annotator ", ""))
            return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)


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
