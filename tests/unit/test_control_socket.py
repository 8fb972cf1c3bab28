"""The control socket's server and clients, with a stand-in run (the real one is steered in
tests/e2e/test_attach_ctl.py): the socket's place, name and permissions, the long path, a stale socket, the
commands and their refusals, subscribers, and a slow subscriber that must not hold the run."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
from pathlib import Path

import pytest

from om2w_tui.engine import control_socket
from om2w_tui.engine.control_socket import (
    SOCKET_NAME,
    ControlServer,
    ControlSocketError,
    NoRunListening,
    connect,
    request,
)
from om2w_tui.engine.events import (
    EpisodeStarted,
    Log,
    RunFinished,
    RunSnapshot,
    RunStarted,
    RunSummary,
)
from om2w_tui.engine.runlock import RunLock
from om2w_tui.engine.wire import StatusReply, read
from om2w_tui.frontends.remote import RemoteRun
from om2w_tui.protocol.control import (
    Done,
    Kill,
    Pause,
    Refused,
    Requeue,
    Resume,
    Retry,
    Status,
    Stop,
    Subscribe,
    Subscribed,
    Workers,
    request_line,
)
from om2w_tui.protocol.run_end import RunEnd
from om2w_tui.run_folder import RunFolder
from tests.fakes import FakeRun, Recorder

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def deep(tmp_path: Path):
    """A deep out folder held as a run holds it: its lock names the control socket (clients talk to no other)."""
    out = tmp_path / ("a" * 60) / ("b" * 60) / "run"
    out.mkdir(parents=True)
    assert len(str(out / SOCKET_NAME)) > 120   # past what a unix socket address holds
    with RunLock(out, info={"socket": SOCKET_NAME}):
        yield out


def ask(out: Path, command: object) -> object:
    return request(out, command)


async def ask_async(out: Path, command: object) -> object:
    return await asyncio.to_thread(request, out, command)


async def ask_line(out: Path, msg: dict) -> object:
    """A line no client of ours would send (a script's, another version's): the run's answer to it."""
    reader, writer = await connect(out)
    writer.write(json.dumps(msg).encode() + b"\n")
    answer = read(await reader.readline())
    writer.close()
    return answer


async def test_the_socket_is_an_owner_only_file_in_a_deep_folder_and_goes_with_the_run(deep):
    run = FakeRun()
    async with ControlServer(deep).serving(run) as server:
        st = os.stat(deep / SOCKET_NAME, follow_symlinks=False)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        assert [p.name for p in deep.iterdir() if p.is_dir()] == []     # no folder: the evaluator takes each
        reply = await ask_async(deep, Status())
        assert isinstance(reply, StatusReply) and reply.run.pid == os.getpid()
        snap = reply.snapshot
        assert snap.slots[0].task_id == "t-a" and snap.target_workers == 2
        assert server.path == deep / SOCKET_NAME
    assert not (deep / SOCKET_NAME).exists()
    with pytest.raises(NoRunListening, match="no run is listening"):
        ask(deep, Status())


async def test_commands_reach_the_run_by_task_and_refusals_say_why(deep):
    run = FakeRun()
    async with ControlServer(deep).serving(run):
        assert isinstance(await ask_async(deep, Pause()), Done) and run.commands[-1] == ("pause_dispatch", True)
        assert isinstance(await ask_async(deep, Resume()), Done) and run.commands[-1] == ("pause_dispatch", False)
        done = await ask_async(deep, Pause(task="t-a"))
        assert isinstance(done, Done) and run.commands[-1] == ("pause_episode", 0, True)
        assert (done.slot, done.task) == (0, "t-a")
        assert isinstance(await ask_async(deep, Requeue(task="t-a")), Done) and run.commands[-1] == ("kill", 0, True)
        assert isinstance(await ask_async(deep, Kill(slot=0)), Done) and run.commands[-1] == ("kill", 0, False)
        assert isinstance(await ask_async(deep, Workers(4)), Done) and run.commands[-1] == ("set_workers", 4)
        retried = await ask_async(deep, Retry())
        assert isinstance(retried, Done) and retried.queued == 3
        n = len(run.commands)
        no = await ask_async(deep, Kill(task="t-zzz"))
        assert isinstance(no, Refused) and "t-zzz" in no.error and "t-a on slot 0" in no.error
        assert isinstance(await ask_async(deep, Kill(slot=1)), Refused)          # idle: nothing to kill
        assert isinstance(await ask_async(deep, Kill()), Refused)                # no episode named
        for bad in (0, -1, 100_000):
            no = await ask_async(deep, Workers(bad))
            assert isinstance(no, Refused) and "1 to 512" in no.error, no
        # what the codec refuses before anything is applied: a value of the wrong type, a name it does not know
        for bad in ("2", True, None, 2.5):
            no = await ask_line(deep, {"cmd": "workers", "n": bad, "id": 5})
            assert isinstance(no, Refused) and "workers" in no.error and "expected int" in no.error, no
            assert no.id == 5
        no = await ask_line(deep, {"cmd": "explode"})
        assert isinstance(no, Refused) and "unknown command" in no.error and "status" in no.error
        no = await ask_line(deep, {"cmd": "kill", "task": "t-a", "signal": 9})
        assert isinstance(no, Refused) and "unknown fields ['signal']" in no.error
        assert len(run.commands) == n     # nothing refused reached the run
        assert isinstance(await ask_async(deep, Stop(force=True)), Done) and run.commands[-1] == ("stop", True)
        # a line that is no JSON object is answered, not fatal
        reader, writer = await connect(deep)
        writer.write(b"nonsense\n[1]\n")
        answers = [read(await reader.readline()) for _ in range(2)]
        assert [type(a) for a in answers] == [Refused, Refused]
        writer.close()


async def test_subscribers_get_the_replay_then_every_event_and_snapshots(deep):
    run = FakeRun()
    server = ControlServer(deep)
    async with server.serving(run):
        server.handle(RunStarted(total=5, settled=1, workers=2, out=str(deep)))
        server.handle(EpisodeStarted(0, "t-a", "a.com", "easy", 1, 100.0, 8))
        consoles = [await connect(deep) for _ in range(2)]     # two consoles at once
        for i, (reader, writer) in enumerate(consoles):
            writer.write(request_line(Subscribe(), i))
            hello = read(await reader.readline())
            assert isinstance(hello, Subscribed) and hello.id == i
            assert (hello.run.total, hello.run.settled) == (5, 1)
            replay = [read(await reader.readline()) for _ in range(3)]   # the replay, then a snapshot
            assert [type(e).__name__ for e in replay] == ["RunStarted", "EpisodeStarted", "RunSnapshot"]
            assert (replay[1].task_id, replay[1].max_steps) == ("t-a", 8)   # its budget comes with it
        server.handle(Log("info", "hello"))
        for reader, _ in consoles:
            assert read(await reader.readline()) == Log("info", "hello")
            snap = read(await asyncio.wait_for(reader.readline(), 3))   # about once a second
            assert isinstance(snap, RunSnapshot) and snap.target_workers == 2
        # a command from one console: answered to it, and its effect shows to both at once
        consoles[0][1].write(request_line(Pause(), 9))
        for n, (reader, _) in enumerate(consoles):
            while not isinstance(msg := read(await reader.readline()), RunSnapshot) or not msg.paused:
                if isinstance(msg, Done | Refused):
                    assert n == 0 and isinstance(msg, Done) and msg.id == 9 and msg.paused is True
        server.handle(RunFinished())
        # the run's end reaches them, then the socket closes
    for reader, writer in consoles:
        lines = (await reader.read()).splitlines()
        assert RunFinished() in [read(line) for line in lines]
        writer.close()


async def test_a_subscriber_that_does_not_read_is_dropped_and_the_run_goes_on(deep, monkeypatch):
    monkeypatch.setattr(control_socket, "QUEUE_LIMIT", 20)
    run = FakeRun()
    server = ControlServer(deep)
    async with server.serving(run):
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
        slow.connect(f"/proc/self/fd/{fd}/{SOCKET_NAME}")
        os.close(fd)
        slow.sendall(request_line(Subscribe()))
        reader, writer = await connect(deep)
        writer.write(request_line(Subscribe()))
        await reader.readline()
        while len([c for c in server.clients if c.subscribed]) < 2:
            await asyncio.sleep(0.01)
        big = "x" * 20_000
        got = 0
        # the run's call cannot wait for a client: it is a plain call that only queues (a clock here would flake)
        assert not asyncio.iscoroutinefunction(server.handle)
        for i in range(400):
            server.handle(Log("info", f"{i} {big}"))
            while not isinstance(read(await reader.readline()), Log):
                pass
            got += 1
        assert server.dropped == 1 and got == 400   # the slow one went, the reading one got everything
        writer.close()
        slow.close()


async def test_a_stale_socket_is_replaced_and_anything_else_by_its_name_is_refused(deep):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    stale.bind(f"/proc/self/fd/{fd}/{SOCKET_NAME}")   # a run that died: its socket file stays, nobody listens
    os.close(fd)
    stale.close()
    with pytest.raises(NoRunListening, match="left by a run that ended"):
        ask(deep, Status())
    async with ControlServer(deep).serving(FakeRun()):
        assert isinstance(await ask_async(deep, Status()), StatusReply)
    other = deep.parent / "other"
    other.mkdir()
    (other / SOCKET_NAME).write_text("not a socket")
    with pytest.raises(ControlSocketError, match="not a socket"):
        await ControlServer(other).start(FakeRun())
    assert (other / SOCKET_NAME).read_text() == "not a socket"


def test_no_folder_or_no_run_is_said_plainly(tmp_path):
    with pytest.raises(NoRunListening, match="no such folder"):
        ask(tmp_path / "nope", Status())
    with pytest.raises(NoRunListening, match="om2w-tui run"):
        ask(tmp_path, Status())


def test_the_socket_is_named_after_the_runs_lock():
    assert RunFolder(Path("x")).socket.name == SOCKET_NAME == ".om2w-control.sock"
    assert RunFolder(Path("x"), "2/4").socket.name == ".om2w-control.shard-2-of-4.sock"
    assert RunFolder(Path("x"), "2:4/8").socket.name == ".om2w-control.shards-2-to-3-of-8.sock"


async def test_a_remote_run_sends_commands_at_once_and_a_refusal_comes_back_as_an_error_log(deep):
    run, sink = FakeRun(), Recorder()
    server = ControlServer(deep)
    async with server.serving(run):
        server.handle(RunStarted(total=5, settled=0, workers=2, out=str(deep)))
        remote = RemoteRun(deep, sinks=[sink])
        assert (await asyncio.to_thread(remote.check)).snapshot.target_workers == 2   # attach's question first
        await remote.connect()
        follow = asyncio.ensure_future(remote.run())
        assert isinstance(sink.events[0], RunStarted)                   # the replay
        assert remote.snapshot().slots[0].task_id == "t-a"
        assert (remote.info.total, remote.info.pid) == (5, os.getpid())
        assert remote.kill(1) is True                                   # optimistic; slot 1 runs nothing
        assert remote.kill(0, requeue=True) is True
        while not any(isinstance(e, Log) for e in sink.events):
            await asyncio.sleep(0.01)
        (refusal,) = [e for e in sink.events if isinstance(e, Log)]
        assert refusal.level == "error" and "refused to kill slot 1" in refusal.message
        assert ("kill", 0, True) in run.commands and ("kill", 1, False) not in run.commands
        server.handle(RunFinished(RunSummary(end=RunEnd.FINISHED)))
    await asyncio.wait_for(follow, 5)                                   # the run's end closes the connection
    assert remote.end is RunEnd.FINISHED and isinstance(sink.events[-1], RunFinished)


async def test_shards_sharing_a_folder_are_each_reached_by_the_socket_their_lock_names(tmp_path):
    """Two shards of a run in one folder, and a range of two shards: each holds its locks naming its socket; a
    client without --socket is told to choose, and with it reaches that shard (a lock of a range names it twice)."""
    from om2w_tui.engine.sharding import run_lock

    specs = ["0/4", "1:3/4"]
    names = [RunFolder(tmp_path, s).socket.name for s in specs]
    with run_lock(tmp_path, specs[0], {"socket": names[0]}), run_lock(tmp_path, specs[1], {"socket": names[1]}):
        async with ControlServer(RunFolder(tmp_path, specs[0])).serving(FakeRun()), \
                ControlServer(RunFolder(tmp_path, specs[1])).serving(FakeRun()):
            with pytest.raises(NoRunListening, match="several runs listen there"):
                await asyncio.to_thread(request, tmp_path, Status())
            for name in names:
                reply = await asyncio.to_thread(request, tmp_path, Status(), name)
                assert isinstance(reply, StatusReply) and reply.run.pid == os.getpid()


class NoLanes(FakeRun):
    """A shard whose run has no such arm (its pause of one is refused)."""

    def pause_lane(self, name: str, paused: bool = True) -> bool:
        return False


async def test_ctl_asks_every_shard_for_status_and_an_arms_pause_naming_one_not_running(tmp_path, capsys):
    """Shards 0 and 1 of 3 listen in one folder, shard 2 runs nowhere: `status` and `pause --arm` go to both running
    ones, each answer under its shard's name and shard 2 named; one refusing makes it exit 1; another command still
    asks for --socket; none answering is exit 2."""
    from om2w_tui.cli.main import main  # the command line only for this test
    from om2w_tui.engine.sharding import run_lock

    specs = ["0/3", "1/3"]
    names = [RunFolder(tmp_path, s).socket.name for s in specs]
    runs = [FakeRun(), FakeRun()]
    ctl = ["ctl", str(tmp_path)]
    with run_lock(tmp_path, specs[0], {"socket": names[0]}), run_lock(tmp_path, specs[1], {"socket": names[1]}):
        async with ControlServer(RunFolder(tmp_path, specs[0])).serving(runs[0]), \
                ControlServer(RunFolder(tmp_path, specs[1])).serving(runs[1]):
            assert await asyncio.to_thread(main, [*ctl, "pause", "--arm", "weak"]) == 0
            out = capsys.readouterr().out.splitlines()
            assert out == ["shard-0-of-3: arm weak: held (its running episodes go on)",
                           "shard-1-of-3: arm weak: held (its running episodes go on)", "shard-2-of-3: not running"]
            assert [r.commands for r in runs] == [[("pause_lane", "weak", True)]] * 2
            assert await asyncio.to_thread(main, [*ctl, "status"]) == 0
            text = capsys.readouterr().out
            assert [line for line in text.splitlines() if line.startswith("shard-")] == [
                "shard-0-of-3:", "shard-1-of-3:", "shard-2-of-3: not running"] and "  " + str(tmp_path) in text
            assert await asyncio.to_thread(main, [*ctl, "status", "--json"]) == 0
            answer = json.loads(capsys.readouterr().out)
            assert answer["ok"] and [(x["shard"], x["answered"]) for x in answer["shards"]] == [
                ("shard-0-of-3", True), ("shard-1-of-3", True), ("shard-2-of-3", False)]
            assert await asyncio.to_thread(main, [*ctl, "pause"]) == 2   # the whole dispatch: one shard at a time
            assert "name one with --socket" in capsys.readouterr().err
    with run_lock(tmp_path, specs[0], {"socket": names[0]}):
        async with ControlServer(RunFolder(tmp_path, specs[0])).serving(NoLanes()):
            assert await asyncio.to_thread(main, [*ctl, "resume", "--arm", "weak", "--json"]) == 1
            captured = capsys.readouterr()
            assert "shard-0-of-3: the run refused: no arm 'weak'" in captured.err
            assert [x["ok"] for x in json.loads(captured.out)["shards"]] == [False, False, False]
    assert main([*ctl, "status"]) == 2   # no shard listens: no run there
