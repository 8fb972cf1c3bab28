"""Several runs side by side: `compare([report, ...]) -> Comparison` (`om2w-tui report OUT [OUT ...]`, a
campaign's lanes, the console's comparison), every run read by the same measure (`evaluation/measure.py` chooses it;
`with_measure` reads a run by it): each rate and its difference from the first run's, the tasks every run has an
outcome for, paired tests (McNemar) of each run against its baseline, and with repeats the repeats table and each
arm against the first over all its repeats (`agreement.pooled`). One run's summary is `evaluation/report.py`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from om2w_tui.engine.results import STATUSES
from om2w_tui.evaluation.agreement import paired, pooled, repeats
from om2w_tui.evaluation.errors import UNKNOWN
from om2w_tui.evaluation.measure import Measure, NoCommonMeasure, choose
from om2w_tui.evaluation.outcomes import RULES
from om2w_tui.evaluation.report import METRICS, level_order, rate
from om2w_tui.evaluation.summary import (
    CompareRow,
    Comparison,
    Paired,
    PairedTest,
    Pooled,
    Rate,
    Repeats,
    RunReport,
    Success,
)
from om2w_tui.evaluation.task_outcome import Outcome


def unique_names(summaries: list[RunReport]) -> list[str]:
    names = [s.name for s in summaries]
    out = []
    for s, n in zip(summaries, names):
        out.append(f"{n} ({Path(s.out).name})" if names.count(n) > 1 else n)
    if len(set(out)) < len(out):   # same folder names too: number them
        out = [f"{n} #{i + 1}" for i, n in enumerate(out)]
    return out


def _deltas(values: list[Rate | None]) -> tuple[float | None, ...]:
    """Each value's difference from the first's, in percentage points; None for the first and where either is
    missing."""
    if not values:
        return ()
    base = values[0].rate if values[0] is not None else None
    return (None,) + tuple(None if v is None or v.rate is None or base is None else 100.0 * (v.rate - base)
                           for v in values[1:])


def choose_measure(summaries: list[RunReport], wanted: str | None = None) -> Measure | None:
    """The one measure every run of `summaries` is read by (`evaluation/measure.py`'s rule: `wanted`, else the best
    they all have); raises NoCommonMeasure naming the run that lacks it."""
    return choose([(s.out, s.available()) for s in summaries], wanted)


def with_measure(s: RunReport, m: Measure | None) -> RunReport:
    """The run read by `m`: its success, each task's outcome, and its measures with `m`'s first. Raises
    NoCommonMeasure when the run does not have it."""
    if m is None or s.measure == m:
        return s
    found = next((x for x in s.measures if x.measure == m), None)
    if found is None:
        raise NoCommonMeasure(f"{s.out} has no {m.name}")
    per_task = {t: replace(row, outcome=found.outcomes.get(t),
                           success=None if found.outcomes.get(t) is None else found.outcomes.get(t) == "success")
                for t, row in s.per_task.items()}
    judges = [j for j in (s.success.judge, *s.success.other_judges) if j is not None]
    judge = found.judge or s.success.judge
    success = Success(source=found.source, judge=judge, other_judges=tuple(j for j in judges if j is not judge),
                      overall=found.counts.overall, by_level={k: v.overall for k, v in found.by_level.items()},
                      by_site={k: v.overall for k, v in found.by_site.items()}, counts=found.counts,
                      level_counts=found.by_level, site_counts=found.by_site)
    return replace(s, success=success, per_task=per_task, measure=m,
                   measures=(found, *(x for x in s.measures if x is not found)))


def compare(summaries: list[RunReport], repeated: bool = False, measure: Measure | None = None,
            wanted: str | None = None, pairs: Sequence[tuple[int, int]] | None = None,
            groups: Sequence[tuple[str, Sequence[int]]] = (), arms: Sequence[tuple[str, Sequence[int]]] = ()
            ) -> Comparison:
    """Several runs side by side, every one read by the same measure (`measure`, else `choose_measure(summaries,
    wanted)`: raises NoCommonMeasure where they share none); every difference is against the first run (the
    baseline), in percentage points. `paired` compares the runs on the tasks they all have an outcome for; `tests`
    compares each run with the baseline task by task (McNemar, the paired interval), under both rules. `repeated`:
    the runs are repeats of one configuration (the leaderboard averages three): their mean and spread, and each
    task solved always, sometimes or never. `pairs` ((a, b): run a tested against run b, by index) replaces the
    tests against the baseline; `groups` ((arm, run indices)) are each summed up as repeats of one arm; `arms` (the
    same, every arm, the first the baseline): where one has repeats, each arm against the first over all of them
    (`pooled`)."""
    chosen = measure if measure is not None else choose_measure(summaries, wanted)
    summaries = [with_measure(s, chosen) for s in summaries]
    names = unique_names(summaries)

    def cell(s: RunReport, group: str, key: str | None) -> Rate | None:
        if not s.success.source:
            return None
        return s.success.overall if group == "overall" else s.success.group(group).get(key or "")

    def row(label: str, group: str, key: str | None) -> CompareRow:
        values = [cell(s, group, key) for s in summaries]
        return CompareRow(label, tuple(values), _deltas(values))

    levels: list[str] = []
    sites: list[str] = []
    for s in summaries:
        for k in s.success.by_level:
            if k not in levels:
                levels.append(k)
        for k in s.success.by_site:
            if k not in sites:
                sites.append(k)
    levels.sort(key=lambda k: (level_order(k), k))
    rows = [row("overall", "overall", None)] + [row(f"level {k}", "by_level", k) for k in levels]
    site_rows = [row(f"site {k}", "by_site", k) for k in sites]

    common = set(summaries[0].per_task) if summaries else set()
    for s in summaries[1:]:
        common &= set(s.per_task)
    common = {t for t in common if all(s.per_task[t].outcome is not None for s in summaries if s.success.source)}
    paired_values: list[Rate | None] = [
        rate(sum(1 for t in common if s.per_task[t].success), len(common)) if s.success.source else None
        for s in summaries]
    statuses = sorted({k for s in summaries for k in s.status},
                      key=lambda k: (STATUSES.index(k) if k in STATUSES else 99, k))
    return Comparison(
        runs=tuple(names), outs=tuple(s.out for s in summaries), baseline=names[0] if names else None,
        sources=tuple(s.success.source for s in summaries), rows=tuple(rows), site_rows=tuple(site_rows),
        paired=Paired(len(common), tuple(paired_values), _deltas(paired_values)),
        status={k: tuple(s.status.get(k, 0) for s in summaries) for k in statuses},
        median={k: tuple(s.metrics[k].median for s in summaries) for k in METRICS},
        tests=tuple(replace(t, measure=chosen.name if chosen else "") for t in
                    (() if repeated else _tests(summaries, names, pairs))),
        repeats=tuple(replace(r, measure=chosen.name if chosen else "") for r in
                      (_repeats(summaries, names) if repeated else ())
                      + tuple(x for arm, ks in groups for x in _repeats([summaries[k] for k in ks],
                                                                          [names[k] for k in ks], arm))),
        pooled=tuple(replace(p, measure=chosen.name if chosen else "") for p in _pooled(summaries, names, arms)),
        measure=chosen)


def _outcomes(s: RunReport) -> dict[str, Outcome | None]:
    return {t: row.outcome for t, row in s.per_task.items()} if s.success.source else {}


def _tests(summaries: list[RunReport], names: list[str], pairs: Sequence[tuple[int, int]] | None = None) \
        -> tuple[PairedTest, ...]:
    """Each pair (a, b) of runs task by task (default: each run against the baseline), under both rules; sites as
    b names them."""
    if pairs is None:
        pairs = [(k, 0) for k in range(1, len(summaries))]
    out: list[PairedTest] = []
    for a, b in pairs:
        sa, sb = summaries[a], summaries[b]
        if not (sa.success.source and sb.success.source):
            continue
        out += [paired(_outcomes(sa), _outcomes(sb), rule, names[a], names[b], _site_of(sb)) for rule in RULES]
    return tuple(out)


def _site_of(s: RunReport) -> Callable[[str], str]:
    """A task's site as run `s` names it."""
    site = {t: r.site for t, r in s.per_task.items()}
    return lambda t: site.get(t, UNKNOWN)


def _pooled(summaries: list[RunReport], names: list[str], arms: Sequence[tuple[str, Sequence[int]]]
            ) -> tuple[Pooled, ...]:
    """Each arm against the first over all their measured repeats, under both rules; none unless an arm repeats."""
    measured = [(arm, [k for k in ks if summaries[k].success.source]) for arm, ks in arms]
    if len(measured) < 2 or not any(len(ks) > 1 for _, ks in measured) or not measured[0][1]:
        return ()
    (base, bks), out = measured[0], []
    for arm, ks in measured[1:]:
        if ks:
            out += [pooled([_outcomes(summaries[k]) for k in ks], [_outcomes(summaries[k]) for k in bks], rule, arm,
                           base, [names[k] for k in ks], [names[k] for k in bks]) for rule in RULES]
    return tuple(out)


def _repeats(summaries: list[RunReport], names: list[str], arm: str = "") -> tuple[Repeats, ...]:
    measured = [(s, n) for s, n in zip(summaries, names) if s.success.source]
    if len(measured) < 2:
        return ()
    return tuple(repeats([_outcomes(s) for s, _ in measured], [n for _, n in measured], rule, arm)
                 for rule in RULES)
