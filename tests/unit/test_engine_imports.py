"""The engine imports neither Textual nor Rich, and the scheduler stays light (no browser_use), proved in a fresh
interpreter: this process may already hold those modules from other tests. The engine is what pyproject.toml's
import-linter contracts call it, and every module of the package is walked: one that no contract names fails."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import om2w_tui

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = {c["name"]: c for c in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
             ["contracts"]}
ENGINE_ROOTS = CONTRACTS["The engine imports neither Textual nor Rich"]["source_modules"]
OUTSIDE_ROOTS = CONTRACTS["The engine imports no front end and no command line"]["forbidden_modules"]


def under(name: str, roots: list[str]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


ALL = sorted(m.name for m in pkgutil.walk_packages(om2w_tui.__path__, "om2w_tui."))
ENGINE = [m for m in ALL if under(m, ENGINE_ROOTS)]

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
"""


def loaded_after(*modules: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", PROBE, *modules], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_the_probe_sees_what_it_imports():
    # the probe can fail: a module that pulls in rich is seen
    assert "rich" in tops(loaded_after("rich.text"))


def test_every_module_is_engine_front_end_or_command_line():
    # a new module must be placed in the contracts, or it would escape them
    stray = [m for m in ALL if not under(m, ENGINE_ROOTS) and not under(m, OUTSIDE_ROOTS)]
    assert stray == []
    assert {"om2w_tui.engine.scheduler", "om2w_tui.episode.worker", "om2w_tui.offline.sites"} <= set(ENGINE)
    assert not [m for m in ENGINE if under(m, OUTSIDE_ROOTS)]


def test_engine_imports_neither_textual_nor_rich():
    loaded = loaded_after(*ENGINE)
    assert set(ENGINE) <= loaded
    assert "textual" not in tops(loaded), sorted(m for m in loaded if m.startswith("textual"))
    assert "rich" not in tops(loaded), sorted(m for m in loaded if m.startswith("rich"))


def test_the_command_line_imports_neither_until_the_console_or_a_table_is_asked_for():
    loaded = loaded_after("om2w_tui.cli.main", "om2w_tui.cli.tools", "om2w_tui.cli.judge", "om2w_tui.cli.report",
                          "om2w_tui.cli.argtypes", "om2w_tui.frontends.headless")
    assert "textual" not in tops(loaded) and "rich" not in tops(loaded)


def test_scheduler_does_not_import_browser_use():
    loaded = tops(loaded_after("om2w_tui.engine.scheduler"))
    assert "om2w_tui" in loaded
    assert "browser_use" not in loaded
    assert "textual" not in loaded and "rich" not in loaded
