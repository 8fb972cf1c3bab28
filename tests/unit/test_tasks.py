"""benchmarks.tasks: the benchmarks' real task files, plain JSON/JSONL in either shape, filters, and every bad input."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om2w_tui.benchmarks.tasks import Task, TaskFileError, load_tasks, parse_tasks, select
from om2w_tui.json_input import element_lines

DATA = Path(__file__).resolve().parents[2] / "data"    # the task files the project ships
OM2W = DATA / "Online_Mind2Web.json"
WEBVOYAGER = DATA / "WebVoyager_data.jsonl"


def real(path: Path) -> Path:
    assert path.is_file(), f"{path} is missing: data/ ships the benchmarks' task files (see data/README.md)"
    return path


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def om2w_row(tid: str = "t1", **kw) -> dict:
    return {"task_id": tid, "confirmed_task": f"do {tid}", "website": "https://www.example.com/", **kw}


def wv_row(tid: str = "Site--0", **kw) -> dict:
    return {"web_name": "Site", "id": tid, "ques": f"question {tid}", "web": "https://www.site.org/", **kw}


def error_of(path: Path) -> str:
    with pytest.raises(TaskFileError) as e:
        load_tasks(path)
    return str(e.value)


# ── the real files ─────────────────────────────────────────

def test_online_mind2web_file():
    path = real(OM2W)
    tasks = load_tasks(path)
    rows = json.loads(path.read_text())
    assert len(tasks) == 300
    assert Counter(t.level for t in tasks) == {"easy": 80, "medium": 143, "hard": 77}
    assert len({t.task_id for t in tasks}) == 300
    for t, row in zip(tasks, rows):   # file order kept, fields as in the file
        assert (t.task_id, t.confirmed_task, t.website, t.level) == \
            (row["task_id"], row["confirmed_task"], row["website"], row["level"])
        assert t.raw["reference_length"] == row["reference_length"]
        assert t.site and t.site == t.site.lower() and not t.site.startswith("www.")
        assert "/" not in t.site and t.site in t.website.lower()
    first = tasks[0]
    assert first.task_id == "b7258ee05d75e6c50673a59914db412e_110325"
    assert first.site == "traderjoes.com"


def test_webvoyager_file():
    path = real(WEBVOYAGER)
    tasks = load_tasks(path)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(tasks) == len(rows) == 643
    for t, row in zip(tasks, rows):
        assert t.task_id == row["id"]
        assert t.confirmed_task == row["ques"]
        assert t.website == row["web"]
        assert t.level == row["web_name"]
        assert t.site == re.sub(r"^https?://(www\.)?", "", row["web"]).split("/")[0].lower()
    assert len({t.level for t in tasks}) == 15
    # Google Search, Google Map and Google Flights are one host, paced as one site
    assert len({t.site for t in tasks}) == 13
    assert {t.site for t in tasks if t.level.startswith("Google")} == {"google.com"}
    # ids with spaces ("BBC News--0") are valid folder names and must load
    bbc = [t for t in tasks if t.level == "BBC News"]
    assert len(bbc) == 42 and bbc[0].task_id == "BBC News--0"
    assert tasks[0].to_dict()["task_id"] == "Allrecipes--0"
    assert tasks[0].to_dict()["ques"] == tasks[0].confirmed_task   # the raw row travels with the task


# ── plain files in either shape ────────────────────────────

def test_plain_json_list(tmp_path):
    p = write(tmp_path, "tasks.json", json.dumps([om2w_row("a", level="easy"), om2w_row("b", hint="h")]))
    tasks = load_tasks(p)
    assert [t.task_id for t in tasks] == ["a", "b"]
    assert tasks[0].level == "easy" and tasks[1].level is None
    assert tasks[1].to_dict()["hint"] == "h"
    assert tasks[0].site == "example.com"


def test_json_list_of_webvoyager_rows(tmp_path):
    p = write(tmp_path, "wv.json", json.dumps([wv_row("S--0"), wv_row("S--1")]))
    tasks = load_tasks(p)
    assert [(t.task_id, t.confirmed_task, t.website, t.level) for t in tasks] == [
        ("S--0", "question S--0", "https://www.site.org/", "Site"),
        ("S--1", "question S--1", "https://www.site.org/", "Site")]
    assert tasks[0].site == "site.org"


def test_jsonl_om2w_shape(tmp_path):
    text = "\n".join(json.dumps(r) for r in [om2w_row("a"), om2w_row("b", level=3)]) + "\n\n"
    tasks = load_tasks(write(tmp_path, "tasks.jsonl", text))
    assert [t.task_id for t in tasks] == ["a", "b"]
    assert tasks[1].level == "3"   # levels are strings


def test_jsonl_webvoyager_shape(tmp_path):
    text = "\n".join(json.dumps(r) for r in [wv_row("S--0"), wv_row("S--1", web="http://other.net:8080/x")])
    tasks = load_tasks(write(tmp_path, "wv.jsonl", text))
    assert [(t.task_id, t.level, t.site) for t in tasks] == [("S--0", "Site", "site.org"),
                                                            ("S--1", "Site", "other.net:8080")]


def test_json_lines_in_a_json_named_file(tmp_path):
    text = json.dumps(om2w_row("a")) + "\n" + json.dumps(om2w_row("b")) + "\n"
    assert [t.task_id for t in load_tasks(write(tmp_path, "tasks.json", text))] == ["a", "b"]


def test_pretty_printed_tasks_object_is_one_json_value(tmp_path):
    # a nested object at the start of a line must not make the file look like JSON lines
    text = '{"tasks": [\n' + ",\n".join(json.dumps(om2w_row(t)) for t in "ab") + "\n]}\n"
    assert [t.task_id for t in load_tasks(write(tmp_path, "tasks.json", text))] == ["a", "b"]


def test_byte_order_mark_is_accepted(tmp_path):
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps([om2w_row("a")]).encode())
    assert [t.task_id for t in load_tasks(p)] == ["a"]


def test_task_round_trips_through_dict():
    t = Task("a", "do a", "https://a.com/", "easy", {"hint": "x"})
    back = Task.from_dict(t.to_dict())
    assert back == t and back.raw["hint"] == "x"


# ── select ─────────────────────────────────────────────────

@pytest.fixture
def pool() -> list[Task]:
    return [Task("a1", "x", "https://www.alpha.com/", "easy"),
            Task("a2", "x", "https://alpha.com/p", "hard"),
            Task("b1", "x", "https://beta.org/", "Easy"),
            Task("c1", "x", "http://127.0.0.1:8001/", None),
            Task("c2", "x", "http://127.0.0.1:8002/", "medium")]


def ids(tasks):
    return [t.task_id for t in tasks]


def test_select_nothing_keeps_all(pool):
    assert ids(select(pool)) == ["a1", "a2", "b1", "c1", "c2"]


def test_select_by_ids_keeps_file_order(pool):
    assert ids(select(pool, task_ids=["c1", "a1"])) == ["a1", "c1"]


def test_select_unknown_id_is_an_error(pool):
    with pytest.raises(TaskFileError, match=r"--task-ids: not in the task file: nope, zz"):
        select(pool, task_ids=["a1", "zz", "nope"])


def test_select_by_level_ignores_case(pool):
    assert ids(select(pool, levels=["EASY"])) == ["a1", "b1"]
    assert ids(select(pool, levels=["medium", "hard"])) == ["a2", "c2"]


@pytest.mark.parametrize(("levels", "said"), [
    (["nothing"], "--level nothing: no task in the task file has this level (its levels: easy, medium, hard)"),
    (["easy", "hardest", "x", "X"], "--level hardest,x,X: no task in the task file has these levels"),
])
def test_select_refuses_a_level_no_task_has_naming_it_and_the_files_levels(pool, levels, said):
    """A level no task has is a typo, never a filter that quietly keeps the other levels' tasks (or none)."""
    with pytest.raises(TaskFileError) as e:
        select(pool, levels=levels)
    assert str(e.value).startswith(said)


def test_a_level_is_the_files_whatever_the_other_filters_keep(pool):
    assert select(pool, task_ids=["a1"], levels=["hard"]) == []   # no task left: said by the launch, not a typo


def test_select_by_site(pool):
    assert ids(select(pool, sites=["alpha.com"])) == ["a1", "a2"]
    assert ids(select(pool, sites=["BETA"])) == ["b1"]
    assert ids(select(pool, sites=["127.0.0.1:8002"])) == ["c2"]
    assert ids(select(pool, sites=["alpha", "beta"])) == ["a1", "a2", "b1"]


@pytest.mark.parametrize(("sites", "said"), [
    (["alpah"], "--site alpah: no task in the task file is on this site (its sites: alpha.com, 127.0.0.1:8001, "
                "127.0.0.1:8002, beta.org)"),       # the closest first
    (["alpha", "gamma", "zz", "ZZ"], "--site gamma,zz,ZZ: no task in the task file is on these sites (its sites: "),
])
def test_select_refuses_a_site_no_task_is_on_naming_it_and_the_files_sites(pool, sites, said):
    """A site no task is on is a typo, never a filter that quietly keeps the other sites' tasks (or none)."""
    with pytest.raises(TaskFileError) as e:
        select(pool, sites=sites)
    assert str(e.value).startswith(said), str(e.value)


def test_an_unknown_site_among_many_lists_some_of_them_and_counts_the_rest():
    many = [Task(f"t{i}", "x", f"https://site{i:02d}.com/", "easy") for i in range(30)]
    with pytest.raises(TaskFileError) as e:
        select(many, sites=["site7.org"])
    assert str(e.value).endswith(", and 18 more)") and str(e.value).count(".com") == 12, str(e.value)


def test_a_site_is_the_files_whatever_the_other_filters_keep(pool):
    assert select(pool, levels=["hard"], sites=["beta"]) == []   # no task left: said by the launch, not a typo


def test_select_limit_after_filters(pool):
    assert ids(select(pool, limit=2)) == ["a1", "a2"]
    assert ids(select(pool, levels=["easy", "medium"], limit=2)) == ["a1", "b1"]
    assert ids(select(pool, limit=0)) == ids(pool)


# ── bad input: each error names the file and where ─────────

def test_missing_file(tmp_path):
    p = tmp_path / "nope.json"
    msg = error_of(p)
    assert str(p) in msg and "no such task file" in msg


def test_a_folder_is_not_a_task_file(tmp_path):
    assert "folder" in error_of(tmp_path)


@pytest.mark.parametrize("text", ["", "   \n\n\t"])
def test_empty_file(tmp_path, text):
    p = write(tmp_path, "empty.json", text)
    msg = error_of(p)
    assert str(p) in msg and "empty" in msg


def test_no_tasks_in_a_list(tmp_path):
    p = write(tmp_path, "none.json", "[]")
    assert error_of(p) == f"{p}: no tasks in the file"


def test_invalid_json_names_line_and_column(tmp_path):
    p = write(tmp_path, "bad.json", '[\n  {"task_id": "a",\n   "confirmed_task": oops}\n]')
    msg = error_of(p)
    assert msg.startswith(f"{p}:3:22: invalid JSON")


def test_invalid_jsonl_line_names_the_line(tmp_path):
    p = write(tmp_path, "bad.jsonl", json.dumps(om2w_row("a")) + "\n\n{not json\n")
    msg = error_of(p)
    assert msg.startswith(f"{p}:3:2: invalid JSON line")


def test_invalid_line_of_json_lines_in_a_json_file(tmp_path):
    p = write(tmp_path, "bad.json", json.dumps(om2w_row("a")) + "\n" + json.dumps(om2w_row("b")) + "\n{x\n")
    assert error_of(p).startswith(f"{p}:3:")


@pytest.mark.parametrize("text,kind", [('{"a": 1}', "dict"), ("42", "int"), ('"tasks"', "str"), ("null", "NoneType")])
def test_json_that_is_not_a_list(tmp_path, text, kind):
    p = write(tmp_path, "obj.json", text)
    msg = error_of(p)
    assert msg.startswith(f"{p}: expected a JSON list of tasks") and msg.endswith(f"got a {kind}")


@pytest.mark.parametrize("element", [1, "a task", ["task_id"], None])
def test_list_element_not_an_object(tmp_path, element):
    p = write(tmp_path, "t.json", json.dumps([om2w_row("a"), element]))
    msg = error_of(p)
    assert msg.startswith(f"{p}:1: task #2: a task must be a JSON object")


def test_jsonl_element_not_an_object(tmp_path):
    p = write(tmp_path, "t.jsonl", json.dumps(om2w_row("a")) + "\n[1, 2]\n")
    assert error_of(p).startswith(f"{p}:2: a task must be a JSON object, got list")


@pytest.mark.parametrize("drop", ["task_id", "confirmed_task", "website"])
def test_missing_field(tmp_path, drop):
    row = om2w_row("a")
    del row[drop]
    p = write(tmp_path, "t.json", json.dumps([om2w_row("z"), row]))
    msg = error_of(p)
    assert msg.startswith(f"{p}:1: task #2: missing {drop}")


def test_empty_field_counts_as_missing(tmp_path):
    p = write(tmp_path, "t.jsonl", json.dumps(om2w_row("a", confirmed_task="", website="")))
    assert error_of(p).startswith(f"{p}:1: missing confirmed_task, website")


def test_webvoyager_row_missing_field(tmp_path):
    row = wv_row("S--0")
    del row["web"]
    p = write(tmp_path, "wv.jsonl", json.dumps(row))
    msg = error_of(p)
    assert msg.startswith(f"{p}:1: missing") and "id, ques and web" in msg


def test_task_text_must_be_a_string(tmp_path):
    p = write(tmp_path, "t.json", json.dumps([om2w_row("a", confirmed_task=["x"])]))
    msg = error_of(p)
    assert msg.startswith(f"{p}:1: task #1:") and "confirmed_task" in msg


def test_duplicate_ids_json_names_both_places(tmp_path):
    p = write(tmp_path, "t.json", json.dumps([om2w_row("a"), om2w_row("b"), om2w_row("a")]))
    msg = error_of(p)
    assert msg.startswith(f"{p}:1: task #3: duplicate task id 'a'")
    assert f"first at {p}:1: task #1" in msg


def test_duplicate_ids_jsonl_names_both_lines(tmp_path):
    p = write(tmp_path, "t.jsonl", "\n".join(json.dumps(r) for r in [wv_row("S--0"), wv_row("S--1"), wv_row("S--0")]))
    msg = error_of(p)
    assert msg.startswith(f"{p}:3: duplicate task id 'S--0'") and f"first at {p}:1" in msg


@pytest.mark.parametrize("tid", ["../x", "a/b", "a\\b", ".hidden", "..", "x" * 200, " lead", "trail ", "a\nb", 7])
def test_unsafe_ids(tmp_path, tid):
    p = write(tmp_path, "t.json", json.dumps([om2w_row("ok"), om2w_row(tid)]))
    msg = error_of(p)
    assert msg.startswith(f"{p}:1: task #2: task id") and "a task id is a JSON string" in msg


def test_empty_id_is_missing(tmp_path):
    p = write(tmp_path, "t.json", json.dumps([om2w_row("")]))
    assert error_of(p).startswith(f"{p}:1: task #1: missing task_id")


@pytest.mark.parametrize("tid", ["a", "A_b-c.d", "BBC News--0", "x" * 128, "0"])
def test_safe_ids(tmp_path, tid):
    assert load_tasks(write(tmp_path, "t.json", json.dumps([om2w_row(tid)])))[0].task_id == tid


@pytest.mark.parametrize("site", ["ftp://x", "example.com", "javascript:alert(1)", "http://", "file:///etc/passwd",
                                  "//example.com/"])
def test_website_not_http(tmp_path, site):
    p = write(tmp_path, "t.jsonl", json.dumps(om2w_row("a")) + "\n" + json.dumps(om2w_row("b", website=site)))
    msg = error_of(p)
    says = "names no host" if site == "http://" else "is not an http(s) URL"
    assert msg.startswith(f"{p}:2: website {site!r} of task b {says}")


def test_not_utf8(tmp_path):
    p = tmp_path / "latin1.json"
    p.write_bytes('[{"task_id": "a", "confirmed_task": "caf\xe9", "website": "https://a.com"}]'.encode("latin-1"))
    msg = error_of(p)
    assert str(p) in msg and "UTF-8" in msg


def test_parse_tasks_names_the_given_path():
    with pytest.raises(TaskFileError, match=r"^virtual\.json: expected a JSON list"):
        parse_tasks(Path("virtual.json"), "{}")


def test_select_negative_limit_is_an_error(pool):
    with pytest.raises(TaskFileError, match=r"^--limit -1: must be 0"):
        select(pool, limit=-1)


def test_a_site_is_named_the_same_in_the_report_and_the_console():
    from om2w_tui.benchmarks.site_keys import site_name
    from om2w_tui.evaluation.report import site_of

    served = {"127.0.0.1:41001": "shop"}
    assert site_name("{shop}/cart") == site_of("{shop}/cart") == "shop"           # the task file's template
    assert site_name("http://127.0.0.1:41001/cart", served) == "shop"             # the address the run serves
    assert site_name("https://www.booking.com/x") == site_of("https://www.booking.com/x") == "booking.com"


# ── where a task of a JSON document is: its line ──────────
@pytest.mark.parametrize("indent", [None, 1, 4])
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_bad_task_of_a_json_document_is_named_by_its_line(tmp_path, indent, wrapped):
    """A pretty-printed task file (Online-Mind2Web's own is one) names the line the bad task starts on, as an editor
    shows it, with the task's number in the list; with `{"tasks": [...]}` too, after other keys holding lists."""
    rows = [om2w_row("a"), om2w_row("b", notes=["x", {"y": "]"}]), om2w_row("c", confirmed_task=["x"])]
    doc = {"meta": [1, [2]], "tasks": rows} if wrapped else rows
    text = json.dumps(doc, indent=indent)
    p = write(tmp_path, "t.json", text)
    line = text[:text.index('"task_id": "c"')].count("\n") + 1
    if indent:   # the object opens on the line before its first key
        line -= 1
    assert error_of(p).startswith(f"{p}:{line}: task #3: ")


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                     max_leaves=8)
_GAP = st.text(alphabet=" \n\t\r", max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_GAP, _JSON, _GAP), max_size=6), st.booleans(), _GAP, st.dictionaries(
    st.text(max_size=3).filter(lambda k: k != "tasks"), _JSON, max_size=2))
def test_element_lines_finds_each_element_of_any_document(items, wrapped, head, other):
    """The oracle builds the text: each element's JSON (over several lines where `indent` spreads it) after
    whitespace of its own, so where each starts is known; `{"...": x, "tasks": [...]}` too, after other keys."""
    want: list[int] = []
    opening = (head + "{" + "".join(f"{json.dumps(k)}:{json.dumps(v, indent=1)}," for k, v in other.items())
               + '"tasks"' + head + ":" + head + "[") if wrapped else head + "["
    text = opening
    for k, (before, value, after) in enumerate(items):
        text += before
        want.append(text.count("\n") + 1)
        text += json.dumps(value, indent=1 if k % 2 else None) + after + ("," if k < len(items) - 1 else "")
    text += "]" + ("}" if wrapped else "") + head
    assert json.loads(text) == ({**other, "tasks": [v for _, v, _ in items]} if wrapped else [v for _, v, _ in items])
    assert element_lines(text, "tasks" if wrapped else None) == want


def test_element_lines_says_none_for_what_is_no_such_document():
    assert element_lines('{"x": 1}', "tasks") is None
    assert element_lines('{"x": 1}') is None
    assert element_lines("[1, 2") is None
    assert element_lines("[]") == []
