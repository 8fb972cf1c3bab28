"""Labelling a run's episodes by hand: `om2w-tui label OUT`.

For each task the screen shows the task, its website and level, how the run ended it (done, out_of_steps, timeout,
blocked, error ...), the agent's answer (or why there is none: `no answer (killed)`), its actions and thoughts,
and the screenshots (the episode view's viewer, `←`/`→`);
`o` opens the task's page of the web report in the browser (built on demand in the temporary folder: every
screenshot beside its step, the verdicts, the record; its path said for a login without a browser), for a terminal
that draws screenshots only in block characters (tmux, most SSH logins). `1` success, `0` failure, `2` not executable
(then a reason: CAPTCHA or bot wall, site down, task outdated, other), `n` a note; every key is written to the
annotator's file in OUT at once (`evaluation/labels.py`), and the next task of the filter follows. The judge's
verdict stays hidden unless asked (`--show-judge`, or `v`), so labels stay blind. Filters (`f`): unlabelled, a
site, a level, a failure class (`failure:loop`: `report`'s classes, `evaluation/failure.py`), disagreeing with the
judge, disagreeing with another annotator, with a note. Review (`--review`):
the tasks where annotators disagree, each one's label and note shown; the label given is the final one.

`LabelSession` (`evaluation/label_session.py`) holds the tasks, the filter and the position, and knows nothing of
Textual; `LabelScreen`, here, draws it and reads each episode's folder in a thread, keeping the tasks around the
current one read ahead, so the next one shows at once; its screenshot is the episode view's `ScreenshotPane`. Its
dialogs are `label_dialogs.py`'s, and `om2w-tui label`'s app is `frontends/console/label_app.py`."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from PIL import Image as PILImage
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from om2w_tui.benchmarks.episode_folder import EpisodeFolder, episode_steps, read_episode
from om2w_tui.evaluation.label_session import LabelSession, filter_words
from om2w_tui.evaluation.labels import REASONS, VALUE_WORDS, LabelFileError
from om2w_tui.evaluation.labels import Label as TaskLabel
from om2w_tui.frontends.answer import shown_answer
from om2w_tui.frontends.console.commands import Command, CommandTable
from om2w_tui.frontends.console.screens.episode import history_text
from om2w_tui.frontends.console.screens.label_dialogs import FilterPicker, NoteEditor, ReasonPicker
from om2w_tui.frontends.console.task_page import open_page, write_task_page
from om2w_tui.frontends.console.widgets.block_image import HalfCells
from om2w_tui.frontends.console.widgets.footer import LeanFooter
from om2w_tui.frontends.console.widgets.panels import STATUS_STYLE
from om2w_tui.frontends.console.widgets.screenshot import ScreenshotPane, cells_for, draws_in_blocks, load_screenshot
from om2w_tui.frontends.formatting import clip
from om2w_tui.resources import styles_dir

VALUE_STYLE = {"1": "bold green", "0": "bold red", "2": "bold yellow"}
KEPT = 12               # episode folders (and first screenshots) kept in memory
AHEAD_AFTER_S = 0.05    # the read-ahead starts this long after a task is shown


@dataclass
class Loaded:
    """A task's folder as read and its first screenshot (None: none, or not yet): decoded, or where screenshots
    are drawn in blocks, its half cells for the box they were scaled to."""

    folder: EpisodeFolder
    image: Any = None
    cells: HalfCells | None = None
    box: tuple[int, int] = (0, 0)


class LabelScreen(Screen[None]):
    CSS_PATH = styles_dir() / "label.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    # the labeller's commands (commands.py): key, action, footer label, palette title and help, when it applies
    COMMAND_TABLE: ClassVar[CommandTable[LabelScreen]] = CommandTable(
        Command("1", "give('1')", "Success", "Label: success (1)", "The agent did the task", lambda s: s.on_task(),
                id="label-success"),
        Command("0", "give('0')", "Failure", "Label: failure (0)", "The agent did not do the task",
                lambda s: s.on_task(), id="label-failure"),
        Command("2", "give('2')", "Not exec.", "Label: not executable (2)",
                "A CAPTCHA or bot wall, the site down, the task outdated, other", lambda s: s.on_task(),
                id="label-not-executable"),
        Command("n", "note", "Note", "Note on this task", "A few words on why", lambda s: s.on_task(),
                id="label-note"),
        Command("backspace", "clear", "Clear", "Clear this task's label", "As if it was never labelled",
                lambda s: s.on_task(), id="label-clear", show=False),
        Command("right_square_bracket,pagedown,j", "task(1)", "Next", when=lambda s: s.can_move(1),
                id="label-next", key_display="]"),
        Command("left_square_bracket,pageup,k", "task(-1)", "Prev", when=lambda s: s.can_move(-1),
                id="label-prev", key_display="["),
        Command("left", "shot(-1)", "Shot", when=lambda s: s.can_step(-1), id="label-shot-prev", key_display="←",
                priority=True),
        Command("right", "shot(1)", "Shot", when=lambda s: s.can_step(1), id="label-shot-next", key_display="→",
                priority=True),
        Command("f", "filter", "Filter", "Choose the tasks shown",
                "Unlabelled, a site, a level, disagreeing with the judge or an annotator", id="label-filter"),
        Command("v", "toggle_judge", "Judge", "Show or hide the judge's verdict",
                "Hidden by default, so labels stay blind", lambda s: bool(s.session.verdicts), id="label-judge"),
        Command("o", "open_full", "Open", "Open the task's page in the browser",
                "The web report's page: each screenshot beside its step", lambda s: s.on_task(), id="label-open"),
        Command("escape", "back", "Back", when=lambda s: not s.standalone, id="label-back"),   # standalone: q quits
    )
    BINDINGS = COMMAND_TABLE.bindings()

    def __init__(self, session: LabelSession, *, show_judge: bool = False, renderer: str = "auto",
                 standalone: bool = False, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.session: LabelSession = session
        self.show_judge = show_judge
        self.renderer = renderer
        self.standalone: bool = standalone
        self.clock = clock
        self.loaded: OrderedDict[str, Loaded] = OrderedDict()
        self.shot = 0                       # the screenshot shown
        self._generation = 0
        self.blocks = draws_in_blocks(renderer)
        self.shown_at: dict[str, float] = {}   # task -> when its text was drawn (the benchmark reads it)
        self.image_at: dict[str, float] = {}   # task -> when its first screenshot was drawn
        self.page: Path | None = None          # the last task page `o` built (the tests read it)

    # ── layout ──
    def compose(self) -> ComposeResult:
        yield Label("", id="label-title")
        with Horizontal(id="label-body"):
            with VerticalScroll(id="label-text"):
                yield Static("", id="label-task")
                yield Static("", id="label-verdict")
                yield Static("", id="label-answer")
                yield Static("", id="label-actions")
            yield ScreenshotPane(self.renderer, image_id="label-shot", blocks=self.blocks, id="label-shot-box")
        yield LeanFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#label-text").border_title = "Task"
        self.call_after_refresh(self.show_task)    # once laid out: screenshots are drawn for their box

    def on_resize(self) -> None:
        if self.blocks:   # a picture fitted by the pane itself otherwise
            self.call_after_refresh(self._redraw_blocks)

    def _pane(self) -> ScreenshotPane:
        return self.query_one("#label-shot-box", ScreenshotPane)

    def _box(self) -> tuple[int, int]:
        return self._pane().box()

    def _redraw_blocks(self) -> None:
        """The box changed size: the current screenshot is drawn again for it (those drawn ahead for another size
        are drawn again when read ahead or shown)."""
        task = self.session.current
        got = self.loaded.get(task or "")
        if task is not None and got is not None:
            self._show_shot(task, got)
            self._read_ahead(self.session.around())

    # ── reading (in a thread; the tasks around the current one are read ahead) ──
    def show_task(self) -> None:
        """Draw the current task: at once from what was read ahead, else once its folder is read."""
        self._generation += 1
        self._pane().cancel_load()
        self.shot = 0
        task = self.session.current
        self._draw_title()
        if task is None:
            self._draw_empty()
            return
        got = self.loaded.get(task)
        if got is not None:
            self.loaded.move_to_end(task)
            self._draw(task, got)
        else:
            self._draw_placeholder(task)
            self._read(self._generation, [task])
        # once this task's frame is out: the reads would take the CPU (and the GIL) from drawing it
        self.set_timer(AHEAD_AFTER_S, lambda: self._read_ahead(self.session.around()))

    def _read(self, generation: int, tasks: list[str]) -> None:
        self._read_in_thread(generation, tasks, self._box() if self.blocks else None)

    @work(thread=True, exclusive=True, group="label-read", exit_on_error=False)
    def _read_in_thread(self, generation: int, tasks: list[str], box: tuple[int, int] | None) -> None:
        for task in tasks:
            got = _read_task(self.session.out, task, self.renderer, box)
            self.app.call_from_thread(self._read_done, generation, task, got)

    def _read_ahead(self, tasks: list[str]) -> None:
        box = self._box() if self.blocks else None
        todo = [t for t in tasks if t not in self.loaded or (box is not None and self.loaded[t].box != box)]
        if todo:
            self._read_ahead_in_thread(todo, box)

    @work(thread=True, exclusive=True, group="label-ahead", exit_on_error=False)
    def _read_ahead_in_thread(self, tasks: list[str], box: tuple[int, int] | None) -> None:
        for task in tasks:
            got = _read_task(self.session.out, task, self.renderer, box)
            self.app.call_from_thread(self._keep, task, got)

    def _keep(self, task: str, got: Loaded) -> None:
        self.loaded[task] = got
        self.loaded.move_to_end(task)
        while len(self.loaded) > KEPT:
            self.loaded.popitem(last=False)

    def _read_done(self, generation: int, task: str, got: Loaded) -> None:
        if not self.is_attached:
            return
        self._keep(task, got)
        if generation == self._generation and task == self.session.current:
            self._draw(task, got)

    # ── drawing ──
    def _draw_title(self) -> None:
        s = self.session
        t = Text()
        t.append("Label  " if not s.review else "Review  ", style="bold")
        t.append(s.out.name, style="bold")
        t.append(f"  {s.annotator}" if not s.review else "  final labels", style="cyan")
        t.append(f"  labelled {s.labelled} of {len(s.tasks)}", style="bold")
        where = f"task {s.pos + 1} of {len(s.view)}" if s.view else "no task"
        t.append(f"  ·  {where} ({filter_words(s.filter)})", style="dim")
        self.query_one("#label-title", Label).update(t)

    def _draw_empty(self) -> None:
        self.query_one("#label-task", Static).update(Text(f"No task ({filter_words(self.session.filter)})"
                                                          f" — `f` chooses another filter.", style="dim"))
        for part in ("#label-verdict", "#label-answer", "#label-actions"):
            self.query_one(part, Static).update("")
        self._pane().clear()
        self._bindings_changed()

    def _draw_placeholder(self, task: str) -> None:
        self.query_one("#label-task", Static).update(self._task_text(task, None))
        self.query_one("#label-verdict", Static).update(self._verdict_text(task))
        self.query_one("#label-answer", Static).update(Text("reading…", style="dim"))
        self.query_one("#label-actions", Static).update("")

    def _draw(self, task: str, got: Loaded) -> None:
        with self.app.batch_update():
            self.query_one("#label-task", Static).update(self._task_text(task, got.folder))
            self.query_one("#label-verdict", Static).update(self._verdict_text(task))
            self.query_one("#label-answer", Static).update(self._answer_text(task, got.folder))
            self.query_one("#label-actions", Static).update(self._actions_text(got.folder))
            self._show_shot(task, got)
        self.shown_at[task] = self.clock()
        self._bindings_changed()

    def _task_text(self, task: str, folder: EpisodeFolder | None) -> Text:
        info = self.session.info[task]
        t = Text()
        t.append(task, style="bold")
        t.append(f"   {info.level} · {info.site}", style="dim")
        rec = info.record
        if rec is not None:
            t.append("   ")
            t.append(rec.status, style=STATUS_STYLE.get(rec.status, "bold"))
            if rec.error and rec.error != rec.status:
                t.append(f" ({clip(rec.error, 120)})", style="dim")
            # what an older writer left out is not shown as 0: `report` shows it as unknown too
            counts = ([f"{rec.steps} steps"] if rec.recorded("steps") else []) + (
                [f"{rec.duration_s:.0f}s"] if rec.recorded("duration_s") else [])
            t.append("".join(f" · {c}" for c in counts), style="dim")
        else:
            t.append("   no record (not run here, or still running)", style="dim")
        text = (folder.task if folder is not None else "") or "(the task's text is in no result.json)"
        t.append("\n")
        t.append(text)
        if info.website:
            t.append(f"\nstarts on {info.website}", style="dim")
        if folder is not None and folder.problem:
            t.append(f"\n{folder.problem}", style="yellow")
        return t

    def _verdict_text(self, task: str) -> Text:
        s = self.session
        lab = s.label_of(task)
        t = Text()
        t.append("Final label  " if s.review else "Your label  ", style="bold cyan")
        if lab is None or lab.value is None:
            t.append("none yet", style="dim")
        else:
            t.append(f"{lab.value} {VALUE_WORDS[lab.value]}", style=VALUE_STYLE[lab.value])
            if lab.reason:
                t.append(f" · {REASONS.get(lab.reason, lab.reason)}", style="yellow")
        if lab is not None and lab.note:
            t.append(f"\nnote: {lab.note}", style="italic")
        if s.review or s.filter == "annotators":
            for a, labs in sorted(s.others.items()):
                other = labs.get(task)
                if other is None or other.value is None:
                    continue
                t.append(f"\n{a:<12}", style="cyan")
                t.append(f"{other.value} {VALUE_WORDS[other.value]}", style=VALUE_STYLE[other.value])
                if other.reason:
                    t.append(f" · {REASONS.get(other.reason, other.reason)}", style="yellow")
                if other.note:
                    t.append(f" · {clip(other.note, 100)}", style="italic")
        if self.show_judge:
            verdict = s.verdicts.get(task)
            t.append("\nJudge       ", style="bold cyan")
            t.append("not judged" if verdict is None else ("success" if verdict else "failure"),
                     style="dim" if verdict is None else ("green" if verdict else "red"))
        return t

    def _answer_text(self, task: str, folder: EpisodeFolder) -> Text:
        t = Text()
        t.append("Answer\n", style="bold cyan")
        shown = shown_answer(folder.answer, self.session.info[task].record, folder.cut_short)
        t.append(shown.text, style="" if shown.answered else "dim")
        return t

    def _actions_text(self, folder: EpisodeFolder) -> Text:
        _, steps = episode_steps(folder.result, folder.shots)
        return history_text(steps, self.shot, thought_width=300)

    def _show_shot(self, task: str, got: Loaded) -> None:
        shots = got.folder.shots
        pane = self._pane()
        if not shots:
            pane.clear()
            pane.border_subtitle = "no screenshot"
            return
        i = min(self.shot, len(shots) - 1)
        pane.border_subtitle = f"{i + 1}/{len(shots)} · {shots[i].name}"
        if i == 0 and self.blocks and got.cells is not None and got.box == pane.box():
            pane.show_cells(got.cells)
            self._image_shown(task)
        elif i == 0 and not self.blocks and got.image is not None:
            pane.show_image(got.image)
            self._image_shown(task)
        else:
            pane.load(shots[i], lambda: self._image_shown(task))

    def _image_shown(self, task: str) -> None:
        self.image_at.setdefault(task, self.clock())

    # ── keys ──
    def _bindings_changed(self) -> None:
        """Refresh the footer only when a key's availability changed: a refresh rebuilds the footer's keys, a
        tenth of the time a move to the next task takes otherwise."""
        gates = self.COMMAND_TABLE.gates(self)
        if gates != getattr(self, "_gates", None):
            self._gates = gates
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    def on_task(self) -> bool:
        return self.session.current is not None

    def can_move(self, step: int) -> bool:
        """A task `step` away in the filter's view."""
        s = self.session
        return bool(s.view) and 0 <= s.pos + step < len(s.view)

    def can_step(self, step: int) -> bool:
        """A screenshot `step` away from the one shown."""
        got = self.loaded.get(self.session.current or "")
        return got is not None and 0 <= self.shot + step < len(got.folder.shots)

    def action_give(self, value: str) -> None:
        if value == "2":
            self.app.push_screen(ReasonPicker(), self._reason_picked)
            return
        self._labelled(self.session.give(value))

    def _reason_picked(self, reason: str | None) -> None:
        if reason:
            self._labelled(self.session.give("2", reason))

    def _labelled(self, lab: TaskLabel | None) -> None:
        if lab is None:
            return
        if self.session.next_unlabelled():
            self.show_task()
        else:
            self._draw_title()
            task = self.session.current
            if task is not None:
                self.query_one("#label-verdict", Static).update(self._verdict_text(task))
            self.notify("the last task of this filter is labelled", timeout=4)
        self._bindings_changed()

    def action_note(self) -> None:
        task = self.session.current
        if task is None:
            return
        lab = self.session.label_of(task)
        self.app.push_screen(NoteEditor(lab.note if lab else "", task), self._noted)

    def _noted(self, text: str | None) -> None:
        task = self.session.current
        if text is not None and task is not None:
            self.session.note(text)
            self.query_one("#label-verdict", Static).update(self._verdict_text(task))

    def action_clear(self) -> None:
        task = self.session.current
        if task is not None:
            self.session.clear()
            self._draw_title()
            self.query_one("#label-verdict", Static).update(self._verdict_text(task))

    def action_task(self, step: int) -> None:
        if self.session.step(step):
            self.show_task()

    def go(self, task_id: str) -> None:
        if self.session.go(task_id):
            self.show_task()

    def action_shot(self, step: int) -> None:
        task = self.session.current
        got = self.loaded.get(task or "")
        if task is None or got is None:
            return
        to = self.shot + step
        if 0 <= to < len(got.folder.shots):
            self.shot = to
            self._generation += 1
            self.query_one("#label-actions", Static).update(self._actions_text(got.folder))
            self._show_shot(task, got)
            self._bindings_changed()

    def action_filter(self) -> None:
        try:
            self.session.reload_others()
        except LabelFileError as e:   # another annotator's file went bad meanwhile: said, their labels as they were
            self.notify(str(e), severity="warning")
        self.app.push_screen(FilterPicker(self.session.filters(), self.session.filter), self._filtered)

    def _filtered(self, flt: str | None) -> None:
        if flt:
            self.session.apply_filter(flt, keep=self.session.current)
            self.show_task()

    def action_toggle_judge(self) -> None:
        self.show_judge = not self.show_judge
        task = self.session.current
        if task is not None:
            self.query_one("#label-verdict", Static).update(self._verdict_text(task))

    def action_open_full(self) -> None:
        task = self.session.current
        if task is None:
            return
        self.notify(f"building the page of {task} …", timeout=3)
        self._open_page(task)

    @work(thread=True, group="page", exit_on_error=False)
    def _open_page(self, task: str) -> None:
        """The web report's page of the task, built in the temporary folder (slow: the run's report, thumbnails)."""
        self.page = None
        try:
            page = write_task_page(self.session.out, task, self.session.judge_path)
        except Exception as e:   # a folder being written or gone, a judge file gone bad: said, nothing opened
            self.app.call_from_thread(self.notify, f"the page of {task} was not built: {e}", severity="error")
            return
        opened = open_page(page)
        self.page = page
        self.app.call_from_thread(self.notify, f"{'opened' if opened else 'no browser here: open'} {page}",
                                  timeout=12)

    def action_back(self) -> None:
        self.dismiss()


def _read_task(out: Path, task: str, renderer: str, box: tuple[int, int] | None) -> Loaded:
    """A task's folder and its first screenshot, decoded, or scaled to half cells for `box` (columns, rows) when
    given (the decoded picture is then let go): the slow part, in a thread."""
    folder = read_episode(out / task)
    image: PILImage.Image | None = None
    cells: HalfCells | None = None
    if folder.shots:
        try:
            decoded = load_screenshot(folder.shots[0], renderer)
            if box is None:
                image = decoded
            else:
                cells = cells_for(decoded, box)
        except Exception:   # noqa: BLE001 - drawn later with its error
            image = cells = None
    return Loaded(folder, image, cells, box or (0, 0))


