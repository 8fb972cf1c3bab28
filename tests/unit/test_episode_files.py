"""Reading an episode folder for the episode view: both result.json layouts, screenshots matched to steps."""

from __future__ import annotations

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
