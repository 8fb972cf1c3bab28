"""A team's own arm, installed as a plugin through the `om2w_tui.arms` entry point, runs in the console's
workers without a fork of om2w-tui."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import check_task_folder, cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
PLUGIN = Path(__file__).parent / "plugin"


@pytest.fixture
def plugin_path(tmp_path):
    """A minimal installed distribution: the module and a dist-info whose entry point names the arm."""
    site = tmp_path / "site"
    dist = site / "echo_arm-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-arm\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[om2w_tui.arms]\necho = echo_arm:EchoArm\n")
    (site / "echo_arm.py").write_text((PLUGIN / "echo_arm.py").read_text())
    return str(site)


def test_a_plugin_arm_runs_end_to_end(tmp_path, plugin_path):
    out = tmp_path / "plugin"
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [plugin_path, os.environ.get("PYTHONPATH")]))}
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--arm", "echo", "--task-ids",
            "offline_longpage_footer_15", "--out", str(out), env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert rec["arm"] == "echo" and rec["status"] == "done" and rec["answer"].startswith("echo: ")
    res = check_task_folder(out / "offline_longpage_footer_15")
    assert res["action_history"] == ["SCROLL DOWN"] and res["final_result_response"] == rec["answer"]
    assert rec["screenshots"] == 2          # two steps; the final state is the last step's page, not written twice


def test_an_unknown_arm_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "nope"
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--arm", "nosuch", "--out", str(out))
    assert r.returncode == 2 and "--arm nosuch" in r.stderr and not out.exists()
