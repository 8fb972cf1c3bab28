"""The agent the seed runs, for real: Chromium, the offline sites on 127.0.0.1 and the oracle acting as a vision
model. Coordinates (a canvas target with no element index, found in the screenshot), the clipboard (a code only the
clipboard carries) and drag (a list reordered by pointer events) each have a task that cannot be done without them;
the instruction names the website; a task's own max_steps wins; every model call of either arm is a row."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from om2w_tui.offline import OfflineSuite, OracleServer

from .helpers import check_task_folder, cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
STUDIO = ["offline_studio_invite_17", "offline_studio_target_18", "offline_studio_board_19"]
CHROMIUM = os.environ.get("CHROME_PATH") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def oracle():
    """An oracle in this process, so the test can count the calls it served and read what it was sent."""
    with OfflineSuite() as suite, OracleServer(suite.tasks(), keep=True) as server:
        yield server


def _rows(folder):
    return [json.loads(x) for x in (folder / "rows" / "rows.jsonl").read_text().splitlines()]


def _user_text(row):
    content = row["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content if "text" in p)


def test_coordinates_clipboard_and_drag_on_a_viewport_of_our_choosing(tmp_path, oracle):
    out = tmp_path / "studio"
    before = oracle.calls
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--vllm", oracle.url,
            "--task-ids", ",".join(STUDIO), "--workers", "2", "--pace-cooldown", "0", "--record-rows",
            "--viewport", "1100x700", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    recs = {x["task_id"]: x for x in records(out)}
    assert set(recs) == set(STUDIO)
    for rec in recs.values():
        assert rec["status"] == "done" and rec["agent_done"] and rec["correct"], rec
    actions = {tid: check_task_folder(out / tid)["action_history"] for tid in STUDIO}
    # the clipboard: copy, then the page's Paste button reads what was copied (granted read and write)
    assert [a.split(" -> ")[0].split('id="')[1].split('"')[0] for a in actions[STUDIO[0]]] == \
        ["copy-code", "paste-code", "join-button"]
    # coordinates: a click on the 0-1000 grid, in the benchmark's line, landing on the dot on a 1100x700 viewport
    (click,) = actions[STUDIO[1]]
    assert re.fullmatch(r"CLICK at \(\d+, \d+\) of 1000", click), click
    # ... on a canvas that no element index reaches: the model could only click it where it saw it
    target_rows = _rows(out / STUDIO[1])
    state = _user_text(target_rows[0])
    assert "<canvas" not in state and "Click the red dot" in state
    # drag: element to element, recorded in the benchmark's style
    assert actions[STUDIO[2]][0].startswith("DRAG {\"from_index\": ") and "Save order -> CLICK" in actions[STUDIO[2]][1]
    # the instruction is the seed's: the task and the website it starts on
    assert f"The task starts on {recs[STUDIO[1]]['website']}" in state
    # every call the oracle served is a row
    assert sum(rec["rows"] for rec in recs.values()) == oracle.calls - before
    manifest = json.loads((out / "run.json").read_text())["config"]
    assert manifest["viewport"] == "1100x700" and manifest["coordinates"] == "normalized"
    assert "{website}" in manifest["instruction_template"] and "HeadlessChrome" not in manifest["user_agent"]


def test_the_agent_arm_writes_a_row_for_every_call_it_made(tmp_path, oracle):
    """... and --seed and --top-p reach every call of it: the planner's (a bare client) and its specialists'
    (browser-use's ChatOpenAI)."""
    out = tmp_path / "agent-rows"
    before, sent_before = oracle.calls, len(oracle.bodies)
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--vllm", oracle.url, "--arm", "agent",
            "--adapters", "rest", "--task-ids", "offline_studio_board_19,offline_wiki_port_06", "--workers", "2",
            "--pace-cooldown", "0", "--record-rows", "--seed", "1234", "--top-p", "0.9", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    recs = records(out)
    assert len(recs) == 2 and all(x["correct"] for x in recs), recs
    assert sum(x["rows"] for x in recs) == oracle.calls - before
    sent = [json.loads(b) for b in oracle.bodies[sent_before:]]
    assert {b["model"] for b in sent} >= {"oracle", "rest"}   # the planner's calls and a specialist's
    assert all((b.get("seed"), b.get("top_p")) == (1234, 0.9) for b in sent), [(b["model"], b.keys()) for b in sent]
    config = json.loads((out / "run.json").read_text())["config"]
    assert (config["seed"], config["top_p"]) == (1234, 0.9)
    for rec in recs:
        rows = _rows(out / rec["task_id"])
        assert [r["op"] for r in rows if r["segment"] == 0] == ["plan:delegate", "plan:answer"]
        assert {r["segment"] for r in rows} == {0, 1} and rows[-1]["family"] == "Planning"


def test_a_tasks_own_max_steps_wins_over_the_flag(tmp_path, oracle):
    from om2w_tui.offline import TASKS_TEMPLATE

    task = next(t for t in json.loads(TASKS_TEMPLATE.read_text()) if t["task_id"] == "offline_longpage_automated_14")
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{**task, "max_steps": 2}]))
    out = tmp_path / "budget"
    r = cli("run", "--no-ui", "--bench", "offline", "--tasks", str(tasks), "--model", "oracle-nodone-unguided",
            "--vllm", oracle.url, "--max-steps", "10", "--record-rows", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert rec["status"] == "out_of_steps" and rec["agent_done"] is False and rec["answer"] == ""
    assert rec["steps"] == 2 == rec["max_steps"]   # the task's budget, and no step past it
    maxima = {m for row in _rows(out / task["task_id"]) for m in re.findall(r"maximum:\s*(\d+)", _user_text(row))}
    assert maxima == {"2"}


async def test_the_browser_is_pinned_to_the_settings_given(tmp_path):
    from om2w_tui.episode.browser import make_session, start_session

    settings = {"viewport": "1024x640", "user_agent": "auto", "locale": "de-DE", "timezone": "Asia/Tokyo"}
    tz_before = os.environ.get("TZ")
    with OfflineSuite() as suite:
        session = make_session(CHROMIUM, tmp_path / "dl", tmp_path / "profile", settings)
        try:
            await start_session(session, settings)
            await session.navigate_to(suite.base_urls["studio"] + "/")
            page = await session.get_current_page()
            seen = json.loads(await page.evaluate(
                "() => JSON.stringify([navigator.userAgent, navigator.language, "
                "Intl.DateTimeFormat().resolvedOptions().timeZone, innerWidth, innerHeight])"))
            granted = json.loads(await page.evaluate(
                "() => navigator.permissions.query({name: 'clipboard-read'}).then((s) => JSON.stringify(s.state))"))
        finally:
            await session.kill()
    ua, language, timezone, width, height = seen
    assert "HeadlessChrome" not in ua and re.search(r"Chrome/\d+\.0\.0\.0 Safari", ua), ua
    assert (language, timezone, width, height) == ("de-DE", "Asia/Tokyo", 1024, 640)
    assert granted == "granted"
    assert os.environ.get("TZ") == tz_before     # the time zone is the browser's, not this process's


def test_without_a_terminal_run_goes_headless_and_says_so_first(tmp_path):
    """nohup, Slurm, cron: no terminal, so no console; the run still runs, and its first line says why it is plain."""
    out = tmp_path / "batch"
    r = cli("run", "--bench", "offline", "--model", "oracle", "--task-ids", "offline_studio_target_18",
            "--pace-cooldown", "0", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[0] == "om2w-tui: no terminal, so running headless (as with --no-ui)"
    (rec,) = records(out)
    assert rec["correct"]
    bare = cli()
    assert bare.returncode == 2 and "the console needs a terminal" in bare.stderr


def test_pixel_coordinates_land_too(tmp_path):
    """--coordinates pixels: the model is told its coordinates are the screenshot's pixels, and a click there hits."""
    out = tmp_path / "pixels"
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--task-ids", "offline_studio_target_18",
            "--coordinates", "pixels", "--viewport", "900x700", "--record-rows", "--pace-cooldown", "0",
            "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = records(out)
    assert rec["correct"], rec
    system = _rows(out / "offline_studio_target_18")[0]["messages"][0]["content"]
    system = system if isinstance(system, str) else " ".join(p.get("text", "") for p in system)
    assert "are pixels of the screenshot" in system and "0-1000" not in system
    actions = json.loads((out / "offline_studio_target_18" / "result.json").read_text())["action_history"]
    clicks = [a for a in actions if a.startswith("CLICK at (")]
    assert clicks and all(a.endswith(" px") for a in clicks), actions     # said in the mode the run used
