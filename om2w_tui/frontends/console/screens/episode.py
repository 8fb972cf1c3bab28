"""One episode: its task, actions, thoughts, answer, files, and its screenshots in the terminal, stepped with the
arrow keys. It reads `<out>/<task_id>/result.json` and `trajectory/<i>_full_screenshot.png` with
`benchmarks/episode_folder.py`; the episode rewrites them after every step, so it works for a running episode too
(the dashboard asks it to reload on each step). `o` opens the task's page of the web report in the browser, built
on demand in the temporary folder (`frontends/console/task_page.py`), its path said where there is no browser. The
screenshot is shown in `widgets/screenshot.py`'s `ScreenshotPane`, the label screen's too."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from om2w_tui.benchmarks.episode_folder import (
    EpisodeFolder,
    StepOnDisk,
    episode_steps,
    is_attempt_folder,
    read_episode,
)
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.frontends.answer import shown_answer
from om2w_tui.frontends.console.commands import Command, CommandTable
from om2w_tui.frontends.console.messages import EpisodeChange
from om2w_tui.frontends.console.task_page import open_page, write_task_page
from om2w_tui.frontends.console.widgets.footer import LeanFooter
from om2w_tui.frontends.console.widgets.screenshot import ScreenshotPane
from om2w_tui.frontends.formatting import clip
from om2w_tui.frontends.run_state import verdict_text


def size_text(n: int) -> str:
    if n < 0:
        return f"{-n} file{'s' if n != -1 else ''}"
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} kB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


def history_text(steps: Sequence[StepOnDisk], shown: int, thought_width: int = 200) -> Text:
    """The actions and thoughts, step by step, the step of screenshot `shown` marked (the label screen's too)."""
    hist = Text()
    n_actions = sum(len(step.actions) for step in steps)
    hist.append(f"Actions and thoughts ({n_actions} in {len(steps)} steps)\n", style="bold cyan")
    for n, step in enumerate(steps):
        here = n == shown
        for k, action in enumerate(step.actions):
            hist.append("▶ " if here and k == 0 else "  ", style="bold")
            hist.append(f"{n + 1}. " if k == 0 else " " * len(f"{n + 1}. "), style="bold" if here else "dim")
            hist.append(action + "\n", style="reverse" if here else "")
        if step.thought:
            hist.append(f"      {clip(step.thought, thought_width)}\n", style="dim italic")
    return hist


class EpisodeScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    # the view's keys (commands.py): key, action, footer label, palette title and help, when it applies
    COMMAND_TABLE: ClassVar[CommandTable[EpisodeScreen]] = CommandTable(
        Command("left", "shot(-1)", "Prev shot", when=lambda s: s.can_step(-1), id="shot-prev", key_display="←",
                priority=True),
        Command("right", "shot(1)", "Next shot", when=lambda s: s.can_step(1), id="shot-next", key_display="→",
                priority=True),
        Command("home", "shot_at(0)", "First", id="shot-first", show=False),
        Command("end", "shot_at(-1)", "Last", id="shot-last", show=False),
        Command("o", "open_page", "Page", id="episode-page"),
        Command("escape,backspace", "back", "Back", id="back"),
    )
    BINDINGS = COMMAND_TABLE.bindings()

    def __init__(self, folder: Path, task_id: str, *, record: EpisodeRecord | None = None, task_text: str = "",
                 renderer: str = "auto", running: bool = False, lane: str = "", lane_label: str = ""):
        super().__init__()
        self.lane = lane                     # a campaign's lane the episode ran in ("" in a plain run)
        self.lane_label = lane_label or lane   # as its title says it: the arm, and the repeat where there are several
        self.folder = folder
        self.task_id = task_id
        self.record = record
        self.task_text = task_text
        self.renderer = renderer
        self.running = running
        self.files = EpisodeFolder(folder)
        self.page: Path | None = None        # the last task page `o` built (the tests read it)
        self.index = -1 if running else 0    # the screenshot shown; -1: the last, following new ones
        self._generation = 0

    def compose(self) -> ComposeResult:
        yield Label("", id="ep-title")
        with Horizontal(id="ep-body"):
            with VerticalScroll(id="ep-text"):
                yield Static("", id="ep-task")
                yield Static("", id="ep-answer")
                yield Static("", id="ep-current")
                yield Static("", id="ep-actions")
                yield Static("", id="ep-files")
            yield ScreenshotPane(self.renderer, image_id="ep-shot", id="ep-shot-box")
        yield LeanFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#ep-text").border_title = "Episode"
        self.reload()
        signal = getattr(self.app, "episode_signal", None)
        # a view of an earlier attempt (under attempts/) has nothing new to read
        if signal is not None and not is_attempt_folder(self.folder):
            signal.subscribe(self, self._episode_changed, immediate=True)

    def _episode_changed(self, change: EpisodeChange) -> None:
        if change.task_id == self.task_id and change.lane == self.lane:   # another arm's run of the task is not this
            self.reload(change.record, running=change.record is None)

    # ── loading (in a thread: files can be large, the disk slow) ──
    def reload(self, record: EpisodeRecord | None = None, running: bool | None = None) -> None:
        if record is not None:
            self.record = record
        if running is not None:
            self.running = running
        self._generation += 1
        self._read(self._generation)

    @work(thread=True, exclusive=True, group="episode-read", exit_on_error=False)
    def _read(self, generation: int) -> None:
        files = read_episode(self.folder)
        self.app.call_from_thread(self._loaded, generation, files)

    def _loaded(self, generation: int, files: EpisodeFolder) -> None:
        if generation != self._generation or not self.is_attached:
            return
        self.files = files
        self._show_text()
        self._show_shot()

    # ── rendering ──────────────────────────────────────────
    @property
    def shown(self) -> int:
        n = len(self.files.shots)
        if n == 0:
            return -1
        return n - 1 if self.index < 0 or self.index >= n else self.index

    def _show_text(self) -> None:
        res, rec = self.files.result, self.record
        final, steps = episode_steps(res, self.files.shots)
        actions = [a for step in steps for a in step.actions]
        title = Text()
        title.append(self.task_id, style="bold")
        if self.lane_label:
            title.append(f"  · {self.lane_label}", style="bold magenta")
        if self.running:
            title.append("  running", style="green")
        elif rec is not None:
            title.append(f"  {rec.status}", style="bold")
            if rec.error and rec.error != rec.status:
                title.append(f" ({rec.error})")
            if verdict := verdict_text(rec):   # none for an attempt that does not settle its task
                title.append(f"  {verdict}", style="green" if rec.correct else "red")
            title.append(f"  attempt {rec.attempt} · {rec.steps} steps · {rec.duration_s:.0f}s", style="dim")
        self.query_one("#ep-title", Label).update(title)

        task = Text()
        task.append("Task\n", style="bold cyan")
        task.append(res.get("task") or self.task_text or "(unknown)")
        self.query_one("#ep-task", Static).update(task)

        answer = Text()
        answer.append("Answer\n", style="bold cyan")
        shown = shown_answer(final, rec, self.files.cut_short)
        answer.append("(none yet)" if self.running and not shown.answered else shown.text,
                      style="" if shown.answered else "dim")
        if self.files.problem:
            answer.append(f"\n{self.files.problem}", style="yellow")
        self.query_one("#ep-answer", Static).update(answer)

        i = self.shown
        n_shots = len(self.files.shots)
        current = Text()
        if i < 0:
            current.append("No screenshot yet", style="bold")
        elif i < len(steps) and steps[i].actions:
            current.append(f"Step {i + 1} of {len(steps)}\n", style="bold cyan")
            for action in steps[i].actions:
                current.append("action: ", style="dim")
                current.append(action + "\n")
            if steps[i].thought:
                current.append("thought: ", style="dim")
                current.append(steps[i].thought)
        elif i == n_shots - 1 and not self.running:
            current.append("The final state", style="bold cyan")
            current.append(f" (after {len(actions)} actions)", style="dim")
        else:
            current.append(f"Step {i + 1}", style="bold cyan")
            current.append(" (no action recorded)" if i < len(steps) or not self.running else " (in progress)",
                           style="dim")
        self.query_one("#ep-current", Static).update(current)

        self.query_one("#ep-actions", Static).update(history_text(steps, i))

        files = Text()
        where = (f"{self.task_id}/attempts/{self.folder.name}" if is_attempt_folder(self.folder)
                 else self.folder.name)
        files.append(f"Files in {where}/\n", style="bold cyan")
        for name, size in self.files.files:
            files.append(f"  {name}", style="")
            files.append(f"  {size_text(size)}\n", style="dim")
        self.query_one("#ep-files", Static).update(files)

    def _show_shot(self) -> None:
        i = self.shown
        box = self.query_one("#ep-shot-box", ScreenshotPane)
        if i < 0:
            box.clear()
            box.border_subtitle = "no screenshot yet"
            return
        n = len(self.files.shots)
        _, steps = episode_steps(self.files.result, self.files.shots)
        what = "final state" if i == n - 1 and not self.running and not (i < len(steps) and steps[i].actions) \
            else f"step {i + 1}"
        box.border_subtitle = f"{i + 1}/{n} · {self.files.shots[i].name} · {what}"
        box.load(self.files.shots[i])

    # ── keys ───────────────────────────────────────────────
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    def can_step(self, step: int) -> bool:
        """A screenshot `step` away from the one shown."""
        i, n = self.shown, len(self.files.shots)
        return n > 0 and 0 <= i + step < n

    def action_shot(self, step: int) -> None:
        n = len(self.files.shots)
        if n == 0:
            return
        i = max(0, min(n - 1, self.shown + step))
        self.index = -1 if i == n - 1 and self.running else i
        self._show_text()
        self._show_shot()
        self.refresh_bindings()

    def action_shot_at(self, i: int) -> None:
        n = len(self.files.shots)
        if n:
            self.index = -1 if i < 0 else min(i, n - 1)
            self._show_text()
            self._show_shot()
            self.refresh_bindings()

    def action_open_page(self) -> None:
        self.notify(f"building the page of {self.task_id} …", timeout=3)
        self._open_page()

    @work(thread=True, group="episode-page", exit_on_error=False)
    def _open_page(self) -> None:
        """The web report's page of the task (its latest attempt), built in the temporary folder: slow (the run's
        report, the thumbnails), so in a thread."""
        task_folder = self.folder.parent.parent if is_attempt_folder(self.folder) else self.folder
        try:
            page = write_task_page(task_folder.parent, self.task_id)
        except Exception as e:   # a folder being written or gone: said, nothing opened
            self.app.call_from_thread(self.notify, f"the page of {self.task_id} was not built: {e}",
                                      severity="error")
            return
        opened = open_page(page)
        self.page = page
        self.app.call_from_thread(self.notify, f"{'opened' if opened else 'no browser here: open'} {page}",
                                  timeout=12)

    def action_back(self) -> None:
        self.dismiss()
