"""The engine imports neither Textual nor Rich, and the scheduler stays light (no browser_use), proved in a fresh
interpreter: this process may already hold those modules from other tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

ENGINE = ["om2w_tui.tasks", "om2w_tui.sites", "om2w_tui.pacing", "om2w_tui.results", "om2w_tui.config",
          "om2w_tui.events", "om2w_tui.trajectory", "om2w_tui.scheduler", "om2w_tui.launch",
          "om2w_tui.executors.local", "om2w_tui.episode.worker", "om2w_tui.episode.runner",
          "om2w_tui.episode.browser", "om2w_tui.episode.arms", "om2w_tui.episode.arms.planner",
          "om2w_tui.episode.rows", "om2w_tui.episode.blocking", "om2w_tui.offline", "om2w_tui.report",
          "om2w_tui.judge", "om2w_tui.conformance", "om2w_tui.taskfiles", "om2w_tui.tools_cli", "om2w_tui.argtypes"]

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


def test_engine_imports_neither_textual_nor_rich():
    loaded = loaded_after(*ENGINE)
    assert set(ENGINE) <= loaded
    assert "textual" not in tops(loaded), sorted(m for m in loaded if m.startswith("textual"))
    assert "rich" not in tops(loaded), sorted(m for m in loaded if m.startswith("rich"))


def test_scheduler_does_not_import_browser_use():
    loaded = tops(loaded_after("om2w_tui.scheduler"))
    assert "om2w_tui" in loaded
    assert "browser_use" not in loaded
    assert "textual" not in loaded and "rich" not in loaded
