"""om2w_tui.benchmarks.episode_folder: the one reader of an episode's folder, read back from folders the real writer
(benchmarks/trajectory.py) wrote, in both layouts, with earlier attempts kept, and torn or missing files."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from om2w_tui.benchmarks.episode_folder import (
    EpisodeFolder,
    StepOnDisk,
    attempt_folder,
    attempt_folders,
    attempt_mark,
    begun_attempts,
    is_attempt_folder,
    keep_earlier_attempt,
    load_result,
    read_answer,
    read_episode,
    started_attempts,
)
from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.engine.records import outcome_from_folder
from om2w_tui.protocol.worker import Outcome


def png(seed: int) -> bytes:
    """A 1x1 PNG, different for each seed."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"\x00" + bytes([seed % 256, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def written(folder: Path, schema: str, *, finish: bool = True, cut_short: str | None = None) -> TrajectoryWriter:
    """An episode of three steps (two actions, then one, then one) written by the real writer."""
    w = TrajectoryWriter(folder, "t1", "find the kettle", schema=schema)
    w.add_plain_step(["TYPE: kettle", "CLICK search"], "search for it", png(1), "https://shop/")
    w.add_plain_step(["CLICK result"], "open the result", png(2), "https://shop/results")
    w.add_plain_step(["SCROLL DOWN"], "read the price", png(3), "https://shop/kettle")
    if finish:
        w.finish("$42.50", png(4), cut_short=cut_short)
    return w


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_a_finished_episode_reads_back_as_written(tmp_path, schema):
    written(tmp_path / "t1", schema)
    ep = read_episode(tmp_path / "t1")
    assert ep.layout == schema and ep.problems == () and ep.problem == ""
    assert (ep.task_id, ep.task, ep.answer) == ("t1", "find the kettle", "$42.50")
    assert read_answer(tmp_path / "t1") == "$42.50"
    assert ep.actions == ("TYPE: kettle", "CLICK search", "CLICK result", "SCROLL DOWN")
    assert [p.name for p in ep.shots] == [f"{i}_full_screenshot.png" for i in range(4)]
    assert [s.actions for s in ep.steps][:3] == [("TYPE: kettle", "CLICK search"), ("CLICK result",),
                                                 ("SCROLL DOWN",)]
    assert [s.thought for s in ep.steps][:3] == ["search for it", "open the result", "read the price"]
    assert not ep.blank_screenshot and ep.cut_short == "" and not ep.is_earlier_attempt
    assert dict(ep.files)["trajectory/"] == -4 and "result.json" in dict(ep.files)
    # one StepOnDisk per screenshot (each action's step as written): the final state has no actions
    assert len(ep.steps) == 4 and ep.steps[3] == StepOnDisk() and ep.recorded_steps == 3
    if schema == "v2":
        assert ep.steps[1].url == "https://shop/results"   # each step knows its page
        assert ep.thoughts == ("search for it", "open the result", "read the price")
    else:
        assert ep.thoughts == ("search for it", "search for it", "open the result", "read the price")


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_a_running_episode_and_what_a_dead_worker_left(tmp_path, schema):
    written(tmp_path / "t1", schema, finish=False)
    ep = read_episode(tmp_path / "t1")
    assert ep.answer == "" and len(ep.shots) == 3 and not ep.problems
    assert ep.actions == ("TYPE: kettle", "CLICK search", "CLICK result", "SCROLL DOWN")
    # the scheduler's outcome for a worker that died here
    rec = outcome_from_folder(tmp_path / "t1", "error", "worker process exited (code -9)", "infra")
    # each action's step as written (v2 while running: the latest step's actions join the entry before)
    assert rec == Outcome("error", "worker process exited (code -9)", "infra", steps=3, actions=4, screenshots=3)


def test_an_episode_cut_short_before_any_screenshot_has_the_blank_stand_in(tmp_path):
    w = TrajectoryWriter(tmp_path / "t1", "t1", "find it", schema="v2")
    w.finish(None, None, cut_short="timeout")
    ep = read_episode(tmp_path / "t1")
    assert ep.blank_screenshot and ep.cut_short == "timeout" and len(ep.shots) == 1 and ep.actions == ()
    assert outcome_from_folder(tmp_path / "t1", "timeout", "timeout", None) == Outcome(
        "timeout", "timeout", blank_screenshot=True)


def test_missing_folder_missing_result_and_torn_json_are_problems_not_exceptions(tmp_path):
    none = read_episode(tmp_path / "nothing")
    assert none.problem.startswith("no folder yet") and none.layout is None and none.task_id == "nothing"

    written(tmp_path / "t1", "v1")
    (tmp_path / "t1" / "result.json").unlink()
    ep = read_episode(tmp_path / "t1")
    assert ep.problems == ("no result.json yet (the episode has not finished a step)",)
    assert ep.layout is None and len(ep.shots) == 4 and ep.actions == ()       # the screenshots are still there
    assert load_result(tmp_path / "t1").missing

    text = json.dumps({"task": "x", "action_history": ["CLICK a"]})
    (tmp_path / "t1" / "result.json").write_text(text[: len(text) // 2])      # torn: a writer that is not ours
    ep = read_episode(tmp_path / "t1")
    assert ep.problem.startswith("result.json:1:") and "invalid JSON" in ep.problem
    assert ep.actions == () and ep.result == {}
    assert read_answer(tmp_path / "t1") == "" and read_answer(tmp_path / "nothing") == ""
    assert outcome_from_folder(tmp_path / "t1", "killed", "killed", None).steps == 0

    (tmp_path / "t1" / "result.json").write_text("[1, 2]")
    assert read_episode(tmp_path / "t1").problem == "result.json holds a list, not an object"


def test_stray_files_in_trajectory_are_not_screenshots_and_order_is_numeric(tmp_path):
    w = TrajectoryWriter(tmp_path / "t1", "t1", "x")
    for i in range(11):
        w.add_plain_step([f"CLICK {i}"], f"thought {i}", png(i))
    (tmp_path / "t1" / "trajectory" / "notes.txt").write_text("not ours")
    ep = read_episode(tmp_path / "t1")
    assert [p.name for p in ep.shots] == [f"{i}_full_screenshot.png" for i in range(11)]   # 10 after 9, not 1


def test_earlier_attempts_are_kept_and_found(tmp_path):
    task = tmp_path / "t1"
    assert keep_earlier_attempt(task) is None                      # nothing there yet: nothing to keep
    written(task, "v1", cut_short="timeout")
    assert keep_earlier_attempt(task) == task / "attempts" / "1"
    assert keep_earlier_attempt(task) is None                      # only attempts/ left: nothing moves
    written(task, "v2")
    assert keep_earlier_attempt(task) == task / "attempts" / "2"
    w = TrajectoryWriter(task, "t1", "find the kettle")   # the third attempt, running
    w.add_plain_step(["CLICK go"], "go", png(9))

    assert [n for n, _ in attempt_folders(task)] == [1, 2]
    first = read_episode(attempt_folder(tmp_path, "t1", 1, latest=False))
    assert first.is_earlier_attempt and first.layout == "v1" and first.cut_short == "timeout"
    assert read_episode(attempt_folder(tmp_path, "t1", 2, latest=False)).layout == "v2"
    latest = read_episode(attempt_folder(tmp_path, "t1", 3, latest=True))
    assert latest.folder == task and latest.actions == ("CLICK go",) and dict(latest.files)["attempts/"] < 0
    # an earlier attempt whose files were never kept (cut before it wrote any) is not the task's folder's
    assert attempt_folder(tmp_path, "t1", 7, latest=False) == task / "attempts" / "7" and not is_attempt_folder(task)
    assert attempt_folders(tmp_path / "nothing") == []


def test_each_attempts_files_are_kept_under_its_own_number_when_one_was_cut_with_its_console(tmp_path):
    """The task's folder is marked with the number of the attempt that began in it, and its files are kept under
    that number: an attempt cut with its console (kill -9: no record) takes its number, the resumed run's next
    attempt starts past it, and every record's number finds its own files (they drifted one apart)."""
    task = tmp_path / "t1"
    assert started_attempts(task) == 0 and begun_attempts(task) == set()
    keep_earlier_attempt(task, 1)
    written(task, "v1")                                            # attempt 1: recorded, an error retried
    assert keep_earlier_attempt(task, 2) == task / "attempts" / "1"
    written(task, "v2", cut_short="killed")                        # attempt 2: its console killed, no record
    assert attempt_mark(task) == 2 and started_attempts(task) == 2 and begun_attempts(task) == {1, 2}
    assert keep_earlier_attempt(task, 3) == task / "attempts" / "2"   # the resumed run's, numbered past it
    assert keep_earlier_attempt(task, 3) is None                   # put back before its worker had it: nothing
    written(task, "v1")
    assert keep_earlier_attempt(task, 4) == task / "attempts" / "3"
    for n in (1, 2, 3):
        assert attempt_mark(task / "attempts" / str(n)) == n
        assert attempt_folder(tmp_path, "t1", n, latest=False) == task / "attempts" / str(n)
    assert attempt_folder(tmp_path, "t1", 4, latest=True) == task and started_attempts(task) == 3  # 4 wrote nothing
    # a folder written before the mark: its files kept one past the highest kept, as before
    legacy = tmp_path / "t2"
    written(legacy, "v1")
    written(legacy / "attempts" / "1", "v1")
    assert keep_earlier_attempt(legacy) == legacy / "attempts" / "2" and attempt_mark(legacy) is None
    (task / ".attempt").write_text("junk")
    assert attempt_mark(task) is None


def test_the_reader_is_frozen():
    ep = EpisodeFolder(Path("x"))
    with pytest.raises(AttributeError):
        ep.answer = "changed"  # type: ignore[misc]
