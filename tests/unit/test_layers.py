"""The layers the build enforces (pyproject.toml's import-linter contracts, run by `.ci/run`): an import going back up
fails `lint-imports`, naming the contract and the import. Shown on a copy of the package, the untouched copy kept by
the same contracts, so the check is the one CI runs and never the package's own files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# (the importer's file, the import it gains, the contract it breaks): the three arrows this house once let pass, an
# arbitrary one up from the task files, one into launch from below it, the headless log reaching the console, and
# the failure classes reaching the report's values (the circle failure.py <-> summary.py)
ARROWS = [
    ("benchmarks/tasks.py", "om2w_tui.episode.instruction", "Layers: each package on its own line"),
    ("engine/launch.py", "om2w_tui.evaluation.live_judge", "Layers: each package on its own line"),
    ("offline/planner_play.py", "om2w_tui.episode.arms.planner", "Layers: each package on its own line"),
    ("benchmarks/trajectory.py", "om2w_tui.engine.scheduler", "Layers: each package on its own line"),
    ("engine/scheduler.py", "om2w_tui.engine.launch", "The engine below launch imports not launch"),
    ("frontends/headless.py", "om2w_tui.frontends.console.app", "Front ends: console | headless"),
    ("evaluation/failure.py", "om2w_tui.evaluation.summary", "Evaluation: outcomes over summary over failure"),
]


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the project's contracts on the package in `root` (found first on the path there)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "om2w_tui", tmp_path / "om2w_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_an_import_back_up_fails_lint_imports_naming_its_contract(copy: Path):
    clean = lint(copy)
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    assert "0 broken" in clean.stdout
    for path, target, _ in ARROWS:
        with open(copy / "om2w_tui" / path, "a") as f:
            f.write(f"\nimport {target}  # noqa: E402 - an arrow back up, planted\n")
    broken = lint(copy)
    assert broken.returncode == 1, broken.stdout[-3000:] + broken.stderr[-3000:]
    report = broken.stdout
    for path, target, contract in ARROWS:
        importer = "om2w_tui." + path.removesuffix(".py").replace("/", ".")
        assert contract in report and "BROKEN" in report
        assert f"{importer} -> {target}" in report, (importer, target, report[-4000:])
    # nothing else broke: only the planted imports are named
    assert f"{len({c for _, _, c in ARROWS})} broken" in report
