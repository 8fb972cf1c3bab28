"""Every name a campaign gives its out folder, and the one rule that says a folder is a campaign's.

A campaign (`om2w-tui campaign PLAN.toml`: several arms, each maybe repeated, run together on one pacer) keeps one
complete run folder per arm and repeat, a *lane*: `OUT/<arm>/` for the first repeat, `OUT/<arm>-r<k>/` for the k-th
(k >= 2). Each is a run folder as `om2w-tui run` writes one (`run_folder.py`), so the official evaluator, `check`,
`judge`, `report` and `label` read it unchanged. Beside them the campaign keeps its own files, never inside a run
folder (the official evaluator takes every subfolder of a run's folder as a task): the plan as resolved
(`campaign.json`: the shared settings, each arm's changes, the repeats, and the lanes in their order) and its lock.

An arm's lane is a folder beside those files: `arm_problem` refuses an arm named as one of them (`OWN_GLOBS`: the
campaign's and, since the folder is held as a run's, a run's own), or like another arm but for case.

No I/O here but reading `campaign.json`; the module sits just above `run_folder.py`, below all that reads runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.json_input import InputError, load
from om2w_tui.run_folder import CAMPAIGN_PLAN, is_own_name
from om2w_tui.run_folder import OWN_GLOBS as RUN_OWN_GLOBS

PLAN_FILE = CAMPAIGN_PLAN              # the plan as resolved: written when the campaign starts, checked on resume
LOCK_FILE = ".om2w-campaign.lock"      # held for the campaign's life (each lane's run folder holds its own too)
FORMAT = 1
# every name the campaign's folder keeps beside its lanes: its plan and lock, and a run's own (the folder is held as a
# run's: its lock, control socket and workers' logs); no arm's lane may be so named (`arm_problem`)
OWN_GLOBS = (PLAN_FILE, LOCK_FILE, *RUN_OWN_GLOBS)
# an arm's name is a folder's name: letters, digits, `_ . -`, not starting with `.` or `-`; `-r<k>` ends a repeat's
ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_REPEAT = re.compile(r"-r\d+$")


def arm_problem(name: str, earlier: tuple[str, ...] | list[str] = ()) -> str:
    """Why `name` cannot name an arm ('' when it can), beside the arms named `earlier` in the same campaign."""
    if not ARM_NAME.fullmatch(name):
        return f"arm name {name!r}: 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
    if _REPEAT.search(name):
        return f"arm name {name!r}: may not end in -r<number> (a repeat's run folder is named so)"
    if is_own_name(name, OWN_GLOBS):
        return (f"arm name {name!r} is the name of one of the campaign's own files in its folder "
                f"({', '.join(OWN_GLOBS[:-1])}, or starting with '.'): rename the arm")
    if same := [e for e in earlier if e.lower() == name.lower()]:
        verb = "given twice" if same[0] == name else f"the same as arm {same[0]!r} but for case (one folder on a " \
            "case-insensitive disk)"
        return f"arm name {name!r}: {verb}; name each arm once"
    return ""


def lane_name(arm: str, repeat: int) -> str:
    """The run folder of an arm's `repeat`-th repeat (counted from 1)."""
    return arm if repeat == 1 else f"{arm}-r{repeat}"


@dataclass(frozen=True)
class LaneName:
    """One lane of a campaign as its folder says it: the run folder's name, its arm, its repeat (from 1)."""

    name: str
    arm: str
    repeat: int


@dataclass(frozen=True)
class CampaignFolder:
    out: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", Path(self.out))

    @property
    def plan(self) -> Path:
        return self.out / PLAN_FILE

    @property
    def lock(self) -> Path:
        return self.out / LOCK_FILE

    def run(self, lane: str) -> Path:
        return self.out / lane

    def read_plan(self) -> dict[str, Any]:
        """`campaign.json` as written (a dict); InputError naming the file for anything else."""
        data = load(self.plan, what="a campaign's plan")
        if not isinstance(data, dict) or not isinstance(data.get("lanes"), list):
            raise InputError(f"{self.plan}: not a campaign's plan (no list of lanes)")
        return data

    def lanes(self) -> list[LaneName]:
        """The lanes in the plan's order; InputError naming the file where one is malformed."""
        out = []
        for i, lane in enumerate(self.read_plan()["lanes"]):
            try:
                name, arm, repeat = lane["name"], lane["arm"], lane["repeat"]
            except (KeyError, TypeError):
                raise InputError(f"{self.plan}: lane #{i + 1} is not {{name, arm, repeat}}") from None
            if not (isinstance(arm, str) and isinstance(repeat, int) and not isinstance(repeat, bool)
                    and repeat >= 1 and not arm_problem(arm) and name == lane_name(arm, repeat)):
                raise InputError(f"{self.plan}: lane #{i + 1} ({lane!r}) is not an arm's repeat as named here")
            out.append(LaneName(name, arm, repeat))
        return out

    def run_folders(self) -> list[Path]:
        """Each lane's run folder, in the plan's order (those not started yet too)."""
        return [self.run(lane.name) for lane in self.lanes()]


def is_campaign(folder: Path) -> bool:
    """The rule every reader asks: a folder with a campaign's plan (`campaign.json`) is a campaign's."""
    return (Path(folder) / PLAN_FILE).is_file()


def lane_of(folder: Path) -> str | None:
    """The lane a folder is, by its name, where it sits in a campaign's folder (`OUT/<lane>`: `ctl` and `attach`
    given it act on that lane); None for any other folder."""
    folder = Path(folder).resolve()
    return folder.name if folder.name and is_campaign(folder.parent) else None
