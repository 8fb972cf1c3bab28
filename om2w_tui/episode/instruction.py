"""What the agent is asked: the task and the website it starts on, through a template (as the seed runner's
`instruction(task, website)` did). How many steps it may take is the task's (`Task.max_steps`, decided at load)."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.tasks import MAX_INSTRUCTION_CHARS
from om2w_tui.files import read_file
from om2w_tui.json_input import InputError, text_of

# the seed's shape: the task, then the site it starts on (the browser is already there)
DEFAULT_TEMPLATE = "{task}\n\nThe task starts on {website} (already open in the browser)."
FIELDS = ("task", "website")
TEMPLATE_LIMIT = 1 << 20   # bytes of an --instruction-template read (a prompt of a million characters is no prompt)
MAX_WIDTH = 10_000      # the widest a `{task:>N}` may pad (a width of 10**9 would fill memory in every episode)
_SAMPLE: dict[str, Any] = {"task_id": "sample", "confirmed_task": "Find the opening hours.",
                           "website": "https://www.example.com/"}


class TemplateError(ValueError):
    """A template the runner cannot fill; the message names the problem."""


def check_template(text: str, tasks: Iterable[dict[str, Any]] = (), hint_field: str | None = None) -> str:
    """'' for a usable template, else what is wrong with it (`{task}` missing, an unknown `{field}`, a stray brace,
    a format the fields cannot take, an instruction longer than the agent takes). It is filled, as an episode fills
    it, with each of `tasks` (the run's own, so a `{task:d}` or a width no text has fails here, not in every
    episode), or with a sample task without any."""
    if len(text) > MAX_INSTRUCTION_CHARS:
        return (f"it is {len(text):,} characters; the agent (browser-use) takes an instruction of at most "
                f"{MAX_INSTRUCTION_CHARS:,}")
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as e:
        return f"not a template ({e}); write literal braces as {{{{ and }}}}"
    names = [name for _, name, _, _ in parsed if name is not None]
    unknown = sorted({n for n in names if n not in FIELDS})
    if unknown:
        return f"unknown field {{{unknown[0]}}} (known: {{task}}, {{website}})"
    if "task" not in names:
        return "it has no {task}: the agent would never see the task"
    for _, name, spec, _ in parsed:
        if spec and any(int(d) > MAX_WIDTH for d in re.findall(r"[0-9]+", spec)):
            return f"{{{name}:{spec}}} asks for more than {MAX_WIDTH} characters"
    for task in list(tasks) or [_SAMPLE]:
        which = f"task {task.get('task_id')}" if task is not _SAMPLE else "a task"
        try:
            filled = instruction(task, text, hint_field)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as e:
            return f"cannot be filled with {which}'s fields ({type(e).__name__}: {e})"
        if task is not _SAMPLE and len(filled) > MAX_INSTRUCTION_CHARS:   # the run's own tasks decide
            return (f"filled with {which} it is {len(filled):,} characters; the agent (browser-use) takes an "
                    f"instruction of at most {MAX_INSTRUCTION_CHARS:,}: shorten the template or the task")
    return ""


def read_template(path: Path) -> str:
    """A user's template file; raises TemplateError naming the file."""
    try:   # a regular file of at most TEMPLATE_LIMIT: /dev/zero is never read, a FIFO never waited on
        text = text_of(read_file(path, TEMPLATE_LIMIT, own=False, what="--instruction-template"),
                       f"--instruction-template {path}")
    except InputError as e:
        raise TemplateError(str(e)) from None
    problem = check_template(text)
    if problem:
        raise TemplateError(f"--instruction-template {path}: {problem}")
    return text


def task_text(task: dict[str, Any], hint_field: str | None = None) -> str:
    """The task, with a privileged hint appended while acting (--hint-field)."""
    text: str = task["confirmed_task"]
    hint = task.get(hint_field) if hint_field else None
    return text + (f"\n\n{hint}" if hint else "")


def instruction(task: dict[str, Any], template: str | None = None, hint_field: str | None = None) -> str:
    """The template filled with the task (and hint) and the website it starts on."""
    return (template or DEFAULT_TEMPLATE).format(task=task_text(task, hint_field), website=task.get("website", ""))

