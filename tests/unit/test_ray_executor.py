"""The Ray executor's pieces that need no cluster: the message when Ray is missing (a real process, exit code 2), the
actor's file shipping (what it sends, what it leaves out) and the driver's writing of shipped files. The executor on
a real cluster is tested in tests/e2e/test_ray.py."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from om2w_tui.executors.ray import ShippedFile, SlotActor, write_shipped

REPO = Path(__file__).resolve().parents[2]


def test_executor_ray_without_ray_installed_exits_2_with_the_pip_command(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "ray.py").write_text("raise ImportError('No module named ray (blocked by the test)')\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(REPO)])}
    r = subprocess.run([sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--bench", "offline", "--model", "oracle",
                        "--executor", "ray", "--chromium", "/bin/true", "--out", str(out)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "--executor ray" in r.stderr and "pip install 'om2w-tui[ray]'" in r.stderr
    assert not out.exists()


def test_an_unknown_executor_is_refused_by_the_parser(tmp_path):
    r = subprocess.run([sys.executable, "-m", "om2w_tui", "run", "--executor", "slurm", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2 and "--executor" in r.stderr


def test_the_actor_ships_new_and_changed_files_once_and_never_temporaries(tmp_path):
    actor = SlotActor(0)
    folder = tmp_path / "node" / "t1"
    (folder / "trajectory").mkdir(parents=True)
    actor.folder = folder
    (folder / "result.json").write_text("{}")
    (folder / "trajectory" / "0_full_screenshot.png").write_bytes(b"png0")
    (folder / ".result.json.abc.tmp").write_text("half")            # write_atomic's temporary: not yet a file
    first = actor._changed_files()
    assert sorted(x.path for x in first) == ["result.json", "trajectory/0_full_screenshot.png"]
    assert actor._changed_files() == []                              # nothing new: nothing sent again
    (folder / "result.json").write_text('{"action_history": ["a"]}')   # rewritten after a step
    (folder / "trajectory" / "1_full_screenshot.png").write_bytes(b"png1")
    second = actor._changed_files()
    assert {x.path: x.data for x in second} == {"result.json": b'{"action_history": ["a"]}',
                                                "trajectory/1_full_screenshot.png": b"png1"}
    actor._forget_folder()
    assert not folder.exists() and actor.folder is None


def test_shipped_files_land_in_the_task_folder_atomically_and_never_outside_it(tmp_path):
    """The folder is the driver's (the task it handed the worker), never one a node names; a path that would leave
    it (up, absolute, hidden, through a symlink planted in the folder) is refused."""
    task = tmp_path / "out" / "t1"
    elsewhere = tmp_path / "precious"
    elsewhere.mkdir()
    assert write_shipped(task, ShippedFile("trajectory/0_full_screenshot.png", b"png"))
    assert write_shipped(task, ShippedFile("result.json", b"{}"))
    (task / "link").symlink_to(elsewhere)
    refused = ["../escaped.json", "/etc/absolute", ".om2w-run.lock", "link/x.json", "link", ""]
    assert [write_shipped(task, ShippedFile(p, b"x")) for p in refused] == [False] * len(refused)
    assert (task / "trajectory" / "0_full_screenshot.png").read_bytes() == b"png"
    assert sorted(p.name for p in (task / "trajectory").iterdir()) == ["0_full_screenshot.png"]   # no temporary
    assert sorted(p.name for p in task.iterdir()) == ["link", "result.json", "trajectory"]
    assert not (tmp_path / "out" / "escaped.json").exists() and list(elsewhere.iterdir()) == []


def test_a_ray_address_where_no_cluster_answers_exits_2_at_once_writing_nothing(tmp_path):
    if importlib.util.find_spec("ray") is None:   # found, not imported: Ray reads its settings when first imported
        pytest.skip("the ray extra is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]                 # closed again when the block ends: nothing listens there
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--bench", "offline", "--model", "oracle",
                        "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--chromium", "/bin/true",
                        "--out", str(out)], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2, r.stderr
    assert f"--ray-address 127.0.0.1:{port}: no Ray cluster answers there" in r.stderr
    assert not out.exists()


def test_the_preflight_names_the_ray_cluster_a_run_will_use(tmp_path):
    """`doctor` (and the launch form's preflight, the same checks) says a run goes to Ray actors and where, once
    something answers at the address; nothing is written."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray extra is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = tmp_path / "out"
        r = subprocess.run([sys.executable, "-m", "om2w_tui", "doctor", "--bench", "offline", "--model", "oracle",
                            "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--out", str(out)],
                           capture_output=True, text=True, timeout=60, cwd=REPO, env={**os.environ, "COLUMNS": "400"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"on Ray actors (127.0.0.1:{port})" in r.stdout
    assert not out.exists()


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh process whose environment has no Ray loopback setting (as a user's shell)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**env, "PYTHONPATH": str(REPO)})


def test_a_driver_of_a_loopback_cluster_stays_on_loopback_unasked():
    """Ray rewrites 127.0.0.1 into the machine's other address unless told when first imported: the executor tells
    it for a loopback address (CI found a driver dialling the other address, where nothing listened, for 5 min)."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray extra is not installed")
    r = _python("from om2w_tui.executors.ray import import_ray\n"
                "print(import_ray('127.0.0.1:6379').util.get_node_ip_address())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["127.0.0.1"]


def test_a_ray_imported_before_the_loopback_setting_is_refused_by_name_not_dialled_out():
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray extra is not installed")
    r = _python("import ray\nfrom om2w_tui.executors.ray import import_ray\nimport_ray('127.0.0.1:6379')")
    assert r.returncode == 1
    assert "RuntimeError: Ray was imported before RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 was set" in r.stderr
