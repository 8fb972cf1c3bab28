"""Every module but the console's is in pyproject.toml's mypy strict list: a new module joins it, or this fails
(`.ci/run` runs mypy on that list)."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import om2w_tui

REPO = Path(__file__).resolve().parents[2]
EXEMPT = ("om2w_tui.frontends.console",)     # Textual's widget types: the console is typed on its own schedule


def strict_modules() -> set[str]:
    overrides = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    return {m for o in overrides if not o.get("ignore_errors", True) for m in o["module"]}


def test_every_module_but_the_consoles_is_checked_strictly():
    modules = ["om2w_tui", *sorted(m.name for m in pkgutil.walk_packages(om2w_tui.__path__, "om2w_tui."))]
    loose = [m for m in modules if m not in strict_modules() and not any(m == e or m.startswith(e + ".")
                                                                          for e in EXEMPT)]
    assert loose == []


def test_the_check_can_fail():
    assert "om2w_tui.frontends.console.app" not in strict_modules()
    assert "om2w_tui.benchmarks.episode_folder" in strict_modules()
