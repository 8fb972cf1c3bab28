"""The app `om2w-tui label OUT` opens: the label screen alone (`screens/label.py`) on one annotator's session, `q`
quitting, the screen's commands in the palette; `run_labeller` runs it and says how many tasks are labelled."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input

from om2w_tui.evaluation.label_session import LabelSession
from om2w_tui.frontends.console.collector import Collector
from om2w_tui.frontends.console.commands import palette_of
from om2w_tui.frontends.console.screens.label import LabelScreen
from om2w_tui.resources import styles_dir


class LabelApp(App[int]):
    TITLE = "om2w-tui label"
    CSS_PATH = [styles_dir() / "app.tcss"]
    BINDINGS = [Binding("q", "quit_label", "Quit", id="quit", priority=True)]

    def __init__(self, session: LabelSession, *, show_judge: bool = False, renderer: str = "auto",
                 task: str | None = None):
        super().__init__()
        self.session = session
        self.screen_args = {"show_judge": show_judge, "renderer": renderer}
        self.start_task = task
        self.collector = Collector()

    def on_mount(self) -> None:
        self.collector.start()
        if self.start_task and not self.session.go(self.start_task):
            self.notify(f"--task {self.start_task}: no such task in {self.session.out}", severity="warning")
        self.push_screen(LabelScreen(self.session, standalone=True, **self.screen_args))   # type: ignore[arg-type]
        self.call_after_refresh(self.collector.freeze)   # once the screen is drawn

    def on_unmount(self) -> None:
        self.collector.stop()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "quit_label":
            return not isinstance(self.focused, Input)
        return True

    def action_quit_label(self) -> None:
        self.exit(0)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from palette_of(screen)
        yield from super().get_system_commands(screen)


def run_labeller(out: Path, annotator: str, *, review: bool = False, show_judge: bool = False,
                 judge: Path | None = None, flt: str = "all", task: str | None = None, renderer: str = "auto") -> int:
    """`om2w-tui label OUT`: the labelling screen until the annotator quits (every label is already on disk)."""
    session = LabelSession(out, annotator, review=review, judge=judge, flt=flt)
    app = LabelApp(session, show_judge=show_judge, renderer=renderer, task=task)
    result = app.run()
    print(f"om2w-tui label: {session.summary_line()}")
    return int(result or 0)
