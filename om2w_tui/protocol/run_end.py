"""How a run ended (`RunEnd`), declared once for every front end: the engine decides it (`decide`, in the summary
its `RunFinished` carries), the control socket carries it (`protocol/control.py: RunInfo.end`), and the console,
the headless log and an attached console print it; a headless run's exit code follows from it
(`frontends/headless.py: exit_code`)."""

from __future__ import annotations

from enum import StrEnum


class RunEnd(StrEnum):
    FINISHED = "finished"   # nothing left to run: every task settled, or out of tries
    STOPPED = "stopped"     # its user stopped it (Ctrl-C, quit, `ctl stop`): what was left runs at the next start
    GUARD = "guard"         # its model guard ended it (a headless run): the server answers, wrongly for this harness
    ERROR = "error"         # it failed: records the out folder would not take, or the engine itself raised

    @property
    def words(self) -> str:
        """`run <words>`, as a front end says it."""
        return _WORDS[self]


_WORDS = {RunEnd.FINISHED: "finished", RunEnd.STOPPED: "stopped", RunEnd.GUARD: "ended by its model guard",
          RunEnd.ERROR: "failed"}


def decide(*, failed: bool, guard_ended: bool, stopped: bool) -> RunEnd:
    """The one rule, most serious first: records lost fail the run whatever else; a guard that ends the run (it held
    dispatch to the end) ended it, whoever stopped it meanwhile; then a user's stop; else it finished."""
    if failed:
        return RunEnd.ERROR
    if guard_ended:
        return RunEnd.GUARD
    return RunEnd.STOPPED if stopped else RunEnd.FINISHED
