"""A task's page of the web report, built on demand from the console (`o` in the episode view and the label screen)
in the temporary folder, never in the run's folder (every folder there is a task to the official evaluator), and
the whole site written from the report screen (`w`); both with `frontends/web/site.py`'s templates."""

from __future__ import annotations

import hashlib
import tempfile
import webbrowser
from pathlib import Path

from om2w_tui.evaluation.report import summarize
from om2w_tui.evaluation.summary import RunReport
from om2w_tui.frontends.web.site import build_site, build_task_page, slug

PAGES = "om2w-tui-pages"


def pages_folder(out: Path) -> Path:
    """Where a run's task pages go: the temporary folder, one subfolder per run (by its path)."""
    where = Path(out).resolve()
    key = hashlib.sha256(str(where).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / PAGES / f"{where.name}-{key}"


def write_task_page(out: Path, task_id: str, judge: Path | None = None, report: RunReport | None = None) -> Path:
    """Build `task_id`'s page (the run read as `report` reads it, or `report` given) in the temporary folder;
    -> the page. Slow (the run's report, the thumbnails): call it from a thread."""
    report = report or summarize(out, judge)
    return build_task_page(pages_folder(out) / slug(task_id, set()), report, task_id)


def write_whole_site(out: Path, report: RunReport, dest: Path | None = None) -> Path:
    """The run's whole site (`report OUT --html DIR`'s), by default beside the run as `<run>-site`; -> its index.
    Raises site.SiteError where that folder must not be written."""
    dest = dest or Path(out).resolve().parent / f"{Path(out).resolve().name}-site"
    return build_site(dest, [report]) / "index.html"


def open_page(page: Path) -> bool:
    """Open a page in the browser; False where there is none (an SSH login): the caller says the path."""
    try:
        return bool(webbrowser.open(page.as_uri()))
    except Exception:   # noqa: BLE001 - no browser here: the path is said instead
        return False
