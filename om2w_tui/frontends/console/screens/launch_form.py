"""The launch form: what to run, with which model, how many at once, where to. It remembers the last launch's
values, runs the preflight checks (in a thread: the endpoint check is blocking HTTP) as you type and before it
starts, shows problems next to the form, and says how much of the out folder is done already."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from om2w_tui.engine.launch import WARNING, Check, Preflight
from om2w_tui.episode.arms import arm_names
from om2w_tui.frontends.console.commands import Command, CommandTable
from om2w_tui.frontends.console.host import ConsoleHost, StartRun
from om2w_tui.frontends.console.launch_values import (
    CHOICES,
    FIELDS,
    FormError,
    config_from_values,
    field_of_problem,
    follow_bench,
    on_this_form,
)
from om2w_tui.frontends.console.widgets.footer import LeanFooter

CHECK_DELAY_S = 0.8


def arm_choices() -> list[str]:
    try:
        return arm_names()
    except Exception:    # a broken plugin must not keep the form from opening
        return ["base"]


class LaunchScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    # the form's commands (commands.py): key, action, footer label, palette title and help, when it applies
    COMMAND_TABLE: ClassVar[CommandTable[LaunchScreen]] = CommandTable(
        Command("ctrl+s", "launch", "Launch", "Launch", "Check the form and start the run",
                lambda s: not s.launching, id="launch", priority=True),
        Command("ctrl+r", "check", "Check", "Check", "Run the preflight checks for the form's values",
                id="check", priority=True),
        Command("escape", "app.quit", "Quit", id="launch-quit"),
    )
    BINDINGS = COMMAND_TABLE.bindings()

    # a launch under way (checks first): the footer offers Launch again when it failed
    launching: reactive[bool] = reactive(False, bindings=True)

    def __init__(self, values: dict[str, str], *, auto_check: bool = True, cursor_blink: bool = True):
        super().__init__()
        self.values = dict(values)
        self.auto_check = auto_check
        self.cursor_blink = cursor_blink
        self.checking = False
        self._generation = 0
        self._check_timer: Timer | None = None
        self._bench = self.values.get("bench", "")

    @property
    def host(self) -> ConsoleHost:
        return cast("ConsoleHost", self.app)

    def compose(self) -> ComposeResult:
        yield Label("om2w-tui · launch a run", id="launch-title")
        with Horizontal(id="launch-body"):
            with VerticalScroll(id="launch-form"):
                with Grid(id="launch-grid"):
                    for f in FIELDS:
                        yield Label(f.label, classes="field-label")
                        yield self._field_widget(f.key, f.kind, f.placeholder)
            with Vertical(id="launch-side"):
                with VerticalScroll(id="preflight-scroll"):
                    yield Static("", id="preflight-report")
                with Horizontal(id="launch-buttons"):
                    yield Button("Check", id="check-button")
                    yield Button("Launch", variant="primary", id="launch-button")
        yield LeanFooter(compact=True)

    def _field_widget(self, key: str, kind: str, placeholder: str) -> Input | Select[str] | Checkbox:
        value = self.values.get(key, "")
        if kind == "switch":
            return Checkbox(placeholder, value.strip().lower() == "true", compact=True, id=f"f-{key}")
        if kind == "choice":
            options = list(CHOICES[key]) if key in CHOICES else arm_choices()
            if value not in options:
                options.append(value)
            return Select([(o, o) for o in options], value=value, allow_blank=False, compact=True, id=f"f-{key}")
        kinds: dict[str, Literal["integer", "number"]] = {"int": "integer", "number": "number"}
        return Input(value, placeholder=placeholder, type=kinds.get(kind, "text"), compact=True, id=f"f-{key}")

    def on_mount(self) -> None:
        self.query_one("#launch-form").border_title = "Run"
        self.query_one("#launch-side").border_title = "Preflight"
        for inp in self.query(Input):
            inp.cursor_blink = self.cursor_blink
        self.query_one("#f-bench").focus()
        if self.auto_check:
            self.action_check()
        else:
            self._report(Text(self.COMMAND_TABLE.keys_text("check", "launch"), style="dim"))

    # ── values ─────────────────────────────────────────────
    def form_values(self) -> dict[str, str]:
        out = {}
        for f in FIELDS:
            w = self.query_one(f"#f-{f.key}")
            if isinstance(w, Select):
                out[f.key] = "" if w.value is Select.NULL else str(w.value)
            elif isinstance(w, Input):
                out[f.key] = w.value
            elif isinstance(w, Checkbox):
                out[f.key] = "true" if w.value else "false"
        return out

    def set_value(self, key: str, value: str) -> None:
        w = self.query_one(f"#f-{key}")
        if isinstance(w, Input | Select):
            w.value = value
        elif isinstance(w, Checkbox):
            w.value = value.strip().lower() == "true"

    @on(Select.Changed, "#f-bench")
    def _bench_changed(self, event: Select.Changed) -> None:
        new = "" if event.value is Select.NULL else str(event.value)
        for key, value in follow_bench(self.form_values(), self._bench, new).items():
            self.set_value(key, value)
        self._bench = new

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _changed(self) -> None:
        if not self.auto_check or not self.is_mounted:
            return
        if self._check_timer is not None:
            self._check_timer.stop()
        self._check_timer = self.set_timer(CHECK_DELAY_S, self.action_check)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_check()

    @on(Button.Pressed, "#check-button")
    def _check_pressed(self) -> None:
        self.action_check()

    @on(Button.Pressed, "#launch-button")
    def _launch_pressed(self) -> None:
        self.action_launch()

    # ── preflight ──────────────────────────────────────────
    def action_check(self) -> None:
        self._start_preflight(launch=False)

    def action_launch(self) -> None:
        if not self.launching:
            self._start_preflight(launch=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.COMMAND_TABLE.check(self, action, parameters)

    def _start_preflight(self, launch: bool) -> None:
        if self._check_timer is not None:
            self._check_timer.stop()
            self._check_timer = None
        values = self.form_values()
        self._mark_problem(None)
        try:
            cfg = config_from_values(values)
        except FormError as e:
            self._mark_problem(e.key)
            self._report(Text(f"✘ {e}", style="bold red"))
            return
        self._generation += 1
        self.checking = True
        self.launching = launch
        self.query_one("#launch-button", Button).disabled = launch
        self._report(Text("launching: checking first…" if launch else "checking…", style="dim"))
        self._preflight(self._generation, cfg, values, launch)

    @work(thread=True, exclusive=True, group="preflight", exit_on_error=False)
    def _preflight(self, generation: int, cfg: Any, values: dict[str, str], launch: bool) -> None:
        try:
            outcome: Any = self.host.checks_fn(cfg)
        except Exception as e:   # a surprise: shown, never fatal
            outcome = (None, [("preflight", False, f"{type(e).__name__}: {e}")])
        self.app.call_from_thread(self._checked, generation, outcome, values, launch)

    def _checked(self, generation: int, outcome: tuple[Preflight | None, list[Check]], values: dict[str, str],
                 launch: bool) -> None:
        if generation != self._generation or not self.is_attached:
            return
        self.checking = False
        pre, checks = outcome
        self._report(self._report_of(pre, checks))
        for _, ok, detail in checks:
            if not ok:
                self._mark_problem(field_of_problem(detail))
        if pre is None:
            self.launching = False   # the footer follows (a reactive with bindings=True)
            self.query_one("#launch-button", Button).disabled = False
        elif launch:
            self.post_message(StartRun(pre, values))

    def _report_of(self, pre: Preflight | None, checks: list[Check]) -> Text:
        t = Text()
        if pre is not None:
            total = len(pre.tasks)
            if pre.settled >= total:
                t.append(f"all {total} tasks are done in this folder: nothing left to run\n", style="bold yellow")
            elif pre.settled:
                t.append(f"resuming: {pre.settled} of {total} done\n", style="bold cyan")
            else:
                t.append(f"new run: {total} task{'s' if total != 1 else ''} to run\n", style="bold cyan")
        else:
            t.append("cannot start: fix what is marked ✘\n", style="bold red")
        for what, ok, detail in checks:
            if what == "resume" and ok is True and pre is not None:   # said above: resuming, N of M done
                continue
            detail = on_this_form(detail)
            if ok == WARNING:   # the run can start; this says what will go wrong and what to do
                t.append("⚠ ", style="bold yellow")
                t.append(f"{what}: ", style="bold")
                t.append(f"{detail}\n", style="yellow")
                continue
            t.append("✔ " if ok else "✘ ", style="green" if ok else "bold red")
            t.append(f"{what}: ", style="bold")
            t.append(f"{detail}\n", style="" if ok else "red")
        cfg = pre.config if pre is not None else None
        if cfg is not None and not cfg.builtin_oracle:
            key_set = bool(os.environ.get(cfg.api_key_env))
            t.append("✔ " if key_set else "· ", style="green" if key_set else "yellow")
            t.append("API key: ", style="bold")
            t.append(f"${cfg.api_key_env} is {'set' if key_set else 'not set (the endpoint gets EMPTY)'}\n")
        return t

    def _report(self, text: Text) -> None:
        self.query_one("#preflight-report", Static).update(text)

    def _mark_problem(self, key: str | None) -> None:
        """Mark `key`'s field as the one with a problem (None: clear every mark)."""
        for f in FIELDS:
            if key is None or f.key == key:
                self.query_one(f"#f-{f.key}").set_class(f.key == key, "-problem")
