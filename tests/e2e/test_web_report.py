"""`om2w-tui report OUT --html DIR` in a real browser: a site built from a real offline run (the oracle on the
offline sites) and from a two-run comparison (with each task side by side), every page opened in Chromium
(Playwright, as the episodes drive it): no console error, no failed request, no request outside the site's folder,
every image loads, the index's numbers are `report --format json`'s, the task list's filters and sorting and the
task page's keyboard work."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from om2w_tui.cli.main import main as cli_main

from .helpers import cli

pytestmark = [pytest.mark.e2e]
CHROMIUM = os.environ.get("CHROME_PATH") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """One real offline run of six tasks, and a copy of it where one task is read as failed (the second run of a
    comparison: the same tasks, one solved by the first only)."""
    base = tmp_path_factory.mktemp("web")
    out = base / "run"
    done = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--workers", "2", "--pace-cooldown", "0",
               "--limit", "6", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    other = base / "run2"
    shutil.copytree(out, other, ignore=shutil.ignore_patterns("*.lock", "*.sock"))
    lines = [json.loads(x) for x in (other / "results.jsonl").read_text().splitlines() if x.strip()]
    lines[0]["correct"] = False
    (other / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out, other


def report_json(*outs: Path) -> dict:
    done = cli("report", *map(str, outs), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def open_every_page(site: Path) -> dict[str, dict]:
    """Every HTML page of the site opened in Chromium; -> per page: console errors, failed and outside requests,
    images that did not load, and the page's figures (data-check cells); and every full screenshot a page links
    inside the site, opened alone (an entry of its own: its picture must decode)."""
    from playwright.sync_api import sync_playwright  # Playwright's sync API only in this test

    root = site.resolve()
    found: dict[str, dict] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            state: dict[str, list[str]] = {}
            page.on("console", lambda m: state["errors"].append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: state["errors"].append(str(e)))
            page.on("requestfailed", lambda r: state["failed"].append(r.url))

            def outside(url: str) -> bool:
                u = urlparse(url)
                if u.scheme == "data":
                    return False
                return u.scheme != "file" or not Path(unquote(u.path)).resolve().is_relative_to(root)

            page.on("request", lambda r: state["outside"].append(r.url) if outside(r.url) else None)
            fulls: set[str] = set()
            for html in sorted(root.rglob("*.html")):
                state.update(errors=[], failed=[], outside=[])
                page.goto(html.as_uri(), wait_until="load")
                page.evaluate("Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null)))")
                broken = page.evaluate("Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
                                       ".map(i => i.src)")
                images = page.evaluate("document.images.length")
                checks = page.evaluate("Object.fromEntries(Array.from(document.querySelectorAll("
                                       "'[data-check][data-s]')).map(e => [e.dataset.check, [+e.dataset.s, "
                                       "+e.dataset.n]]))")
                # the full screenshots the page links inside the site (not --link's run files): each opened below
                fulls.update(page.evaluate("Array.from(document.links).map(a => a.href)"
                                           ".filter(h => /[.](png|jpe?g|webp)$/.test(h))"))
                found[str(html.relative_to(root))] = {**{k: list(v) for k, v in state.items()}, "broken": broken,
                                                      "images": images, "checks": checks}
            for url in sorted(u for u in fulls if not outside(u)):
                state.update(errors=[], failed=[], outside=[])
                page.goto(url, wait_until="load")
                width = page.evaluate("document.images.length === 1 ? document.images[0].naturalWidth : 0")
                found[str(Path(unquote(urlparse(url).path)).relative_to(root))] = {
                    **{k: list(v) for k, v in state.items()}, "broken": [] if width else [url], "images": 1,
                    "checks": {}}
        finally:
            browser.close()
    return found


def test_every_page_of_a_run_opens_clean_and_the_index_says_what_report_json_says(runs, tmp_path):
    out, _ = runs
    site = tmp_path / "site"
    assert cli_main(["report", str(out), "--html", str(site)]) == 0
    pages = open_every_page(site)
    assert {"index.html", "r1/tasks.html"} <= set(pages) and sum(1 for p in pages if p.startswith("r1/t/")) == 6
    assert sum(1 for p in pages if p.startswith("r1/s/")) >= 6              # the full screenshots, opened alone
    for name, got in pages.items():
        assert (got["errors"], got["failed"], got["outside"], got["broken"]) == ([], [], [], []), name
    assert sum(p["images"] for p in pages.values()) >= 6                   # every task page shows its screenshots
    report = report_json(out)["runs"][0]
    counts = report["success"]["counts"]
    checks = pages["index.html"]["checks"]
    assert checks["r1|overall|overall|over all"] == [counts["overall"]["successes"], counts["overall"]["tasks"]]
    assert checks["r1|overall|overall|executable"] == [counts["executable"]["successes"],
                                                       counts["executable"]["tasks"]]
    for site_name, c in report["success"]["by_site"].items():
        assert checks[f"r1|site|{site_name}|over all"] == [c["successes"], c["tasks"]]
    # the failure classes: the index's counts are `report`'s (one rule set), none left out
    shown = {k: int(n) for k, n in re.findall(r'data-failure="(\w+)">(\d+)<', (site / "index.html").read_text())}
    assert shown == report["failures"]
    assert (site / ".om2w-tui-site").is_file()
    # built again over itself: replaced whole, nothing left beside it
    assert cli_main(["report", str(out), "--html", str(site)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_the_list_filters_and_sorts_and_the_task_page_answers_the_keyboard(runs, tmp_path):
    from playwright.sync_api import sync_playwright  # Playwright's sync API only in this test

    out, other = runs
    site = tmp_path / "site"
    assert cli_main(["report", str(other), "--html", str(site)]) == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto((site / "r1" / "tasks.html").as_uri())
            visible = "Array.from(document.querySelectorAll('#tasks tbody tr')).filter(r => !r.hidden).length"
            assert page.evaluate(visible) == 6
            page.select_option("select[data-filter=verdict]", "failure")
            assert page.evaluate(visible) == 1 and page.inner_text("#shown") == "1 of 6"
            page.select_option("select[data-filter=failure]", "answered_wrong")
            assert page.evaluate(visible) == 1
            page.select_option("select[data-filter=verdict]", "")
            page.select_option("select[data-filter=failure]", "")
            page.fill("input[data-filter=q]", "wiki")
            assert page.evaluate(visible) == 1
            page.fill("input[data-filter=q]", "")
            page.click("th:has-text('steps')")
            page.click("th:has-text('steps')")   # descending
            steps = page.evaluate("Array.from(document.querySelectorAll('#tasks tbody tr'))"
                                  ".map(r => +r.cells[8].dataset.value)")
            assert steps == sorted(steps, reverse=True)
            # the index links a failure class to the list filtered by it
            page.goto((site / "index.html").as_uri())
            page.click("a[href$='#failure=answered_wrong']")
            assert page.evaluate(visible) == 1
            page.click("#tasks tbody tr:not([hidden]) a")
            assert page.locator("li.step").count() >= 2
            page.keyboard.press("j")
            page.keyboard.press("j")
            assert page.get_attribute("#step-2", "class") == "step current"
            page.keyboard.press("k")
            assert "current" in (page.get_attribute("#step-1", "class") or "")
            page.keyboard.press("ArrowDown")
            assert "current" in (page.get_attribute("#step-2", "class") or "")
            # the browser's own shortcuts stay its own: Ctrl+K / Ctrl+P neither move a step nor leave the page
            here = page.url
            page.keyboard.press("Control+k")
            page.keyboard.press("Control+p")
            assert "current" in (page.get_attribute("#step-2", "class") or "") and page.url == here
            # n / p: the next or the previous task's page
            key, link = ("n", "#next") if page.locator("#next").count() else ("p", "#prev")
            target = page.locator(link).evaluate("a => a.href")
            with page.expect_navigation():
                page.keyboard.press(key)
            assert page.url == target
        finally:
            browser.close()


def test_a_comparison_of_two_runs_opens_clean_and_names_the_task_only_one_solved(runs, tmp_path):
    out, other = runs
    site = tmp_path / "site"
    assert cli_main(["report", str(out), str(other), "--html", str(site), "--link"]) == 0
    pages = open_every_page(site)
    assert "compare.html" in pages and sum(1 for p in pages if p.startswith("r2/t/")) == 6
    assert sum(1 for p in pages if p.startswith("pair/")) == 6 and all(pages[p]["images"] for p in pages
                                                                      if p.startswith("pair/"))
    for name, got in pages.items():     # --link: the full images are links to the runs, not requests
        assert (got["errors"], got["failed"], got["outside"], got["broken"]) == ([], [], [], []), name
    # --link: the full screenshots are the run's own files, nothing copied
    assert not list(site.rglob("*.png")) and not [p for p in site.rglob("*.jpg") if ".t." not in p.name]
    first = json.loads((out / "results.jsonl").read_text().splitlines()[0])["task_id"]
    html = (site / "compare.html").read_text()
    assert f">{first}</a>" in html
    report = report_json(out, other)
    test = next(t for t in report["compare"]["tests"] if t["rule"] == "over all")
    assert test["only_b_tasks"] == [first]


def test_the_list_filters_by_the_judges_and_the_humans_verdicts_apart(tmp_path):
    """A run judged and labelled: where the humans overrule the judge, the list finds it by both filters."""
    from playwright.sync_api import sync_playwright  # Playwright's sync API only in this test

    from om2w_tui.evaluation.labels import LabelFile
    from tests.unit.helpers import web_run as make_run

    run = make_run(tmp_path / "run")
    LabelFile.open(run, "ann").set("ok_1", "0", note="the price shown is not the one asked")
    site = tmp_path / "site"
    assert cli_main(["report", str(run), "--html", str(site)]) == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto((site / "r1" / "tasks.html").as_uri())
            ids = "Array.from(document.querySelectorAll('#tasks tbody tr')).filter(r => !r.hidden)" \
                  ".map(r => r.cells[0].querySelector('a').textContent)"
            assert sorted(page.evaluate(ids)) == ["loop_2", "ok_1"]
            page.select_option("select[data-filter=judge]", "success")
            assert page.evaluate(ids) == ["ok_1"]
            page.select_option("select[data-filter=humans]", "failure")
            assert page.evaluate(ids) == ["ok_1"]            # the judge said success, the humans failure
            page.select_option("select[data-filter=judge]", "failure")
            assert page.evaluate(ids) == []
            page.select_option("select[data-filter=humans]", "not labelled")
            assert page.evaluate(ids) == ["loop_2"]
        finally:
            browser.close()


def test_a_campaign_s_site_opens_clean_and_shows_each_arm_s_repeats_and_the_pairing_gap(runs, tmp_path):
    """The fixture's runs as a campaign's lanes (base twice, the second a repeat where one task failed; agent once):
    its site opened in Chromium, the repeats table and the pairing gap the ones `report --format json` gives."""
    out, other = runs
    camp = tmp_path / "campaign"
    for lane, src in (("base", out), ("base-r2", other), ("agent", other)):
        shutil.copytree(src, camp / lane, ignore=shutil.ignore_patterns("*.lock", "*.sock"))
    (camp / "campaign.json").write_text(json.dumps({"format": 1, "lanes": [
        {"name": "base", "arm": "base", "repeat": 1}, {"name": "agent", "arm": "agent", "repeat": 1},
        {"name": "base-r2", "arm": "base", "repeat": 2}]}))
    site = tmp_path / "site"
    assert cli_main(["report", str(camp), "--html", str(site), "--link"]) == 0
    pages = open_every_page(site)
    assert {"index.html", "compare.html", "r3/tasks.html"} <= set(pages)
    for name, got in pages.items():
        assert (got["errors"], got["failed"], got["outside"], got["broken"]) == ([], [], [], []), name
    data = report_json(camp)["compare"]
    assert data["runs"] == ["base r1", "base r2", "agent"]
    rep = next(r for r in data["repeats"] if r["arm"] == "base" and r["rule"] == "over all")
    assert (rep["always"], rep["sometimes"]) == (5, 1)
    for page in ("index.html", "compare.html"):
        html = (site / page).read_text()
        assert (f'data-repeats="base|over all" data-always="{rep["always"]}" data-sometimes="{rep["sometimes"]}" '
                f'data-never="{rep["never"]}"') in html
        assert f'data-pairing="median" data-value="{data["campaign"]["pairing"]["pairs"]["median_s"]}"' in html


def test_the_final_screenshot_shows_the_page_the_episode_ended_on_and_an_older_folders_none(runs, tmp_path):
    """Each step's screenshot has its URL; the final state's (after the last step) has the page the episode ended
    on (result.json's `last_page`: its URL and title), on the task page and side by side; a folder written before
    `last_page` shows none there rather than another step's."""
    from playwright.sync_api import sync_playwright  # Playwright's sync API only in this test

    out, _ = runs
    older = tmp_path / "older"
    shutil.copytree(out, older, ignore=shutil.ignore_patterns("*.lock", "*.sock"))
    for result in older.glob("*/result.json"):
        result.write_text(json.dumps({k: v for k, v in json.loads(result.read_text()).items() if k != "last_page"}))
    ended = {p.parent.name: json.loads(p.read_text())["last_page"] for p in out.glob("*/result.json")}
    assert len(ended) == 6 and all(page["url"] and page["title"] for page in ended.values())
    site = tmp_path / "site"
    assert cli_main(["report", str(out), str(older), "--html", str(site)]) == 0
    final = "Array.from(document.querySelectorAll('li.step')).map(li => [li.querySelector('h3').textContent, " \
            "Array.from(li.querySelectorAll('p.url')).map(p => p.textContent)])"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            for prefix, page_of in (("r1", ended), ("r2", {})):
                shown = 0
                for html in sorted((site / prefix / "t").glob("*.html")):
                    page.goto(html.as_uri())
                    tid = page.inner_text("h1")
                    *before, (heading, urls) = page.evaluate(final)
                    assert "(final state)" in heading, (html.name, heading)
                    assert all(u for _, u in before[1:]), html.name        # every step after the first has its URL
                    if page_of:
                        assert urls == [f"{page_of[tid]['url']} {page_of[tid]['title']}"], (tid, urls)
                    else:
                        assert urls == [], (tid, urls)                     # no `last_page`: no URL
                    shown += 1
                assert shown == 6
            # side by side: the last row's cell of each run
            page.goto(next((site / "pair").glob("*.html")).as_uri())
            tid = page.inner_text("h1").split(",")[0]
            cells = page.evaluate("Array.from(document.querySelectorAll('tbody tr')).at(-1).querySelectorAll('td')"
                                  ".length")
            last = page.evaluate("Array.from(Array.from(document.querySelectorAll('tbody tr')).at(-1)"
                                 ".querySelectorAll('td')).map(td => Array.from(td.querySelectorAll('.url'))"
                                 ".map(u => u.textContent))")
            assert cells == 2 and last == [[ended[tid]["url"]], []], last
        finally:
            browser.close()
