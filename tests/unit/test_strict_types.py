"""mypy checks the whole package with --strict (`.ci/run` runs it as pyproject.toml configures it): strict is on
for everything, and no override takes a module of ours back out of it (only third-party modules without types may
be told apart)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# the flags --strict turns on that an override could turn back off, and the override that hides a module
LOOSENING = ("ignore_errors", "check_untyped_defs", "disallow_any_generics", "disallow_incomplete_defs",
             "disallow_subclassing_any", "disallow_untyped_calls", "disallow_untyped_decorators",
             "disallow_untyped_defs", "extra_checks", "no_implicit_reexport", "strict_equality", "warn_return_any",
             "warn_unused_ignores")


def problems(mypy: dict[str, Any]) -> list[str]:
    """What keeps a module of ours from being checked strictly under this [tool.mypy] table."""
    found = []
    if mypy.get("strict") is not True:
        found.append("strict is not on")
    if mypy.get("packages") != ["om2w_tui"]:
        found.append(f"packages is {mypy.get('packages')!r}, not the whole package")
    for override in mypy.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        ours = [m for m in modules if m == "om2w_tui" or m.startswith("om2w_tui.")]
        loosened = [flag for flag in LOOSENING if override.get(flag) is (flag == "ignore_errors")]
        if ours and (loosened or override.get("ignore_missing_imports")):
            found.append(f"{ours} loosened: {loosened or ['ignore_missing_imports']}")
    return found


def test_the_whole_package_is_checked_strictly():
    assert problems(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]) == []


def test_the_check_can_fail():
    strict = {"strict": True, "packages": ["om2w_tui"], "overrides": [{"module": ["psutil"],
                                                                        "ignore_missing_imports": True}]}
    assert problems(strict) == []
    assert problems({**strict, "strict": False}) == ["strict is not on"]
    hidden = {**strict, "overrides": [{"module": ["om2w_tui.frontends.console.*"], "ignore_errors": True}]}
    assert problems(hidden) == ["['om2w_tui.frontends.console.*'] loosened: ['ignore_errors']"]
    untyped = {**strict, "overrides": [{"module": "om2w_tui.cli.main", "disallow_untyped_defs": False}]}
    assert problems(untyped) == ["['om2w_tui.cli.main'] loosened: ['disallow_untyped_defs']"]
