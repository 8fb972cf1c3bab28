"""The evaluator-faithful reader: folders built by hand, one difference each, against what the official
Online-Mind2Web evaluator (`src/run.py`) would do with them."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from om2w_tui.benchmarks.conformance import check_run, load_episode, read_run, task_dirs
from om2w_tui.cli.main import main as cli_main

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16


def make_task(out: Path, tid: str, *, shots: int = 2, actions: list[str] | None = None, **overrides) -> Path:
    folder = out / tid
    (folder / "trajectory").mkdir(parents=True)
    result = {"task_id": tid, "task": f"Do the thing {tid}", "final_result_response": "the answer",
              "action_history": ["<a id=\"x\"> X -> CLICK"] if actions is None else actions,
              "thoughts": ["because"], **overrides}
    result = {k: v for k, v in result.items() if v is not ...}
    (folder / "result.json").write_text(json.dumps(result))
    for i in range(shots):
        (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(PNG)
    return folder


def make_v2(out: Path, tid: str, steps: int = 2, final: bool = True, **overrides) -> Path:
    folder = out / tid
    (folder / "trajectory").mkdir(parents=True)
    history = []
    for i in range(steps):
        name = f"{i:04d}.png"
        (folder / "trajectory" / name).write_bytes(PNG)
        action = "TASK_COMPLETE -> ANSWER: 42" if final and i == steps - 1 else f"button -> CLICK {i}"
        history.append({"step": i, "screenshot": name, "url": "https://x.test/", "action": action,
                        "action_status": None, "thought": f"t{i}"})
    result = {"schema_version": "online-mind2web-v2", "task": "Find 42", "task_id": tid,
              "agent_final_answer": "42", "reference_length": 3, "action_history": history, **overrides}
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def official_order(folder: Path) -> list[str]:
    """The evaluator's own line, verbatim in effect: sorted by the first integer of each name."""
    return sorted(os.listdir(folder / "trajectory"), key=lambda x: int(re.findall(r"\d+", x)[0]))


def test_a_run_as_we_write_it_has_no_problem_and_files_beside_the_tasks_are_fine(tmp_path):
    make_task(tmp_path, "t1")
    make_task(tmp_path, "t2", shots=12)
    (tmp_path / "results.jsonl").write_text("{}\n")
    (tmp_path / "webjudge_o4-mini_score_threshold_3_auto_eval_results.json").write_text("")
    assert check_run(tmp_path) == []
    run = read_run(tmp_path)
    assert sorted(run.episodes) == ["t1", "t2"] == task_dirs(tmp_path)
    ep = run.episodes["t2"]
    assert [p.name for p in ep.screenshots] == official_order(tmp_path / "t2")
    assert ep.screenshots[-1].name == "11_full_screenshot.png"            # numeric order, not 1, 10, 11, 2
    assert (ep.task, ep.final_result_response, ep.schema, ep.steps) == ("Do the thing t2", "the answer", "v1", 1)


def test_an_empty_folder_divides_by_zero(tmp_path):
    assert any("no task folders" in p for p in check_run(tmp_path))
    assert check_run(tmp_path / "missing") == [f"{tmp_path / 'missing'}: not a folder"]


def test_a_folder_that_is_not_a_task_is_a_problem(tmp_path):
    make_task(tmp_path, "t1")
    (tmp_path / "logs").mkdir()
    problems = check_run(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("logs: no result.json")
    assert "logs" not in read_run(tmp_path).episodes


def test_a_hidden_folder_is_still_a_task_to_the_evaluator(tmp_path):
    make_task(tmp_path, "t1")
    make_task(tmp_path, ".cache")
    problems = check_run(tmp_path)
    assert ".cache" in task_dirs(tmp_path)
    assert any(p.startswith(".cache: a hidden folder") for p in problems)


def test_a_screenshot_without_a_digit_crashes_the_evaluator(tmp_path):
    folder = make_task(tmp_path, "t1")
    (folder / "trajectory" / "final.png").write_bytes(PNG)
    with pytest.raises(IndexError):
        official_order(folder)                 # what the evaluator would do
    problems: list[str] = []
    assert load_episode(folder, problems) is None
    assert any("final.png has no digit" in p for p in problems)


def test_duplicate_indices_make_the_order_undefined(tmp_path):
    folder = make_task(tmp_path, "t1")
    (folder / "trajectory" / "1_copy.png").write_bytes(PNG)
    assert any("share the index 1" in p for p in check_run(tmp_path))


def test_a_stray_file_in_the_trajectory_is_taken_as_a_screenshot(tmp_path):
    folder = make_task(tmp_path, "t1")
    (folder / "trajectory" / "2_notes.txt").write_text("not a picture")
    (folder / "trajectory" / ".0_full_screenshot.png.ab12.tmp").write_bytes(b"\x89PN")   # a torn atomic write
    problems = check_run(tmp_path)
    assert any("2_notes.txt is not an image" in p for p in problems)
    assert any(".0_full_screenshot.png.ab12.tmp" in p for p in problems)


def test_a_jpeg_screenshot_is_read_right(tmp_path):
    folder = make_task(tmp_path, "t1")
    (folder / "trajectory" / "2_full_screenshot.jpg").write_bytes(JPEG)
    assert check_run(tmp_path) == []


def test_an_empty_trajectory_is_a_problem(tmp_path):
    make_task(tmp_path, "t1", shots=0)
    problems = check_run(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("t1: trajectory/ is empty")


def test_keys_the_evaluator_never_reads_are_notes_not_problems(tmp_path):
    make_task(tmp_path, "t1", task_id=...)
    folder = make_v2(tmp_path, "v")
    res = json.loads((folder / "result.json").read_text())
    del res["task_id"]
    del res["action_history"][0]["thought"]
    (folder / "result.json").write_text(json.dumps(res))
    run = read_run(tmp_path)
    assert run.problems == []
    assert any(n.startswith("t1: result.json has no `task_id`") for n in run.notes)
    assert any(n.startswith("v: step 0 has no `thought`") for n in run.notes)


def test_missing_files_and_keys(tmp_path):
    make_task(tmp_path, "no_thoughts", thoughts=...)
    make_task(tmp_path, "no_task", task=...)
    folder = make_task(tmp_path, "no_traj")
    for p in (folder / "trajectory").iterdir():
        p.unlink()
    (folder / "trajectory").rmdir()
    (make_task(tmp_path, "bad_json") / "result.json").write_text("{not json")
    problems = check_run(tmp_path)
    assert any(p.startswith("no_thoughts: result.json has no `thoughts`") for p in problems)
    assert any(p.startswith("no_task: result.json has no `task`") for p in problems)
    assert any(p.startswith("no_traj: no trajectory/ folder") for p in problems)
    assert any(p.startswith("bad_json: result.json:1:2: invalid JSON") for p in problems)
    run = read_run(tmp_path)
    assert sorted(run.episodes) == ["no_thoughts"]       # the evaluator tolerates a missing thoughts, not the rest


def test_empty_task_text_and_a_task_id_that_is_not_the_folder(tmp_path):
    make_task(tmp_path, "t1", task="  ")
    make_task(tmp_path, "t2", task_id="other")
    problems = check_run(tmp_path)
    assert any(p.startswith("t1: the task text (`task`) is empty") for p in problems)
    assert any(p.startswith("t2: result.json's task_id 'other' is not the folder's name") for p in problems)


@pytest.mark.parametrize("action", ["done", "DONE {\"text\": \"42\", \"success\": true}", "done: the answer is 42"])
def test_done_is_not_an_action(tmp_path, action):
    make_task(tmp_path, "t1", actions=["NAVIGATE -> https://x.test/", action])
    problems = check_run(tmp_path)
    assert len(problems) == 1 and "action 1 is the agent's `done`" in problems[0]


def test_a_click_on_a_button_named_done_is_a_factual_action(tmp_path):
    make_task(tmp_path, "t1", actions=['<button id="done"> Done -> CLICK', "SCROLL DOWN"])
    assert check_run(tmp_path) == []


def test_actions_must_be_strings(tmp_path):
    make_task(tmp_path, "t1", actions=[{"click": 1}])
    assert any("action 0 is a dict" in p for p in check_run(tmp_path))


def test_v2_is_read_as_the_evaluator_reads_it(tmp_path):
    make_v2(tmp_path, "v", steps=3)
    assert check_run(tmp_path) == []
    ep = read_run(tmp_path).episodes["v"]
    assert ep.schema == "v2" and ep.final_result_response == "42"
    assert ep.action_history == ["button -> CLICK 0", "button -> CLICK 1"]    # the final answer step dropped
    assert [p.name for p in ep.screenshots] == ["0000.png", "0001.png", "0002.png"]
    assert ep.thoughts == ["t0", "t1", "t2"]


def test_v2_problems(tmp_path):
    make_v2(tmp_path, "no_final", final=False)
    folder = make_v2(tmp_path, "missing_shot")
    (folder / "trajectory" / "0001.png").unlink()
    folder = make_v2(tmp_path, "no_action")
    res = json.loads((folder / "result.json").read_text())
    del res["action_history"][0]["action"]
    (folder / "result.json").write_text(json.dumps(res))
    problems = check_run(tmp_path)
    assert any(p.startswith("no_final: the last step's action") for p in problems)
    assert any(p.startswith("missing_shot: step 1's screenshot trajectory/0001.png does not exist") for p in problems)
    assert any(p.startswith("no_action: step 0 has no `action`") for p in problems)
    assert "no_action" not in read_run(tmp_path).episodes


def test_v2_a_null_screenshot_crashes_the_evaluator(tmp_path):
    folder = make_v2(tmp_path, "v")
    res = json.loads((folder / "result.json").read_text())
    res["action_history"][0]["screenshot"] = None
    (folder / "result.json").write_text(json.dumps(res))
    run = read_run(tmp_path)
    assert any(p.startswith("v: step 0's screenshot is not a file name") for p in run.problems)
    assert "v" not in run.episodes


def test_v2_a_repeated_screenshot_is_read_right_but_noted(tmp_path):
    folder = make_v2(tmp_path, "v", steps=3)
    res = json.loads((folder / "result.json").read_text())
    res["action_history"][1]["screenshot"] = "0000.png"
    (folder / "result.json").write_text(json.dumps(res))
    run = read_run(tmp_path)
    assert run.problems == []
    assert any("repeats the screenshot 0000.png" in n for n in run.notes)
    assert [p.name for p in run.episodes["v"].screenshots] == ["0000.png", "0000.png", "0002.png"]


def test_v2_a_cut_episode_closes_with_task_incomplete(tmp_path):
    folder = make_v2(tmp_path, "v", final=False)
    res = json.loads((folder / "result.json").read_text())
    res["action_history"][-1]["action"] = "TASK_INCOMPLETE -> STOPPED: timeout"
    (folder / "result.json").write_text(json.dumps(res))
    assert check_run(tmp_path) == []


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_what_our_writer_writes_passes_the_check(tmp_path, schema):
    """Every shape of episode our writer leaves (finished, cut, without any screenshot) reads right."""
    from types import SimpleNamespace

    from om2w_tui.benchmarks.trajectory import TrajectoryWriter

    class Act:
        def __init__(self, d):
            self.d = d

        def model_dump(self, exclude_none=True):
            return self.d

    def step(actions, shot):
        return SimpleNamespace(state=SimpleNamespace(screenshot_path=shot, interacted_element=[], url="https://x/"),
                               model_output=SimpleNamespace(action=[Act(a) for a in actions], next_goal="g"))

    pics = []
    for i in range(3):
        pics.append(tmp_path / f"p{i}.png")
        pics[-1].write_bytes(PNG + bytes([i]))
    two = [{"scroll": {"down": True}}, {"go_back": {}}]
    w = TrajectoryWriter(tmp_path / "out" / "done", "done", "x", schema=schema)
    w.add_step(step(two, str(pics[0])))
    w.add_step(step([{"done": {"text": "42"}}], str(pics[1])))
    w.finish("42", pics[1].read_bytes())
    w = TrajectoryWriter(tmp_path / "out" / "cut", "cut", "x", schema=schema)
    w.add_step(step(two, str(pics[0])))
    w.add_step(step(two, str(pics[2])))
    w.finish(None, None, cut_short="timeout")
    w = TrajectoryWriter(tmp_path / "out" / "blank", "blank", "x", schema=schema)
    w.finish(None, None, cut_short="error")
    w = TrajectoryWriter(tmp_path / "out" / "running", "running", "x", schema=schema)
    w.add_step(step(two, str(pics[0])))
    w.add_step(step(two, str(pics[1])))                      # a hard kill leaves the folder as it is now
    TrajectoryWriter(tmp_path / "out" / "started", "started", "x", schema=schema)   # killed before any step
    run = read_run(tmp_path / "out")
    assert run.problems == [] and run.notes == []
    assert {d: len(e.screenshots) for d, e in run.episodes.items()} == {"done": 2, "cut": 2, "blank": 1,
                                                                        "running": 2, "started": 1}


def test_a_byte_order_mark_is_a_problem_as_the_evaluators_json_load_has_it(tmp_path, capsys):
    """The evaluator loads result.json with `json.load(open(path))`, which refuses a UTF-8 byte order mark; the
    package's own readers read past one (the report still has the episode's steps)."""
    folder = make_task(tmp_path, "t1")
    make_task(tmp_path, "t2")
    path = folder / "result.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    with pytest.raises(json.JSONDecodeError, match="BOM"), open(path) as f:   # the evaluator's own two calls
        json.load(f)
    assert cli_main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "1 problem(s)" in out and "t1: result.json: begins with a UTF-8 byte order mark" in out
    assert "save it as UTF-8 without one" in out
    assert sorted(read_run(tmp_path).episodes) == ["t2"]           # the evaluator cannot read it: no view of it
    from om2w_tui.benchmarks.episode_folder import read_episode
    assert read_episode(folder).task == "Do the thing t1"           # the package's own reader is lenient


def test_bytes_that_are_not_utf8_are_named_with_their_byte(tmp_path):
    folder = make_task(tmp_path, "t1")
    path = folder / "result.json"
    path.write_bytes(path.read_bytes().replace(b"thing", b"th\xffing"))
    assert check_run(tmp_path) == ["t1: result.json: not UTF-8 text (invalid start byte at byte 36)"]


def test_the_check_command_lists_problems_and_exits_1(tmp_path, capsys):
    make_task(tmp_path / "good", "t1")
    make_task(tmp_path / "bad", "t1")
    (tmp_path / "bad" / "attempts").mkdir()
    assert cli_main(["check", str(tmp_path / "good")]) == 0
    assert "ok: 1 task folders" in capsys.readouterr().out
    assert cli_main(["check", str(tmp_path / "good"), str(tmp_path / "bad")]) == 1
    out = capsys.readouterr().out
    assert "bad: 1 problem(s)" in out and "attempts: no result.json" in out


def test_nothing_the_package_writes_is_encoded_with_a_byte_order_mark():
    """Every file it writes is UTF-8 without a BOM (what our writer leaves passes the check above, which now refuses
    one): no source names an encoding that writes one."""
    root = Path(__file__).resolve().parents[2] / "om2w_tui"
    writes_a_mark = re.compile(r"utf[-_]?8[-_]sig|codecs\.BOM|encoding=[\"']utf[-_]?(16|32)", re.IGNORECASE)
    assert [str(p.relative_to(root)) for p in root.rglob("*.py") if writes_a_mark.search(p.read_text())] == []
