"""Fixtures the unit tests share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.helpers import good_rows


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The process's working folder: it must stay as the test left it."""
    w = tmp_path / "work"
    w.mkdir()
    (w / "tasks.json").write_text(json.dumps(good_rows()))
    return w
