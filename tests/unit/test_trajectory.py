"""om2w_tui.benchmarks.trajectory: the benchmark's action lines, and an episode's folder written step by step."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from om2w_tui.benchmarks.episode_folder import read_episode
from om2w_tui.benchmarks.trajectory import (
    TrajectoryWriter,
    action_line,
    blank_png,
    element_tag,
    step_actions,
)
from om2w_tui.files import write_atomic, write_json_atomic

RESULT_KEYS = {"task_id", "task", "final_result_response", "action_history", "thoughts", "action_steps",
               "action_urls"}


def png(seed: int = 0) -> bytes:
    """A small valid PNG, different for each seed."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"\x00" + bytes([seed % 256, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def element(node="BUTTON", attrs=None, name=None):
    return SimpleNamespace(node_name=node, attributes=attrs or {}, ax_name=name, x_path="html/body/x")


class Action:
    """An action model as browser-use gives it: model_dump(exclude_none=True) -> {name: params}."""

    def __init__(self, name, **params):
        self.name, self.params = name, params

    def model_dump(self, exclude_none=False):
        params = {k: v for k, v in self.params.items() if not (exclude_none and v is None)}
        return {self.name: params}


def step(actions, elements=(), goal="the goal", shot=None, url="https://a.com/"):
    return SimpleNamespace(
        state=SimpleNamespace(screenshot_path=str(shot) if shot else None, interacted_element=list(elements), url=url),
        model_output=SimpleNamespace(action=list(actions), next_goal=goal, memory="mem"))


# ── action lines ───────────────────────────────────────────

def test_click_on_element():
    el = element("BUTTON", {"id": "go", "aria-label": "Search", "class": "btn big", "style": "x"}, "Search")
    assert action_line("click", {"index": 3}, el) == '<button id="go" aria-label="Search"> Search -> CLICK'


def test_only_kept_attributes_in_their_order():
    attrs = {"class": "c", "data-x": "1", "alt": "pic", "onclick": "evil()", "href": "/a", "id": "i", "value": "",
             "name": "n", "placeholder": "p", "title": "t", "role": "link", "type": "submit", "aria-label": "L"}
    line = action_line("click", {"index": 1}, element("A", attrs))
    assert line == ('<a id="i" aria-label="L" name="n" placeholder="p" title="t" href="/a" role="link" '
                    'type="submit" alt="pic"> -> CLICK')
    assert "class" not in line and "onclick" not in line and "data-x" not in line and "value" not in line


def test_attribute_and_name_truncated_at_80():
    el = element("INPUT", {"title": "t" * 200}, "n" * 300)
    tag = element_tag(el)
    assert tag == f'<input title="{"t" * 80}"> {"n" * 80}'


def test_element_without_attributes_or_name():
    assert action_line("click", {"index": 2}, element("DIV")) == "<div> -> CLICK"
    assert element_tag(SimpleNamespace()) == "<element>"
    assert element_tag(None) == ""


def test_type_and_select():
    el = element("INPUT", {"name": "q", "type": "text"})
    assert action_line("input", {"index": 2, "text": "blue widget", "clear": True}, el) == \
        '<input name="q" type="text"> -> TYPE: blue widget'
    sel = element("SELECT", {"id": "size"})
    assert action_line("select_dropdown", {"index": 4, "text": "XL"}, sel) == '<select id="size"> -> SELECT: XL'
    assert action_line("input", {"index": 9, "text": "x"}, None) == "<element> -> TYPE: x"
    assert action_line("select_dropdown", {"index": 9, "text": "y"}) == "<element> -> SELECT: y"


def test_coordinate_click():
    assert action_line("click", {"coordinate_x": 120, "coordinate_y": 640}) == "CLICK at (120, 640) of 1000"
    assert action_line("click", {"coordinate_x": 0, "coordinate_y": 0}) == "CLICK at (0, 0) of 1000"
    assert action_line("click", {"index": 5}) == "<element> -> CLICK"


def test_dropdown_options_is_a_click():
    assert action_line("dropdown_options", {"index": 1}, element("SELECT", {"id": "s"})) == '<select id="s"> -> CLICK'


def test_navigation_scroll_keys_back():
    assert action_line("navigate", {"url": "https://x.org/a?b=1", "new_tab": False}) == "NAVIGATE -> https://x.org/a?b=1"
    assert action_line("scroll", {"down": True, "pages": 1.0}) == "SCROLL DOWN"
    assert action_line("scroll", {"down": False, "pages": 2}) == "SCROLL UP"
    assert action_line("scroll", {}) == "SCROLL DOWN"
    assert action_line("send_keys", {"keys": "Control+Enter"}) == "KEYS: Control+Enter"
    assert action_line("go_back", {}) == "GO BACK"
    assert action_line("go_back", None) == "GO BACK"
    assert action_line("search", {"query": "cheap flights"}) == "SEARCH -> cheap flights"


def test_other_actions_as_name_and_json():
    assert action_line("extract", {"query": "prices", "extract_links": False}) == \
        'EXTRACT {"query": "prices", "extract_links": false}'
    assert action_line("wait", {"seconds": 3}) == 'WAIT {"seconds": 3}'
    assert action_line("switch", None) == "SWITCH {}"
    long = action_line("write_file", {"content": "é" * 500})
    assert long.startswith('WRITE_FILE {"content": "ééé') and len(long) == len("WRITE_FILE ") + 120


# ── steps ──────────────────────────────────────────────────

def test_step_actions_skips_done_and_keeps_elements_aligned():
    els = [element("INPUT", {"name": "q"}), None, element("BUTTON", {"id": "go"})]
    st = step([Action("input", index=1, text="tea", clear=None), Action("done", text="the answer", success=True),
               Action("click", index=2)], els, goal="search tea")
    actions, thoughts = step_actions(st)
    assert actions == ['<input name="q"> -> TYPE: tea', '<button id="go"> -> CLICK']
    assert thoughts == ["search tea", "search tea"]
    assert not any("answer" in a or "DONE" in a.upper() for a in actions)


def test_step_actions_only_done_gives_nothing():
    assert step_actions(step([Action("done", text="42", success=True)])) == ([], [])


def test_step_actions_skip_more_and_no_model_output():
    st = step([Action("delegate", to="x"), Action("scroll", down=False)])
    assert step_actions(st, skip={"delegate"}) == (["SCROLL UP"], ["the goal"])
    assert step_actions(SimpleNamespace(state=None, model_output=None)) == ([], [])


def test_step_actions_thought_falls_back_to_memory_and_is_capped():
    st = step([Action("go_back")], goal=None)
    assert step_actions(st) == (["GO BACK"], ["mem"])
    st = step([Action("go_back"), Action("go_back")], goal="g" * 1000)
    actions, thoughts = step_actions(st)
    assert len(actions) == len(thoughts) == 2 and thoughts[0] == "g" * 400


def test_step_actions_more_actions_than_elements():
    st = step([Action("click", index=1), Action("click", index=2)], [element("A", {"href": "/x"})])
    assert step_actions(st)[0] == ['<a href="/x"> -> CLICK', "<element> -> CLICK"]


# ── the episode folder ─────────────────────────────────────

def read_result(folder: Path) -> dict:
    data = json.loads((folder / "result.json").read_text())
    assert set(data) == RESULT_KEYS
    return data


def shots(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "trajectory").iterdir())


def test_writer_writes_as_it_goes(tmp_path):
    folder = tmp_path / "out" / "t1"
    pics = []
    for i in range(3):
        p = tmp_path / f"shot{i}.png"
        p.write_bytes(png(i))
        pics.append(p)
    w = TrajectoryWriter(folder, "t1", "find tea")
    first = json.loads((folder / "result.json").read_text())
    assert {k: first[k] for k in RESULT_KEYS} == {"task_id": "t1", "task": "find tea", "final_result_response": "",
                                                  "action_history": [], "thoughts": [], "action_steps": [],
                                                  "action_urls": []}
    # readable from the start: a blank stand-in until the first screenshot, said in the record
    assert shots(folder) == ["0_full_screenshot.png"] and "blank" in first["blank_screenshot"]

    lines = w.add_step(step([Action("navigate", url="https://tea.com")], goal="open", shot=pics[0]))
    assert lines == ["NAVIGATE -> https://tea.com"]
    r = read_result(folder)
    assert r["action_history"] == ["NAVIGATE -> https://tea.com"] and r["thoughts"] == ["open"]
    assert shots(folder) == ["0_full_screenshot.png"]

    w.add_step(step([Action("input", index=1, text="green"), Action("click", index=2)],
                    [element("INPUT", {"id": "q"}), element("BUTTON", {"id": "go"}, "Go")], goal="search",
                    shot=pics[1]))
    r = read_result(folder)
    assert r["action_history"] == ["NAVIGATE -> https://tea.com", '<input id="q"> -> TYPE: green',
                                   '<button id="go"> Go -> CLICK']
    assert r["thoughts"] == ["open", "search", "search"] and r["action_steps"] == [0, 1, 1]
    assert shots(folder) == ["0_full_screenshot.png", "1_full_screenshot.png"]

    w.add_step(step([Action("scroll", down=True), Action("done", text="Green tea, $4")], goal="read", shot=pics[2]))
    assert read_result(folder)["action_history"][-1] == "SCROLL DOWN"
    assert read_result(folder)["final_result_response"] == ""   # the answer comes with finish(), not from `done`
    for i, p in enumerate(pics):
        assert (folder / "trajectory" / f"{i}_full_screenshot.png").read_bytes() == p.read_bytes()
    assert w.n_steps == 3 and w.n_shots == 3

    w.finish("Green tea, $4", png(99))
    r = read_result(folder)
    assert r["final_result_response"] == "Green tea, $4"
    assert len(r["action_history"]) == len(r["thoughts"]) == 4
    assert not any("Green tea" in a for a in r["action_history"])
    assert shots(folder) == [f"{i}_full_screenshot.png" for i in range(4)]
    assert (folder / "trajectory" / "3_full_screenshot.png").read_bytes() == png(99)
    # nothing but the layout: no temp files, no extra folders beside trajectory/
    assert sorted(p.name for p in folder.iterdir()) == ["result.json", "trajectory"]


def test_writer_step_without_screenshot(tmp_path):
    w = TrajectoryWriter(tmp_path / "t", "t", "x")
    w.add_step(step([Action("go_back")], shot=None))
    w.add_step(step([Action("go_back")], shot=tmp_path / "missing.png"))
    assert shots(tmp_path / "t") == ["0_full_screenshot.png"]   # the blank stand-in
    assert (tmp_path / "t" / "trajectory" / "0_full_screenshot.png").read_bytes() == blank_png()
    pic = tmp_path / "p.png"
    pic.write_bytes(png(1))
    w.add_step(step([Action("go_back")], shot=pic))
    assert shots(tmp_path / "t") == ["0_full_screenshot.png"]   # it took the stand-in's place: no gaps
    assert (tmp_path / "t" / "trajectory" / "0_full_screenshot.png").read_bytes() == png(1)
    assert read_result(tmp_path / "t")["action_history"] == ["GO BACK"] * 3


def test_writer_finish_without_answer_or_picture_and_histories(tmp_path):
    folder = tmp_path / "t"
    w = TrajectoryWriter(folder, "t", "x")

    class History:
        def model_dump(self):
            return {"history": [{"n": 1}]}

    class Broken:
        def model_dump(self):
            raise RuntimeError("cannot")

    w.finish(None, None, [History(), Broken(), {"plain": True}])
    r = json.loads((folder / "result.json").read_text())
    assert r["final_result_response"] == ""
    # no screenshot at all: a blank final state keeps the folder readable (an empty trajectory/ crashes the
    # evaluator's Autonomous and AgentTrek modes), and the record says it is a stand-in
    assert shots(folder) == ["0_full_screenshot.png"]
    assert (folder / "trajectory" / "0_full_screenshot.png").read_bytes() == blank_png()
    assert "blank" in r["blank_screenshot"] and "0_full_screenshot.png" in r["blank_screenshot"]
    assert json.loads((folder / "history_0.json").read_text()) == {"history": [{"n": 1}]}
    assert not (folder / "history_1.json").exists()
    assert json.loads((folder / "history_2.json").read_text()) == {"plain": True}


# ── atomic writes (om2w_tui.files) ─────────────────────────

def test_write_atomic_replaces_whole_and_leaves_no_temp(tmp_path):
    p = tmp_path / "f.json"
    write_atomic(p, "x" * 10_000)
    write_atomic(p, "short")
    assert p.read_text() == "short"
    write_atomic(p, b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01"
    write_json_atomic(p, {"a": "é"})
    assert json.loads(p.read_text(encoding="utf-8")) == {"a": "é"}
    assert [x.name for x in tmp_path.iterdir()] == ["f.json"]


def test_write_atomic_failure_keeps_old_content_and_no_temp(tmp_path):
    p = tmp_path / "f.txt"
    write_atomic(p, "old")
    with pytest.raises(TypeError):
        write_atomic(p, 12345)   # not bytes: the write fails midway
    assert p.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["f.txt"]


def test_write_atomic_files_are_readable_like_plain_files(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("x")
    p = tmp_path / "atomic"
    write_atomic(p, "x")
    assert (os.stat(p).st_mode & 0o777) == (os.stat(plain).st_mode & 0o777)


def _pics(tmp_path, n):
    out = []
    for i in range(n):
        p = tmp_path / f"pic{i}.png"
        p.write_bytes(png(i + 1))
        out.append(p)
    return out


def v2_history(folder: Path) -> list[dict]:
    doc = json.loads((folder / "result.json").read_text())
    assert doc["schema_version"] == "online-mind2web-v2"
    hist = doc["action_history"]
    assert [h["step"] for h in hist] == list(range(len(hist)))
    names = [h["screenshot"] for h in hist]
    assert None not in names and len(set(names)) == len(names), names     # never null, never named twice
    assert all((folder / "trajectory" / n).is_file() for n in names)
    return hist


def test_v1_final_state_is_not_written_twice(tmp_path):
    """The `done` step's screenshot is the final page: the final state, byte-identical, is not written again."""
    a, b = _pics(tmp_path, 2)
    w = TrajectoryWriter(tmp_path / "t", "t", "x")
    w.add_step(step([Action("scroll", down=True)], shot=a))
    w.add_step(step([Action("done", text="42")], shot=b))
    w.finish("42", b.read_bytes())
    assert shots(tmp_path / "t") == ["0_full_screenshot.png", "1_full_screenshot.png"]
    w2 = TrajectoryWriter(tmp_path / "u", "u", "x")
    w2.add_step(step([Action("scroll", down=True)], shot=a))
    w2.finish("", png(50))                                   # the page changed after the last step: kept
    assert shots(tmp_path / "u") == ["0_full_screenshot.png", "1_full_screenshot.png"]


def test_v2_each_entry_is_a_step_with_the_state_it_acted_on_and_the_last_state_closes(tmp_path):
    a, b, c = _pics(tmp_path, 3)
    folder = tmp_path / "t1"
    w = TrajectoryWriter(folder, "t1", "Find it", schema="v2", reference_length=4)
    w.add_step(step([Action("navigate", url="https://a.b/"), Action("scroll", down=True)], shot=a,
                    url="https://a.b/start", goal="go"))
    w.add_step(step([Action("click", index=1)], [element("A", {"href": "/x"})], shot=b, url="https://a.b/list",
                    goal="open"))
    w.add_step(step([Action("done", text="42", success=True)], shot=c, url="https://a.b/x"))
    w.finish("42", c.read_bytes())                              # the final page is the done step's screenshot
    doc = json.loads((folder / "result.json").read_text())
    assert doc["agent_final_answer"] == "42" and doc["reference_length"] == 4 and doc["task_id"] == "t1"
    assert "cut_short" not in doc
    hist = v2_history(folder)
    assert [h["action"] for h in hist] == ["NAVIGATE -> https://a.b/ ; SCROLL DOWN", '<a href="/x"> -> CLICK',
                                           "TASK_COMPLETE -> ANSWER: 42"]
    assert [h["screenshot"] for h in hist] == ["0_full_screenshot.png", "1_full_screenshot.png",
                                               "2_full_screenshot.png"]
    assert (folder / "trajectory" / "2_full_screenshot.png").read_bytes() == c.read_bytes()
    assert shots(folder) == ["0_full_screenshot.png", "1_full_screenshot.png", "2_full_screenshot.png"]
    assert hist[0]["url"] == "https://a.b/start" and hist[0]["thought"] == "go" and hist[1]["thought"] == "open"


def test_v2_while_running_names_no_screenshot_twice_and_does_not_read_as_finished(tmp_path):
    a, b = _pics(tmp_path, 2)
    folder = tmp_path / "t"
    w = TrajectoryWriter(folder, "t", "x", schema="v2")
    hist = v2_history(folder)                    # readable from the start: the blank stand-in closes it
    assert len(hist) == 1 and hist[0]["action"].startswith("TASK_INCOMPLETE")
    w.add_step(step([Action("scroll", down=True)], shot=a))
    hist = v2_history(folder)
    assert len(hist) == 1 and hist[0]["action"].startswith("TASK_INCOMPLETE")
    assert "SCROLL DOWN" in hist[0]["action"]      # kept in the record, though the evaluator drops the last one
    w.add_step(step([Action("go_back")], shot=b))
    hist = v2_history(folder)
    assert [h["screenshot"] for h in hist] == ["0_full_screenshot.png", "1_full_screenshot.png"]
    assert hist[0]["action"] == "SCROLL DOWN ; GO BACK" and hist[-1]["action"].startswith("TASK_INCOMPLETE")


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_a_cut_episode_says_so(tmp_path, schema):
    a, = _pics(tmp_path, 1)
    folder = tmp_path / "t"
    w = TrajectoryWriter(folder, "t", "x", schema=schema)
    w.add_step(step([Action("scroll", down=True)], shot=a))
    w.finish(None, png(60), cut_short="timeout")
    doc = json.loads((folder / "result.json").read_text())
    assert doc["cut_short"] == "timeout"
    if schema == "v2":
        hist = v2_history(folder)
        assert [h["action"] for h in hist] == ["SCROLL DOWN", "TASK_INCOMPLETE -> STOPPED: timeout"]
        assert not any(h["action"].startswith("TASK_COMPLETE") for h in hist)
        assert hist[-1]["screenshot"] == "1_full_screenshot.png"


def test_v2_cut_without_a_final_screenshot_closes_with_the_last_one_taken(tmp_path):
    a, b = _pics(tmp_path, 2)
    folder = tmp_path / "t"
    w = TrajectoryWriter(folder, "t", "x", schema="v2")
    w.add_step(step([Action("scroll", down=True)], shot=a))
    w.add_step(step([Action("go_back")], shot=b))
    w.finish(None, None, cut_short="killed")                 # the browser was gone: no final state
    hist = v2_history(folder)
    assert [h["screenshot"] for h in hist] == ["0_full_screenshot.png", "1_full_screenshot.png"]
    assert hist[0]["action"] == "SCROLL DOWN ; GO BACK" and hist[1]["action"] == "TASK_INCOMPLETE -> STOPPED: killed"


def test_v2_without_any_screenshot_gets_a_blank_final_state_never_null(tmp_path):
    folder = tmp_path / "t"
    w = TrajectoryWriter(folder, "t", "x", schema="v2")
    w.add_step(step([Action("go_back")], shot=None))
    w.finish(None, None, cut_short="error")
    doc = json.loads((folder / "result.json").read_text())
    hist = v2_history(folder)
    assert len(hist) == 1 and hist[0]["screenshot"] == "0_full_screenshot.png"
    assert hist[0]["action"].startswith("TASK_INCOMPLETE -> STOPPED: error") and "GO BACK" in hist[0]["action"]
    assert "blank" in doc["blank_screenshot"] and doc["cut_short"] == "error"


def test_v2_a_step_without_screenshot_joins_its_neighbour(tmp_path):
    a, b = _pics(tmp_path, 2)
    folder = tmp_path / "t"
    w = TrajectoryWriter(folder, "t", "x", schema="v2")
    w.add_step(step([Action("go_back")], shot=None))           # before any screenshot: joins the next entry
    w.add_step(step([Action("scroll", down=True)], shot=a))
    w.add_step(step([Action("scroll", down=False)], shot=None))  # joins the entry before it
    w.add_step(step([Action("done", text="")], shot=b))
    w.finish("", b.read_bytes())
    hist = v2_history(folder)
    assert [h["action"] for h in hist] == ["GO BACK ; SCROLL DOWN ; SCROLL UP", "TASK_COMPLETE -> ANSWER: "]


def test_blank_png_is_a_valid_png():
    data = blank_png(4, 3)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (4, 3)
    idat = data[data.index(b"IDAT") + 4:data.index(b"IEND") - 8]
    assert zlib.decompress(idat) == (b"\x00" + b"\xee" * 4) * 3


def test_a_screenshot_write_cut_short_leaves_nothing_in_trajectory(tmp_path, monkeypatch):
    """The evaluator reads every file in trajectory/: a half-written screenshot must never be one of them."""
    import pytest

    from om2w_tui.benchmarks import trajectory as tr

    w = tr.TrajectoryWriter(tmp_path / "t", "t", "task")

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.replace", crash)   # what write_atomic ends with
    with pytest.raises(OSError):
        w.add_screenshot(png=b"\x89PNG\r\n\x1a\n" + b"x" * 100)
    only, = (tmp_path / "t" / "trajectory").iterdir()       # the blank stand-in, whole, and nothing else
    assert only.read_bytes() == tr.blank_png()
    assert not [p for p in (tmp_path / "t").iterdir() if p.name.endswith(".tmp")]   # and no leftover beside it
    monkeypatch.undo()
    assert w.add_screenshot(png=b"\x89PNG\r\n\x1a\nok") and w.n_shots == 1


@pytest.mark.parametrize("schema", ["v1", "v2"])
def test_each_action_carries_its_step_so_steps_with_one_thought_stay_apart(tmp_path, schema):
    """Four scroll steps with the same thought (a looping agent) read back as four steps, one a screenshot; a step
    that got no screenshot shares the number of the step before (v2 joins it to that entry)."""
    pics = _pics(tmp_path, 5)
    folder = tmp_path / "t"
    w = TrajectoryWriter(folder, "t", "x", schema=schema)
    for k, p in enumerate(pics[:4]):
        w.add_step(step([Action("scroll", down=True)], goal="keep looking", shot=p, url=f"http://s/{k}"))
    w.add_step(step([Action("go_back")], goal="keep looking", shot=None, url="http://s/4"))
    w.finish("", pics[4].read_bytes(), cut_short="out_of_steps")
    doc = json.loads((folder / "result.json").read_text())
    assert doc["action_steps"] == [0, 1, 2, 3, 3]
    ep = read_episode(folder)
    assert [s.actions for s in ep.steps] == [("SCROLL DOWN",)] * 3 + [("SCROLL DOWN", "GO BACK"), ()]
    # each step's page URL, in either layout (v1: `action_urls`, one per action as `thoughts`)
    assert [s.url for s in ep.steps] == ["http://s/0", "http://s/1", "http://s/2", "http://s/3", ""]
    if schema == "v1":
        assert doc["action_urls"] == ["http://s/0", "http://s/1", "http://s/2", "http://s/3", "http://s/4"]
    assert ep.recorded_steps == 4 and ep.answer == "" and ep.cut_short == "out_of_steps"
