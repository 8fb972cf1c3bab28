"""Where a run or a campaign may write: the out folder's checks before anything is written (`check_out`).

An out folder is a folder (or one that can be made) on a filesystem that holds files, writable, whose own files
(results, manifest, locks) and task folders are no symlinks, folders or devices where files belong, and that no run
holds. It is never inside another run's folder (a lane's, or any run's: the official evaluator takes every
subfolder of a run's folder as a task; `run_folder.run_holding` is the rule `report --html` asks too), and a run's
is never a campaign's folder (the campaign's lanes are run folders beside its own files; a run's results there
would be read as neither), nor one of its lanes (a lane runs with its campaign, paired with the other arms). The
reverse, a run's folder given as a campaign's, is the campaign's resume rule
(engine/plan.resume_problem)."""

from __future__ import annotations

import os
from pathlib import Path

from om2w_tui.benchmarks.episode_folder import unsafe_task_folder
from om2w_tui.benchmarks.tasks import Task
from om2w_tui.campaign_folder import PLAN_FILE, is_campaign, lane_of
from om2w_tui.engine.sharding import check_out_free
from om2w_tui.files import holds_no_files, unsafe_entry
from om2w_tui.run_folder import RunFolder, inside_run, run_holding


def check_out(out: Path, shard: str = "", tasks: list[Task] | None = None, *, campaign: bool = False,
              lane: bool = False) -> str:
    """'' when a run (a campaign with `campaign`, one of its lanes with `lane`) could write `out`, else what is wrong
    and what to do."""
    if out.exists() and not out.is_dir():
        return f"--out {out}: is a file, not a folder; choose another path"
    probe = out if out.exists() else next((p for p in out.parents if p.exists()), Path("."))
    if not probe.is_dir():
        return f"--out {out}: {probe} is a file, not a folder; choose another path"
    if (holder := run_holding(out, itself=False)) is not None:
        return inside_run("--out", out, holder, "give an --out")
    if not campaign and is_campaign(out):
        return (f"--out {out}: a campaign's folder (its {PLAN_FILE}); a run's files there would sit beside its "
                f"lanes: give the run its own --out (a campaign resumes with `om2w-tui campaign PLAN.toml`)")
    if not (campaign or lane) and lane_of(out) is not None:
        return (f"--out {out}: a folder of the campaign in {out.parent} (its {PLAN_FILE}), where its lanes are: a lane "
                f"goes on with its campaign (`om2w-tui campaign PLAN.toml`), paired with the other arms; give the "
                f"run its own --out")
    if not os.access(probe, os.W_OK):
        return f"--out {out}: {probe} is not writable; choose a folder you can write to"
    if holds_no_files(probe):
        return f"--out {out}: {probe} is on a filesystem that holds no files (like /proc or /sys); choose another"
    if out.is_dir():
        problems = [unsafe_entry(path) for path in RunFolder(out, shard).own_files()]
        problems += [unsafe_task_folder(out / t.task_id) for t in tasks or ()]
        if problem := next((p for p in problems if p), ""):
            return f"--out {out}: {problem}"
    return check_out_free(out, shard)
