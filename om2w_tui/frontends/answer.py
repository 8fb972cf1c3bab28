"""What every view shows as an episode's answer (the dashboard's Episodes table, the episode view, the label screen,
the report screen's failures, the web report), one rule: the agent's own answer, else why it has none (`no answer
(killed)`), never an error's text or its last action's output (docs/run-folder.md)."""

from __future__ import annotations

from typing import NamedTuple

from om2w_tui.benchmarks.episode_folder import no_answer
from om2w_tui.engine.results import EpisodeRecord


class ShownAnswer(NamedTuple):
    text: str
    answered: bool    # the agent's words (else why there are none: a view draws it dim)


def agents_answer(folder_answer: str, rec: EpisodeRecord | None) -> str:
    """The agent's own answer: the folder's, unless the record says the agent never answered (a record and folder
    written before answers were only the agent's kept the last action's output there); else the record's."""
    if rec is None:
        return folder_answer
    return (folder_answer or rec.agents_answer) if rec.agents_answer or not rec.status else ""


def shown_answer(folder_answer: str, rec: EpisodeRecord | None, ended: str | None = None) -> ShownAnswer:
    """The answer a view shows (`agents_answer`), else why there is none, by how the episode ended: its record's
    status, else `ended` (a folder's `cut_short`, a report row's status)."""
    if answer := agents_answer(folder_answer, rec):
        return ShownAnswer(answer, True)
    return ShownAnswer(no_answer(rec.status if rec is not None else ended), False)
