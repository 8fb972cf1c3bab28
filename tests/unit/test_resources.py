"""The top level the design asks for: the console's styles in `styles/` and the benchmark task files in `data/`,
found from the source tree and from an installed wheel alike; `--bench om2w|webvoyager` need no `--tasks`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import _load_selection
from om2w_tui.resources import data_dir, default_task_file, styles_dir

REPO = Path(__file__).resolve().parents[2]


def test_the_source_tree_has_styles_and_data_at_the_top():
    assert styles_dir() == REPO / "styles" and (styles_dir() / "app.tcss").is_file()
    assert data_dir() == REPO / "data"
    assert default_task_file("om2w").is_file() and default_task_file("webvoyager").is_file()
    assert default_task_file("offline") is None
    assert "licen" in (REPO / "data" / "README.md").read_text().lower()


def test_every_package_folder_is_in_pyprojects_list():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "om2w_tui").rglob("__init__.py")}
    assert found <= listed and listed - found == {"om2w_tui.styles", "om2w_tui.data"}


@pytest.mark.parametrize("bench, count", [("om2w", 300), ("webvoyager", 643)])
def test_a_benchmark_without_tasks_reads_the_shipped_file(tmp_path, bench, count):
    task_file, tasks, chosen, _ = _load_selection(RunConfig(out=tmp_path / "o", bench=bench))
    assert task_file == default_task_file(bench) and len(tasks) == len(chosen) == count


def test_an_installed_wheel_finds_its_styles_and_task_files(tmp_path):
    from importlib.metadata import version

    assert int(version("setuptools").split(".")[0]) >= 77, "building the wheel needs setuptools>=77: " \
        "pip install -e '.[test]' again"
    src = tmp_path / "src"     # a copy: building in the checkout would leave build/ and egg-info behind
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("om2w_tui", "styles", "data"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w",
                            str(tmp_path / "wheel"), str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("om2w_tui-*.whl")
    target = tmp_path / "installed"
    done = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.rmtree(src)    # nothing to fall back on: the wheel alone
    # -S -I: no site-packages (so no editable install of this checkout) and no PYTHONPATH; only the wheel
    probe = ("import json, sys; sys.path.insert(0, sys.argv[1]); from om2w_tui import resources as r; "
             "print(json.dumps([str(r.styles_dir()), sorted(p.name for p in r.styles_dir().glob('*.tcss')), "
             "str(r.default_task_file('om2w')), r.default_task_file('webvoyager').is_file()]))")
    seen = subprocess.run([sys.executable, "-S", "-I", "-c", probe, str(target)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert seen.returncode == 0, seen.stderr[-2000:]
    styles, tcss, om2w, webvoyager = json.loads(seen.stdout)
    assert Path(styles) == target / "om2w_tui" / "styles"
    assert tcss == sorted(p.name for p in (REPO / "styles").glob("*.tcss"))
    assert Path(om2w) == target / "om2w_tui" / "data" / "Online_Mind2Web.json" and Path(om2w).is_file()
    assert webvoyager is True
