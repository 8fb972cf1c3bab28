"""The report screen on a finished run's folder built by hand (result.json, trajectory PNGs, results.jsonl with
`correct`) and on the recorded live run: the numbers it shows are summarize()'s, `enter` on a failure opens its
episode, finished episodes refresh it (throttled), `om2w-tui report OUT --ui` opens it; snapshots at 80x24 and
160x45."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import pytest
from textual.command import CommandList

from om2w_tui.cli.main import main as cli_main
from om2w_tui.engine.events import EpisodeFinished
from om2w_tui.evaluation.report import summarize
from om2w_tui.evaluation.report_text import sections
from om2w_tui.evaluation.summary import Rate
from om2w_tui.evaluation.text_formats import fmt_rate
from om2w_tui.frontends.console.app import ConsoleApp
from om2w_tui.frontends.console.screens.dashboard import DashboardScreen
from om2w_tui.frontends.console.screens.episode import EpisodeScreen
from om2w_tui.frontends.console.screens.report import ReportScreen
from om2w_tui.frontends.console.screens.report_tables import ReportTables
from om2w_tui.frontends.console.widgets.rate_chart import RateChart
from om2w_tui.frontends.console.widgets.report_tables import ErrorsTable, FailuresTable

from . import recorded as R
from .pilots import RUN, build, feed, finished_run, report_app, row_keys, shown_keys
from .pilots import settle_report as settle

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])

@SIZES
async def test_the_report_shows_summarize_numbers(tmp_path, size):
    out = finished_run(tmp_path)
    s = summarize(out)
    app = report_app(out)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReportScreen) and screen.data is not None
        by_level = screen.query_one("#by-level", RateChart)
        by_site = screen.query_one("#by-site", RateChart)
        assert [k for k, _ in by_level.rates] == ["easy", "medium", "hard"]
        assert by_level.rates == list(s.success.by_level.items())
        assert by_site.rates == list(s.success.by_site.items())
        # each bar's label: the group, its rate, its successes of its tasks and the rate's 95% interval
        easy, medium, hard = by_level.labels
        assert easy.split() == ["easy", "100%", "2/2", "[34-100]"] and medium.split() == ["medium", "33%", "1/3",
                                                                                        "[6-79]"]
        assert hard.split() == ["hard", "0%", "0/3", "[0-56]"]
        assert by_site.labels[0].split() == ["amazon.com", "33%", "1/3", "[6-79]"] and len(by_site.labels) == 4
        for label, (_site, v) in zip(by_site.labels, s.success.by_site.items()):
            assert label.split()[-3:-1] == [f"{100 * (v.rate or 0):.0f}%", f"{v.successes}/{v.tasks}"]
            assert label.split()[-1] == f"[{100 * v.low:.0f}-{100 * v.high:.0f}]"
        drawn = str(by_level.query_one("PlotextPlot").render())
        assert "medium  33% 1/3 [6-79]" in drawn and "100%" in drawn

        summary = str(screen.query_one("#report-summary").render())
        # both counting rules, each with its interval: the two infra errors and the bot wall were not executable
        assert s.success.counts is not None and s.success.counts.not_executable == 3
        assert fmt_rate(s.success.overall) == "37.5% (3/8) [13.7, 69.4]"
        assert fmt_rate(s.success.counts.executable) == "60.0% (3/5) [23.1, 88.2]"
        if screen.wide:
            assert "over all   37.5% (3/8) [13.7, 69.4]" in summary and "executable 60.0% (3/5) [23.1, 88.2]" in summary
            assert "3 not executable" in summary
        else:
            assert "over all 37.5% 3/8 [14-69] · executable 60.0% 3/5 [23-88] · 3 not exec." in summary
        for status in ("done", "timeout", "error", "blocked"):
            assert status in summary
        assert s.metrics["steps"].median == 3.5 and "3.5" in summary
        assert s.metrics["duration_s"].median == 26.5 and "0:26" in summary

        failures = screen.query_one(FailuresTable)
        assert row_keys(failures) == [t for t, v in s.per_task.items() if not v.success]
        assert len(row_keys(failures)) == 5 and failures.border_subtitle == "5 of 8 tasks"
        cells = [str(c) for c in failures.get_row("booking_cancel_07")]
        assert cells[1:3] == ["⊘", "error"] and cells[4].startswith("model endpoint")    # not executable
        assert [str(c) for c in failures.get_row("amazon_cart_two_items_02")][5].startswith("I added the")
        # why each failed: its failure class (evaluation/failure.py), as `report` counts it
        shown = {t: str(failures.get_row(t)[3]).rstrip("…") for t in row_keys(failures)}    # clipped when narrow
        assert all(v.failure is not None and (v.failure.cls == shown[t] or v.failure.cls.startswith(shown[t])
                                              and len(shown[t]) >= 9) for t, v in s.per_task.items() if t in shown)
        assert shown["kayak_flight_08"] == "bot_wall" and shown["amazon_return_policy_03"] == "timeout"
        assert shown["booking_cancel_07"].startswith("harness_") and "bot_wall" in s.failures

        errors = screen.query_one(ErrorsTable)
        assert [(g.count, g.task_count) for g in errors.groups.values()] == \
            [(g.count, g.task_count) for g in s.errors] == [(3, 2), (1, 1), (1, 1)]
        first = [str(c) for c in errors.get_row(row_keys(errors)[0])]
        assert first[:3] == ["3", "error", "infra"] and first[3].startswith("model endpoint <url> failed")


async def test_o_in_the_episode_view_opens_its_task_page_and_w_writes_the_web_report(tmp_path, monkeypatch):
    """The episode view's `o` builds the task's page of the web report in the temporary folder (never the run's)
    and opens it; the report's `w` writes the whole site beside the run and names it (issue 29 item 5)."""
    from om2w_tui.frontends.console import task_page

    out = finished_run(tmp_path)
    opened: list[str] = []
    monkeypatch.setattr(task_page.webbrowser, "open", lambda url: opened.append(url) or True)
    monkeypatch.setattr(task_page.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    app = report_app(out)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        report = app.screen
        assert isinstance(report, ReportScreen)
        await pilot.press("down", "enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, EpisodeScreen) and view.task_id == "amazon_return_policy_03"
        await pilot.press("o")
        await settle(pilot)
        page = view.page
        assert page is not None and opened == [page.as_uri()]
        assert any(n.message == f"opened {page}" for n in app._notifications)
        await pilot.press("escape")
        await pilot.press("w")
        await settle(pilot)
        assert report.site == tmp_path / "om2w-qwen3-site" / "index.html" and report.site.is_file()
        assert any(n.message == f"wrote the web report: {report.site}" for n in app._notifications)
    assert page.is_relative_to(tmp_path / "tmp" / "om2w-tui-pages")
    body = page.read_text()
    assert "<h1>amazon_return_policy_03</h1>" in body and body.count('class="step"') == 2
    assert "Step 0 -&gt; CLICK" in body and "thought 0" in body and "timeout" in body
    assert "<b>timeout</b>" in body                                      # why it failed, as `report` says
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(r[0] for r in RUN)   # the run untouched
    tasks = (tmp_path / "om2w-qwen3-site" / "r1" / "tasks.html").read_text()
    assert all(r[0] in tasks for r in RUN)


async def test_enter_on_a_failure_opens_its_episode_and_escape_comes_back(tmp_path):
    out = finished_run(tmp_path)
    app = report_app(out)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        report = app.screen
        keys = shown_keys(app)
        assert keys["open_failure"] == "Open" and keys["refresh_report"] == "Refresh" and "quit_run" in keys
        assert "back" not in keys           # opened on the report: nothing to go back to (q quits)
        await pilot.press("down", "enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, EpisodeScreen) and view.task_id == "amazon_return_policy_03"
        assert view.folder == out / "amazon_return_policy_03" and view.record.status == "timeout"
        assert len(view.files.shots) == 2
        await pilot.press("escape")
        assert app.screen is report
        # enter on an error group opens its first task's latest attempt
        await pilot.press("tab", "enter")
        await settle(pilot)
        assert isinstance(app.screen, EpisodeScreen) and app.screen.task_id == "booking_cancel_07"
        assert app.screen.record.attempt == 2
        await pilot.press("escape", "q")
        await pilot.pause()
    assert app.return_code == 0


async def test_the_live_report_opens_from_the_dashboard_and_follows_finished_episodes(tmp_path):
    app, clock, _ = build(tmp_path)
    out = tmp_path / "demo"
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        # offline_shop_search_01 finished in the recorded run: as the scheduler does, its record is on disk
        shop = R.record("offline_shop_search_01", R.SHOP, answer="The Copper Pour-Over Kettle costs $42.50.",
                        finished=R.T0 - 25, duration=15.0)
        with open(out / "results.jsonl", "a") as f:
            f.write(json.dumps(shop.to_json()) + "\n")
        await pilot.press("R")
        await settle(pilot)
        report = app.screen
        assert isinstance(report, ReportScreen) and report.live and report.computed == 1
        assert "running" in str(report.query_one("#report-title").render())
        assert report.data.summary.success.overall == Rate(2, 2, 1.0)
        assert report.query_one(FailuresTable).row_count == 0
        report.throttle_s = 1.0
        # two episodes end at once: one computation, after the throttle's delay
        wiki = R.record("offline_wiki_port_06", R.WIKI, status="timeout", error="timeout", correct=False,
                        finished=R.T0 + 5, slot=1)
        booking = R.record("offline_booking_rates_11", R.BOOKING, answer="Room 12", correct=False,
                           finished=R.T0 + 6)
        with open(out / "results.jsonl", "a") as f:
            f.write(json.dumps(wiki.to_json()) + "\n" + json.dumps(booking.to_json()) + "\n")
        report._last_started = time.monotonic()     # as if it had just been computed
        app.sink.handle(EpisodeFinished(1, wiki))
        app.sink.handle(EpisodeFinished(0, booking))
        await pilot.pause()
        assert report.computed == 1 and report._due is not None
        for _ in range(100):       # the throttle's timer: one computation for both, a second after the last
            if report.computed == 2:
                break
            await asyncio.sleep(0.05)
        await settle(pilot)
        assert report.computed == 2
        assert row_keys(report.query_one(FailuresTable)) == ["offline_booking_rates_11", "offline_wiki_port_06"]
        assert report.data.summary.success.overall.successes == 2
        assert report.query_one("#by-level", RateChart).labels[0].split() == ["easy", "50%", "2/4", "[15-85]"]
        assert shown_keys(app)["back"] == "Back"
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_the_live_reports_pending_counts_the_queued_tasks(tmp_path):
    """The live run's tasks not started yet have no record or folder: they are pending too (it said 0 with 14
    queued, issue 26 item 10)."""
    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        await pilot.press("R")
        await settle(pilot)
        report = app.screen
        assert isinstance(report, ReportScreen) and report.live and report.data is not None
        s = report.data.summary
        assert report.total is not None and report.total > s.tasks
        queued = report.total - s.tasks
        counted = s.success.counts.pending if s.success.counts else 0
        summary = str(report.query_one("#report-summary").render())
        assert f"{queued + counted} pending" in summary


async def test_the_command_palette_opens_the_report(tmp_path):
    app, clock, _ = build(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(pilot, app, clock)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Open the report")
        hits = app.screen.query_one(CommandList)
        for _ in range(100):     # the palette searches in the background
            if hits.option_count and "Open the report" in str(hits.get_option_at_index(0).prompt):
                break
            await pilot.pause(0.05)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ReportScreen)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Refresh the report" in titles and "Back to the dashboard" in titles
        assert "Open the selected episode" not in titles      # nothing failed yet


def test_report_ui_opens_the_console_on_the_report(tmp_path, monkeypatch):
    out = finished_run(tmp_path)
    seen: list[Any] = []

    async def drive(app: ConsoleApp) -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            screen = app.screen
            seen.append((type(screen), screen.out, screen.data.summary.tasks))
            await pilot.press("escape")      # opened on the report: escape quits like q
            await pilot.pause()

    def run(self: ConsoleApp, *args: Any, **kw: Any) -> int:
        asyncio.run(drive(self))
        return self.return_code or 0

    monkeypatch.setattr(ConsoleApp, "run", run)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)      # as in a terminal (the console needs one)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert cli_main(["report", str(out), "--ui"]) == 0
    assert seen == [(ReportScreen, out, 8)]
    assert cli_main(["report", str(out), str(out), "--ui"]) == 2


@SIZES
def test_report_snapshot(snap_compare, tmp_path, size):
    out = finished_run(tmp_path)

    async def run_before(pilot) -> None:
        await settle(pilot)

    assert snap_compare(report_app(out), terminal_size=size, run_before=run_before)


async def test_t_shows_every_table_with_both_rules_and_intervals(tmp_path):
    out = finished_run(tmp_path)
    app = report_app(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        report = app.screen
        await pilot.press("t")
        await pilot.pause()
        tables = app.screen
        assert isinstance(tables, ReportTables)
        drawn = [w.content for w in tables.query(".tables-section")]
        expected = sections(summarize(out), site_limit=40)
        assert [t.title for t in drawn] == [heading for heading, _, _ in expected]
        assert drawn[0].title == "success: reference answers"
        assert [c.header for c in drawn[0].columns] == ["group", "over all", "executable only", "not executable",
                                                        "pending"]
        assert list(drawn[0].columns[1].cells)[0] == "37.5% (3/8) [13.7, 69.4]"
        notes_text = " ".join(str(w.content) for w in tables.query(".tables-note"))
        assert "95% Wilson interval" in notes_text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is report
