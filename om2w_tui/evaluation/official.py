"""Running the user's own checkout of the official Online-Mind2Web evaluator (`src/run.py`) on a run's folder.

Nothing of the evaluator is shipped here: `om2w-tui judge OUT --official PATH` starts `PATH/src/run.py` with the
interpreter that has its requirements, pointed at the judge endpoint through `OPENAI_BASE_URL` (its client reads
it), and with a `--num_worker` it cannot crash on (it splits the tasks in chunks of `tasks // workers`: more
workers than tasks is a step of zero). Its output file goes to a scratch folder (its `--output_path` would be a
task folder inside the run's) and is kept in the run's folder as `official_<its name>`, where `report` reads it;
the same command resumes from that copy, as the evaluator resumes from its own file.

The evaluator says "Evaluation complete" and exits 0 even when a worker crashed on a task and skipped the rest of
its share; here the tasks it did not judge are counted and named, and the exit status is 1 when there are any.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from om2w_tui.benchmarks.conformance import read_run
from om2w_tui.evaluation.judge_files import JUDGE_LIMIT, OFFICIAL_PREFIX, RESULTS_SUFFIX, read_judged, safe_model_name
from om2w_tui.evaluation.judge_settings import FILE_MODES, Settings
from om2w_tui.files import read_file, write_atomic
from om2w_tui.json_input import InputError


@dataclass
class OfficialOutcome:
    path: Path                      # the kept copy in the run's folder
    tasks: int
    judged: int = 0
    successes: int = 0
    missing: list[str] = field(default_factory=list)
    crashed: int = 0                # tracebacks the evaluator printed
    returncode: int = 0


class OfficialUsage(ValueError):
    """The checkout, the interpreter or the settings cannot run the official evaluator."""


def official_mode(s: Settings) -> str:
    if s.include_answer:
        raise OfficialUsage("--include-answer has no mode in the official evaluator (it never shows the answer)")
    return FILE_MODES[s.mode_name]


def official_name(mode: str, model: str, threshold: int) -> str:
    """The evaluator's own output name, the model as given (a `/` in it makes a subfolder there)."""
    return f"{mode}_{model}_score_threshold_{threshold}{RESULTS_SUFFIX}"


def kept_path(out: Path, mode: str, model: str, threshold: int) -> Path:
    return Path(out) / (OFFICIAL_PREFIX + official_name(mode, safe_model_name(model), threshold))


def safe_workers(wanted: int, tasks: int) -> int:
    return max(1, min(wanted, tasks))


KEY_VARIABLE = "OM2W_OFFICIAL_API_KEY"
# runs the official src/run.py as its own main, its argv as given plus --api_key from the environment
OFFICIAL_BOOT = ("import os, runpy, sys; script = sys.argv[1]; "
                 f"sys.argv = [script, *sys.argv[2:], '--api_key', os.environ.pop({KEY_VARIABLE!r})]; "
                 "sys.path.insert(0, os.path.dirname(os.path.abspath(script))); "
                 "runpy.run_path(script, run_name='__main__')")


def run_official(out: Path, checkout: Path, python: str, s: Settings, judge_url: str, key: str,
                 log: Callable[[str], None] = print) -> OfficialOutcome:
    out = Path(out).resolve()
    script = Path(checkout) / "src" / "run.py"
    if not script.is_file():
        raise OfficialUsage(f"--official {checkout}: no src/run.py there (give the root of a checkout of "
                            f"OSU-NLP-Group/Online-Mind2Web)")
    if shutil.which(python) is None and not os.access(python, os.X_OK):
        raise OfficialUsage(f"--official-python {python}: not an interpreter that can be run")
    mode = official_mode(s)
    tasks = read_run(out).task_dirs
    if not tasks:
        raise OfficialUsage(f"{out}: no task folders")
    keep = kept_path(out, mode, s.model, s.score_threshold)
    workers = safe_workers(s.workers, len(tasks))
    scratch = Path(tempfile.mkdtemp(prefix="om2w-official-"))
    try:
        produced = scratch / official_name(mode, s.model, s.score_threshold)
        produced.parent.mkdir(parents=True, exist_ok=True)   # a model `org/name` writes into a subfolder
        if os.path.lexists(keep):   # the evaluator skips the tasks already in its file (ours: never through a link)
            try:
                write_atomic(produced, read_file(keep, JUDGE_LIMIT, own=True, what="the kept output"))
            except InputError as e:
                raise OfficialUsage(str(e)) from None
        args = ["--mode", mode, "--model", s.model, "--trajectories_dir", str(out), "--output_path", str(scratch),
                "--score_threshold", str(s.score_threshold), "--num_worker", str(workers)]
        log(f"official: {python} {script} {' '.join(args)} --api_key ***")
        # its --api_key is required on its command line, which every local user can read (/proc/<pid>/cmdline):
        # the key goes in the environment (owner-only) and a bootstrap puts it into the script's argv
        cmd = [python, "-c", OFFICIAL_BOOT, str(script), *args]
        env = {**os.environ, "OPENAI_BASE_URL": judge_url, "OPENAI_API_KEY": key, KEY_VARIABLE: key,
               "PYTHONUNBUFFERED": "1"}
        crashed = 0
        # run in the checkout's src/: `-c` puts that folder (the evaluator's own) first on its import path, never the
        # folder the user started from (`-P` is not used: the evaluator's Python may be older than 3.11)
        proc = subprocess.Popen(cmd, cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", start_new_session=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                crashed += line.startswith("Traceback")
                log(f"official| {line.rstrip()}")
            proc.wait()
        finally:
            if proc.poll() is None:   # interrupted: the evaluator and its worker processes go with us
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
        if produced.is_file():
            write_atomic(keep, read_file(produced, JUDGE_LIMIT, own=False, what="the official evaluator's output"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    judged = read_judged(keep)
    in_run = {t: r for t, r in judged.items() if t in set(tasks)}
    return OfficialOutcome(keep, len(tasks), len(in_run),
                           sum(1 for r in in_run.values() if r.get("predicted_label") == 1),
                           [t for t in tasks if t not in in_run], crashed, proc.returncode)
