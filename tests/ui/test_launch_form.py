"""The launch form: remembered values, the preflight shown inline, launching into the dashboard."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input

from om2w_tui.frontends.console.app import make_app
from om2w_tui.frontends.console.screens.dashboard import DashboardScreen
from om2w_tui.frontends.console.screens.launch_form import LaunchScreen

from .pilots import FakePreflight, checked, remembered, until


async def test_the_form_opens_with_the_last_launch_and_says_how_much_is_done(tmp_path):
    path = remembered(tmp_path, model="qwen3-vl", workers="6", out="runs/big", api_key_env="NO_SUCH_KEY_VAR")
    check = FakePreflight(settled=120, total=300)
    app = make_app(None, checks_fn=check, last_launch=path, start_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        report = await checked(pilot)
        assert isinstance(app.screen, LaunchScreen)
        assert app.screen.query_one("#f-model", Input).value == "qwen3-vl"
        assert "resuming: 120 of 300 done" in report
        assert "$NO_SUCH_KEY_VAR is not set" in report
        assert check.seen[-1].workers == 6 and check.seen[-1].out == Path("runs/big")


async def test_a_problem_is_shown_inline_next_to_its_field_and_nothing_starts(tmp_path):
    path = remembered(tmp_path, model="qwen", vllm="http://127.0.0.1:9/v1")
    problems = (("model endpoint", "--vllm http://127.0.0.1:9/v1: the endpoint does not answer (ConnectError). "
                                   "Start the model server"),
                ("out folder", "--out /x/y: /x is not writable; choose a folder you can write to"))
    app = make_app(None, checks_fn=FakePreflight(problems=problems), last_launch=path, start_engine=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await checked(pilot)
        await pilot.press("ctrl+s")
        report = await checked(pilot)
        assert "✘ model endpoint: --vllm http://127.0.0.1:9/v1: the endpoint does not answer" in report
        assert "✘ out folder: --out /x/y: /x is not writable" in report      # every problem at once
        assert app.screen.query_one("#f-vllm").has_class("-problem")
        assert app.screen.query_one("#f-out").has_class("-problem")
        assert not app.screen.query_one("#f-model").has_class("-problem")
        assert isinstance(app.screen, LaunchScreen)


async def test_a_value_the_form_cannot_read_is_caught_before_the_preflight(tmp_path):
    check = FakePreflight()
    app = make_app(None, checks_fn=check, last_launch=remembered(tmp_path), start_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await checked(pilot)
        n = len(check.seen)
        app.screen.query_one("#f-out", Input).value = ""
        await pilot.press("ctrl+r")
        report = await checked(pilot)
        assert "✘ out folder" in report and app.screen.query_one("#f-out").has_class("-problem")
        assert len(check.seen) == n


async def test_typing_q_in_a_field_types_it_and_launch_opens_the_dashboard_and_remembers(tmp_path):
    path = remembered(tmp_path)
    check = FakePreflight(total=2)
    app = make_app(None, checks_fn=check, last_launch=path, start_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await checked(pilot)
        out = app.screen.query_one("#f-out", Input)
        out.value = ""
        out.focus()
        await pilot.press(*"runs/q1")
        assert out.value == "runs/q1" and app.is_running
        await pilot.press("ctrl+s")
        await checked(pilot)
        assert isinstance(app.screen, DashboardScreen)
        assert check.seen[-1].out == Path("runs/q1")
    assert json.loads(path.read_text())["out"] == "runs/q1"


async def test_a_console_launch_keeps_no_credential_of_its_endpoint_anywhere(tmp_path, monkeypatch):
    """The form's endpoint carries a password (`http://user:PW@host/v1`; a query is refused in an endpoint), the API
    key variable holds a key: the real preflight checks the endpoint with them (the oracle answers), the launch opens
    the dashboard, and no file under the config home, nor the form's report, holds any of them."""
    from om2w_tui.offline import OracleServer

    pw, env_key = "pw-form-planted-51c2", "sk-form-planted-e7aa"
    monkeypatch.setenv("OM2W_FORM_KEY", env_key)
    path = remembered(tmp_path)
    with OracleServer([]) as oracle:
        plain = oracle.url
        url = plain.replace("http://", f"http://user:{pw}@")
        app = make_app(None, last_launch=path, start_engine=False, auto_check=False)
        async with app.run_test(size=(120, 40)) as pilot:
            for field, value in (("model", "oracle"), ("vllm", url), ("api_key_env", "OM2W_FORM_KEY"),
                                 ("out", str(tmp_path / "run"))):
                app.screen.query_one(f"#f-{field}", Input).value = value
            await pilot.press("ctrl+r")
            report = await checked(pilot)
            assert "✔ model endpoint" in report and "***" in report, report
            assert pw not in report
            await pilot.press("ctrl+s")
            await checked(pilot)
            assert isinstance(app.screen, DashboardScreen)
    saved = json.loads(path.read_text())
    assert saved["vllm"] == plain and saved["api_key_env"] == "OM2W_FORM_KEY"
    assert path.stat().st_mode & 0o077 == 0
    leaks = [str(p) for p in tmp_path.rglob("*") if p.is_file()
             and any(s.encode() in p.read_bytes() for s in (pw, env_key))]
    assert leaks == []


async def test_a_live_benchmark_chosen_after_the_offline_suite_is_paced(tmp_path):
    """The offline suite's cooldown is 0 (its sites are local); choosing a live benchmark on the form moves the field
    to that benchmark's default (120 s), unless the user typed one: a run of live sites is never unpaced by accident."""
    from textual.widgets import Select

    app = make_app(None, checks_fn=FakePreflight(), last_launch=remembered(tmp_path, bench="offline",
                                                                          pace_cooldown="0"), start_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await checked(pilot)
        bench, cooldown = app.screen.query_one("#f-bench", Select), app.screen.query_one("#f-pace_cooldown", Input)
        assert cooldown.value == "0"
        bench.value = "om2w"
        await pilot.pause()
        assert cooldown.value == "120"
        bench.value = "offline"
        await pilot.pause()
        assert cooldown.value == "0"
        cooldown.value = "30"                       # the user's own value stays whatever the benchmark
        bench.value = "webvoyager"
        await pilot.pause()
        assert cooldown.value == "30"


async def test_a_resume_measured_otherwise_is_refused_and_the_forms_box_lets_it_go_on(tmp_path):
    """The out folder holds a run of 30 steps that settled a task; the form asks 12: the real preflight refuses,
    naming the form's `resume changed` box beside the flag it says to add; ticking the box (space, as a user does)
    lets the run go on, the change said as a warning. The box is never remembered: the next launch asks again."""
    from functools import partial

    from textual.widgets import Checkbox

    from om2w_tui.engine.config import RunConfig
    from om2w_tui.engine.launch import run_checks
    from om2w_tui.engine.measured import measured
    from om2w_tui.engine.results import EpisodeRecord

    out = tmp_path / "run"
    out.mkdir()
    was = RunConfig(out=out, bench="offline", model="oracle", max_steps=30)
    (out / "run.json").write_text(json.dumps({"config": was.to_json(), "measured": measured(was)}))
    settled = EpisodeRecord(task_id="offline_shop_search_01", status="done", started_at=1.0, finished_at=2.0)
    (out / "results.jsonl").write_text(json.dumps(settled.to_json()) + "\n")   # a task measured under 30 steps
    path = remembered(tmp_path, bench="offline", model="oracle", out=str(out), max_steps="12", resume_changed="true")
    app = make_app(None, checks_fn=partial(run_checks, ask_model=False), last_launch=path, start_engine=False,
                   auto_check=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("ctrl+r")
        report = await checked(pilot)
        box = app.screen.query_one("#f-resume_changed", Checkbox)
        assert box.value is False                                  # never remembered on
        assert "✘ resume: --out" in report and "--max-steps 30 -> 12" in report, report
        assert "add --resume-changed (the form's “resume changed” box) to go on" in " ".join(report.split())
        box.focus()
        await pilot.press("space")
        await pilot.pause()
        assert box.value is True
        await pilot.press("ctrl+s")
        await until(pilot, "the dashboard", lambda: isinstance(app.screen, DashboardScreen), timeout=60)
        assert app.pre is not None and app.pre.config.resume_changed and app.pre.changes == ("--max-steps 30 -> 12",)
    assert json.loads(path.read_text())["resume_changed"] == ""
