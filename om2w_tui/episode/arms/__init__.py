"""Arms: the agents an episode can run. `base` is built in; others register under the entry point group
`om2w_tui.arms` (name = "module:Class")."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any


def arm_names() -> list[str]:
    return sorted({ep.name for ep in entry_points(group="om2w_tui.arms")} | {"base", "agent"})


def load_arm(name: str) -> Any:
    """The arm class registered as `name`."""
    if name == "base":
        from om2w_tui.episode.arms.base import BaseArm  # only the arm asked for is imported

        return BaseArm
    if name == "agent":
        from om2w_tui.episode.arms.planner import PlannerArm  # only the arm asked for is imported

        return PlannerArm
    for ep in entry_points(group="om2w_tui.arms"):
        if ep.name == name:
            return ep.load()
    raise LookupError(f"no arm named {name!r} (known: {', '.join(arm_names())})")
