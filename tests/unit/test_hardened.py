"""The package hardened against its own inputs (issue 22): each test is one item of the issue, as a user or an
attacker meets it (a command line, a form field, a file, a socket line), named by the item's number. New names are
imported inside the tests, so that this file also runs against code that lacks them and fails there for the right
reason (see the report of the branch for which failed before the fix).

Secrets: no credential of an endpoint URL is ever shown or written (1a, 1b, 9c). Numbers: NaN, infinities and
out-of-range values refused by every flag and field (2). Templates filled as the episodes will fill them (3).
Workers bounded and started at a bounded rate (5). Inputs that cannot succeed refused when loaded (8)."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import stat

import pytest

from om2w_tui.cli.main import build_parser, main
from om2w_tui.engine.config import RunConfig
from tests.stand_ins import STAND_IN_CHROMIUM

PASS = "pw-never-shown-5d2e"
KEY = "k-never-shown-81ac"
SECRET_URL = f"http://user:{PASS}@127.0.0.1:9/v1"   # an endpoint takes no query (test_children.py)


def no_secret(text: str) -> bool:
    return PASS not in text and KEY not in text


# ── 1a: the console's last launch ─────────────────────────────────────────────────────────────────────────────
def test_1a_the_launch_form_remembers_no_credential_and_only_for_its_owner(tmp_path):
    from om2w_tui.frontends.console.launch_values import DEFAULTS, load_values, save_values, values_from_config

    path = tmp_path / "cfg" / "om2w-tui" / "last_launch.json"
    save_values(path, {**DEFAULTS, "vllm": SECRET_URL, "model": "qwen"})   # as typed in the form
    text = path.read_text()
    assert no_secret(text), text
    assert json.loads(text)["vllm"] == "http://127.0.0.1:9/v1"   # still reaches the host
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0                  # owner-only
    # a launch from the command line into the console saves the config's values: the same
    save_values(path, values_from_config(RunConfig(out=tmp_path / "o", vllm=SECRET_URL)))
    assert no_secret(path.read_text()) and stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    # a file an older version wrote in clear never brings the credentials back into the form
    path.write_text(json.dumps({"vllm": SECRET_URL}))
    assert no_secret(load_values(path)["vllm"])


# ── 1b: no credential in any message ──────────────────────────────────────────────────────────────────────────
def test_1b_judge_shows_its_endpoint_redacted(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.jsonl").write_text("")      # a run (no task yet): an empty folder is refused first
    code = main(["judge", str(tmp_path / "run"), "--judge-model", "m", "--judge-url", SECRET_URL, "--retries", "0"])
    out = capsys.readouterr()
    assert code == 2 and "does not answer" in out.err   # asked before the work: nothing listens on port 9
    assert no_secret(out.out + out.err) and "--judge-url http://***@127.0.0.1:9" in out.err


def test_1b_doctor_shows_an_endpoint_redacted(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")   # doctor's table on one line a row
    code = main(["doctor", "--bench", "offline", "--model", "qwen", "--vllm", SECRET_URL, "--chromium",
                 STAND_IN_CHROMIUM, "--out", str(tmp_path / "o")])
    out = capsys.readouterr()
    assert code == 2 and "does not answer" in out.out   # nothing listens on port 9
    assert no_secret(out.out + out.err) and "--vllm http://***@127.0.0.1:9/v1" in out.out
    assert not (tmp_path / "o").exists()


def test_1b_an_endpoint_url_shows_redacted_wherever_it_is_shown(tmp_path):
    cfg = RunConfig(out=tmp_path, vllm=SECRET_URL)
    for shown in (repr(cfg), str(cfg.vllm), f"{cfg.endpoint}", json.dumps(cfg.to_json()),
                  json.dumps({"u": cfg.vllm}, default=str), str(cfg.__dict__)):
        assert no_secret(shown), shown
    # only the client gets the URL it opens
    assert cfg.endpoint.for_client() == SECRET_URL
    assert cfg.worker_spec(tmp_path, max_steps=cfg.max_steps).base_url == SECRET_URL


def test_9c_redact_catches_every_credential_like_key():
    from om2w_tui.engine.redact import redact_url

    keys = ["authorization", "Authorization", "bearer", "password", "passwd", "apiToken", "access_token",
            "refresh-token", "X-Amz-Signature", "X-Amz-Security-Token", "sessionid", "client_secret", "sig",
            "api-key", "key", "jwt", "auth"]
    url = "https://h.example/v1?" + "&".join(f"{k}=V{i}x" for i, k in enumerate(keys)) + "&region=eu#access_token=F"
    shown = redact_url(url)
    assert shown is not None and "region=eu" in shown
    leaked = [k for i, k in enumerate(keys) if f"V{i}x" in shown]
    assert leaked == [] and "=F" not in shown


def test_1b_an_error_that_quotes_the_endpoint_is_recorded_without_its_credentials(tmp_path):
    from om2w_tui.engine.results import EpisodeRecord, ResultsStore
    from om2w_tui.protocol.faults import FaultKind

    store = ResultsStore(tmp_path)
    store.append(EpisodeRecord(task_id="t", status="error", error=f"model endpoint: POST {SECRET_URL} failed",
                               error_kind=FaultKind.ENDPOINT))
    line = (tmp_path / "results.jsonl").read_text()
    assert no_secret(line) and "***@127.0.0.1:9" in line


# ── 2: one number parser, NaN and infinities refused ──────────────────────────────────────────────────────────
NUMBER_FLAGS = ["--timeout", "--llm-timeout", "--probe-interval", "--temperature", "--pace-cooldown", "--ray-cpus",
                "--workers", "--max-steps", "--retries", "--limit", "--site-slots", "--breaker-after",
                "--planner-turns"]


@pytest.mark.parametrize("flag", NUMBER_FLAGS)
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999", "1_0", "\u0663", "9" * 40])
def test_2_no_number_flag_takes_nan_infinity_or_odd_digits(flag, value, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["run", "--out", "x", flag, value])
    assert e.value.code == 2
    assert f"{flag} " in capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [("--workers", "100000"), ("--max-steps", "1000000"),
                                         ("--temperature", "3"), ("--timeout", "1e12"), ("--site-slots", "-1"),
                                         ("--pace-cooldown", "-0.5"), ("--timeout", "0"), ("--worker-start-rate", "0")])
def test_2_out_of_range_numbers_are_refused_naming_the_flag(flag, value, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["run", "--out", "x", flag, value])
    assert e.value.code == 2 and f"{flag} {value}: must be" in capsys.readouterr().err


@pytest.mark.parametrize("key, value", [("timeout", "nan"), ("pace_cooldown", "inf"), ("workers", "1e3"),
                                        ("max_steps", "nan"), ("timeout", "-inf")])
def test_2_no_form_field_takes_nan_or_infinity(key, value):
    from om2w_tui.frontends.console.launch_values import DEFAULTS, FormError, config_from_values

    with pytest.raises(FormError) as e:
        config_from_values({**DEFAULTS, key: value})
    assert e.value.key == key


@pytest.mark.parametrize("field, value", [("timeout", math.nan), ("pace_cooldown", math.inf), ("temperature", math.nan),
                                          ("llm_timeout", -1.0), ("workers", 10 ** 6), ("probe_interval", math.nan)])
def test_2_a_config_built_in_code_is_held_to_the_same_bounds(tmp_path, field, value):
    from om2w_tui.engine.launch import run_checks

    pre, checks = run_checks(RunConfig(out=tmp_path / "o", bench="offline", model="oracle",
                                       chromium=STAND_IN_CHROMIUM, **{field: value}))
    problems = [detail for _, ok, detail in checks if not ok]
    flag = "--" + field.replace("_", "-")
    assert pre is None and problems and problems[0].startswith(flag), problems


def test_2_every_number_setting_declares_its_bounds_and_its_help_says_them():
    from om2w_tui.engine.settings import SETTINGS, Number, Whole

    numeric = [s for s in SETTINGS if isinstance(s.kind, Number | Whole)]
    assert {s.flag for s in numeric} >= set(NUMBER_FLAGS)
    for s in numeric:
        assert s.kind.high is not None, s.key              # an upper bound on every one
        assert s.kind.bounds_text() in s.help_text(), s.key
        assert not s.check(s.default), s.key               # the default is within them


# ── 3: a template the tasks cannot fill ───────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("template, says", [("{task:d}", "cannot be filled"), ("{task!r:>999999999}", "more than"),
                                            ("{task:{website}}", "cannot be filled"),
                                            ("{task} {website:%Y}", "cannot be filled")])
def test_3_a_template_that_cannot_be_filled_fails_doctor(tmp_path, capsys, template, says):
    f = tmp_path / "instruction.txt"
    f.write_text(template)
    code = main(["doctor", "--bench", "offline", "--model", "oracle", "--chromium", STAND_IN_CHROMIUM,
                 "--instruction-template", str(f), "--out", str(tmp_path / "o")])
    out = capsys.readouterr()
    assert code == 2, out.out
    assert f"--instruction-template {f}" in out.out + out.err and says in out.out + out.err


# ── 5: workers bounded, started at a bounded rate ─────────────────────────────────────────────────────────────
async def test_5_the_control_socket_refuses_more_workers_than_the_bound(tmp_path):
    from om2w_tui.engine.control_socket import ControlServer
    from om2w_tui.protocol.control import Done, Refused, Workers
    from tests.fakes import FakeRun

    run = FakeRun()
    server = ControlServer(tmp_path)
    server._control = run
    for n in (100_000, 513, 0):
        reply = server.execute(Workers(n))
        assert isinstance(reply, Refused) and "1 to 512" in reply.error
    assert isinstance(server.execute(Workers(512)), Done)
    assert run.commands == [("set_workers", 512)]


@pytest.mark.looptime
async def test_5_the_scheduler_clamps_a_live_worker_count(tmp_path):
    from om2w_tui.benchmarks.tasks import Task
    from om2w_tui.engine.scheduler import Scheduler
    from tests.fakes import FakeExecutor

    tasks = [Task(f"t{i}", "do", "https://a.com/", "easy") for i in range(2)]
    sched = Scheduler(RunConfig(out=tmp_path / "run", workers=1, pace_cooldown=0), tasks, FakeExecutor())
    running = asyncio.ensure_future(sched.run())
    await asyncio.sleep(0.5)
    sched.set_workers(100_000)
    assert sched.target_workers == 512 and sum(not s.retired for s in sched.slots.values()) == 512
    await running


@pytest.mark.looptime
async def test_5_workers_start_at_most_the_start_rate_a_second():
    from om2w_tui.engine.start_rate import PacedStarts
    from tests.fakes import FakeExecutor

    inner = FakeExecutor(start_s=0.0)
    paced = PacedStarts(inner, rate=4)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    times: list[float] = []

    async def start(slot: int) -> None:
        await paced.start_worker(slot)
        times.append(round(loop.time() - t0, 3))

    await asyncio.gather(*(start(i) for i in range(12)))
    assert times[:4] == [0.0] * 4                        # one second's worth at once
    assert times[4:] == [0.25 * k for k in range(1, 9)]  # then 4 a second
    assert inner.started == list(range(12))              # in the order asked
    await asyncio.sleep(10)                              # idle: the bucket fills again, to one second's worth
    t0 = loop.time()
    times.clear()
    await asyncio.gather(*(start(i) for i in range(5)))
    assert times == [0.0, 0.0, 0.0, 0.0, 0.25]


def test_5_the_worker_flags_and_the_console_are_bounded():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--out", "x", "--workers", "513"])
    args = build_parser().parse_args(["run", "--out", "x", "--workers", "512"])
    assert isinstance(args, argparse.Namespace) and args.workers == 512
    from om2w_tui.engine.settings import MAX_WORKERS, clamp_workers  # what the console's + and ctl go through

    assert MAX_WORKERS == 512 and clamp_workers(10 ** 9) == MAX_WORKERS and clamp_workers(-3) == 1


# ── 8: a Chromium that does not start ─────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("chromium", ["/bin/false", "/bin/true"])
def test_8_a_chromium_that_does_not_start_fails_doctor(tmp_path, capsys, monkeypatch, chromium):
    monkeypatch.setenv("COLUMNS", "400")
    code = main(["doctor", "--bench", "offline", "--model", "oracle", "--chromium", chromium,
                 "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 2 and f"--chromium {chromium}: does not start a headless browser" in out


def test_8_a_chromium_that_does_not_start_fails_the_preflight(tmp_path):
    from om2w_tui.engine.launch import UsageError, preflight

    with pytest.raises(UsageError, match="does not start a headless browser"):
        preflight(RunConfig(out=tmp_path / "o", bench="offline", model="oracle", chromium="/bin/false"))
    assert not (tmp_path / "o").exists()


def test_8_a_real_chromium_passes(tmp_path):
    from om2w_tui.engine.chromium_check import check_starts
    from om2w_tui.episode.browser import find_chromium

    assert check_starts(find_chromium()) == ""


def test_secret_flag_values_never_reach_the_help_or_a_message(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--out", "x", "--vllm", f"http://u:{PASS}@[abc/x"])
    err = capsys.readouterr().err
    assert "--vllm" in err and "is not a URL" in err and no_secret(err)


def test_ports_outside_the_range_and_hostless_endpoints_are_refused(capsys):
    for url in ("http://h:99999/v1", "http://:80/", "ftp://h/v1", "http://h:0/v1"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["run", "--out", "x", "--vllm", url])
        assert "--vllm" in capsys.readouterr().err
