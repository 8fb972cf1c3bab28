"""The small dialogs of labelling: why a task was not executable (`ReasonPicker`), a task's note (`NoteEditor`),
which tasks to walk through (`FilterPicker`, each filter with its count), and who is labelling (`AskAnnotator`,
asked once from the report screen). Each answers by dismissing itself with its value, or None when cancelled."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from om2w_tui.evaluation.labels import FINAL, REASONS, LabelFileError, check_annotator


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

