"""Reading an episode folder for the episode view: both result.json layouts, screenshots matched to steps, each
step's URL."""

from __future__ import annotations

import json
from pathlib import Path

from om2w_tui.benchmarks.episode_folder import episode_steps, read_episode
from tests.ui import recorded as R


def shots(n: int) -> list[Path]:
    return [Path(f"{i}_full_screenshot.png") for i in range(n)]


def test_v1_steps_are_the_runs_of_actions_sharing_a_thought():
    result = {"final_result_response": "42", "action_history": ["TYPE: kettle", "CLICK search", "CLICK result"],
              "thoughts": ["search for it", "search for it", "open the result"]}
    answer, steps = episode_steps(result, shots(4))
    assert answer == "42"
    assert [(s.actions, s.thought) for s in steps] == [(("TYPE: kettle", "CLICK search"), "search for it"),
                                                      (("CLICK result",), "open the result")]


def test_v2_names_each_actions_screenshot():
    result = {"schema_version": "online-mind2web-v2", "agent_final_answer": "ok", "action_history": [
        {"step": 0, "action": "TYPE: a", "thought": "t0", "screenshot": "0_full_screenshot.png", "url": "u0"},
        {"step": 1, "action": "CLICK b", "thought": "t0", "screenshot": "0_full_screenshot.png", "url": "u0"},
        {"step": 2, "action": "SCROLL DOWN", "thought": "t2", "screenshot": "2_full_screenshot.png", "url": "u2"},
        {"step": 3, "action": "TASK_COMPLETE -> ANSWER: ok", "thought": None, "screenshot": "3_full_screenshot.png"}]}
    answer, steps = episode_steps(result, shots(4))
    assert answer == "ok"
    assert [s.actions for s in steps] == [("TYPE: a", "CLICK b"), (), ("SCROLL DOWN",), ()]
    assert steps[2].url == "u2"


def test_a_folder_is_read_whole(tmp_path):
    folder = R.write_episode(tmp_path)
    ep = read_episode(folder)
    assert [p.name for p in ep.shots] == [f"{i}_full_screenshot.png" for i in range(4)]
    assert dict(ep.files)["trajectory/"] == -4 and "result.json" in dict(ep.files) and not ep.problem
    assert read_episode(tmp_path / "nothing").problem.startswith("no folder yet")


def test_v2_as_written_now_one_entry_a_step_and_a_closing_entry_that_is_no_action():
    result = {"schema_version": "online-mind2web-v2", "agent_final_answer": "", "action_history": [
        {"step": 0, "action": "TYPE: a ; CLICK b", "thought": "t0", "screenshot": "0_full_screenshot.png", "url": "u0"},
        {"step": 1, "action": "TASK_INCOMPLETE -> STOPPED: timeout", "thought": None,
         "screenshot": "1_full_screenshot.png", "url": "u0"}]}
    answer, steps = episode_steps(result, shots(2))
    assert [s.actions for s in steps] == [("TYPE: a", "CLICK b"), ()]


def test_a_v1_folder_written_before_action_urls_takes_each_steps_url_from_its_browser_use_histories(tmp_path):
    """One URL per history step that has a screenshot, in order over history_0, history_1 ... (a browser-use
    history holds 20-digit ids: read all the same); histories that do not fit the screenshots give no URL."""
    folder = tmp_path / "t"
    (folder / "trajectory").mkdir(parents=True)
    for i in range(4):                     # three steps, then the final state
        (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(b"x")
    (folder / "result.json").write_text(json.dumps({
        "task_id": "t", "final_result_response": "ok", "action_history": ["CLICK a", "TYPE: b", "CLICK c"],
        "thoughts": ["t0", "t1", "t1"], "action_steps": [0, 1, 2]}))

    def item(url: str, shot: bool) -> dict:
        return {"state": {"url": url, "screenshot_path": f"/tmp/x/{url}.png" if shot else None,
                          "tabs": [{"target_id": 15424845540636326248}]}}

    (folder / "history_0.json").write_text(json.dumps({"history": [item("u0", True), item("gone", False)]}))
    (folder / "history_1.json").write_text(json.dumps({"history": [item("u1", True), item("u2", True)]}))
    assert [s.url for s in read_episode(folder).steps] == ["u0", "u1", "u2", ""]
    (folder / "history_1.json").write_text(json.dumps({"history": [item("u1", True)]}))   # two shots short
    assert [s.url for s in read_episode(folder).steps] == ["", "", "", ""]
    (folder / "history_1.json").write_text("{torn")
    assert [s.url for s in read_episode(folder).steps] == ["", "", "", ""]
