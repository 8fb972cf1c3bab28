"""Which measure of success a report reads, and the one every side of a comparison reads: `Measure` and `choose`.

A run's success may be measured three ways: by its human labels (each task's final label: the reviewer's, else
the annotators' consensus), by a judge's verdicts (one judge file: its mode and model), or by the offline suite's
reference answers (`correct`). Two runs compared on two measures (one side's labels against the other's judge)
give a difference and a McNemar p that mean nothing, so a comparison (pairs, repeats, the console's report) reads
ONE measure on every side: `choose` picks it for a set of runs, the report, the command line and the console ask
it, and nothing else decides.

The rule: the measure asked for (`--measure humans|judge|reference`), else the best that every run has: humans,
else a judge of the same mode and model (the baseline's newest judge file first), else the reference answers.
Where the runs share none, or a run lacks the one asked for, `NoCommonMeasure` says which run has what.
No I/O here: the runs' measures are given (`report.available(summary)`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["humans", "judge", "reference"]
KINDS: tuple[Kind, ...] = ("humans", "judge", "reference")   # the best first
# the report's name of each kind's source (RunReport.success.source)
SOURCES: dict[Kind, str] = {"humans": "labels", "judge": "judge", "reference": "correct"}
KIND_OF_SOURCE: dict[str, Kind] = {v: k for k, v in SOURCES.items()}
_WORDS = {"humans": "human labels", "judge": "judge file", "reference": "reference answers (`correct`)"}
_HOW_TO_GET = {"humans": "label it: `om2w-tui label {out}`", "judge": "judge it: `om2w-tui judge {out} ...`",
               "reference": "only the offline suite's runs have reference answers"}


@dataclass(frozen=True)
class Measure:
    """A measure of success: human labels (final ones), a judge of one mode and model, or the reference answers."""

    kind: Kind
    mode: str | None = None       # a judge's (webjudge, webjudge-answer, webvoyager); None for the other kinds
    model: str | None = None

    @property
    def name(self) -> str:
        if self.kind == "humans":
            return "human labels (final)"
        if self.kind == "reference":
            return "reference answers"
        return f"judge {self.mode or '?'}/{self.model or '?'}"

    @property
    def source(self) -> str:
        return SOURCES[self.kind]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "mode": self.mode, "model": self.model, "name": self.name}


class NoCommonMeasure(ValueError):
    """No measure every run has (or a run lacks the one asked for); the message says which run has what."""


def choose(runs: Sequence[tuple[str, Sequence[Measure]]], wanted: str | None = None) -> Measure | None:
    """The one measure every run of `runs` ((name, the measures it has, the preferred judge first)) is read by:
    `wanted`'s kind when given, else the best kind every run has. None when no run has any measure and none was
    asked for of one run alone (the report says it has none); raises NoCommonMeasure where none is common."""
    if wanted is not None and wanted not in KINDS:
        raise NoCommonMeasure(f"--measure {wanted}: one of {', '.join(KINDS)}")
    if not any(has for _, has in runs) and wanted is None and len(runs) <= 1:
        return None
    for kind in [wanted] if wanted else KINDS:
        found = _common(runs, kind)
        if found is not None:
            return found
    if wanted:
        raise NoCommonMeasure(_lacking(runs, wanted))
    have = "; ".join(f"{name} has {', '.join(m.name for m in _unique(has)) or 'no success measure'}"
                     for name, has in runs)
    raise NoCommonMeasure(f"no measure of success common to every run ({have}): the runs would be compared on "
                          f"different measures; give every run one (label or judge them alike) or choose one "
                          f"with --measure")


def _common(runs: Sequence[tuple[str, Sequence[Measure]]], kind: str) -> Measure | None:
    """The first measure of `kind` the first run has that every run has too."""
    if not runs:
        return None
    for m in runs[0][1]:
        if m.kind == kind and all(m in has for _, has in runs[1:]):
            return m
    return None


def _lacking(runs: Sequence[tuple[str, Sequence[Measure]]], kind: str) -> str:
    without = [name for name, has in runs if not any(m.kind == kind for m in has)]
    if without:
        return f"--measure {kind}: {without[0]} has no {_WORDS[kind]} ({_HOW_TO_GET[kind].format(out=without[0])})"
    judges = "; ".join(f"{name}: {', '.join(m.name for m in _unique(has) if m.kind == 'judge')}" for name, has in runs)
    return (f"--measure judge: no judge of the same mode and model in every run ({judges}); judge them alike "
            f"(`om2w-tui judge OUT --mode M --judge-model M`)")


def _unique(ms: Sequence[Measure]) -> list[Measure]:
    return list(dict.fromkeys(ms))
