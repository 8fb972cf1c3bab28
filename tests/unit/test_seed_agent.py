"""The agent set up as the seed runner's: its instruction template, a task's own step budget, the pinned browser's
settings and their checks, and all of it reaching the worker and run.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from om2w_tui.cli.main import build_parser, config_from_args, main
from om2w_tui.engine.config import RunConfig
from om2w_tui.episode.browser import check_browser_settings, desktop_user_agent, parse_viewport
from om2w_tui.episode.instruction import DEFAULT_TEMPLATE, check_template, instruction
from om2w_tui.protocol.model_settings import ModelSettings

TASK = {"task_id": "t1", "confirmed_task": "Find the cheapest lamp", "website": "https://shop.example/",
        "hint": "It is the Aurora lamp."}


def test_the_instruction_names_the_task_and_the_website_it_starts_on():
    text = instruction(TASK)
    assert text == DEFAULT_TEMPLATE.format(task="Find the cheapest lamp", website="https://shop.example/")
    assert "Find the cheapest lamp" in text and "https://shop.example/" in text
    assert instruction(TASK, "Go to {website}. {task}", "hint") == \
        "Go to https://shop.example/. Find the cheapest lamp\n\nIt is the Aurora lamp."


@pytest.mark.parametrize("template, problem", [
    ("{task} on {website}", ""),
    ("{website} only", "no {task}"),
    ("{task} for {user}", "unknown field {user}"),
    ("{task} {", "not a template"),
])
def test_a_template_is_checked(template, problem):
    assert (problem in check_template(template)) if problem else check_template(template) == ""


def test_browser_settings_are_checked_naming_the_flag():
    ok = {"viewport": "1280x800", "user_agent": "auto", "locale": "en-US", "timezone": "America/New_York"}
    assert check_browser_settings(ok) == ""
    assert parse_viewport("1366X768") == (1366, 768)
    assert check_browser_settings({**ok, "viewport": "big"}).startswith("--viewport big:")
    assert check_browser_settings({**ok, "locale": "english please"}).startswith("--locale")
    assert check_browser_settings({**ok, "timezone": "Mars/Olympus"}).startswith("--timezone Mars/Olympus:")


def test_the_automatic_user_agent_is_a_desktop_chrome_of_the_browsers_version(tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho 'Chromium 131.0.6778.85 built on Debian'\n")
    fake.chmod(0o755)
    ua = desktop_user_agent(str(fake))
    assert "Chrome/131.0.0.0" in ua and "Headless" not in ua and ua.startswith("Mozilla/5.0 (X11; Linux x86_64)")


def _cfg(*flags: str) -> RunConfig:
    return config_from_args(build_parser().parse_args(["run", "--out", "runs/x", *flags]))


def test_new_flags_reach_the_worker_and_run_json(tmp_path):
    template = tmp_path / "t.txt"
    template.write_text("Website: {website}\nTask: {task}")
    cfg = _cfg("--instruction-template", str(template), "--coordinates", "pixels", "--viewport", "1024x768",
               "--user-agent", "UA/1", "--locale", "de-DE", "--timezone", "Europe/Berlin")
    spec = cfg.worker_spec(Path("f"), max_steps=cfg.max_steps)
    assert spec.instruction_template == "Website: {website}\nTask: {task}" and spec.llm.coordinates == "pixels"
    assert spec.browser.as_dict() == {"viewport": "1024x768", "user_agent": "UA/1", "locale": "de-DE",
                                      "timezone": "Europe/Berlin"}
    saved = cfg.to_json()
    assert saved["instruction_template"] == "Website: {website}\nTask: {task}"
    assert saved["instruction_template_file"] == str(template)
    assert (saved["coordinates"], saved["viewport"], saved["locale"], saved["timezone"]) == \
        ("pixels", "1024x768", "de-DE", "Europe/Berlin")
    default = _cfg()
    assert (default.coordinates, default.instruction_template) == ("normalized", DEFAULT_TEMPLATE)


@pytest.mark.parametrize("flags, named", [
    (["--instruction-template", "/no/such/template.txt"], "--instruction-template /no/such/template.txt"),
    (["--timezone", "Nowhere/Land"], "--timezone Nowhere/Land"),
    (["--viewport", "1x1"], "--viewport 1x1"),
])
def test_bad_new_flags_exit_2_naming_the_flag(tmp_path, capsys, flags, named):
    code = main(["run", "--no-ui", "--bench", "offline", "--model", "oracle", "--out", str(tmp_path / "o"), *flags])
    assert code == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_template_without_the_task_exits_2(tmp_path, capsys):
    template = tmp_path / "t.txt"
    template.write_text("Just browse {website}")
    assert main(["run", "--no-ui", "--bench", "offline", "--model", "oracle", "--out", str(tmp_path / "o"),
                 "--instruction-template", str(template)]) == 2
    assert f"--instruction-template {template}: it has no {{task}}" in capsys.readouterr().err


class _History:
    def __init__(self, answer, done):
        self.history, self._answer, self._done = [], answer, done

    def final_result(self):
        return self._answer

    def is_done(self):
        return self._done


class _Agent:
    def __init__(self, history):
        self.history = history

    async def run(self, max_steps, on_step_start, on_step_end):
        self.max_steps = max_steps
        await on_step_start(self)     # the clipboard grant: on a session without CDP it must not fail the step
        return self.history


@pytest.mark.parametrize("done", [False, True])
async def test_the_answer_is_the_agents_only_when_it_said_done(monkeypatch, done):
    """browser-use's `final_result()` is the last action's output even when the agent is not done: no answer then."""
    from om2w_tui.episode.arms import base
    from om2w_tui.episode.arms.interface import ArmContext

    agent = _Agent(_History("The lamp costs $19", done))
    monkeypatch.setattr(base, "new_agent", lambda ctx, task, llm: agent)
    monkeypatch.setattr(ArmContext, "chat_model", lambda self, model=None: None)

    async def step_done(step):
        pass

    ctx = ArmContext(task=TASK, instruction="x", session=object(), llm=ModelSettings(model="m"), base_url="u",
                     api_key="k", max_steps=7, step_done=step_done)
    result = await base.BaseArm(ctx).run()
    assert (result.answer, result.agent_done, agent.max_steps) == ("The lamp costs $19" if done else None, done, 7)


@pytest.mark.parametrize("mode, click, drag", [
    ("off", {"index"}, {"from_index", "to_index"}),
    ("pixels", {"index", "coordinate_x", "coordinate_y"},
     {"from_index", "to_index", "from_x", "from_y", "to_x", "to_y"}),
    ("normalized", {"index", "coordinate_x", "coordinate_y"},
     {"from_index", "to_index", "from_x", "from_y", "to_x", "to_y"}),
])
def test_the_tools_offer_coordinates_only_when_asked(mode, click, drag):
    from types import SimpleNamespace

    from om2w_tui.episode.tools import COORDINATE_PROMPT, agent_kwargs, use_coordinates

    kwargs = agent_kwargs(mode)
    actions = kwargs["tools"].registry.registry.actions
    assert set(actions["click"].param_model.model_json_schema()["properties"]) == click
    assert set(actions["drag"].param_model.model_json_schema()["properties"]) == drag
    assert kwargs.get("extend_system_message") == COORDINATE_PROMPT.get(mode)
    session = SimpleNamespace(llm_screenshot_size=None)
    use_coordinates(session, mode)
    assert session.llm_screenshot_size == ((1000, 1000) if mode == "normalized" else None)
