"""The files shipped beside the code: the console's styles (`styles/`) and the benchmark task files (`data/`).

In the source tree they are top-level folders; the wheel installs them as `om2w_tui/styles` and `om2w_tui/data`
(setuptools' `package-dir` mapping in pyproject.toml). Either way they are found here, by absolute path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TASK_FILES = {"om2w": "Online_Mind2Web.json", "webvoyager": "WebVoyager_data.jsonl"}


def _shipped(name: str) -> Path:
    """The folder installed as `om2w_tui.<name>`, else the source tree's top-level `<name>/`."""
    try:
        spec = importlib.util.find_spec(f"om2w_tui.{name}")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        if Path(location).is_dir():
            return Path(location)
    return _SOURCE_ROOT / name


def styles_dir() -> Path:
    return _shipped("styles")


def data_dir() -> Path:
    return _shipped("data")


def default_task_file(bench: str) -> Path | None:
    """The benchmark's task file shipped in `data/` (as the seed runner's defaults were), or None."""
    name = DEFAULT_TASK_FILES.get(bench)
    return data_dir() / name if name else None
