"""Hypothesis searches the inputs a run reads (issue 22): task files, flags and control-socket lines. Whatever it
finds, the answer is exit 0 or 2 with nothing written (doctor), a task that can run or a TaskFileError (the loader),
a value the setting's own check accepts or a message naming the flag (the flags), and a reply on the socket with
only well-formed commands reaching the run (the control socket). Never a traceback."""

from __future__ import annotations

import contextlib
import json
import string
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from om2w_tui.benchmarks.tasks import DEFAULT_MAX_STEPS, MAX_STEPS, TaskFileError, load_tasks
from om2w_tui.cli.main import main
from om2w_tui.engine.control_socket import ControlServer
from om2w_tui.engine.settings import MAX_WORKERS, SETTINGS, Choice, Endpoint, Number, PathKind, Switch, Whole
from om2w_tui.engine.wire import line as message_line
from om2w_tui.engine.wire import read as read_message
from om2w_tui.protocol.control import COMMANDS, Refused
from om2w_tui.secret import check_http_url
from tests.fakes import FakeRun
from tests.stand_ins import STAND_IN_CHROMIUM

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def no_model_question(monkeypatch):
    """doctor without sending the model the run's first step (a probe process of seconds per example; the question
    is tested in tests/unit/test_model_check.py): what is searched here is the reading of the inputs."""
    monkeypatch.setattr("om2w_tui.engine.launch.model_checks", lambda cfg, tasks: [])

# ── task files ───────────────────────────────────────────────────────────────────────────────────────────────────
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=8), inner, max_size=3), max_leaves=12)
odd_text = st.text(max_size=30) | st.sampled_from(["abc\n", " a", "a ", ".hidden", "results.jsonl", "run.json",
                                                   "\ud800", "a\x00b", "a/b", "..", "é"])
websites = st.sampled_from(["https://a.com/", "http://[abc/x", "http://a.com:99999/", "http://:80/", "ftp://a.com",
                            "https://a.com/\udfff", "http://a.com:0/", "https://xn--e1afmkfd.xn--p1ai/",
                            "http://[::1]:8080/", "https://a.com:443/x?q=1"]) | st.text(max_size=30)
rows = st.fixed_dictionaries(
    {"task_id": odd_text, "confirmed_task": odd_text, "website": websites},
    optional={"level": json_value, "max_steps": st.integers(-5, 10 ** 12) | json_value,
              "reference_answer": json_value, "extra": json_value})


def _task_file_text(draw_rows: list[dict], shape: str, cut: int) -> str:
    if shape == "jsonl":
        text = "\n".join(json.dumps(r) for r in draw_rows)
    elif shape == "wrapped":
        text = json.dumps({"tasks": draw_rows})
    else:
        text = json.dumps(draw_rows)
    return text[:cut] if cut else text


@FUZZ
@given(st.lists(rows, max_size=4), st.sampled_from(["json", "jsonl", "wrapped"]), st.integers(0, 400),
       st.sampled_from(["", "[" * 3000, "\ufeff", "{" * 70]))
def test_a_task_file_loads_into_tasks_that_can_run_or_is_refused_by_name(draw, shape, cut, prefix):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"tasks.{'jsonl' if shape == 'jsonl' else 'json'}"
        path.write_text(prefix + _task_file_text(draw, shape, cut), encoding="utf-8", errors="surrogateescape")
        try:
            tasks = load_tasks(path)
        except TaskFileError as e:
            assert str(path) in str(e)
            return
    for t in tasks:   # what was loaded can be run: a folder name, a URL a browser opens, text a pipe carries
        assert check_http_url(t.website) == "" and t.site
        assert t.task_id.strip() == t.task_id and "\n" not in t.task_id and "/" not in t.task_id
        json.dumps(t.to_dict(), ensure_ascii=False).encode("utf-8")
        assert 1 <= t.max_steps <= MAX_STEPS and t.max_steps == (t.raw.get("max_steps") or DEFAULT_MAX_STEPS)


@FUZZ
@given(st.lists(rows, min_size=1, max_size=3), st.integers(0, 300))
def test_doctor_on_any_task_file_exits_0_or_2_and_writes_nothing(capsys, no_model_question, draw, cut):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "tasks.json"
        path.write_text(_task_file_text(draw, "json", cut), encoding="utf-8", errors="surrogateescape")
        code = main(["doctor", "--bench", "webvoyager", "--tasks", str(path), "--model", "oracle", "--chromium",
                     STAND_IN_CHROMIUM, "--out", str(Path(d) / "out")])
        assert code in (0, 2)
        assert sorted(p.name for p in Path(d).iterdir()) == ["tasks.json"]
    capsys.readouterr()


# ── flags ────────────────────────────────────────────────────────────────────────────────────────────────────────
VALUE_FLAGS = [s for s in SETTINGS if not isinstance(s.kind, Switch | PathKind)]
flag_text = (st.text(max_size=25) | st.sampled_from(["nan", "-inf", "1e999", "1_000", "0x10", "\u0663", "+7", " 3 ",
                                                       "1e-400", "-0", "0.0", "512", "513", "9" * 30, "2.5"])
             | st.integers(-10 ** 6, 10 ** 6).map(str) | st.floats(allow_nan=True).map(repr))


@FUZZ
@given(st.sampled_from(VALUE_FLAGS), flag_text)
def test_a_flag_takes_a_value_its_setting_accepts_or_names_itself(setting, text):
    try:
        value = setting.parse(text)
    except ValueError as e:
        assert str(e)   # the caller prefixes the flag (cli/argtypes.py)
        return
    assert setting.check(value) == "", (setting.flag, text, value)
    if isinstance(setting.kind, Whole | Number):
        if value is None:   # an optional number's empty text: unset (a --top-p or --seed not sent)
            assert setting.kind.optional and text.strip() == "", (setting.flag, text)
        else:
            assert setting.kind.low <= value <= setting.kind.high


DOCTOR_FLAGS = [s for s in VALUE_FLAGS if not isinstance(s.kind, Endpoint) and s.key not in (
    "model", "executor", "ray_address", "arm", "bench")]   # those reach a model server or a Ray cluster


@FUZZ
@given(st.sampled_from(DOCTOR_FLAGS), flag_text)
def test_doctor_with_any_flag_value_exits_0_or_2_and_writes_nothing(capsys, no_model_question, setting, text):
    with tempfile.TemporaryDirectory() as d:
        try:
            code = main(["doctor", "--bench", "offline", "--model", "oracle", "--chromium", STAND_IN_CHROMIUM,
                         "--out", str(Path(d) / "out"), f"{setting.flag}={text}"])
        except SystemExit as e:   # argparse: a value its parser refused, said on stderr naming the flag
            code = e.code
            assert setting.flag in capsys.readouterr().err
        assert code in (0, 2)
        assert list(Path(d).iterdir()) == []
    capsys.readouterr()


@FUZZ
@given(st.text(alphabet=string.printable + "é\udfff", max_size=60))
def test_an_endpoint_flag_is_a_url_a_client_can_open_or_refused(text):
    kind = next(s.kind for s in SETTINGS if isinstance(s.kind, Endpoint))
    try:
        url = kind.parse("http://user:pw-fuzz@" + text)
    except ValueError as e:
        assert "pw-fuzz" not in str(e)
        return
    if url is not None:
        assert check_http_url(url.for_client()) == "" and "pw-fuzz" not in str(url) + repr(url)


# ── control-socket lines ─────────────────────────────────────────────────────────────────────────────────────────
command = st.fixed_dictionaries({"cmd": st.sampled_from(list(COMMANDS.types)) | st.text(max_size=8)},
                                optional={"n": json_value, "task": json_value, "slot": json_value,
                                          "force": json_value, "reason": json_value, "id": json_value})
socket_line = (st.binary(max_size=80) | command.map(lambda c: json.dumps(c).encode())
               | st.integers(1, 6000).map(lambda n: b"[" * n) | json_value.map(lambda v: json.dumps(v).encode()))


@FUZZ
@given(socket_line)
def test_every_socket_line_gets_a_clean_reply_and_only_good_commands_reach_the_run(line):
    run = FakeRun()
    server = ControlServer(Path(tempfile.gettempdir()))
    server._control = run
    reply, *_ = server._answer(line, SimpleNamespace(subscribed=False))
    assert not isinstance(reply, Refused) or reply.error
    assert read_message(message_line(reply)) == reply   # it can be sent, and read back
    for call in run.commands:
        if call[0] == "set_workers":
            assert isinstance(call[1], int) and 1 <= call[1] <= MAX_WORKERS
        if call[0] in ("kill", "pause_episode"):
            assert call[1] == 0   # the one running slot of the stand-in run


def test_the_settings_cover_every_kind_the_fuzz_reaches():
    kinds = {type(s.kind) for s in VALUE_FLAGS}
    assert {Whole, Number, Choice, Endpoint} <= kinds


@pytest.mark.parametrize("bad", [b"[" * 100_000, b"\x00" * 10, b'{"cmd": "workers", "n": 1e999}'])
def test_known_hard_lines_are_answered(bad):
    server = ControlServer(Path(tempfile.gettempdir()))
    server._control = FakeRun()
    assert isinstance(server._answer(bad, SimpleNamespace(subscribed=False))[0], Refused)


# ── the files a run reads back (issue 30): results records, run.json, labels, human_label.json, judge files ───────
RECORD_KEYS = ("error", "attempt", "finished_at", "steps", "duration_s", "agent_done",
               "model_calls", "level", "website", "correct", "answer")
odd_values = st.sampled_from(["error", "infra", ["infra"], "done", 5, 10 ** 30, "abc", {"a": 1}]) | json_value
records = st.fixed_dictionaries({"task_id": odd_text | json_value, "status": odd_values, "error_kind": odd_values},
                                optional={k: odd_values for k in RECORD_KEYS})
label_entries = st.fixed_dictionaries({}, optional={"label": json_value | st.sampled_from(["0", "1", "2", 1]),
                                                    "reason": json_value, "note": json_value, "at": json_value})
human_rows = st.fixed_dictionaries({"task_id": odd_text | json_value},
                                   optional={"confirmed_task": json_value, "A_human_label": json_value | st.just("1")})
judged_lines = st.fixed_dictionaries({"task_id": odd_text | json_value},
                                     optional={"predicted_label": json_value | st.sampled_from([0, 1]),
                                               "image_judge_record": json_value, "attempt": json_value,
                                               "judge_model": json_value, "mode": json_value})
hard_text = st.sampled_from(["[" * 3000, "{" * 70, "NaN", '{"a": 1e999}', '{"n": ' + "9" * 4000 + "}", "\xff", ""])


def _lines(values: list, extra: str) -> bytes:
    return ("\n".join(json.dumps(v) for v in values) + "\n" + extra).encode("utf-8", "surrogatepass")


@FUZZ
@given(st.lists(records, max_size=4), hard_text,
       st.fixed_dictionaries({}, optional={"task_file": json_value | st.fixed_dictionaries({"path": json_value}),
                                           "config": json_value, "first_started_at": json_value}),
       st.dictionaries(odd_text, label_entries | json_value, max_size=3), st.lists(human_rows, max_size=3),
       st.lists(judged_lines, max_size=3), hard_text)
def test_every_reader_of_a_run_s_files_reads_them_or_names_what_is_wrong(recs, extra, manifest, labels, rows, judged,
                                                                         hard):
    from om2w_tui.engine.results import EpisodeRecord, read_manifest, read_results
    from om2w_tui.evaluation.judge_files import read_judged
    from om2w_tui.evaluation.labels import LabelFileError, read_human_labels, read_label_file
    from om2w_tui.evaluation.report import summarize, task_meta
    from om2w_tui.json_input import InputError

    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        (out / "results.jsonl").write_bytes(_lines(recs, extra))
        (out / "run.json").write_text(json.dumps(manifest) if hard == "" else hard)
        (out / "labels.bob.json").write_text(json.dumps({"format": "om2w-tui-labels", "labels": labels}))
        (out / "labels.eve.json").write_text(hard)
        (out / "human_label.json").write_text(json.dumps(rows))
        judge = out / "om2w-tui_WebJudge_Online_Mind2Web_eval_m_score_threshold_3_auto_eval_results.json"
        judge.write_bytes(_lines(judged, hard))
        log = read_results(out)   # resume: whatever the lines, it reads past them
        log.latest_records(), log.settled(), log.attempts()
        for rec in log.records:
            assert EpisodeRecord.from_json(rec).settles in (True, False)
        data, _ = read_manifest(out / "run.json")
        task_meta(data)
        said: list[str] = []
        read_judged(judge, said.append)
        assert all(w.startswith(str(judge)) for w in said)
        for path in (out / "labels.bob.json", out / "labels.eve.json"):
            with contextlib.suppress(LabelFileError):
                read_label_file(path)
        with contextlib.suppress(LabelFileError):
            read_human_labels(out / "human_label.json")
        with contextlib.suppress(LabelFileError, InputError):   # report's exit 2, naming the file
            summarize(out)
