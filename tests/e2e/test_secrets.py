"""Secrets are never written nor shown: the API key (read from the environment) and an endpoint URL's credentials
are in no file a run, doctor, a judge or a console launch writes (run.json, results, histories, rows, logs, the
judge's output, the launch form's memory), nor in anything they print."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from om2w_tui.offline import OfflineSuite, OracleServer

from .helpers import REPO, cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
SECRET = "sk-test-om2w-never-written-4f1c9a"


def test_the_api_key_is_nowhere_on_disk_or_in_the_output(tmp_path):
    out = tmp_path / "secret"
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--api-key-env", "OM2W_TEST_KEY",
            "--record-rows", "--task-ids", "offline_booking_rates_11", "--out", str(out),
            env={"OM2W_TEST_KEY": SECRET})
    assert r.returncode == 0, r.stderr[-3000:]
    assert records(out)[0]["correct"]
    assert SECRET not in r.stdout + r.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "rows.jsonl" for p in files) and any(p.name == "run.json" for p in files)
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert "OM2W_TEST_KEY" in (out / "run.json").read_text()       # the variable's name is recorded, not its value


PLANTED_PW = "pw-planted-never-written-7b31"
PLANTED_KEY = "sk-planted-never-written-0c9e"
PLANTED_JUDGE_KEY = "sk-planted-judge-never-written-5d2a"
# modules every Python child imports (json directly, bisect through random): planted in the folder the user starts
# from, each writes a marker when imported
PLANTED_MODULES = ("json", "bisect")


def plant_modules(folder: Path, marker: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in PLANTED_MODULES:
        (folder / f"{name}.py").write_text(
            f"import os, sys\nwith open({str(marker)!r}, 'a') as f:\n"
            f"    f.write(f'{name} imported by {{os.getpid()}} {{sys.argv}}\\n')\n")


def cli_from(folder: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command line started from `folder` as the installed `om2w-tui` starts (its own folder, not the user's,
    on its import path: `-P`; the package through PYTHONPATH or the install)."""
    return subprocess.run([sys.executable, "-P", "-m", "om2w_tui", *args], cwd=folder, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **_importable(), **env})


def _importable() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(x for x in (str(REPO), os.environ.get("PYTHONPATH")) if x)}


def run_watching_environments(args: list[str], env: dict[str, str],
                              cwd: Path = REPO) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run the command line (from `cwd`), reading the environment of every process it starts while it runs; -> its
    result and {"<pid> <name>": environment}. A child caught between its fork and its exec is still the run's own
    copy (its command line and environment the run's, for a few milliseconds): it is left out where it was seen once
    only; a child that stays so (a fork never exec'd, holding the run's environment) is seen again and kept."""
    proc = subprocess.Popen([sys.executable, "-P", "-m", "om2w_tui", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **_importable(), **env})
    seen: dict[str, str] = {}
    forks: dict[str, int] = {}   # the run's own command line under a child's pid: how many looks saw it so
    done = threading.Event()

    def watch() -> None:
        parent = psutil.Process(proc.pid)
        own = parent.cmdline()
        while not done.is_set():
            with contextlib.suppress(psutil.Error):
                for child in parent.children(recursive=True):
                    with contextlib.suppress(psutil.Error, OSError):
                        raw = Path(f"/proc/{child.pid}/environ").read_bytes().decode("utf-8", "replace")
                        cmdline = child.cmdline()
                        name = f"{child.pid} {' '.join(cmdline)[:160]}"
                        if cmdline == own:
                            forks[name] = forks.get(name, 0) + 1
                            if forks[name] < 2:
                                continue
                        seen[name] = raw
            done.wait(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        done.set()
        watcher.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen


def _leaks(root: Path, *outputs: str) -> list[str]:
    """Every file under `root`, and every output given, that holds a planted secret."""
    planted = (PLANTED_PW.encode(), PLANTED_KEY.encode(), PLANTED_JUDGE_KEY.encode())
    found = [str(p) for p in root.rglob("*") if p.is_file() and any(s in p.read_bytes() for s in planted)]
    return found + [f"output {i}" for i, text in enumerate(outputs) if any(s.decode() in text for s in planted)]


def test_a_planted_secret_is_in_no_file_a_run_or_a_judge_writes_nor_in_anything_they_print(tmp_path):
    """The endpoint's URL carries a password (`http://user:PW@host/v1`), the model's key is in the variable named by
    --api-key-env and the judge's in the one --judge-api-key-env names: the run (judging as it goes), doctor and judge
    use them (the oracle answers), and none is in any file written under the out folder or the config home, nor in
    anything printed, nor in the environment of any process the run starts (the keys reach a worker in its spec only,
    never its or Chromium's environment). All start from a folder holding a `json.py` and a `bisect.py`: no process
    they start imports them (the user's folder is never on a child's import path)."""
    home = tmp_path / "home"
    here = tmp_path / "users-folder"
    marker = tmp_path / "planted-imported"
    plant_modules(here, marker)
    # names the workers' allow-list passed by prefix (OM2W_*, the harness's own): withheld as the run's key variables
    env = {"OM2W_PLANTED_API_KEY": PLANTED_KEY, "OM2W_PLANTED_JUDGE": PLANTED_JUDGE_KEY, "HOME": str(home),
           "XDG_CONFIG_HOME": str(home / ".config")}
    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        picked = [t for t in suite.tasks() if t["task_id"] == "offline_booking_rates_11"]
        tasks = tmp_path / "tasks.json"
        tasks.write_text(json.dumps(picked))
        url = oracle.url.replace("http://", f"http://user:{PLANTED_PW}@")
        out = tmp_path / "run"
        flags = ["--tasks", str(tasks), "--model", "oracle", "--vllm", url, "--api-key-env", "OM2W_PLANTED_API_KEY",
                 "--record-rows", "--out", str(out), "--judge-url", url, "--judge-model", "oracle-judge",
                 "--judge-api-key-env", "OM2W_PLANTED_JUDGE"]
        doctor = cli_from(here, "doctor", *flags, env=env)
        assert not marker.exists(), marker.read_text()   # doctor's probe did not import the user's folder's modules
        assert doctor.returncode == 0, doctor.stdout[-3000:]
        run, environs = run_watching_environments(["run", "--no-ui", *flags], env, cwd=here)
        assert not marker.exists(), marker.read_text()   # nor did a worker
        assert run.returncode == 0, run.stderr[-3000:]
        assert len(environs) >= 2   # a worker and its Chromium at least were seen while they ran
        assert records(out)[0]["correct"]
        judge = cli_from(here, "judge", str(out), "--judge-model", "oracle-judge", "--judge-url", url,
                         "--api-key-env", "OM2W_PLANTED_API_KEY", "--backoff", "0", env=env)
        assert judge.returncode == 0, judge.stderr[-3000:]
    assert oracle.calls > 0
    written = {p.name for p in out.rglob("*") if p.is_file()}
    assert {"run.json", "results.jsonl", "rows.jsonl"} <= written and any("auto_eval_results" in n for n in written)
    assert "***@127.0.0.1" in (out / "run.json").read_text()   # the URL is recorded, redacted
    assert _leaks(tmp_path, doctor.stdout, doctor.stderr, run.stdout, run.stderr, judge.stdout, judge.stderr) == []
    # nor in the environment of any process the run started (its workers, their Chromium and its helpers)
    secrets = (PLANTED_KEY, PLANTED_PW, PLANTED_JUDGE_KEY)
    leaked = [name for name, environ in environs.items() if any(s in environ for s in secrets)]
    assert leaked == []
    assert not marker.exists()
