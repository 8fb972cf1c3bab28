"""The console app. The engine runs as one worker owned by the app; its events reach the screen as messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Log, Static

from ..events import EpisodeFinished, EpisodeStep, RunFinished, RunStarted, SlotChanged
from ..launch import Preflight, open_run

STYLES = Path(__file__).parent / "styles"


class EngineEvent(Message):
    def __init__(self, event: object) -> None:
        super().__init__()
        self.event = event


class AppSink:
    """The scheduler's sink for the app: every event becomes a message on the app's queue."""

    def __init__(self, app: App[Any]):
        self.app = app

    def handle(self, event: object) -> None:
        self.app.post_message(EngineEvent(event))


class ConsoleApp(App[int]):
    TITLE = "om2w-tui"
    CSS_PATH = [STYLES / "app.tcss"]
    BINDINGS = [Binding("q", "quit_run", "Quit", id="quit", priority=True)]

    def __init__(self, pre: Preflight | None):
        super().__init__()
        self.pre = pre
        self.scheduler: Any = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="progress")
        table: DataTable[str] = DataTable(id="slots")
        table.border_title = "Slots"
        yield table
        log = Log(id="steps", max_lines=500)
        log.border_title = "Steps"
        yield log
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#slots", DataTable).add_columns("slot", "state", "task", "step")
        if self.pre is None:
            self.query_one("#progress", Static).update(
                "No run given. Start one with `om2w-tui run ...` or `om2w-tui demo`.")
            return
        self.run_engine()

    @work(exclusive=True, exit_on_error=False)
    async def run_engine(self) -> None:
        assert self.pre is not None
        async with open_run(self.pre, [AppSink(self)]) as scheduler:
            self.scheduler = scheduler
            await scheduler.run()

    def on_engine_event(self, message: EngineEvent) -> None:
        ev = message.event
        table = self.query_one("#slots", DataTable)
        if isinstance(ev, RunStarted):
            self.query_one("#progress", Static).update(f"{ev.settled}/{ev.total} done  out {ev.out}")
        elif isinstance(ev, SlotChanged):
            key = str(ev.slot)
            if ev.state == "retired":
                if key in table.rows:
                    table.remove_row(key)
                return
            if key not in table.rows:
                table.add_row(key, ev.state, ev.task_id or "", "", key=key)
            else:
                table.update_cell(key, table.ordered_columns[1].key, ev.state)
                table.update_cell(key, table.ordered_columns[2].key, ev.task_id or "")
        elif isinstance(ev, EpisodeStep):
            self.query_one("#steps", Log).write_line(f"[{ev.slot}] {ev.task_id} #{ev.step} {'; '.join(ev.actions)}")
            if str(ev.slot) in table.rows:
                table.update_cell(str(ev.slot), table.ordered_columns[3].key, str(ev.step))
        elif isinstance(ev, EpisodeFinished):
            r = ev.record
            self.query_one("#steps", Log).write_line(f"[{ev.slot}] {r['task_id']} finished: {r['status']}")
        elif isinstance(ev, RunFinished):
            s = ev.summary
            self.query_one("#progress", Static).update(f"finished: {s['finished']} episodes; {s['by_status']}")

    def action_quit_run(self) -> None:
        if self.scheduler is not None and self.scheduler.running():
            self.scheduler.stop()
        self.exit(0)


def run_console(pre: Preflight | None) -> int:
    return ConsoleApp(pre).run() or 0
