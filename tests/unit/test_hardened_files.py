"""The package hardened against its own inputs (issue 22), the files and sockets part: nothing the run opens in its
folder is followed through a symlink (6), no input it reads back ends in a traceback (7: exit 2, or a skipped line,
or a refused socket line), inputs that can never succeed are refused when the task file is loaded (8), and `ctl`
talks only to the socket a held run lock names (9b). Each test is one item, named by its number; new names are
imported inside the tests, so the file runs against code that lacks them and fails there for the right reason.

The command-line cases run `om2w-tui run --no-ui` as a real process (tests/unit/helpers.py's `run_cli`:
exit 2, the message on stderr, nothing written in the working folder)."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from om2w_tui.cli.main import main
from om2w_tui.engine.config import RunConfig
from tests.stand_ins import STAND_IN_CHROMIUM
from tests.unit.helpers import REPO, assert_usage_error, held_lock, run_cli, task_file

pytestmark = pytest.mark.timeout(120)


def offline(out: Path, **kw: object) -> RunConfig:
    return RunConfig(out=out, bench="offline", model="oracle", chromium=STAND_IN_CHROMIUM, **kw)


def problems_of(cfg: RunConfig) -> list[str]:
    from om2w_tui.engine.launch import run_checks

    pre, checks = run_checks(cfg)
    found = [detail for _, ok, detail in checks if not ok]
    assert (pre is None) == bool(found)
    return found


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    p = tmp_path / "precious.txt"
    p.write_text("keep me\n")
    return p


# ── 6: nothing followed through a symlink ────────────────────────────────────────────────────────────────────
def test_6_a_run_lock_that_is_a_symlink_is_refused_and_its_target_kept(tmp_path, precious):
    from om2w_tui.engine.runlock import OutFolderBusy, RunLock

    out = tmp_path / "out"
    out.mkdir()
    (out / ".om2w-run.lock").symlink_to(precious)
    found = problems_of(offline(out))
    assert found and ".om2w-run.lock: is a symbolic link" in found[0]
    with pytest.raises(OutFolderBusy, match="symbolic link"):
        RunLock(out).acquire()
    assert precious.read_text() == "keep me\n"


@pytest.mark.parametrize("name", ["results.jsonl", "run.json"])
def test_6_the_run_s_own_files_are_refused_as_symlinks(tmp_path, precious, name):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(precious)
    found = problems_of(offline(out))
    assert found and f"{name}: is a symbolic link" in found[0]


def test_6_results_are_never_appended_through_a_symlink(tmp_path, precious):
    from om2w_tui.engine.results import ResultsStore

    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").symlink_to(precious)
    with pytest.raises(OSError, match="symbolic link"):
        ResultsStore(out).append({"task_id": "a", "status": "done"})
    assert precious.read_text() == "keep me\n"


def test_6_a_task_folder_that_is_a_symlink_is_refused_and_nothing_moved(tmp_path):
    from om2w_tui.benchmarks.episode_folder import keep_earlier_attempt

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "offline_shop_search_01").symlink_to(elsewhere, target_is_directory=True)
    found = problems_of(offline(out, task_ids=["offline_shop_search_01"]))
    assert found and "offline_shop_search_01: is a symbolic link" in found[0]
    with pytest.raises(OSError, match="symbolic link"):
        keep_earlier_attempt(out / "offline_shop_search_01")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["mine.txt"]


def test_6_a_task_s_attempts_folder_that_is_a_symlink_is_refused(tmp_path):
    from om2w_tui.benchmarks.episode_folder import keep_earlier_attempt

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    task = tmp_path / "out" / "t1"
    task.mkdir(parents=True)
    (task / "result.json").write_text("{}")
    (task / "attempts").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OSError, match="symbolic link"):
        keep_earlier_attempt(task)
    assert list(elsewhere.iterdir()) == [] and (task / "result.json").exists()


def test_6_the_pace_dir_writes_through_no_symlink_and_makes_no_world_writable_file(tmp_path, precious):
    from om2w_tui.engine.shared_pacing import SharedSitePacer

    pace = tmp_path / "pace"
    pace.mkdir()
    old = os.umask(0)
    try:
        pacer = SharedSitePacer(pace, cooldown=10, names={"a.com": ("a.com",)})
        assert pacer.can_start("a.com", 0.0)
        pacer.acquire("a.com", 0.0)
        # the temporary file of a widened cooldown, at the name a run used to give it, and the stamp: planted links
        (pace / f".a.com.cooldown.{os.getpid()}.tmp").symlink_to(precious)
        pacer.widen("a.com")
        (pace / "a.com.last").symlink_to(precious)
        before = precious.stat().st_mtime_ns
        os.utime(precious, ns=(before - 10**9, before - 10**9))
        pacer.release("a.com", 1.0)
        modes = {p.name: stat.S_IMODE(p.lstat().st_mode) for p in pace.iterdir() if not p.is_symlink()}
    finally:
        os.umask(old)
        pacer.close()
    assert precious.read_text() == "keep me\n" and precious.stat().st_mtime_ns == before - 10**9   # not touched
    assert modes["a.com.lock"] == 0o644 and modes["a.com.cooldown"] == 0o644, modes
    assert not [p for p in pace.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


def test_6_a_pace_lock_that_is_a_symlink_is_refused_before_the_run_and_never_used(tmp_path, precious):
    from om2w_tui.engine.shared_pacing import SharedSitePacer

    pace = tmp_path / "pace"
    pace.mkdir()
    (pace / "a.com.lock").symlink_to(precious)
    notes: list[str] = []
    pacer = SharedSitePacer(pace, cooldown=10, names={"a.com": ("a.com",)}, note=notes.append)
    assert not pacer.can_start("a.com", 0.0)      # as if held: the site waits, nothing is opened through it
    assert notes and "cannot be used" in notes[0]
    pacer.close()
    assert precious.read_text() == "keep me\n"
    # the preflight: the offline suite's shop is `shop.offline.invalid` until its sites run
    (pace / "shop.offline.invalid.lock").symlink_to(precious)
    found = problems_of(offline(tmp_path / "out", pace_dir=pace, task_ids=["offline_shop_search_01"]))
    assert found and found[0].startswith(f"--pace-dir {pace}") and "is a symbolic link" in found[0]


# ── 7: tracebacks become exit 2 ──────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("text, says", [
    (json.dumps([{"task_id": "a", "confirmed_task": "x", "website": "http://[abc/x"}]), "is not a URL"),
    ("[" * 200_000, "nested deeper than JSON is read here"),
    ('[{"task_id": "a", "confirmed_task": "x", "website": "https://a.com/", "max_steps": ' + "9" * 5000 + "}]",
     "not usable JSON"),
    ('[{"task_id": "a", "confirmed_task": "x", "website": "https://a.com/", "max_steps": NaN}]', "not usable JSON"),
], ids=["ipv6-url", "200000-brackets", "5000-digits", "nan"])
def test_7_a_task_file_that_crashed_the_loader_is_a_usage_error(work, text, says):
    p = task_file(work, text)
    assert_usage_error(run_cli(work, "--tasks", str(p)), str(p), says)
    assert not (work / "out").exists()


def _memory_capped() -> None:   # on code that reads /dev/zero whole, fail in seconds rather than fill the machine
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_7_dev_zero_as_a_task_file_is_refused(work):
    env = {k: v for k, v in os.environ.items() if k not in ("CHROME_PATH", "OM2W_CHROMIUM")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-m", "om2w_tui", "run", "--no-ui", "--bench", "webvoyager",
                           "--model", "oracle", "--chromium", STAND_IN_CHROMIUM, "--tasks", "/dev/zero",
                           "--out", str(work / "out")], cwd=work, env=env, capture_output=True, text=True,
                          timeout=60, preexec_fn=_memory_capped)
    assert_usage_error(proc, "/dev/zero: is not a regular file")
    assert not (work / "out").exists()


def test_7_a_fifo_as_a_task_file_is_refused_not_waited_on(work):
    fifo = work / "tasks.fifo.json"
    os.mkfifo(fifo)
    assert_usage_error(run_cli(work, "--tasks", str(fifo), timeout=20), f"{fifo}: is not a regular file")


@pytest.mark.parametrize("out", ["/proc", "/sys/kernel"])
def test_7_an_out_folder_that_takes_no_file_is_a_usage_error(work, out):
    assert_usage_error(run_cli(work, "--bench", "offline", out=Path(out)), f"--out {out}", "holds no files")


def test_7_a_pace_dir_that_takes_no_file_is_refused_before_anything_is_written(work):
    proc = run_cli(work, "--bench", "offline", "--pace-dir", "/proc/x")
    assert_usage_error(proc, "--pace-dir /proc/x")
    assert not (work / "out").exists()


@pytest.mark.parametrize("name", [".om2w-run.lock", "results.jsonl"])
def test_7_a_lock_or_results_file_that_is_a_folder_is_a_usage_error(work, name):
    (work / "out" / name).mkdir(parents=True)
    assert_usage_error(run_cli(work, "--bench", "offline"), f"{name}: is a folder")


DEEP = "[" * 100_000


def _deep_run(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    (out / "t1" / "trajectory").mkdir(parents=True)
    (out / "t1" / "result.json").write_text(DEEP)
    (out / "t1" / "trajectory" / "0_full_screenshot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    good = {"task_id": "t1", "status": "done", "finished_at": 1.0}
    (out / "results.jsonl").write_text(json.dumps(good) + "\n" + DEEP + "\n")
    return out


def test_7_a_deep_line_in_the_results_or_a_deep_result_json_is_read_past(tmp_path, capsys):
    from om2w_tui.benchmarks.episode_folder import load_result
    from om2w_tui.engine.results import read_results

    out = _deep_run(tmp_path)
    log = read_results(out)                       # every later resume reads this
    assert [r["task_id"] for r in log.records] == ["t1"] and len(log.warnings) == 1
    assert "nested deeper" in load_result(out / "t1").error
    assert main(["check", str(out)]) == 1         # a problem listed, not a traceback
    assert "result.json: nested deeper than JSON is read here" in capsys.readouterr().out
    assert main(["report", str(out)]) == 0
    capsys.readouterr()
    (out / "judge.jsonl").write_text(DEEP + "\n")
    from om2w_tui.evaluation.judge_files import read_judged

    assert read_judged(out / "judge.jsonl") == {}


async def test_7_a_deep_line_on_the_control_socket_gets_a_reply(tmp_path):
    from om2w_tui.engine.control_socket import SOCKET_NAME, ControlServer
    from om2w_tui.engine.wire import StatusReply, read
    from om2w_tui.protocol.control import Refused, Status, request_line
    from tests.fakes import FakeRun

    with held_lock(tmp_path, SOCKET_NAME):
        async with ControlServer(tmp_path).serving(FakeRun()):
            reader, writer = await asyncio.open_unix_connection(str(tmp_path / SOCKET_NAME))
            for line in (b"[" * 5000, b"\xff\xfe{}", b'{"cmd": "workers", "n": ' + b"9" * 5000 + b"}"):
                writer.write(line + b"\n")
                await writer.drain()
                reply = read(await asyncio.wait_for(reader.readline(), 10))
                assert isinstance(reply, Refused) and "not a JSON line" in reply.error
            writer.write(request_line(Status()))
            await writer.drain()
            assert isinstance(read(await asyncio.wait_for(reader.readline(), 10)), StatusReply)   # it still serves
            writer.close()


def test_7_a_terminal_of_0_columns_opens_the_image_widget():
    import pty

    leader, follower = pty.openpty()   # a new pty has 0 rows and 0 columns until someone sizes it
    try:
        proc = subprocess.run([sys.executable, "-c", "import om2w_tui.frontends.console.widgets.screenshot as w; "
                               "print(w.get_cell_size())"], stdin=follower, stdout=follower,
                              stderr=subprocess.PIPE, timeout=60, cwd=REPO)
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]


# ── 8: refused at load, rather than failing in every attempt ─────────────────────────────────────────────────
@pytest.mark.parametrize("row, says", [
    ({"task_id": "abc\n"}, "a task id is a JSON string"),
    ({"confirmed_task": "find \ud800 this"}, "lone surrogate"),
    ({"website": "https://a.com/\udfff"}, "lone surrogate"),
    ({"website": "http://a.com:99999/"}, "is not a URL"),
    ({"website": "http://:80/"}, "names no host"),
    ({"website": "http://a.com:0/"}, "port outside"),
    ({"max_steps": 10 ** 9}, "max_steps of task"),
])
def test_8_a_task_that_could_never_run_is_refused_at_load(work, row, says):
    base = {"task_id": "a", "confirmed_task": "x", "website": "https://a.com/"}
    p = task_file(work, json.dumps([{**base, **row}]))   # ensure_ascii: a surrogate is written as its escape
    assert_usage_error(run_cli(work, "--tasks", str(p)), str(p), says)


def test_8_a_port_out_of_range_or_no_host_in_the_endpoint_is_refused(work):
    for url in ("http://127.0.0.1:70000/v1", "http://:8000/v1"):
        assert_usage_error(run_cli(work, "--bench", "offline", "--vllm", url, model="qwen"), "--vllm")


# ── 9b: ctl and attach talk only to the run's own socket ─────────────────────────────────────────────────────
class RogueServer:
    """A process that is no run, answering every line on a socket it left in a folder."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.asked = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.asked += 1
            with conn:
                conn.recv(65536)
                conn.sendall(b'{"ok": true, "message": "stopped (says a stranger)"}\n')

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("command", [["ctl", "{out}", "stop"], ["attach", "{out}"]])
def test_9b_a_socket_no_run_s_lock_names_is_never_talked_to(tmp_path, capsys, command):
    from om2w_tui.engine.control_socket import SOCKET_NAME

    rogue = RogueServer(tmp_path / SOCKET_NAME)
    try:
        assert main([c.format(out=tmp_path) for c in command]) == 2
    finally:
        rogue.close()
    assert rogue.asked == 0
    err = capsys.readouterr().err
    assert "no run is listening" in err and "no running run's" in err


def test_9b_a_socket_beside_the_run_s_that_its_lock_does_not_name_is_ignored(tmp_path, capsys):
    rogue = RogueServer(tmp_path / ".om2w-control.evil.sock")
    try:
        with held_lock(tmp_path, ".om2w-control.sock"):
            assert main(["ctl", str(tmp_path), "stop", "--socket", ".om2w-control.evil.sock"]) == 2
    finally:
        rogue.close()
    assert rogue.asked == 0 and "no running run there names the control socket" in capsys.readouterr().err


def test_9b_the_named_socket_must_be_served_by_the_lock_s_holder(tmp_path, capsys):
    """Another process listening at the very name the run's lock says (its socket replaced): refused by its pid."""
    from om2w_tui.engine.control_socket import SOCKET_NAME

    script = (f"import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind({str(tmp_path / SOCKET_NAME)!r})\n"
              f"s.listen(4)\nprint('ready',flush=True)\nc,_=s.accept()\nc.sendall(b'{{\"ok\": true}}\\n')\n"
              f"time.sleep(5)\n")
    stranger = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert stranger.stdout is not None and stranger.stdout.readline().strip() == "ready"
        with held_lock(tmp_path, SOCKET_NAME):
            assert main(["ctl", str(tmp_path), "status"]) == 2
    finally:
        stranger.kill()
        stranger.wait()
    err = capsys.readouterr().err
    assert f"is served by pid {stranger.pid}" in err and "not talked to" in err
