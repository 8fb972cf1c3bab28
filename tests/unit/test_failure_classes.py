"""The failure classes (evaluation/failure.py): each rule on a trajectory that shows it, written by the project's
TrajectoryWriter and read back through the one episode-folder reader, and their order of precedence."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from om2w_tui.benchmarks.episode_folder import read_episode
from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.failure import CLASSES, Failure, classify, counted, loop_of, max_steps_of
from om2w_tui.evaluation.report import summarize
from om2w_tui.protocol.faults import FaultKind

SHOP = "http://127.0.0.1:9/shop"


def png(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (shade, shade, 255 - shade)).save(buf, "PNG")
    return buf.getvalue()


def episode(tmp_path: Path, steps: list[tuple[list[str], str, str]], answer: str | None = "",
            cut_short: str | None = None, name: str = "t1"):
    """A folder as an episode writes it: one screenshot a step, v2 (URLs kept), then read back."""
    w = TrajectoryWriter(tmp_path / name, name, "find the price", schema="v2")
    for i, (actions, thought, url) in enumerate(steps):
        w.add_plain_step(actions, thought, png=png(10 + i), url=url)
    w.finish(answer, png(200), cut_short=cut_short)
    return read_episode(tmp_path / name)


def rec(**kw) -> EpisodeRecord:
    return EpisodeRecord(task_id="t1", **{"status": "done", "agent_done": True, "steps": 2, **kw})


def failed_as(out: Path) -> dict[str, Failure | None]:
    """Each task's class as `report` gives it (a task still to run, or one every measure calls a success: none)."""
    return {tid: row.failed_as for tid, row in summarize(out).per_task.items()}


def normal(tmp_path: Path, answer: str = "It costs $12.", **kw):
    return episode(tmp_path, [(["<a> Shop -> CLICK"], "open the shop", SHOP), (["SCROLL DOWN"], "look", SHOP)],
                   answer=answer, **kw)


def test_bot_wall_is_a_blocked_status_whatever_else_holds(tmp_path):
    ep = normal(tmp_path)
    got = classify(rec(status="blocked", error="net::ERR_CONNECTION_REFUSED"), ep, "not_executable")
    assert got is not None and got.cls == "bot_wall"


def test_harness_error_is_an_error_of_kind_infra_endpoint_or_storage(tmp_path):
    ep = normal(tmp_path)
    for kind in (FaultKind.INFRA, FaultKind.ENDPOINT, FaultKind.STORAGE):
        got = classify(rec(status="error", error_kind=kind, error="worker died"), ep, "not_executable")
        assert got is not None and (got.cls, got.detail) == ("harness_error", kind)


def test_site_error_from_the_error_text_the_browser_error_page_or_an_empty_page(tmp_path):
    ep = normal(tmp_path)
    got = classify(rec(status="error", error_kind=FaultKind.AGENT, error="page.goto: net::ERR_NAME_NOT_RESOLVED at x"),
                   ep, "failure")
    assert got is not None and got.cls == "site_error"
    ep2 = episode(tmp_path, [(["NAVIGATE -> http://x"], "open it", "chrome-error://chromewebdata/")], name="t2")
    got = classify(rec(), ep2, "failure")
    assert got is not None and got.cls == "site_error" and "chrome-error" in got.why
    ep3 = episode(tmp_path, [(["<a> Go -> CLICK"], "The page shows 502 Bad Gateway, the site is broken", SHOP)],
                  answer="no", name="t3")
    assert classify(rec(), ep3, "failure").cls == "site_error"   # type: ignore[union-attr]
    # no screenshot, no step: the writer's blank stand-in
    w = TrajectoryWriter(tmp_path / "t4", "t4", "x", schema="v2")
    w.finish(None, None, cut_short="timeout")
    ep4 = read_episode(tmp_path / "t4")
    assert ep4.blank_screenshot
    got = classify(rec(status="timeout", steps=0, blank_screenshot=True), ep4, "failure")
    assert got is not None and got.cls == "site_error"


# the record QA's run left for a website with nothing listening (the worker's words then, and now)
REFUSED_THEN = ("RuntimeError: browser failed to start or open http://127.0.0.1:8419/: RuntimeError: Navigation "
                "failed: net::ERR_CONNECTION_REFUSED")
REFUSED_NOW = "the site did not answer at http://127.0.0.1:8419/: net::ERR_CONNECTION_REFUSED"


@pytest.mark.parametrize("error", [REFUSED_THEN, REFUSED_NOW, "the site did not answer at https://x.test/: "
                                   "net::ERR_NAME_NOT_RESOLVED", "Navigation failed: net::ERR_SSL_PROTOCOL_ERROR",
                                   "Navigation failed: net::ERR_TIMED_OUT"])
def test_a_site_that_did_not_answer_its_page_load_is_the_site_s_though_the_harness_retried_it(tmp_path, error):
    """Recorded as infra (run again within --retries), but the evidence is the site's: a site error, not the
    harness's (QA: every attempt of a site refusing connections was a harness error)."""
    got = classify(rec(status="error", error_kind=FaultKind.INFRA, error=error, steps=0, agent_done=False,
                       blank_screenshot=True), None, "not_executable")
    assert got is not None and got.cls == "site_error" and "net::ERR_" in got.why


@pytest.mark.parametrize("error, kind", [
    ("Navigation failed: net::ERR_INTERNET_DISCONNECTED", FaultKind.INFRA),    # the machine's network, not the site
    ("Navigation failed: net::ERR_INSUFFICIENT_RESOURCES", FaultKind.INFRA),   # the browser's
    ("model endpoint: connection refused", FaultKind.ENDPOINT),                 # the model's server
    ("the browser crashed or closed during the episode", FaultKind.INFRA)])
def test_the_browser_s_the_machine_s_and_the_endpoint_s_network_errors_stay_the_harness_s(tmp_path, error, kind):
    got = classify(rec(status="error", error_kind=kind, error=error), None, "not_executable")
    assert got is not None and got.cls == "harness_error"


def test_model_error_names_the_call_kind_it_ended_on(tmp_path):
    ep = normal(tmp_path)
    got = classify(rec(status="error", error_kind=FaultKind.MODEL, model_fault="schema", error="reply out of schema"),
                   ep, "failure")
    assert got is not None and (got.cls, got.detail) == ("model_error", "schema")
    assert got.words == "model error (schema)"


def test_loop_is_the_same_action_on_the_same_page_three_times_in_a_row(tmp_path):
    same = (["<button id=\"next\"> Next -> CLICK"], "next", SHOP)
    ep = episode(tmp_path, [(["<a> Shop -> CLICK"], "", SHOP), same, same, same], answer="")
    assert loop_of(ep).startswith("<button")
    got = classify(rec(status="timeout", steps=4), ep, "failure")
    assert got is not None and got.cls == "loop"           # before the timeout: the loop used the time up
    # twice is no loop; three times on different pages is none either
    ep2 = episode(tmp_path, [same, same, (["SCROLL DOWN"], "", SHOP), same], name="t2")
    assert loop_of(ep2) == ""
    moved = [(same[0], "", f"{SHOP}?page={i}") for i in range(3)]
    assert loop_of(episode(tmp_path, moved, name="t3")) == ""


def test_timeout_and_the_step_budget(tmp_path):
    ep = normal(tmp_path, answer="", cut_short="timeout")
    assert classify(rec(status="timeout", agent_done=False), ep, "failure").cls == "timeout"  # type: ignore[union-attr]
    got = classify(rec(status="out_of_steps", agent_done=False, steps=2), ep, "failure")
    assert got is not None and got.cls == "out_of_steps"
    # an engine without the status yet: done, the agent never said so, the budget used up
    got = classify(rec(status="done", agent_done=False, steps=2), ep, "failure", max_steps=2)
    assert got is not None and got.cls == "out_of_steps"
    got = classify(rec(status="done", agent_done=False, steps=1), ep, "failure", max_steps=2)
    assert got is not None and got.cls == "gave_up"          # under the budget, no answer


def test_the_step_budget_is_the_records_own_and_run_json_only_for_an_older_record(tmp_path):
    """A task's budget is decided as it loads (its own max_steps, else the run's): its record carries it, and
    run.json's run-wide one reads only a record written before records did."""
    out = tmp_path / "run"
    for name in ("own", "older", "roomy"):
        normal(out, answer="", name=name)
    (out / "run.json").write_text(json.dumps({"config": {"max_steps": 10}}))
    lines = [rec(status="done", agent_done=False, steps=2, max_steps=2).to_json() | {"task_id": "own"},
             rec(status="done", agent_done=False, steps=2).to_json() | {"task_id": "older"},
             rec(status="done", agent_done=False, steps=2, max_steps=30).to_json() | {"task_id": "roomy"}]
    assert "max_steps" not in lines[1]                     # an older writer's line: no budget of its own
    (out / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = failed_as(out)
    assert got["own"] is not None and got["own"].cls == "out_of_steps" and "a budget of 2" in got["own"].why
    assert got["older"] is not None and got["older"].cls == "gave_up"      # 2 of run.json's 10: under the budget
    (out / "run.json").write_text(json.dumps({"config": {"max_steps": 2}}))
    got = failed_as(out)
    assert got["older"] is not None and got["older"].cls == "out_of_steps"
    assert got["roomy"] is not None and got["roomy"].cls == "gave_up"      # its own 30 wins over run.json's 2


def test_gave_up_without_an_answer_or_with_one_that_says_it_failed(tmp_path):
    assert classify(rec(answer=""), normal(tmp_path, answer=""), "failure").cls == "gave_up"  # type: ignore[union-attr]
    ep = normal(tmp_path, answer="I could not find the price on this site.", name="t2")
    got = classify(rec(answer=ep.answer), ep, "failure")
    assert got is not None and got.cls == "gave_up" and "could not" in got.why


def test_answered_wrong_is_an_answer_the_measure_calls_a_failure(tmp_path):
    ep = normal(tmp_path)
    got = classify(rec(answer=ep.answer), ep, "failure")
    assert got is not None and got.cls == "answered_wrong"


def test_an_episode_stopped_before_its_end_is_stopped_never_the_sites_whatever_its_page(tmp_path):
    """A run's stop (SIGTERM, Ctrl-C) or its user's kill before the first page: the writer's blank stand-in, no step;
    that is no site failing. A folder with no record (a run killed under it) is read as its folder says it ended."""
    w = TrajectoryWriter(tmp_path / "t1", "t1", "find the price")
    w.finish("", None, cut_short="killed")
    ep = read_episode(tmp_path / "t1")
    assert ep.blank_screenshot and ep.cut_short == "killed"
    for record in (rec(status="killed", error="interrupted", steps=0, agent_done=False, blank_screenshot=True),
                   rec(status="killed", error="requeued", steps=0, agent_done=False, blank_screenshot=True),
                   rec(status="killed", error="killed by its user", steps=0, agent_done=False), None):
        got = classify(record, ep, None)
        assert got is not None and got.cls == "stopped", (record, got)
        assert classify(record, ep, "failure").cls == "stopped"   # type: ignore[union-attr]
    assert CLASSES[0] == "stopped"   # the first rule


def test_a_task_still_to_run_has_no_class_however_its_folder_was_cut_short(tmp_path):
    out = tmp_path / "run"
    for tid in ("cut", "stopped"):
        w = TrajectoryWriter(out / tid, tid, "find the price")
        w.finish("", None, cut_short="killed")
    normal(out, answer="", name="slow")
    lines = [rec(status="killed", error="interrupted", steps=0, agent_done=False, blank_screenshot=True).to_json()
             | {"task_id": "stopped"}, rec(status="timeout", agent_done=False).to_json() | {"task_id": "slow"}]
    (out / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = failed_as(out)
    assert got["cut"] is None and got["stopped"] is None       # no record, or one it runs again after: pending
    assert got["slow"] is not None and got["slow"].cls == "timeout"
    data = json.loads(report_cli(out, "json"))["runs"][0]
    assert data["failures"] == {"timeout": 1}
    assert data["per_task"]["cut"]["failure"] is None and data["per_task"]["stopped"]["failure"] is None


def test_no_class_for_a_success_or_a_task_not_judged_yet(tmp_path):
    ep = normal(tmp_path)
    assert classify(rec(answer=ep.answer), ep, "success") is None
    assert classify(rec(answer=ep.answer), ep, None) is None
    assert classify(rec(status="blocked"), ep, None).cls == "bot_wall"   # type: ignore[union-attr]


@pytest.mark.parametrize("status", ["done", "timeout"])
def test_the_report_reads_the_records_the_folders_and_the_budget(tmp_path, status):
    out = tmp_path / "run"
    normal(out, answer="", name="a")
    normal(out, answer="$12", name="b")
    (out / "run.json").write_text(json.dumps({"config": {"max_steps": 2}}))
    lines = [rec(status=status, agent_done=False, steps=2).to_json() | {"task_id": "a"},
             rec(answer="$12", correct=True).to_json() | {"task_id": "b"}]
    (out / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert max_steps_of(out) == 2
    got = failed_as(out)
    assert got["b"] is None
    assert got["a"] is not None and got["a"].cls == ("out_of_steps" if status == "done" else "timeout")
    assert list(counted(got)) == [got["a"].cls]
    assert set(counted(got)) <= set(CLASSES)


def several_classes(out: Path) -> dict[str, str]:
    """A run folder whose failed episodes show five classes (and one success), success from `correct`; the class
    each task should get."""
    same = (["<a> Next -> CLICK"], "try again", SHOP)
    episode(out, [(["<a> Shop -> CLICK"], "open", SHOP)], answer="It costs $12.", name="ok")
    episode(out, [same, same, same], answer="", name="loopy")
    episode(out, [(["<a> Shop -> CLICK"], "open", SHOP)], answer="It costs $99.", name="wrong")
    episode(out, [(["<a> Shop -> CLICK"], "open", SHOP)], answer="I could not find the price.", name="quit")
    episode(out, [(["<a> Shop -> CLICK"], "open", SHOP)], answer=None, name="wall")
    lines = [("ok", True, rec(answer="It costs $12.")), ("loopy", False, rec(steps=3)),
             ("wrong", False, rec(answer="It costs $99.")), ("quit", False, rec(answer="I could not find the price.")),
             ("wall", False, rec(status="blocked", agent_done=False, error="CAPTCHA"))]
    (out / "results.jsonl").write_text("".join(json.dumps(r.to_json() | {"task_id": t, "correct": ok}) + "\n"
                                               for t, ok, r in lines))
    return {"loopy": "loop", "wrong": "answered_wrong", "quit": "gave_up", "wall": "bot_wall"}


def report_cli(out: Path, fmt: str) -> str:
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "250"}
    r = subprocess.run([sys.executable, "-m", "om2w_tui", "report", str(out), "--format", fmt], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_report_counts_each_failure_class_in_every_format(tmp_path):
    """`om2w-tui report` (issue 29 item 3): each class's count in table, md, csv and json, and each failed task's
    class where json lists the tasks, by the one rule set the site uses."""
    out = tmp_path / "run"
    want = several_classes(out)
    data = json.loads(report_cli(out, "json"))["runs"][0]
    assert data["failures"] == {"bot_wall": 1, "loop": 1, "gave_up": 1, "answered_wrong": 1}
    assert list(data["failures"]) == [c for c in CLASSES if c in data["failures"]]      # in the rules' order
    assert {t: (row["failure"] or {}).get("class") for t, row in data["per_task"].items()} == {**want, "ok": None}
    assert data["per_task"]["loopy"]["failure"]["detail"] == "<a> Next -> CLICK"
    md = report_cli(out, "md")
    assert "### why it failed" in md and "| loop | loop | 1 | loopy |" in md
    assert "| bot_wall | bot wall | 1 | wall |" in md
    rows = report_cli(out, "csv").splitlines()
    assert f"run,{out},failures,answered_wrong,tasks,1" in rows and f"run,{out},failures,gave_up,tasks,1" in rows
    table = report_cli(out, "table")
    assert "why it failed" in table and "answered_wrong" in table and "bot_wall" in table


def test_a_task_with_no_outcome_yet_has_no_class_whatever_its_steps_show_in_every_view(tmp_path):
    """QA: an unlabelled task (pending under the labels measure) whose history was four SCROLL DOWNs and then the
    right answer was counted a `loop` by `report`, the label screen's `f` and the web report, but not by the
    console's report screen. A `done` task with no outcome yet has no class in any of them; one its status says
    failed (a timeout) keeps its class before any verdict."""
    from om2w_tui.evaluation.label_session import LabelSession
    from om2w_tui.evaluation.labels import LabelFile
    from om2w_tui.frontends.console.report_data import compute

    out = tmp_path / "run"
    scroll = (["SCROLL DOWN"], "read on", SHOP)
    episode(out, [scroll, scroll, scroll, scroll], answer="It costs $12.", name="scrolled")
    episode(out, [(["<a> Shop -> CLICK"], "open", SHOP)], answer="It costs $99.", name="wrong")
    episode(out, [scroll, scroll, scroll], answer="", cut_short="timeout", name="slow")
    lines = [("scrolled", rec(steps=4, answer="It costs $12.")), ("wrong", rec(answer="It costs $99.")),
             ("slow", rec(status="timeout", agent_done=False, steps=3))]
    (out / "results.jsonl").write_text("".join(json.dumps(r.to_json() | {"task_id": t}) + "\n" for t, r in lines))
    alice = LabelFile.open(out, "alice")
    alice.set("wrong", "0")
    alice.save()
    assert loop_of(read_episode(out / "scrolled"))            # its steps do read as a loop
    data = json.loads(report_cli(out, "json"))["runs"][0]
    assert data["per_task"]["scrolled"]["outcome"] is None and data["per_task"]["scrolled"]["failure"] is None
    assert data["failures"] == {"loop": 1, "answered_wrong": 1}          # slow's loop (its status: timeout), wrong
    assert data["per_task"]["slow"]["failure"]["class"] == "loop"
    console = compute(out)
    assert sorted(f.task_id for f in console.failures) == ["slow", "wrong"]
    assert LabelSession(out, "bob").failures == {"slow": "loop", "wrong": "answered_wrong"}
