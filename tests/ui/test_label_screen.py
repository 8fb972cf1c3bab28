"""The labelling screen, driven with Pilot on a finished run's folder built by hand (result.json, trajectory PNGs,
results.jsonl, a judge file): every key lands in the annotator's file on disk at once, the next task follows, the
judge stays hidden unless asked, filters and review choose the tasks, a new session resumes; snapshots at 80x24 and
160x45."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

from om2w_tui.cli.main import main as cli_main
from om2w_tui.evaluation.label_session import LabelSession
from om2w_tui.evaluation.labels import LabelFile, read_label_file, read_run_labels
from om2w_tui.evaluation.report import summarize
from om2w_tui.frontends.console import task_page
from om2w_tui.frontends.console.app import make_app
from om2w_tui.frontends.console.label_app import LabelApp
from om2w_tui.frontends.console.screens.label import LabelScreen
from om2w_tui.frontends.console.screens.label_dialogs import AskAnnotator, FilterPicker, NoteEditor
from om2w_tui.frontends.console.screens.report import ReportScreen
from om2w_tui.frontends.console.widgets import block_image

from .pilots import RUN, finished_run, labeller, report_app, screen_of, settle_report, text
from .pilots import settle_label as settle

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])
TASKS = sorted(r[0] for r in RUN)


def judged(out: Path) -> Path:
    """A judge file that calls the amazon and wikipedia tasks successes and the rest failures."""
    path = out / "om2w-tui_WebJudge_Online_Mind2Web_eval_o4-mini_score_threshold_3_auto_eval_results.json"
    path.write_text("".join(json.dumps({"task_id": t, "predicted_label": int(t.startswith(("amazon", "wiki"))),
                                        "judge_model": "o4-mini", "mode": "webjudge"}) + "\n" for t in TASKS))
    return path


def on_disk(out: Path, annotator: str = "alice") -> dict[str, Any]:
    labels = read_label_file(out / f"labels.{annotator}.json")
    return {t: (lab.value, lab.reason, lab.note) for t, lab in labels.items()}


async def pick_filter(pilot, app, key: str) -> str:
    """`f`, then the filter `key` chosen in the picker: -> the picker's words for it (its count in them)."""
    await pilot.press("f")
    await pilot.pause()
    picker = app.screen
    assert isinstance(picker, FilterPicker)
    options = picker.query_one(OptionList)
    prompt = str(options.get_option(key).prompt)
    options.highlighted = options.get_option_index(key)
    await pilot.press("enter")
    await settle(pilot)
    return prompt


async def test_every_key_is_on_disk_at_once_and_the_next_task_follows(tmp_path):
    out = finished_run(tmp_path)
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        first, second, third = TASKS[:3]
        assert screen.session.current == first and "labelled 0 of 8" in text(screen, "#label-title")
        assert first in text(screen, "#label-task") and "Do the task" in text(screen, "#label-task")
        assert "I added the kettle to the cart." in text(screen, "#label-answer")
        assert "Step 0 -> CLICK" in text(screen, "#label-actions")
        await pilot.press("1")
        await settle(pilot)
        assert on_disk(out) == {first: ("1", None, "")}
        assert screen.session.current == second and "labelled 1 of 8" in text(screen, "#label-title")
        await pilot.press("2")                     # not executable: the reason is asked
        await pilot.pause()
        await pilot.press("c")
        await settle(pilot)
        assert on_disk(out)[second] == ("2", "captcha", "") and screen.session.current == third
        await pilot.press("0")
        await settle(pilot)
        await pilot.press("left_square_bracket", "left_square_bracket")   # back to the CAPTCHA one
        await settle(pilot)
        assert screen.session.current == second
        assert "2 not executable · CAPTCHA / bot wall" in text(screen, "#label-verdict")
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NoteEditor)
        await pilot.press(*"cloudflare", "enter")
        await pilot.pause()
        assert on_disk(out)[second] == ("2", "captcha", "cloudflare")
        assert "note: cloudflare" in text(screen, "#label-verdict")
        await pilot.press("backspace")             # clear the label
        await pilot.pause()
        assert second not in on_disk(out) and "labelled 2 of 8" in text(screen, "#label-title")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert [p.name for p in out.iterdir() if p.is_dir()] == [p.name for p in out.iterdir() if p.name in TASKS]


async def test_a_new_session_resumes_on_the_first_task_left(tmp_path):
    out = finished_run(tmp_path)
    f = LabelFile.open(out, "alice")
    for t in TASKS[:3]:
        f.set(t, "0")
    app = labeller(out)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        assert screen.session.current == TASKS[3] and "labelled 3 of 8" in text(screen, "#label-title")


async def test_an_older_writers_row_shows_no_steps_or_time_it_never_recorded(tmp_path):
    """A row without steps or a duration (another writer's) is read as `report` reads it: not known, never `0`."""
    out = finished_run(tmp_path)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for r in rows:
        if r["task_id"] == TASKS[0]:
            del r["steps"], r["duration_s"]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert summarize(out).per_task[TASKS[0]].duration_s is None
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        head = text(screen, "#label-task").splitlines()[0]
        assert TASKS[0] in head and "done" in head and "steps" not in head and "0s" not in head
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert " · 4 steps · 31s" in text(screen, "#label-task")   # a row that has them: shown


async def test_the_judge_stays_hidden_unless_asked(tmp_path):
    out = finished_run(tmp_path)
    judged(out)
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        assert "Judge" not in text(screen, "#label-verdict")
        await pilot.press("v")
        await pilot.pause()
        assert "Judge       success" in text(screen, "#label-verdict")    # amazon_cart_two_items_02
        await pilot.press("v")
        await pilot.pause()
        assert "Judge" not in text(screen, "#label-verdict")
    app = labeller(out, show_judge=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        assert "Judge       success" in text(screen_of(app), "#label-verdict")


async def test_screenshots_step_with_the_arrows_and_o_opens_the_web_reports_task_page(tmp_path, monkeypatch):
    """`o` builds the task's page of the web report on demand, in the temporary folder (never the run's), with the
    site's template: every step's actions and thought beside its screenshot's thumbnail; the path is said."""
    out = finished_run(tmp_path)
    opened: list[str] = []
    monkeypatch.setattr(task_page.webbrowser, "open", lambda url: opened.append(url) or False)   # no browser
    monkeypatch.setattr(task_page.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        box = screen.query_one("#label-shot-box")
        assert box.border_subtitle == "1/2 · 0_full_screenshot.png" and screen.query_one("#label-shot").image
        await pilot.press("right")
        await settle(pilot)
        assert box.border_subtitle == "2/2 · 1_full_screenshot.png"
        await pilot.press("o")
        await settle(pilot)
        page = screen.page
        assert page is not None and page.is_file() and opened == [page.as_uri()]
        said = [n.message for n in app._notifications]
        assert any(m == f"no browser here: open {page}" for m in said), said
    assert page.is_relative_to(tmp_path / "tmp" / "om2w-tui-pages")
    body = page.read_text()
    assert f"<h1>{TASKS[0]}</h1>" in body and f"Do the task {TASKS[0]}." in body
    assert body.count('class="step"') == 2 and '<code>&lt;a id=&#34;link-0&#34;&gt; Step 0 -&gt; CLICK</code>' in body
    assert "thought 0" in body and body.count("<img ") == 2
    thumbs = sorted(page.parent.parent.glob("s/*/*.t.jpg"))
    assert len(thumbs) == 2                                              # the thumbnails, made for this page
    full = (out / TASKS[0] / "trajectory" / "1_full_screenshot.png").resolve()
    assert any((page.parent / href).resolve() == full for href in _hrefs(body))   # full size: the run's own file
    assert (page.parent.parent.parent / "assets" / "site.css").is_file()
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == TASKS   # nothing written into the run's folder


def _hrefs(body: str) -> list[str]:
    import re

    return re.findall(r'href="([^"]+)"', body)


async def test_filters_choose_the_tasks(tmp_path):
    out = finished_run(tmp_path)
    judged(out)
    f = LabelFile.open(out, "alice")
    f.set("amazon_cart_two_items_02", "0")     # the judge says success: they disagree
    f.set("booking_cancel_07", "0")            # the judge says failure: they agree
    LabelFile.open(out, "bob").set("booking_cancel_07", "1")
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        s = screen.session
        counts = {k: n for k, _, n in s.filters()}
        assert counts["all"] == 8 and counts["unlabelled"] == 6 and counts["judge"] == 1
        assert counts["annotators"] == 1 and counts["level:hard"] == 3 and counts["site:booking.com"] == 2
        assert [k for k, _, _ in s.filters()][6:9] == ["level:easy", "level:medium", "level:hard"]
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, FilterPicker)
        await pilot.press("escape")
        s.apply_filter("site:booking.com")
        screen.show_task()
        await settle(pilot)
        assert s.view == ["booking_cancel_07", "booking_cheapest_room_06"]
        assert "task 2 of 2 (site booking.com)" in text(screen, "#label-title")   # the unlabelled one first
        s.apply_filter("annotators")
        screen.show_task()
        await settle(pilot)
        assert s.view == ["booking_cancel_07"] and "bob         1 success" in text(screen, "#label-verdict")


async def test_the_failure_filter_chooses_the_tasks_of_one_class(tmp_path):
    """`f` offers each failure class the run's tasks have, with its count, as `report` classifies them (issue 29
    item 3), and choosing one walks its tasks."""
    out = finished_run(tmp_path)
    judged(out)
    classes = {t: r.failure.cls for t, r in summarize(out).per_task.items() if r.failure is not None}
    assert sorted(set(classes.values())) == ["bot_wall", "harness_error"]
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        s = screen.session
        offered = [(k, n) for k, _, n in s.filters() if k.startswith("failure:")]
        assert offered == [("failure:bot_wall", 1), ("failure:harness_error", 2)]
        assert "failed: harness error (2)" in await pick_filter(pilot, app, "failure:harness_error")
        assert s.filter == "failure:harness_error"
        assert s.view == sorted(t for t, c in classes.items() if c == "harness_error") == \
            ["booking_cancel_07", "booking_cheapest_room_06"]
        assert "task 1 of 2 (failed: harness error)" in text(screen, "#label-title")
    # from the command line: the same view; a class that is not one exits 2 naming the classes
    assert LabelSession(out, "alice", flt="failure:bot_wall").view == ["kayak_flight_08"]


async def test_review_gives_final_labels_where_annotators_disagree(tmp_path):
    out = finished_run(tmp_path)
    for who, label in (("alice", "0"), ("bob", "1")):
        f = LabelFile.open(out, who)
        f.set("kayak_flight_08", "2", reason="captcha") if label == "0" else f.set("kayak_flight_08", label)
        f.set("booking_cancel_07", label, note=f"{who} says {label}")
        f.set("amazon_kettle_price_01", "1")    # they agree: not reviewed
    assert read_run_labels(out).consensus("booking_cancel_07") is None
    app = labeller(out, review=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        assert screen.session.view == ["booking_cancel_07", "kayak_flight_08"]
        assert "Review" in text(screen, "#label-title") and "final labels" in text(screen, "#label-title")
        verdict = text(screen, "#label-verdict")
        assert "alice       0 failure · alice says 0" in verdict and "bob         1 success · bob says 1" in verdict
        await pilot.press("1")
        await settle(pilot)
    assert on_disk(out, "final") == {"booking_cancel_07": ("1", None, "")}
    labels = read_run_labels(out)
    assert labels.consensus("booking_cancel_07") == "1" and labels.unresolved(TASKS) == ["kayak_flight_08"]


async def test_the_report_opens_the_label_screen_on_the_disagreements(tmp_path):
    out = finished_run(tmp_path)
    judged(out)
    LabelFile.open(out, "bob").set("amazon_cart_two_items_02", "0")
    app = report_app(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle_report(pilot)
        report = app.screen
        assert isinstance(report, ReportScreen) and report.data.summary.agreement
        await pilot.press("L")
        await pilot.pause()
        await pilot.press(*"alice", "enter")       # who labels: asked once
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LabelScreen) and screen.session.filter == "judge"
        assert screen.session.view == ["amazon_cart_two_items_02"]
        await pilot.press("escape")
        await settle_report(pilot)
        assert app.screen is report


async def test_the_report_asks_who_labels_once_and_never_labels_as_the_system_user(tmp_path):
    out = finished_run(tmp_path)
    app = report_app(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle_report(pilot)
        report = app.screen
        assert "measure: reference answers" in str(report.query_one("#report-summary").render())
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, AskAnnotator)
        await pilot.press(*"final", "enter")                 # the reviewer's file: refused, asked again
        await pilot.pause()
        assert isinstance(app.screen, AskAnnotator) and "reviewer" in str(app.screen.query_one("#ask-why").render())
        await pilot.press(*["backspace"] * 5, *"carol", "enter")
        await settle(pilot)
        screen = screen_of(app)
        assert screen.session.annotator == "carol" and "carol" in text(screen, "#label-title")
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("escape")
        await settle_report(pilot)
        assert app.screen is report
        await pilot.press("L")                               # asked once: the same annotator again
        await settle(pilot)
        assert screen_of(app).session.annotator == "carol"
    assert sorted(p.name for p in out.glob("labels.*")) == ["labels.carol.json"]


async def test_the_report_labels_as_the_annotator_given(tmp_path):
    out = finished_run(tmp_path)
    app = make_app(None, report=out, last_launch=None, image_renderer="unicode", start_engine=False,
                   cursor_blink=False, annotator="dave")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle_report(pilot)
        await pilot.press("L")
        await settle(pilot)
        assert screen_of(app).session.annotator == "dave"


def test_review_counts_the_final_labels(tmp_path):
    out = finished_run(tmp_path)
    for who, label in (("alice", "0"), ("bob", "1")):
        f = LabelFile.open(out, who)
        f.set("booking_cancel_07", label)                   # split: no final label until reviewed
        f.set("amazon_kettle_price_01", "1")                # agreed: final without a review
    review = LabelSession(out, "x", review=True)
    assert review.labelled == 1
    review.go("booking_cancel_07")
    review.give("0")
    assert review.labelled == 2


def test_the_command_needs_a_terminal_and_a_folder(tmp_path, capsys):
    out = finished_run(tmp_path)
    assert cli_main(["label", str(out)]) == 2
    assert "labelling needs a terminal (use --export" in capsys.readouterr().err
    assert cli_main(["label", str(out), "--filter", "bogus"]) == 2
    assert "--filter bogus: one of all, unlabelled" in capsys.readouterr().err
    assert cli_main(["label", str(out), "--filter", "failure:lop"]) == 2
    err = capsys.readouterr().err
    assert "--filter failure:lop: no failure class 'lop'" in err and "bot_wall, harness_error, site_error" in err
    assert cli_main(["label", str(out), "--filter", "failure:loop"]) == 2       # a class: on to the terminal check
    assert "labelling needs a terminal" in capsys.readouterr().err
    assert cli_main(["label", str(out), "--annotator", "final"]) == 2
    assert "use --review" in capsys.readouterr().err
    assert cli_main(["label", str(out), "--judge", "nope.json"]) == 2


@SIZES
def test_label_snapshot(snap_compare, tmp_path, size):
    out = finished_run(tmp_path)
    LabelFile.open(out, "alice").set("amazon_cart_two_items_02", "2", reason="site_down", now=0.0)
    app = LabelApp(LabelSession(out, "alice"), renderer="unicode")
    app.session.go("amazon_cart_two_items_02")

    async def run_before(pilot) -> None:
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_block_strips_are_the_pictures_half_cells_in_runs():
    from PIL import Image

    im = Image.new("RGB", (4, 4), (255, 255, 255))
    for x in range(4):
        im.putpixel((x, 0), (200, 0, 0))            # the top row red: the upper halves of the first line
    im.putpixel((3, 1), (0, 0, 200))                # one blue pixel in the lower half of the last cell
    first, second = block_image.block_strips(block_image.half_cells(im, 4, 2))
    assert first.cell_length == second.cell_length == 4
    runs = [(seg.text, seg.style.color.triplet, seg.style.bgcolor.triplet) for seg in first]
    assert runs == [("▀▀▀", (200, 0, 0), (255, 255, 255)), ("▀", (200, 0, 0), (0, 0, 200))]
    assert [(seg.text, seg.style.color.triplet) for seg in second] == [("▀▀▀▀", (255, 255, 255))]
    assert block_image.block_strips(block_image.half_cells(im, 0, 3)) == []


async def test_in_block_characters_the_screen_draws_its_screenshots_itself(tmp_path):
    out = finished_run(tmp_path)
    app = LabelApp(LabelSession(out, "alice"), renderer="halfcell")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        shot = screen.query_one("#label-shot", block_image.BlockImage)
        box = screen.query_one("#label-shot-box").content_size
        assert screen.blocks and shot.strips and len(shot.strips) <= box.height
        assert shot.strips[0].cell_length == shot.size.width <= box.width
        top = next(iter(shot.strips[0]))                     # the test's PNG: a header band of (30, 90, 160)
        assert top.style.color.triplet == (30, 90, 160)
        ahead = screen.session.around()[0]                   # the next task: read and drawn before its key
        assert screen.loaded[ahead].cells is not None
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert shot.cells is screen.loaded[ahead].cells


async def test_the_suspect_filter_walks_the_candidates_for_label_2(tmp_path):
    """`f` offers `suspect` (issue 28 item 6): the tasks no attempt solved that met the site failing (here the bot
    wall; a harness error is no evidence of the site), as `om2w-tui tasks health` names them."""
    out = finished_run(tmp_path)
    judged(out)
    app = labeller(out)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        s = screen.session
        assert "(1)" in await pick_filter(pilot, app, "suspect")
        assert s.filter == "suspect" and s.view == ["kayak_flight_08"]
