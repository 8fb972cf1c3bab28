"""Running the real command line and checking the folders it writes; a process's lines awaited one by one; waiting
on a run; a free port; a run folder for the judge."""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from om2w_tui.offline.suite import load_task_templates

REPO = Path(__file__).resolve().parents[2]
RESULT_KEYS = {"task_id", "task", "final_result_response", "action_history", "thoughts"}


def cli(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "om2w_tui", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def popen(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "om2w_tui", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def records(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def check_task_folder(folder: Path, task_id: str | None = None) -> dict[str, Any]:
    """The folder as the official evaluator reads it; -> its result.json."""
    res = json.loads((folder / "result.json").read_text())
    assert RESULT_KEYS <= res.keys(), folder
    assert res["task_id"] == (task_id or folder.name)
    assert all(isinstance(a, str) for a in res["action_history"])
    assert not any(a.lower().startswith("done") for a in res["action_history"])
    shots = sorted((folder / "trajectory").iterdir(), key=lambda p: int(re.search(r"\d+", p.name).group()))
    assert [p.name for p in shots] == [f"{i}_full_screenshot.png" for i in range(len(shots))]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in shots)
    return res


def chromium_left(out: Path) -> list[int]:
    """Chromium processes of the run in `out` still alive (their profile folder carries the run's tag)."""
    from om2w_tui.executors.local import run_tag

    marker = f"om2w-episode-{run_tag(out)}-"
    pids = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(marker in part for part in (p.info["cmdline"] or [])):
                pids.append(p.pid)
        except psutil.Error:
            continue
    return pids


def assert_settled_once(rows: list[dict[str, Any]], task_ids: list[str], out: Path | None = None) -> None:
    """Every record, not the latest: each task has exactly one settling record, it is the task's last, and its
    attempts count 1, 2, 3 ... (nothing ran twice at once, nothing ran after it was settled). `out`: the run was
    killed outright, so an attempt cut with it has no record: its number may be missing from the records, and then
    its files are kept under that number (`<task>/attempts/<n>`)."""
    from om2w_tui.engine.results import settles

    for tid in task_ids:
        mine = [r for r in rows if r["task_id"] == tid]
        trail = [(r["attempt"], r["status"], r.get("error")) for r in mine]
        settling = [r for r in mine if settles(r)]
        assert len(settling) == 1 and mine[-1] is settling[0], (tid, trail)
        numbers = [r["attempt"] for r in mine]
        began = list(range(1, numbers[-1] + 1)) if numbers else []
        cut = [n for n in began if n not in numbers]
        assert numbers == [n for n in began if n not in cut], (tid, trail)
        assert not cut or (out is not None and all((out / tid / "attempts" / str(n)).is_dir() for n in cut)), (
            tid, trail, "an attempt number no record has and no kept folder says began")


def steps_on_disk(folder: Path) -> int:
    """Actions an episode has written so far (its result.json is rewritten after every step; the blank stand-in
    image in trajectory/ from its first moment is not a step)."""
    try:
        return len(json.loads((folder / "result.json").read_text()).get("action_history") or [])
    except (OSError, ValueError):
        return 0


def wait_for(predicate, timeout: float, proc: subprocess.Popen | None = None, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.stderr.read()[-2000:] if proc.stderr else ''}"
                                 f"{proc.stdout.read()[-2000:] if proc.stdout else ''}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ── a run folder for the judge: two offline tasks, one answered right, one wrong ──────────────────────────────
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
TEMPLATES = {t["task_id"]: t for t in load_task_templates()}
RIGHT, WRONG = "offline_booking_rates_11", "offline_longpage_footer_15"


def write_task(out: Path, tid: str, answer: str, shots: int = 4) -> None:
    folder = out / tid
    (folder / "trajectory").mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({
        "task_id": tid, "task": TEMPLATES[tid]["confirmed_task"], "final_result_response": answer,
        "action_history": ['<a id="nav"> Next -> CLICK', "SCROLL DOWN"], "thoughts": ["a", "b"]}))
    for i in range(shots):
        (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(PNG)


class Lines:
    """A process's stdout read line by line in a thread, so that the test can wait for one line with a deadline."""

    def __init__(self, proc: subprocess.Popen[str]):
        self.proc, self.seen, self._q = proc, [], queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def wait_for(self, text: str, timeout: float = 90) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self._q.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} never printed; saw:\n{''.join(self.seen)[-3000:]}")
