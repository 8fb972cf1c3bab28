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

`LabelSession` holds the tasks, the filter and the position, and knows nothing of Textual; `LabelScreen` draws it
and reads each episode's folder in a thread, keeping the tasks around the current one read ahead, so the next one
shows at once."""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from PIL import Image as PILImage
from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option
from textual_image import renderable as image_renderables
from textual_image.renderable import halfcell

from om2w_tui.benchmarks.conformance import task_dirs
from om2w_tui.benchmarks.episode_folder import EpisodeFolder, episode_steps, no_answer, read_episode
from om2w_tui.engine.results import EpisodeRecord, read_manifest, read_results
from om2w_tui.evaluation.failure import CLASSES, WORDS
from om2w_tui.evaluation.judge_files import read_judged
from om2w_tui.evaluation.labels import (
    FINAL,
    REASONS,
    VALUE_WORDS,
    LabelFile,
    LabelFileError,
    majority,
    read_run_labels,
)
from om2w_tui.evaluation.labels import Label as TaskLabel
from om2w_tui.evaluation.report import LEVEL_NAMES, find_judge_file, site_of, summarize, task_meta
from om2w_tui.frontends.console.collector import Collector
from om2w_tui.frontends.console.screens.episode import history_text, shown_answer
from om2w_tui.frontends.console.task_page import open_page, write_task_page
from om2w_tui.frontends.console.widgets.footer import LeanFooter
from om2w_tui.frontends.console.widgets.panels import STATUS_STYLE
from om2w_tui.frontends.console.widgets.screenshot import ShotWidget, fit_cells, load_screenshot, screenshot_widget
from om2w_tui.frontends.formatting import clip
from om2w_tui.json_input import InputError
from om2w_tui.resources import styles_dir
from om2w_tui.run_folder import RunFolder

FILTERS = ("all", "unlabelled", "judge", "annotators", "notes")
FILTER_WORDS = {"all": "every task", "unlabelled": "not labelled yet", "judge": "disagreeing with the judge",
                "annotators": "disagreeing with another annotator", "notes": "with a note"}
VALUE_STYLE = {"1": "bold green", "0": "bold red", "2": "bold yellow"}
READ_AHEAD = 2          # tasks read ahead on each side of the current one
KEPT = 12               # episode folders (and first screenshots) kept in memory
AHEAD_AFTER_S = 0.05    # the read-ahead starts this long after a task is shown


def filter_words(flt: str) -> str:
    """What a filter shows, in words: `disagreeing with the judge`, `site booking.com`, `failed: loop`."""
    kind, _, value = flt.partition(":")
    if kind == "failure" and value in WORDS:
        return f"failed: {WORDS[value]}"
    return FILTER_WORDS.get(flt, flt.replace(":", " "))


# ── the session: tasks, filter, position, labels (no Textual) ───────────────────────────────────────────────


@dataclass(frozen=True)
class TaskInfo:
    """What the run knows of a task beside its folder: its level and site, and its latest record."""

    task_id: str
    level: str
    site: str
    website: str
    record: EpisodeRecord | None


class LabelSession:
    """One annotator labelling one run (or the reviewer giving final labels): the run's tasks, the labels given,
    the other annotators' labels, the judge's verdicts, and the filtered list of tasks being walked through."""

    def __init__(self, out: Path, annotator: str, *, review: bool = False, judge: Path | None = None,
                 flt: str = "all"):
        self.out = Path(out)
        self.review = review
        self.annotator = FINAL if review else annotator
        self.mine = LabelFile.open(self.out, self.annotator)
        log = read_results(self.out)
        latest = log.latest()
        self.tasks = sorted(set(task_dirs(self.out)) | set(latest))
        meta = task_meta(_manifest(self.out))
        self.info = {t: _task_info(t, latest.get(t), meta.get(t, {})) for t in self.tasks}
        self.judge_path = judge or find_judge_file(self.out)
        try:   # a judge file that is a symlink or a FIFO is not read: no verdicts shown
            judged = read_judged(self.judge_path) if self.judge_path else {}
        except InputError:
            judged = {}
        self.verdicts = {t: r.get("predicted_label") == 1 for t, r in judged.items()
                         if r.get("predicted_label") in (0, 1)}
        self.others: dict[str, dict[str, TaskLabel]] = {}
        self.reload_others()
        self._failures: dict[str, str] | None = None
        self.filter = "all"
        self.view: list[str] = []
        self.pos = 0
        self.apply_filter("annotators" if review and flt == "all" else flt)

    # ── what is known ──
    def reload_others(self) -> None:
        """The other annotators' labels as their files now say (they may be labelling at the same time)."""
        labels = read_run_labels(self.out)
        self.others = {a: labs for a, labs in labels.annotators.items() if a != self.annotator}

    @property
    def current(self) -> str | None:
        return self.view[self.pos] if self.view else None

    def label_of(self, task_id: str) -> TaskLabel | None:
        return self.mine.get(task_id)

    def value_of(self, task_id: str) -> str | None:
        lab = self.mine.get(task_id)
        return lab.value if lab is not None else None

    def other_values(self, task_id: str) -> dict[str, str]:
        return {a: lab.value for a, labs in self.others.items()
                if (lab := labs.get(task_id)) is not None and lab.value is not None}

    @property
    def labelled(self) -> int:
        """Tasks this annotator labelled; in review, tasks with a final label (the reviewer's, else the annotators'
        consensus), so that a dispute left counts as not labelled."""
        if self.review:
            return sum(1 for t in self.tasks if (self.value_of(t) or majority(self.other_values(t).values())))
        return sum(1 for t in self.tasks if self.value_of(t) is not None)

    @property
    def failures(self) -> dict[str, str]:
        """Each task's failure class as `report` reads the run (its measure, `evaluation/failure.py`'s rules),
        worked out when first asked for and kept: a label given meanwhile does not move a task out of the view."""
        if self._failures is None:
            try:
                s = summarize(self.out, self.judge_path)
                self._failures = {t: r.failure.cls for t, r in s.per_task.items() if r.failure is not None}
            except (OSError, InputError, LabelFileError):   # a judge or labels file gone bad: no classes, said by 0s
                self._failures = {}
        return self._failures

    # ── filters ──
    def filters(self) -> list[tuple[str, str, int]]:
        """(filter, what it shows, how many tasks) for every filter there is: the fixed ones, then each level and
        site of the run, then each failure class its tasks have."""
        out = [(f, FILTER_WORDS[f], sum(1 for t in self.tasks if self.matches(t, f))) for f in FILTERS
               if f != "judge" or self.verdicts]
        levels = sorted({i.level for i in self.info.values()},
                        key=lambda v: (LEVEL_NAMES.index(v) if v in LEVEL_NAMES else len(LEVEL_NAMES), v))
        for kind, values in (("level", levels), ("site", sorted({i.site for i in self.info.values()}))):
            for v in values:
                key = f"{kind}:{v}"
                out.append((key, f"{kind} {v}", sum(1 for t in self.tasks if self.matches(t, key))))
        failed = set(self.failures.values())
        out += [(f"failure:{c}", filter_words(f"failure:{c}"), sum(1 for t in self.tasks if self.failures.get(t) == c))
                for c in CLASSES if c in failed]
        return out

    def matches(self, task_id: str, flt: str) -> bool:
        mine = self.value_of(task_id)
        if flt == "all":
            return True
        if flt == "unlabelled":
            return mine is None
        if flt == "judge":                        # this annotator's label, else the others' consensus
            verdict = self.verdicts.get(task_id)
            human = mine if mine is not None else majority(self.other_values(task_id).values())
            return human is not None and verdict is not None and (human == "1") != verdict
        if flt == "annotators":
            values = set(self.other_values(task_id).values())
            if self.review:                       # the reviewer's tasks: those the annotators split on
                return len(values) > 1
            return mine is not None and bool(values - {mine})
        if flt == "notes":
            lab = self.mine.get(task_id)
            return bool(lab and lab.note) or any(bool((labs.get(task_id) or TaskLabel(None)).note)
                                                 for labs in self.others.values())
        kind, _, value = flt.partition(":")
        if kind == "failure":
            return self.failures.get(task_id) == value
        info = self.info[task_id]
        return (kind == "level" and info.level == value) or (kind == "site" and info.site == value)

    def apply_filter(self, flt: str, keep: str | None = None) -> None:
        """Walk the tasks `flt` chooses, from `keep` when it is one of them (else from the first this annotator
        has not labelled, so that a new session resumes where the last one stopped)."""
        self.filter = flt
        self.view = [t for t in self.tasks if self.matches(t, flt)]
        if keep in self.view:
            self.pos = self.view.index(keep)
        else:
            self.pos = next((i for i, t in enumerate(self.view) if self.value_of(t) is None), 0)

    def go(self, task_id: str) -> bool:
        """Move to `task_id` (leaving the filter for `all` when it is not in the view)."""
        if task_id not in self.tasks:
            return False
        if task_id not in self.view:
            self.apply_filter("all")
        self.pos = self.view.index(task_id)
        return True

    def step(self, delta: int) -> bool:
        """Move by `delta` in the view; False at either end."""
        to = self.pos + delta
        if not self.view or not 0 <= to < len(self.view):
            return False
        self.pos = to
        return True

    def next_unlabelled(self) -> bool:
        """After a label: the next task of the view that this annotator has not labelled (the next one at all when
        every later task is labelled); False at the end."""
        for i in range(self.pos + 1, len(self.view)):
            if self.value_of(self.view[i]) is None:
                self.pos = i
                return True
        return self.step(1)

    def around(self) -> list[str]:
        """The tasks to read ahead: the next ones first, then the previous ones."""
        ahead = [self.view[i] for i in range(self.pos + 1, min(len(self.view), self.pos + 1 + READ_AHEAD))]
        behind = [self.view[i] for i in range(max(0, self.pos - READ_AHEAD), self.pos)][::-1]
        return ahead + behind

    # ── labelling (each one written at once) ──
    def give(self, value: str, reason: str | None = None) -> TaskLabel | None:
        task = self.current
        return self.mine.set(task, value, reason=reason) if task is not None else None

    def note(self, text: str) -> TaskLabel | None:
        task = self.current
        return self.mine.set(task, note=text) if task is not None else None

    def clear(self) -> None:
        if self.current is not None:
            self.mine.clear(self.current)


def _manifest(out: Path) -> dict[str, Any] | None:
    for p in RunFolder(out).manifests():
        data, _ = read_manifest(p)   # the one reader: what is of the wrong shape is left out
        if data is not None:
            return data
    return None


def _task_info(task_id: str, record: dict[str, Any] | None, meta: dict[str, Any]) -> TaskInfo:
    rec = EpisodeRecord.from_json(record) if record else None
    website = rec.website if rec else ""
    level = (rec.level if rec and rec.level else None) or meta.get("level") or "-"
    return TaskInfo(task_id, str(level), str(meta.get("site") or site_of(website)), website, rec)


# ── screenshots in block characters, drawn ahead ─────────────────────────────────────────────────────────


def draws_in_blocks(renderer: str) -> bool:
    """Whether screenshots are drawn in coloured half cells here (asked for, or all the terminal can do: tmux,
    most SSH logins): then the screen draws them itself, ahead of time (textual-image draws a 94x40-cell picture in
    about 170 ms, on every frame that repaints it)."""
    return renderer == "halfcell" or (renderer == "auto" and image_renderables.Image is halfcell.Image)


@dataclass(frozen=True)
class HalfCells:
    """A picture scaled to `cols` x 2*`rows` pixels, one 32-bit word each (RGBX): what a screenshot in blocks
    is kept as, read ahead. Bytes hold no objects, so the collector never walks them; the lines are made from
    them when shown (`block_strips`, about a millisecond)."""

    cols: int
    rows: int
    pixels: bytes = b""


def half_cells(image: PILImage.Image, cols: int, rows: int) -> HalfCells:
    """`image` as `rows` lines of `cols` half cells (the slow part is PIL's, in C: in a thread)."""
    if cols <= 0 or rows <= 0:
        return HalfCells(0, 0)
    scaled = image.convert("RGB").resize((cols, rows * 2), PILImage.Resampling.BOX)
    return HalfCells(cols, rows, scaled.convert("RGBX").tobytes())


def block_strips(cells: HalfCells) -> list[Strip]:
    """The picture's lines of half cells (`▀`: the upper pixel in the foreground colour, the lower one in the
    background's), runs of equal cells in one segment and one Style per colour pair: a web page's flat areas cost
    next to nothing. The runs are found by `groupby` over the pixel words, in C."""
    cols = cells.cols
    words = memoryview(cells.pixels).cast("I")
    strips = []
    for r in range(cells.rows):
        top = 2 * r * cols
        pairs = zip(words[top:top + cols], words[top + cols:top + 2 * cols], strict=True)
        strips.append(Strip([Segment("▀" * sum(1 for _ in run), _style(upper, lower))
                             for (upper, lower), run in groupby(pairs)], cols))
    return strips


_STYLES: dict[tuple[int, int], Style] = {}
STYLES_KEPT = 50_000     # colour pairs (a page has a few hundred; a photo many): the cache starts again past it


def _style(upper: int, lower: int) -> Style:
    style = _STYLES.get((upper, lower))
    if style is None:
        if len(_STYLES) >= STYLES_KEPT:
            _STYLES.clear()
        style = _STYLES[upper, lower] = Style.from_color(_rgb(upper), _rgb(lower))
    return style


def _rgb(word: int) -> Color:
    """An RGBX word as `memoryview.cast("I")` reads it on this machine's byte order."""
    r, g, b, _ = word.to_bytes(4, sys.byteorder)
    return Color.from_rgb(r, g, b)


class BlockImage(Widget):
    """A screenshot in half cells, its lines made from its `HalfCells` when shown: drawing is handing them over."""

    DEFAULT_CSS = "BlockImage { width: auto; height: auto; }"

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.cells = HalfCells(0, 0)
        self.strips: list[Strip] = []

    def show(self, cells: HalfCells) -> None:
        self.cells = cells
        self.strips = block_strips(cells)
        self.styles.width, self.styles.height = max(1, cells.cols), max(1, cells.rows)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        return self.strips[y] if 0 <= y < len(self.strips) else Strip.blank(self.size.width)


# ── small dialogs ──────────────────────────────────────────────────────────────────────────────────────────


class ReasonPicker(ModalScreen["str | None"]):
    """Why a task was not executable: one key each, or the list."""

    DEFAULT_CSS = """
    ReasonPicker { align: center middle; }
    ReasonPicker > Vertical { width: 48; height: auto; padding: 1 2; border: thick $warning; background: $surface; }
    ReasonPicker OptionList { height: auto; margin-top: 1; }
    """
    KEYS = {"captcha": "c", "site_down": "d", "outdated": "o", "other": "x"}
    BINDINGS = [Binding("escape", "pick('')", "Cancel", id="reason-cancel"),
                *[Binding(k, f"pick('{r}')", REASONS[r], id=f"reason-{r}") for r, k in KEYS.items()]]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Not executable: why?", classes="title")
            yield OptionList(*[Option(f"{self.KEYS[r]}  {words}", id=r) for r, words in REASONS.items()])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_pick(self, reason: str) -> None:
        self.dismiss(reason or None)


class NoteEditor(ModalScreen["str | None"]):
    """A task's note: enter keeps it, escape leaves it as it was."""

    DEFAULT_CSS = """
    NoteEditor { align: center middle; }
    NoteEditor > Vertical { width: 80%; max-width: 100; height: auto; padding: 1 2; border: thick $accent;
                            background: $surface; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="note-cancel")]

    def __init__(self, note: str, task_id: str):
        super().__init__()
        self.note, self.task_id = note, task_id

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Note on {self.task_id} (enter keeps it, escape cancels)")
            yield Input(self.note, placeholder="why: the filter was never applied, a pop-up hid the result ...")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class FilterPicker(ModalScreen["str | None"]):
    """Which tasks to walk through, each filter with its count."""

    DEFAULT_CSS = """
    FilterPicker { align: center middle; }
    FilterPicker > Vertical { width: 64; max-width: 95%; height: auto; max-height: 90%; padding: 1 2;
                              border: thick $accent; background: $surface; }
    FilterPicker OptionList { height: auto; max-height: 30; margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="filter-cancel")]

    def __init__(self, filters: list[tuple[str, str, int]], current: str):
        super().__init__()
        self.filters, self.current = filters, current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Show the tasks ...")
            yield OptionList(*[Option(f"{'▶ ' if key == self.current else '  '}{words} ({n})", id=key,
                                      disabled=n == 0) for key, words, n in self.filters])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


# ── the screen ─────────────────────────────────────────────────────────────────────────────────────────────


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
    BINDINGS = [
        Binding("1", "give('1')", "Success", id="label-success"),
        Binding("0", "give('0')", "Failure", id="label-failure"),
        Binding("2", "give('2')", "Not exec.", id="label-not-executable"),
        Binding("n", "note", "Note", id="label-note"),
        Binding("backspace", "clear", "Clear", id="label-clear", show=False),
        Binding("right_square_bracket,pagedown,j", "task(1)", "Next", key_display="]", id="label-next"),
        Binding("left_square_bracket,pageup,k", "task(-1)", "Prev", key_display="[", id="label-prev"),
        Binding("left", "shot(-1)", "Shot", key_display="←", id="label-shot-prev", priority=True),
        Binding("right", "shot(1)", "Shot", key_display="→", id="label-shot-next", priority=True),
        Binding("f", "filter", "Filter", id="label-filter"),
        Binding("v", "toggle_judge", "Judge", id="label-judge"),
        Binding("o", "open_full", "Open", id="label-open"),
        Binding("escape", "back", "Back", id="label-back"),
    ]

    def __init__(self, session: LabelSession, *, show_judge: bool = False, renderer: str = "auto",
                 standalone: bool = False, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.session = session
        self.show_judge = show_judge
        self.renderer = renderer
        self.standalone = standalone
        self.clock = clock
        self.loaded: OrderedDict[str, Loaded] = OrderedDict()
        self.shot = 0                       # the screenshot shown
        self._generation = 0
        self._image_px = (0, 0)
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
            with Vertical(id="label-shot-box"):
                yield BlockImage(id="label-shot") if self.blocks else screenshot_widget(self.renderer, id="label-shot")
        yield LeanFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#label-text").border_title = "Task"
        self.query_one("#label-shot-box").border_title = "Screenshot"
        self.call_after_refresh(self.show_task)    # once laid out: screenshots are drawn for their box

    def on_resize(self) -> None:
        if self.blocks:
            self.call_after_refresh(self._redraw_blocks)
        elif self._image_px != (0, 0):
            self.call_after_refresh(self._fit_shot)

    def _box(self) -> tuple[int, int]:
        size = self.query_one("#label-shot-box").content_size
        return size.width, size.height

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
        self._clear_image()
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
            t.append(f" · {rec.steps} steps · {rec.duration_s:.0f}s", style="dim")
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
        answer = shown_answer(folder.answer, self.session.info[task].record)
        t.append(answer or why_no_answer(folder, self.session.info[task]), style="" if answer else "dim")
        return t

    def _actions_text(self, folder: EpisodeFolder) -> Text:
        _, steps = episode_steps(folder.result, folder.shots)
        return history_text(steps, self.shot, thought_width=300)

    def _show_shot(self, task: str, got: Loaded) -> None:
        shots = got.folder.shots
        box = self.query_one("#label-shot-box")
        if not shots:
            self._clear_image()
            box.border_subtitle = "no screenshot"
            return
        i = min(self.shot, len(shots) - 1)
        box.border_subtitle = f"{i + 1}/{len(shots)} · {shots[i].name}"
        if i == 0 and self.blocks and got.cells is not None and got.box == self._box():
            self._put_cells(task, got.cells)
        elif i == 0 and not self.blocks and got.image is not None:
            self._put_image(task, got.image)
        else:
            self._load_shot(self._generation, task, shots[i], self._box() if self.blocks else None)

    def _clear_image(self) -> None:
        widget = self.query_one("#label-shot")
        if isinstance(widget, BlockImage):
            widget.show(HalfCells(0, 0))
        elif isinstance(widget, ShotWidget):
            widget.image = None

    @work(thread=True, exclusive=True, group="label-shot", exit_on_error=False)
    def _load_shot(self, generation: int, task: str, path: Path, box: tuple[int, int] | None) -> None:
        try:
            image = load_screenshot(path, self.renderer)
            cells = _cells_for(image, box) if box is not None else None
        except Exception as e:   # noqa: BLE001 - a PNG being rewritten or unreadable: say so, keep going
            self.app.call_from_thread(self._shot_failed, generation, f"{path.name}: {e}")
            return
        self.app.call_from_thread(self._shot_loaded, generation, task, image, cells)

    def _shot_loaded(self, generation: int, task: str, image: Any, cells: HalfCells | None) -> None:
        if generation == self._generation and self.is_attached:
            if cells is not None:
                self._put_cells(task, cells)
            else:
                self._put_image(task, image)

    def _put_cells(self, task: str, cells: HalfCells) -> None:
        self.query_one("#label-shot", BlockImage).show(cells)
        self.image_at.setdefault(task, self.clock())

    def _shot_failed(self, generation: int, why: str) -> None:
        if generation == self._generation and self.is_attached:
            self.query_one("#label-shot-box").border_subtitle = f"cannot show {why}"

    def _put_image(self, task: str, image: Any) -> None:
        self._image_px = image.size
        self._fit_shot()
        self.query_one("#label-shot", ShotWidget).image = image
        self.image_at.setdefault(task, self.clock())

    def _fit_shot(self) -> None:
        box = self.query_one("#label-shot-box").content_size
        cols, rows = fit_cells(self._image_px, (box.width, box.height))
        shot = self.query_one("#label-shot")
        shot.styles.width, shot.styles.height = max(1, cols), max(1, rows)

    # ── keys ──
    GATED = (("give", ("1",)), ("task", (1,)), ("task", (-1,)), ("shot", (1,)), ("shot", (-1,)),
             ("toggle_judge", ()))

    def _bindings_changed(self) -> None:
        """Refresh the footer only when a key's availability changed: a refresh rebuilds the footer's keys, a
        tenth of the time a move to the next task takes otherwise."""
        gates = tuple(self.check_action(a, p) for a, p in self.GATED)
        if gates != getattr(self, "_gates", None):
            self._gates = gates
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        s = self.session
        if action in ("give", "note", "clear", "open_full"):
            return s.current is not None
        if action == "task":
            step = parameters[0] if parameters and isinstance(parameters[0], int) else 0
            return bool(s.view) and 0 <= s.pos + step < len(s.view)
        if action == "shot":
            got = self.loaded.get(s.current or "")
            step = parameters[0] if parameters and isinstance(parameters[0], int) else 0
            return got is not None and 0 <= self.shot + step < len(got.folder.shots)
        if action == "toggle_judge":
            return bool(s.verdicts)
        if action == "back":
            return not self.standalone      # opened on its own, `q` quits
        return True

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
                cells = _cells_for(decoded, box)
        except Exception:   # noqa: BLE001 - drawn later with its error
            image = cells = None
    return Loaded(folder, image, cells, box or (0, 0))


def _cells_for(image: PILImage.Image, box: tuple[int, int]) -> HalfCells:
    cols, rows = fit_cells(image.size, box)
    return half_cells(image, cols, rows)


def why_no_answer(folder: EpisodeFolder, info: TaskInfo) -> str:
    """`no answer (killed)`: why the task has no answer, by its record's status, else its folder's word."""
    return no_answer(info.record.status) if info.record is not None else folder.no_answer


# ── the app `om2w-tui label` opens ─────────────────────────────────────────────────────────────────────────


# the commands the palette offers, when `check_action` lets them: (action, title, help)
LABEL_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("give('1')", "Label: success (1)", "The agent did the task"),
    ("give('0')", "Label: failure (0)", "The agent did not do the task"),
    ("give('2')", "Label: not executable (2)", "A CAPTCHA or bot wall, the site down, the task outdated, other"),
    ("note", "Note on this task", "A few words on why"),
    ("clear", "Clear this task's label", "As if it was never labelled"),
    ("filter", "Choose the tasks shown", "Unlabelled, a site, a level, disagreeing with the judge or an annotator"),
    ("toggle_judge", "Show or hide the judge's verdict", "Hidden by default, so labels stay blind"),
    ("open_full", "Open the task's page in the browser", "The web report's page: each screenshot beside its step"),
)


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
        if isinstance(screen, LabelScreen):
            for action, title, help_text in LABEL_COMMANDS:
                name, _, args = action.partition("(")
                params = tuple(a.strip("')") for a in args.split(",") if a.strip("')")) if args else ()
                if screen.check_action(name, params) is True:
                    yield SystemCommand(title, help_text, _runner(screen, action))
        yield from super().get_system_commands(screen)


def _runner(screen: Screen[Any], action: str) -> Callable[[], Any]:
    return lambda: screen.run_action(action)


def run_labeller(out: Path, annotator: str, *, review: bool = False, show_judge: bool = False,
                 judge: Path | None = None, flt: str = "all", task: str | None = None, renderer: str = "auto") -> int:
    """`om2w-tui label OUT`: the labelling screen until the annotator quits (every label is already on disk)."""
    session = LabelSession(out, annotator, review=review, judge=judge, flt=flt)
    app = LabelApp(session, show_judge=show_judge, renderer=renderer, task=task)
    result = app.run()
    print(f"om2w-tui label: {session.labelled} of {len(session.tasks)} tasks labelled in {session.mine.path}")
    return int(result or 0)
