"""Hardening, second round (issue 30), the files part: one way to open a file the project reads or writes (item 1:
never through a symlink where the file is the run's own, a regular file only, a bound on every read, appends that
refuse a symlink or a FIFO), one bounded decoder for everything read back (item 2: a record of the wrong shape named
and skipped, never a traceback), and the control socket's bounds (its connections, its long lines) with results
written under file-descriptor pressure. Each test is one finding of the issue; the commands run as real processes.
New names are imported inside the tests, so the file runs against code that lacks them and fails there."""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from om2w_tui.json_input import InputError
from tests.unit.helpers import assert_usage_error, held_lock, judge_file, make_run, record, run_cli

REPO = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000
JUDGE_NAME = "om2w-tui_WebJudge_Online_Mind2Web_eval_m_score_threshold_3_auto_eval_results.json"

pytestmark = pytest.mark.timeout(120)


def cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "om2w_tui", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    p = tmp_path / "victim"
    p.write_text("keep me\n")
    return p


def a_run(tmp_path: Path, *tids: str) -> Path:
    return make_run(tmp_path / "run", [record(t) for t in tids or ("t1",)])


# ── 1: one way to open a file ────────────────────────────────────────────────────────────────────────────────
def test_1_the_judge_never_appends_through_a_symlink_nor_to_a_fifo(tmp_path, victim):
    from om2w_tui.evaluation.judge_files import append_line

    link = tmp_path / JUDGE_NAME
    link.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        append_line(link, {"task_id": "t1", "predicted_label": 1})
    assert victim.read_text() == "keep me\n"
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO"):   # refused at once, never waited on
        append_line(fifo, {"task_id": "t1", "predicted_label": 1})


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dev-zero"])
def test_1_judge_refuses_an_output_file_that_is_no_file_of_its_own(tmp_path, victim, kind):
    out = a_run(tmp_path)
    target = out / JUDGE_NAME
    if kind == "symlink":
        target.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    proc = cli("judge", str(out), "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m", "--retries", "0",
               cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert JUDGE_NAME in proc.stderr and "Traceback" not in proc.stderr
    assert victim.read_text() == "keep me\n"


def test_1_a_run_with_a_live_judge_refuses_a_symlinked_judge_file_before_it_starts(tmp_path, victim):
    from om2w_tui.engine.config import RunConfig
    from om2w_tui.engine.launch import run_checks
    from om2w_tui.evaluation.live_judge import LIVE_JUDGE
    from om2w_tui.secret import EndpointURL
    from tests.stand_ins import STAND_IN_CHROMIUM

    out = tmp_path / "out"
    out.mkdir()
    (out / JUDGE_NAME).symlink_to(victim)
    cfg = RunConfig(out=out, bench="offline", model="oracle", chromium=STAND_IN_CHROMIUM, judge_model="m",
                    judge_url=EndpointURL.parse("http://127.0.0.1:9/v1"))
    pre, checks = run_checks(cfg, check_model=False, companions=[LIVE_JUDGE])
    assert pre is None
    assert any(JUDGE_NAME in detail and "symbolic link" in detail for _, ok, detail in checks if not ok), checks
    assert victim.read_text() == "keep me\n"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "deep", "at"])
def test_1_2_a_labels_file_that_is_no_labels_file_is_named_by_report(tmp_path, victim, kind):
    out = a_run(tmp_path)
    labels = out / "labels.bob.json"
    good = {"format": "om2w-tui-labels", "version": 1, "annotator": "bob",
            "labels": {"t1": {"label": "1", "at": 1.0}}}
    if kind == "symlink":
        victim.write_text(json.dumps(good))
        labels.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(labels)
    elif kind == "deep":
        labels.write_text(DEEP)
    else:
        good["labels"]["t1"]["at"] = "abc"
        labels.write_text(json.dumps(good))
    proc = cli("report", str(out), cwd=tmp_path)
    # a FIFO by an annotator's name is named too (never waited on, never passed over: it held bob's labels)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "labels.bob.json" in proc.stderr and "Traceback" not in proc.stderr
    assert {"symlink": "symbolic link", "deep": "nested deeper", "at": "at: a string",
            "fifo": "not a regular file"}[kind] in proc.stderr


@pytest.mark.parametrize("kind", ["deep", "fifo"])
def test_1_2_a_human_label_json_given_to_labels_or_export_is_checked_before_use(tmp_path, kind):
    given = tmp_path / "human_label.json"
    if kind == "deep":
        given.write_text(DEEP)
    else:
        os.mkfifo(given)
    proc = cli("report", "--labels", str(given), cwd=tmp_path)
    assert proc.returncode == 2 and f"--labels {given}" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert ("nested deeper" if kind == "deep" else "FIFO") in proc.stderr
    out = a_run(tmp_path)
    from om2w_tui.evaluation.labels import LabelFile

    LabelFile.open(out, "bob").set("t1", "1")
    proc = cli("label", str(out), "--export", str(given), "--agent", "A", cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert str(given) in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_1_a_screenshot_that_is_a_fifo_or_dev_zero_is_a_problem_not_a_hang(tmp_path, kind):
    from om2w_tui.evaluation.judge_prompts import jpeg_data_url

    out = a_run(tmp_path)
    shot = out / "t1" / "trajectory" / "1_full_screenshot.png"
    if kind == "fifo":
        os.mkfifo(shot)
    else:
        shot.symlink_to("/dev/zero")
    proc = cli("check", str(out), cwd=tmp_path)
    assert proc.returncode == 1 and "1_full_screenshot.png" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    with pytest.raises(InputError, match="1_full_screenshot.png"):   # the judge's read: named, at once
        jpeg_data_url(shot)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "large"])
def test_1_an_instruction_template_that_is_no_small_file_is_a_usage_error(tmp_path, kind):

    work = tmp_path / "work"
    work.mkdir()
    template = tmp_path / "template.txt"
    if kind == "fifo":
        os.mkfifo(template)
    elif kind == "dev-zero":
        template = Path("/dev/zero")
    else:
        template.write_text("{task}" + " " * (2 << 20))
    proc = run_cli(work, "--instruction-template", str(template))
    assert_usage_error(proc, f"--instruction-template {template}")


# a plain open of a path, anywhere in the package but files.py and json_input.py (the one way to open a file)
_PLAIN_OPEN = re.compile(r"(?<![\w.])(?<!def )open\(|\.read_text\(|\.read_bytes\(\)|\.write_text\(|\.write_bytes\("
                         r"|Image\.open\((?!io\.BytesIO)|\bos\.open\(|shutil\.copy")
# os.open where it cannot follow a link or open a file of another kind: a folder, /dev/null, O_NOFOLLOW
_OS_OPEN_OK = re.compile(r"O_DIRECTORY|os\.devnull|O_NOFOLLOW")


def test_1_no_plain_open_is_left_outside_the_one_way_to_open_a_file():
    found = []
    for path in sorted((REPO / "om2w_tui").rglob("*.py")):
        if path.name in ("files.py", "json_input.py") and path.parent.name == "om2w_tui":
            continue
        for n, text in enumerate(path.read_text().splitlines(), 1):
            if _PLAIN_OPEN.search(text) and not (("os.open(" in text) and _OS_OPEN_OK.search(text)):
                found.append(f"{path.relative_to(REPO)}:{n}: {text.strip()}")
    assert found == []


# ── 2: one bounded decoder for what is read back ─────────────────────────────────────────────────────────────
@pytest.mark.parametrize("bad", [{"error_kind": ["infra"], "status": "error"}, {"status": 5},
                                 {"finished_at": 10 ** 400}, {"attempt": "two"}])
def test_2_a_results_record_of_the_wrong_shape_is_named_and_read_past(tmp_path, bad):
    from om2w_tui.engine.results import read_results

    out = make_run(tmp_path / "run", [record("t1"), record("t2", **bad)])
    log = read_results(out)                    # resume reads this: it must not be blocked by one line
    assert [r["task_id"] for r in log.records] == ["t1"]
    assert len(log.warnings) == 1 and f"{out / 'results.jsonl'}:2:" in log.warnings[0]
    assert log.settled() == {"t1"}
    proc = cli("report", str(out), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert any(w.startswith(f"{out / 'results.jsonl'}:2: ") for w in json.loads(proc.stdout)["runs"][0]["warnings"])


def test_2_a_run_json_whose_task_file_is_not_what_was_written_is_named_and_ignored(tmp_path):
    out = a_run(tmp_path)
    manifest = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**manifest, "task_file": "tasks.json", "first_started_at": "x"}))
    proc = cli("report", str(out), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    said = json.loads(proc.stdout)["runs"][0]["warnings"]
    assert f"{out / 'run.json'}: task_file: a string, not an object; ignored" in said, said


def test_2_a_reference_length_past_any_number_costs_the_estimate_not_the_run():
    from om2w_tui.benchmarks.tasks import Task
    from om2w_tui.engine.dispatch import task_units

    task = Task("t1", "x", "https://a.com/", None, {"reference_length": 10 ** 400})
    assert task_units(task) is None


def test_2_numbers_past_64_bits_are_refused_by_the_decoder():
    from om2w_tui.json_input import decode

    for text in ('{"n": 1' + "0" * 400 + "}", '{"n": -' + "9" * 4000 + "}", '{"n": ' + "9" * 400 + ".5}"):
        with pytest.raises(InputError, match="x.json"):
            decode(text, "x.json")
    assert decode('{"n": 9223372036854775807, "s": "' + "1" * 40 + '"}', "x.json")["n"] == (1 << 63) - 1


def test_2_nan_lines_in_a_judge_file_are_skipped_with_a_word(tmp_path):
    from om2w_tui.evaluation.judge_files import read_judged

    out = a_run(tmp_path, "t1", "t2")
    path = judge_file(out, {"t1": 1})
    with path.open("a") as f:
        f.write('{"task_id": "t2", "predicted_label": NaN}\n{"task_id": "t3", "predicted_label": [1]}\n')
    said: list[str] = []
    assert set(read_judged(path, said.append)) == {"t1"}
    assert [w.split(": ")[0] for w in said] == [f"{path}:2", f"{path}:3"]
    proc = cli("report", str(out), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert any(w.startswith(f"{path}:2: ") for w in json.loads(proc.stdout)["runs"][0]["warnings"]), proc.stdout


# ── the control socket: its connections bounded, every line answered; results written under fd pressure ─────
async def test_the_control_socket_refuses_connections_past_its_bound_and_serves_the_rest(tmp_path):
    from om2w_tui.engine.control_socket import MAX_CLIENTS, SOCKET_NAME, ControlServer
    from om2w_tui.engine.wire import StatusReply, read
    from om2w_tui.protocol.control import Refused, Status, request_line
    from tests.fakes import FakeRun

    with held_lock(tmp_path, SOCKET_NAME):
        async with ControlServer(tmp_path).serving(FakeRun()) as server:
            held = []
            for _ in range(MAX_CLIENTS):
                r, w = await asyncio.open_unix_connection(str(tmp_path / SOCKET_NAME))
                w.write(request_line(Status()))
                await w.drain()
                assert isinstance(read(await asyncio.wait_for(r.readline(), 10)), StatusReply)
                held.append((r, w))
            assert len(server.clients) == MAX_CLIENTS
            r, w = await asyncio.open_unix_connection(str(tmp_path / SOCKET_NAME))
            reply = read(await asyncio.wait_for(r.readline(), 10))
            assert isinstance(reply, Refused) and f"at most {MAX_CLIENTS} connections" in reply.error
            assert await asyncio.wait_for(r.read(), 10) == b""   # and closed
            w.close()
            r0, w0 = held[0]                                      # the ones held are still served
            w0.write(request_line(Status()))
            await w0.drain()
            assert isinstance(read(await asyncio.wait_for(r0.readline(), 10)), StatusReply)
            for _, w in held:
                w.close()


async def test_a_socket_line_over_64_kib_gets_its_refused_answer_and_the_connection_goes_on(tmp_path):
    from om2w_tui.engine.control_socket import SOCKET_NAME, ControlServer
    from om2w_tui.engine.wire import StatusReply, read
    from om2w_tui.protocol.control import Refused, Status, request_line
    from tests.fakes import FakeRun

    with held_lock(tmp_path, SOCKET_NAME):
        async with ControlServer(tmp_path).serving(FakeRun()):
            reader, writer = await asyncio.open_unix_connection(str(tmp_path / SOCKET_NAME))
            for size in (70_000, 1_000_000):
                writer.write(b'{"cmd": "status", "x": "' + b"a" * size + b'"}\n')
                await writer.drain()
                reply = read(await asyncio.wait_for(reader.readline(), 10))
                assert isinstance(reply, Refused) and "longer than 64 KiB" in reply.error
            writer.write(request_line(Status()))
            await writer.drain()
            assert isinstance(read(await asyncio.wait_for(reader.readline(), 10)), StatusReply)
            writer.close()


async def test_a_socket_number_of_4000_digits_is_refused_by_name(tmp_path):
    from om2w_tui.engine.control_socket import SOCKET_NAME, ControlServer
    from om2w_tui.engine.wire import read
    from om2w_tui.protocol.control import Refused
    from tests.fakes import FakeRun

    with held_lock(tmp_path, SOCKET_NAME):
        async with ControlServer(tmp_path).serving(FakeRun()) as server:
            reader, writer = await asyncio.open_unix_connection(str(tmp_path / SOCKET_NAME))
            writer.write(b'{"cmd": "kill", "slot": ' + b"9" * 4000 + b', "id": ' + b"9" * 4000 + b"}\n")
            await writer.drain()
            reply = read(await asyncio.wait_for(reader.readline(), 10))
            assert isinstance(reply, Refused) and "beyond 64 bits" in reply.error
            assert server._control.commands == []
            writer.close()


@pytest.mark.parametrize("first_before", [True, False])
def test_results_are_written_when_the_process_has_no_file_descriptor_left(tmp_path, first_before):
    from om2w_tui.engine.results import ResultsStore, read_results

    store = ResultsStore(tmp_path)
    if first_before:
        store.append({"task_id": "a", "status": "done"})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    taken: list[int] = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
        with pytest.raises(OSError):   # every descriptor taken, as a thousand held connections take them
            while True:
                taken.append(os.open(os.devnull, os.O_RDONLY))
        store.append({"task_id": "b", "status": "done"})
    finally:
        for fd in taken:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        store.close()
    assert [r["task_id"] for r in read_results(tmp_path).records] == ["a", "b"][1 - first_before:]
