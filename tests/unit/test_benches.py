"""The benchmarks run against the package as it is: every script under bench/ imports, and the simulated ones drive
the real scheduler through their stand-in worker to the end, each task once. (A change to the worker protocol once
left the stand-in speaking the old dict commands: every benchmark built on it failed at its first episode, and the
scheduler "finished 600 of 300 episodes" in makespan.py, while the test suite stayed green.) The stand-in's side of
the protocol is held to the real worker's in tests/e2e/test_worker_contract.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_"))   # scripts and their helpers
SCRIPTS = {m for m in MODULES if '__name__ == "__main__"' in (BENCH / f"{m}.py").read_text()}


def test_every_benchmark_script_imports() -> None:
    # in a fresh interpreter, as `python bench/x.py` runs them: bench/ first on the path, the repository after it
    code = ("import importlib, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
            "for name in sys.argv[3:]:\n"
            "    module = importlib.import_module(name.lstrip('+'))\n"
            "    assert not name.startswith('+') or callable(getattr(module, 'main', None)), name + ' has no main()'\n")
    names = [f"+{m}" if m in SCRIPTS else m for m in MODULES]
    run = subprocess.run([sys.executable, "-c", code, str(BENCH), str(BENCH.parent), *names],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(SCRIPTS) >= 10


@pytest.fixture(scope="module")
def makespan() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        import makespan as module  # bench/makespan.py (it imports bench/_common.py by that name)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_the_makespan_simulation_runs_every_task_once_and_stays_above_its_bound(makespan: ModuleType) -> None:
    import _common

    tasks = makespan.skewed_tasks()[:60]
    length = _common.episode_lengths(tasks, seed=1)
    end = makespan.scheduler_makespan(tasks, length, slots=4, cooldown=120.0)   # raises unless each task ended once
    bound = _common.lower_bound(tasks, length, 4, 120.0)
    assert bound <= end <= 1.5 * bound


def test_the_campaign_simulation_runs_every_unit_once_and_pairs_them() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import campaign  # bench/campaign.py (its smallest configuration: 2 arms x 1, 4 slots, the file's first tasks)
    finally:
        sys.path.remove(str(BENCH))
    m = campaign.measure(campaign.om2w_tasks()[:30], arms=2, repeats=1, slots=4, cooldown=120.0)   # raises unless
    assert m["bound"] <= m["makespan"] <= 1.5 * m["bound"]                               # each unit ran once
    assert m["bound"] <= m["today"] and 120.0 <= m["gap_median"] <= m["gap_worst"]
    assert m["gap_own"] == pytest.approx(m["gap_median"], abs=0.01)   # the scheduler's own measure agrees
    assert m["gap_floor"] <= m["gap_busy"] <= m["gap_median"]         # no gap below its no-wait floor, nor below
                                                                      # the first slot free once its site allowed
    slow = campaign.measure(campaign.om2w_tasks()[:30], arms=2, repeats=1, slots=4, cooldown=120.0, slower=1.5,
                            baseline="seed")                             # the seed's runner: raises unless all ran
    assert slow["bound"] > m["bound"] and slow["bound"] <= slow["today"]


def test_the_eta_holds_against_the_time_the_run_took() -> None:
    """bench/eta.py's smallest configuration: the real scheduler in virtual time on the Online-Mind2Web file at 4
    slots, its events and snapshots folded as the console folds them. The header's ETA is within 20% of the time the
    run took after it at the median of nine checkpoints; the mean of the episodes done (the ETA before the engine said
    its lengths) is over twice as far off, for the longest tasks go first."""
    sys.path.insert(0, str(BENCH))
    try:
        import eta  # bench/eta.py
    finally:
        sys.path.remove(str(BENCH))
    import statistics

    ours = eta.one_run(eta.om2w_tasks(), 4, 120.0, seed=1, every=5.0, eta=eta.header_eta)
    base = eta.one_run(eta.om2w_tasks(), 4, 120.0, seed=1, every=5.0, eta=eta.mean_eta)
    assert len(ours) == len(base) == len(eta.CHECKPOINTS)
    assert statistics.median(abs(e) for e in ours) < 0.2
    assert statistics.median(abs(e) for e in base) > 2 * statistics.median(abs(e) for e in ours)
