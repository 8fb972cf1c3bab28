"""Task health across runs (evaluation/health.py): every attempt of every task over two runs of two arms and how each
ended, read from run folders written by the project's own writers, and the tasks no run solved that met the site
failing (a bot wall, an HTTP error page, the site not answering) as candidates for label 2."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.cli.label import check_filter
from om2w_tui.evaluation.health import HealthInputError, health, run_folders, suspects
from om2w_tui.evaluation.label_session import FILTER_WORDS, LabelSession
from tests.unit.helpers import judge_file, make_campaign, make_run, record, web_png


def earlier_attempt(out: Path, tid: str, n: int, url: str) -> None:
    """`<task>/attempts/<n>/` as an attempt left it when the next began: v2, its last page `url`."""
    w = TrajectoryWriter(out / tid / "attempts" / str(n), tid, "find the price", schema="v2")
    w.add_plain_step(["NAVIGATE -> x"], "open the site", png=web_png(10, (64, 48)), url=url)
    w.finish("", web_png(200, (64, 48)), cut_short="timeout")


def two_arms(root: Path) -> tuple[Path, Path]:
    """Two runs of one task set, arms base and agent, each judged (its own measure)."""
    base = make_run(root / "base", [
        record("ok", answer="It costs $12."),
        record("wall", "blocked", error="CAPTCHA", agent_done=False),
        record("down", "timeout", attempt=1, finished_at=1.0, agent_done=False),
        record("down", "error", attempt=2, finished_at=2.0, error="page.goto: net::ERR_NAME_NOT_RESOLVED at x",
               error_kind="agent", agent_done=False),
        record("later", "blocked", error="CAPTCHA", agent_done=False),
        record("slow", "timeout", agent_done=False),
    ], arm="base")
    earlier_attempt(base, "down", 1, "chrome-error://chromewebdata/")
    judge_file(base, {"ok": 1})
    agent = make_run(root / "agent", [
        record("ok", answer="It costs $12.", arm="agent"),
        record("http", "error", error="HTTP 503 Service Unavailable", error_kind="agent", agent_done=False,
               arm="agent"),
        record("later", answer="found it", arm="agent"),
        record("wall", "blocked", error="CAPTCHA", agent_done=False, arm="agent"),
    ], arm="agent")
    judge_file(agent, {"ok": 1, "later": 1})
    return base, agent


def test_every_attempt_over_runs_and_arms_and_how_it_ended(tmp_path):
    base, agent = two_arms(tmp_path)
    h = health([base, agent])
    assert [(r.arm, r.tasks, r.attempts) for r in h.runs] == [("base", 5, 6), ("agent", 4, 4)]
    assert h.by_arm
    tasks = {t.task_id: t for t in h.tasks}
    assert set(tasks) == {"ok", "wall", "down", "later", "slow", "http"}
    assert tasks["ok"].endings() == {"success": 2} and tasks["ok"].solved
    assert tasks["wall"].arms() == {"base": {"bot_wall": 1}, "agent": {"bot_wall": 1}}
    # the earlier attempt is read from attempts/1 (the browser's error page: the site did not answer), the latest
    # from its record (a network failure)
    down = {a.attempt: a for a in tasks["down"].attempts}
    assert down[1].ending == "site_down" and "chrome-error" in down[1].why and not down[1].latest
    assert down[2].ending == "site_down" and "ERR_NAME_NOT_RESOLVED" in down[2].why and down[2].latest
    assert tasks["http"].endings() == {"site_error": 1}
    assert tasks["later"].arms() == {"base": {"bot_wall": 1}, "agent": {"success": 1}}
    assert tasks["slow"].endings() == {"timeout": 1}


def test_candidates_for_label_2_are_the_unsolved_tasks_that_met_the_site_failing(tmp_path):
    base, agent = two_arms(tmp_path)
    h = health([base, agent])
    # `later` met a bot wall in one arm but the other solved it; `slow` only ran out of time: neither is a candidate
    assert [t.task_id for t in h.candidates] == ["down", "http", "wall"]
    wall = next(t for t in h.candidates if t.task_id == "wall")
    assert [(a.out, a.attempt, a.ending) for a in wall.evidence] == [(str(base), 1, "bot_wall"),
                                                                       (str(agent), 1, "bot_wall")]
    data = json.loads(json.dumps(h.to_json()))
    assert [c["task_id"] for c in data["candidates"]] == ["down", "http", "wall"]
    assert suspects(base) == ["down", "later", "wall"]   # one run alone: `later` was never solved there


def test_episodes_a_stopped_or_killed_run_cut_short_are_stopped_never_a_candidate(tmp_path):
    """A run stopped (SIGTERM) before two episodes got a page records them killed, interrupted, 0 steps, a blank
    stand-in; a run SIGKILLed leaves a task folder cut short and no record: neither is the site's failing."""
    out = tmp_path / "run"
    for tid in ("stopped", "cut"):
        w = TrajectoryWriter(out / tid, tid, "find the price")
        w.finish("", None, cut_short="killed")
    make_run(out, [record("ok", answer="It costs $12."),
                   record("stopped", "killed", error="interrupted", steps=0, blank_screenshot=True,
                          agent_done=False)])
    judge_file(out, {"ok": 1})
    h = health([out])
    endings = {t.task_id: [(a.ending, a.latest) for a in t.attempts] for t in h.tasks}
    assert endings == {"ok": [("success", True)], "stopped": [("stopped", True)], "cut": [("stopped", True)]}
    cut = next(t for t in h.tasks if t.task_id == "cut").attempts[0]
    assert "no record" in cut.why and "killed" in cut.why
    assert h.candidates == () and suspects(out) == []


def test_an_attempt_cut_with_its_console_is_listed_stopped_and_every_record_reads_its_own_files(tmp_path):
    """Attempt 1 ended in a harness error, attempt 2 was cut with its console (kill -9: its files kept under its own
    number, no record), attempt 3 was the resumed run's: three attempts, the second `stopped`, each read from its own
    folder (attempt 1's last page is the site's error page, attempt 3's is the answer)."""
    out = tmp_path / "run"
    tid = "t"
    for n, url in ((1, "chrome-error://chromewebdata/"), (2, "https://shop/")):
        earlier_attempt(out, tid, n, url)
        (out / tid / "attempts" / str(n) / ".attempt").write_text(f"{n}\n")
    w = TrajectoryWriter(out / tid, tid, "find the price", schema="v2")
    w.add_plain_step(["CLICK price"], "read it", png=web_png(10, (64, 48)), url="https://shop/price")
    w.finish("It costs $12.", web_png(200, (64, 48)))
    (out / tid / ".attempt").write_text("3\n")
    make_run(out, [record(tid, "error", attempt=1, finished_at=1.0, error="page.goto: net::ERR_CONNECTION_REFUSED",
                          error_kind="infra", agent_done=False),
                   record(tid, answer="It costs $12.", attempt=3, finished_at=3.0)])
    judge_file(out, {tid: 1})
    (task,) = health([out]).tasks
    assert [(a.attempt, a.ending, a.latest) for a in task.attempts] == [
        (1, "site_down", False), (2, "stopped", False), (3, "success", True)]
    assert "no record" in task.attempts[1].why and "run again" in task.attempts[1].why
    # before the resume: the cut attempt is the task's folder's, its record's attempt 1 read from attempts/1
    cut = tmp_path / "cut"
    earlier_attempt(cut, tid, 1, "chrome-error://chromewebdata/")
    (cut / tid / "attempts" / "1" / ".attempt").write_text("1\n")
    w = TrajectoryWriter(cut / tid, tid, "find the price", schema="v2")
    w.add_plain_step(["CLICK price"], "read it", png=web_png(10, (64, 48)), url="https://shop/price")
    (cut / tid / ".attempt").write_text("2\n")
    make_run(cut, [record(tid, "error", attempt=1, finished_at=1.0, error="page.goto: net::ERR_CONNECTION_REFUSED",
                          error_kind="infra", agent_done=False)])
    (task,) = health([cut]).tasks
    assert [(a.attempt, a.ending) for a in task.attempts] == [(1, "site_down"), (2, "stopped")]
    assert "still running" in task.attempts[1].why


def test_a_folder_of_runs_is_its_runs_and_anything_else_is_refused_by_name(tmp_path):
    base, agent = two_arms(tmp_path)
    assert run_folders([tmp_path]) == [agent, base]
    (tmp_path / "empty").mkdir()
    with pytest.raises(HealthInputError, match="empty: not a run"):
        run_folders([base, tmp_path / "empty"])
    with pytest.raises(HealthInputError, match="nowhere: no such folder"):
        health([tmp_path / "nowhere"])


def health_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "om2w_tui", "tasks", "health", *args], capture_output=True,
                          text=True, timeout=120)


def test_tasks_health_on_two_runs_as_text_and_json(tmp_path):
    base, agent = two_arms(tmp_path)
    text = health_cli(str(base), str(agent))
    assert text.returncode == 0, text.stderr
    assert "candidates for label 2 (not executable): 3 tasks" in text.stdout
    assert f"{base} attempt 1 (base): bot wall" in text.stdout and "site error page 1" in text.stdout
    got = health_cli(str(base), str(agent), "--format", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert [r["arm"] for r in data["runs"]] == ["base", "agent"]
    assert [c["task_id"] for c in data["candidates"]] == ["down", "http", "wall"]
    assert {t["task_id"]: t["arms"] for t in data["tasks"]}["later"] == {"base": {"bot_wall": 1},
                                                                         "agent": {"success": 1}}


@pytest.mark.parametrize("what", ["missing", "empty", "file"])
def test_tasks_health_refuses_what_is_not_a_run_naming_it(tmp_path, what):
    base, _ = two_arms(tmp_path / "runs")
    bad = tmp_path / what
    if what == "empty":
        bad.mkdir()
    elif what == "file":
        bad.write_text("x")
    got = health_cli(str(base), str(bad))
    assert got.returncode == 2 and got.stdout == ""
    assert f"om2w-tui tasks health: {bad}: " in got.stderr


def test_the_label_sessions_suspect_filter_walks_the_candidates(tmp_path):
    """`label --filter suspect`: the run's tasks not solved that met the site failing, with their count among the
    filters the label screen offers."""
    base, _ = two_arms(tmp_path)
    s = LabelSession(base, "alice", flt="suspect")
    assert s.view == ["down", "later", "wall"]
    assert ("suspect", FILTER_WORDS["suspect"], 3) in s.filters()
    assert check_filter("suspect") == "suspect"


def test_an_error_page_read_on_the_last_page_is_a_site_error_and_a_browser_error_page_the_site_down(tmp_path):
    """The two site endings apart: the site answered with an error page (HTTP status on the page), or did not answer
    (the browser's own error page), each read from the attempt's trajectory."""
    from om2w_tui.benchmarks.episode_folder import read_episode
    from om2w_tui.engine.results import EpisodeRecord
    from om2w_tui.evaluation.health import ending_of

    for name, thought, url in (("page", "The page shows 503 Service Unavailable.", "https://x.test/"),
                               ("gone", "nothing loaded", "chrome-error://chromewebdata/")):
        w = TrajectoryWriter(tmp_path / name, name, "find the price", schema="v2")
        w.add_plain_step(["NAVIGATE -> x"], thought, png=web_png(10, (64, 48)), url=url)
        w.finish("", web_png(200, (64, 48)), cut_short="timeout")
    rec = EpisodeRecord(task_id="t", status="timeout", steps=1)
    assert ending_of(rec, read_episode(tmp_path / "page"), "failure")[0] == "site_error"
    assert ending_of(rec, read_episode(tmp_path / "gone"), "failure")[0] == "site_down"


def test_the_page_the_episode_ended_on_is_the_evidence_its_http_status_first_then_its_title_then_the_thought(
        tmp_path):
    """QA: a 503 page was no site error unless the agent's thought said so. The worker records the page it ended on
    (`last_page`: URL, title, HTTP status); its status is read first, then its title, the thought last."""
    from om2w_tui.benchmarks.episode_folder import read_episode
    from om2w_tui.engine.results import EpisodeRecord
    from om2w_tui.evaluation.health import ending_of

    silent = "I could not find a price."
    cases = {   # name: (the last page as recorded, the last thought) -> (ending, why)
        "status": ({"url": "http://s.test/", "title": "Back soon", "status": 503}, silent,
                   ("site_error", "the last page answered HTTP 503 (http://s.test/)")),
        "title": ({"url": "http://s.test/", "title": "404 Not Found", "status": 200}, silent,
                  ("site_error", "the last page's title reads an error page: 404 Not Found")),
        "thought": ({"url": "http://s.test/", "title": "Lamps", "status": 200}, "It says 503 Service Unavailable.",
                    ("site_error", "the last step's thought reads an error page: It says 503 Service Unavailable.")),
        "browser": ({"url": "chrome-error://chromewebdata/", "title": "s.test"}, "It says 503 Service Unavailable.",
                    ("site_down", "the last page is the browser's error page (chrome-error://chromewebdata/)")),
        "fine": ({"url": "http://s.test/", "title": "Lamps", "status": 200}, silent, ("done", "gave up")),
        "unrecorded": (None, silent, ("done", "gave up")),   # a folder written before `last_page`: nothing to read
    }
    rec = EpisodeRecord(task_id="t", status="done", steps=1, agent_done=True, answer=silent)
    for name, (page, thought, want) in cases.items():
        w = TrajectoryWriter(tmp_path / name, name, "find the price")   # v1: its steps keep no URL
        w.add_plain_step(["NAVIGATE -> x"], thought, png=web_png(10, (64, 48)), url="http://s.test/")
        w.finish(silent, web_png(200, (64, 48)), last_page=page)
        ep = read_episode(tmp_path / name)
        assert (ep.last_page.to_json() if ep.last_page else None) == page, name
        assert ending_of(rec, ep, "failure") == want, name


def test_a_site_refusing_connections_is_site_down_in_every_arm_and_a_candidate(tmp_path):
    """QA's run: a website with nothing listening, two arms, each attempt recorded as infra (retried) with the
    worker's words of the time: every attempt was `harness error` and no candidate. Now each is `site down`."""
    error = ("RuntimeError: browser failed to start or open http://127.0.0.1:8419/: RuntimeError: Navigation "
             "failed: net::ERR_CONNECTION_REFUSED")
    runs = [make_run(tmp_path / arm, [record("down_01", "error", error=error, error_kind="infra", steps=0,
                                             agent_done=False, attempt=n, finished_at=float(n), arm=arm)
                                      for n in (1, 2)], arm=arm) for arm in ("base", "weak")]
    h = health(runs)
    (down,) = h.tasks
    assert down.arms() == {"base": {"site_down": 2}, "weak": {"site_down": 2}}
    assert [t.task_id for t in h.candidates] == ["down_01"] and len(down.evidence) == 4


def test_each_arm_s_row_has_its_own_numbers_and_the_task_its_totals_once_in_every_format(tmp_path):
    """QA: the task's attempts (all arms) and its `solved` were repeated on each arm's row, beside that arm's own
    endings: `solved yes` on the row of the arm that failed, attempts that did not add up."""
    from om2w_tui.evaluation.health_text import sections, to_csv, to_markdown

    base, agent = two_arms(tmp_path)
    h = health([base, agent])
    _, header, rows = next(s for s in sections(h) if s[0] == "tasks")
    assert header == ["task", "site", "arm", "attempts", "solved", "how they ended"]
    at = next(i for i, r in enumerate(rows) if r[0] == "later")
    assert rows[at:at + 3] == [["later", rows[at][1], "all arms", "2", "yes", "success 1, bot wall 1"],
                               ["", "", "base", "1", "no", "bot wall 1"],
                               ["", "", "agent", "1", "yes", "success 1"]]
    down = next(i for i, r in enumerate(rows) if r[0] == "down")   # one arm only: its two attempts, its row
    assert rows[down + 1][2:] == ["base", "2", "no", "site down 2"] and rows[down + 2][0] != ""
    assert "|  |  | base | 1 | no | bot wall 1 |" in to_markdown(h)
    later = [r for r in csv.DictReader(io.StringIO(to_csv(h))) if r["task_id"] == "later"]
    assert {(r["arm"], r["solved"], r["arm_solved"]) for r in later} == {("base", "True", "False"),
                                                                         ("agent", "True", "True")}
    per_arm = {t["task_id"]: t["per_arm"] for t in h.to_json()["tasks"]}["later"]
    assert per_arm == [{"arm": "base", "attempts": 1, "solved": False, "endings": {"bot_wall": 1}},
                       {"arm": "agent", "attempts": 1, "solved": True, "endings": {"success": 1}}]


def test_a_folder_that_holds_campaigns_is_read_as_their_lanes(tmp_path):
    """QA: `tasks health runs/` over a folder of campaigns exited 2 with "not a run"."""
    make_campaign(tmp_path / "runs" / "c1")
    make_campaign(tmp_path / "runs" / "c2")
    solo = make_run(tmp_path / "runs" / "solo", [record("t0", correct=True)], arm="solo")   # a run beside them
    h = health([tmp_path / "runs"])
    assert sorted(r.lane for r in h.runs if "c1" in r.out) == ["agent r1", "agent r2", "base r1", "base r2"]
    assert len(h.runs) == 9 and [r.out for r in h.runs if not r.lane] == [str(solo)]
    got = health_cli(str(tmp_path / "runs"), "--format", "json")
    assert got.returncode == 0, got.stderr
    assert len(json.loads(got.stdout)["runs"]) == 9
    (tmp_path / "nothing").mkdir()
    refused = health_cli(str(tmp_path / "nothing"))
    assert refused.returncode == 2 and "a folder that holds runs or campaigns" in refused.stderr
