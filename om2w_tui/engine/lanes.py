"""A campaign's lanes: each arm's repeat is a run of its own (its settings, its run folder, its records, its model's
health) whose episodes share the campaign's one queue, slots and pacer with every other lane's.

A lane is declared here so that the plan (which makes them), launch (which checks and starts them) and the scheduler
(which runs their units: one (lane, task) each) name one type. A run that is not a campaign is one lane."""

from __future__ import annotations

from dataclasses import dataclass

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig


@dataclass(frozen=True)
class Lane:
    name: str                 # its run folder's name in the campaign's out folder (campaign_folder.lane_name)
    arm: str                  # the plan's arm it repeats
    repeat: int               # from 1
    config: RunConfig         # the run as this lane runs it: its model settings, out = the campaign's out / name
    tasks: tuple[Task, ...]   # the campaign's selection, loaded with this lane's settings (its step budget)
    endpoint: str | None = None   # the base URL its workers use, where launch serves one (the oracle's)
