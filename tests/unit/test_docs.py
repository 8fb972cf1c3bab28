"""The front door and the guide stay true: the README short and its links whole, every module of the package named in
the guide's module map, and the guide's picture of the dashboard the one the console draws (its snapshot).

The guide itself (`docs/`, `mkdocs.yml`) is built with `mkdocs build --strict` by `.ci/run`: a broken link, a missing
anchor or a page left out of the nav fails there."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)|src=\"([^\"#]+)\"")


def test_the_readme_is_the_front_door_and_its_links_lead_somewhere():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 200, "the README is the front door: the guide lives in docs/"
    local = [a or b for a, b in LINK.findall(text) if "://" not in (a or b)]
    assert local, "the README links to the guide"
    missing = [t for t in local if not (REPO / t).exists()]
    assert missing == []
    # its first two commands: set up and run the offline suite, then the tests (.ci/run runs the second)
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert "om2w-tui demo --no-ui" in blocks[0] and blocks[1].strip() == ".venv/bin/python -m pytest -q"
    assert ".venv/bin/python -m pytest -q" in (REPO / ".ci" / "run").read_text()


def test_every_page_of_the_guide_is_in_its_nav():
    nav = (REPO / "mkdocs.yml").read_text()
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []


def test_the_module_map_names_every_module():
    guide = (REPO / "docs" / "architecture.md").read_text()
    modules = [p for p in (REPO / "om2w_tui").rglob("*.py")
               if p.name != "__init__.py" and "offline/data" not in p.as_posix()]
    named = [p for p in modules if re.search(rf"[`/]{re.escape(p.name)}`", guide)]
    assert [str(p.relative_to(REPO)) for p in modules if p not in named] == []


def test_the_guides_picture_of_the_dashboard_is_the_one_the_console_draws():
    snapshot = REPO / "tests" / "ui" / "__snapshots__" / "test_snapshots" / "test_dashboard[160x45].svg"
    assert (REPO / "docs" / "images" / "dashboard.svg").read_bytes() == snapshot.read_bytes(), \
        "the dashboard changed: copy its 160x45 snapshot to docs/images/dashboard.svg"
