"""The tests' own house rules: no test module imports from another (what tests share lives in tests/fakes.py, a
folder's helpers module or its conftest.py), and the shared fakes behave as docs/contributing.md says."""

from __future__ import annotations

import ast
import re
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from om2w_tui.engine.events import DispatchChanged, Log
from tests.fakes import FakeRun, Recorder, Reply, Request, StubServer, every

TESTS = Path(__file__).resolve().parents[1]


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)


def _imports(path: Path, module: str = "") -> list[tuple[int, str]]:
    """(line, module) for each module the file (`module`, by default its own name) imports, relative imports made
    absolute, `from pkg import mod` as pkg.mod where pkg/mod.py is a file."""
    package = (module or _module_of(path)).rsplit(".", 1)[0]
    text = path.read_text()
    found: list[tuple[int, str]] = []
    if not re.search(r"^\s*(from|import)\s.*test_", text, re.M):   # no import names a test module: skip the parse
        return found
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names
                      if (TESTS.parent / Path(*base.split("."), f"{alias.name}.py")).is_file()]
    return found


def test_no_test_module_imports_from_another():
    bad = [f"{path.relative_to(TESTS.parent)}:{line}: imports {module}"
           for path in sorted(TESTS.rglob("*.py"))
           for line, module in _imports(path)
           if module.startswith("tests.") and any(part.startswith("test_") for part in module.split("."))]
    assert not bad, "a test module imports another; move what they share to tests/fakes.py, the folder's " \
                    "helpers module or its conftest.py:\n" + "\n".join(bad)


def test_the_check_sees_each_way_of_importing_a_test_module(tmp_path):
    lines = ["from tests.unit.test_report import record", "import tests.ui.test_dashboard",
             "from .test_scheduler import Recorder", "from ..unit.test_report import make_run",
             "from tests.unit import test_cli_errors"]
    probe = tmp_path / "probe.py"
    probe.write_text("\n".join(lines) + "\n")
    modules = [m for _, m in _imports(probe, "tests.unit.probe")]
    assert {"tests.unit.test_report", "tests.ui.test_dashboard", "tests.unit.test_scheduler",
            "tests.unit.test_cli_errors"} <= set(modules)


# ── the fakes ────────────────────────────────────────────────────────────────────────────────────────────────
def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read(), dict(r.headers.items())
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers.items())


def test_the_stub_server_answers_by_route_and_keeps_every_request():
    def echo(req: Request) -> Reply:
        return Reply(201, {"path": req.path, "auth": req.header("authorization")}, {"X-Seen": "yes"})

    with StubServer({"/page": Reply(200, "<p>hi</p>"), "GET /echo?q=1": echo}) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.port > 0
        status, body, headers = _get(f"{server.url}/page")
        assert (status, body, headers["Content-Type"]) == (200, b"<p>hi</p>", "text/html")
        req = urllib.request.Request(f"{server.url}/echo?q=1", headers={"Authorization": "Bearer k"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 201 and r.headers["X-Seen"] == "yes"
            assert r.read() == b'{"path": "/echo?q=1", "auth": "Bearer k"}'
        assert _get(f"{server.url}/nothing")[0] == 404
        server.routes["/nothing"] = Reply(200, b"now")      # a route changed while it serves
        assert _get(f"{server.url}/nothing")[1] == b"now"
        post = urllib.request.Request(f"{server.url}/x", data=b'{"a": 1}', method="POST")
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(post, timeout=5)
    assert server.paths() == ["/page", "/echo?q=1", "/nothing", "/nothing", "/x"]
    assert server.requests[-1].method == "POST" and server.requests[-1].json() == {"a": 1}


def test_a_streamed_or_hanging_reply_ends_when_the_server_stops():
    started = threading.Event()

    def hang(req: Request) -> None:
        started.set()
        req.stopping.wait(300)

    server = StubServer({"/trickle": Reply(200, b"[", stream=every(0.05, b"x")), "/hang": hang})
    with server:
        with urllib.request.urlopen(f"{server.url}/trickle", timeout=5) as r:
            assert r.read(4) == b"[xxx"                # chunks keep coming, no Content-Length
            assert r.headers["Content-Length"] is None
        failed: list[BaseException] = []

        def ask() -> None:
            try:
                _get(f"{server.url}/hang", timeout=30)
            except Exception as e:   # the connection closes with no answer: what a hung page ends as
                failed.append(e)

        t = threading.Thread(target=ask)
        t.start()
        assert started.wait(5)
        time.sleep(0.2)
        assert t.is_alive()                           # it hangs while the server serves
    t.join(10)
    assert not t.is_alive() and failed


def test_the_fake_run_records_commands_and_shows_them_in_its_snapshot():
    run = FakeRun()
    run.pause_dispatch(True)
    assert run.set_workers(0) == "" and run.retry_errors() == 3 and run.retry_errors() == 0
    run.interrupt()
    snap = run.snapshot()
    assert run.commands == [("pause_dispatch", True), ("set_workers", 0), ("retry_errors",), ("retry_errors",),
                            ("interrupt",), ("stop",)]
    assert snap.paused and snap.stopping and snap.target_workers == 1 and snap.errors == 0
    assert snap.slots[0].task_id == "t-a" and FakeRun(episodes=1).snapshot().slots == snap.slots[:1]


async def test_the_recorder_keeps_events_in_order_with_their_loop_time():
    rec = Recorder()
    first, second = Log("info", "a"), DispatchChanged(True, "")
    rec.handle(first)
    rec.handle(second)
    assert rec.of(Log) == [first] and rec.of(DispatchChanged, paused=True) == [second]
    assert rec.after(first, DispatchChanged) == [second] and len(rec.timed) == 2


def test_the_recorder_fed_by_hand_keeps_the_event():
    rec = Recorder()
    rec.handle(Log("info", "a"))
    assert len(rec.events) == 1 and rec.timed == []
