"""The preflight asks the model what a run will ask (issue 19, point 5), end to end: `om2w-tui doctor` as a user
runs it, its probe process building the agent's real first step in a real Chromium (browser-use's system prompt,
the screenshot, the action schema), sent to the oracle's vLLM-faithful modes, built in or standalone; and the launch
form showing the same rows. Each case is a row a user reads: the kind, the server's words, the remedy."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from om2w_tui.offline import OracleServer
from om2w_tui.offline.suite import load_task_templates
from tests.e2e.helpers import REPO, cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
WIDE = {"COLUMNS": "1000"}   # one table row a line


def doctor(tmp_path, *flags: str) -> tuple[int, dict[str, tuple[str, str]]]:
    """doctor's exit code and its rows: {check: (mark, detail)}."""
    done = cli("doctor", "--bench", "offline", "--task-ids", "offline_shop_search_01", "--out",
               str(tmp_path / "out"), *flags, env=WIDE, timeout=240)
    rows = {}
    for line in done.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 3 and cells[0] and cells[0] != "check":
            rows[cells[0]] = (cells[1], cells[2])
    assert "model reply" in rows, done.stdout + done.stderr
    assert not (tmp_path / "out").exists()   # doctor writes nothing
    return done.returncode, rows


def test_a_model_that_answers_the_first_step_right(tmp_path):
    code, rows = doctor(tmp_path, "--model", "oracle")
    assert code == 0
    mark, detail = rows["model reply"]
    assert mark == "ok" and "the screenshot and the action schema accepted; the reply is a valid action (input, " \
                            "click)" in detail
    mark, detail = rows["model context"]
    assert mark == "ok" and detail.startswith("first step: ") and "of max_model_len 32,768" in detail


@pytest.mark.parametrize(("model", "said", "remedy"), [
    ("oracle-think", "the reply opens with a <think> block before its JSON", "--reasoning-parser"),
    ("oracle-think-open", "the reply opens with a <think> block before its JSON", "--reasoning-parser"),
    ("oracle-prose", "the reply is prose, not the action schema", "guided decoding"),
    ("oracle-fenced", "the reply's JSON is inside a code fence", "guided decoding"),
    ("oracle-truncated", "the reply was cut at the max tokens (finish_reason length)", "--max-completion-tokens"),
    ("oracle-empty", "the reply is empty", "chat template"),
])
def test_replies_a_run_would_lose_are_warnings_and_the_run_can_start(tmp_path, model, said, remedy):
    code, rows = doctor(tmp_path, "--model", model)
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "warn")     # a warning leaves the exit code as it was
    assert said in detail and remedy in detail
    mendable = model in ("oracle-think", "oracle-think-open", "oracle-fenced")
    assert ("is a valid action" in detail) == mendable, detail


def test_a_reply_whose_text_is_not_unicode_is_mended_as_the_run_mends_it(tmp_path):
    code, rows = doctor(tmp_path, "--model", "oracle-surrogate")
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "ok"), detail
    assert "is a valid action" in detail and "mended to U+FFFD" in detail and "another shape" not in detail


def test_a_text_only_model_and_the_no_vision_remedy(tmp_path):
    code, rows = doctor(tmp_path, "--model", "oracle-text-only")
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "warn")
    assert "images refused (not a multimodal model): Qwen/Qwen3-8B is not a multimodal model" in detail
    assert "--no-vision" in detail
    code, rows = doctor(tmp_path, "--model", "oracle-text-only", "--no-vision")
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "ok") and "no screenshot sent: --no-vision" in detail


def test_the_context_left_by_the_first_step_against_max_model_len(tmp_path):
    code, rows = doctor(tmp_path, "--model", "oracle-context-20000")   # fits, with less room than a real page takes
    assert rows["model reply"][0] == "ok"
    mark, detail = rows["model context"]
    assert (code, mark) == (0, "warn") and "of max_model_len 20,000" in detail and "--max-model-len" in detail
    code, rows = doctor(tmp_path, "--model", "oracle-context-9000-flat")   # does not fit: vLLM 0.10's words
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "warn") and "context length exceeded (9000 tokens): This model's maximum context " \
                                           "length is 9000 tokens. However, you requested" in detail
    assert rows["model context"] == ("warn", rows["model context"][1])
    assert rows["model context"][1].startswith("max_model_len 9000: the first step alone does not fit")


def test_a_rate_limiting_proxy_passes_after_the_clients_retries(tmp_path):
    code, rows = doctor(tmp_path, "--model", "oracle-429")
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "ok")
    assert ", after HTTP 429 (Retry-After 1 s), after HTTP 429 (Retry-After 1 s): " in detail


def test_a_model_that_never_answers_times_out_and_the_probe_ends(tmp_path):
    started = time.monotonic()
    code, rows = doctor(tmp_path, "--model", "oracle-hang", "--llm-timeout", "2")
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "warn") and "timed out" in detail and "--llm-timeout" in detail
    assert time.monotonic() - started < 120


def test_a_standalone_server_is_asked_the_same(tmp_path):
    """An endpoint given with --vllm: the probe goes there, with the run's sampling (--seed, --top-p), and
    max_model_len is read from its GET /v1/models."""
    with OracleServer(load_task_templates(), keep=True) as server:
        code, rows = doctor(tmp_path, "--model", "oracle-think-flat", "--vllm", server.url, "--seed", "7",
                            "--top-p", "0.5")
        assert server.calls == 1   # one request, shaped like the first step
        (body,) = [json.loads(b) for b in server.bodies]
    assert (body["seed"], body["top_p"], body["temperature"]) == (7, 0.5, 0.0)
    assert "--top-p 0.5 --seed 7" in rows["settings"][1]   # doctor's list of what the run changes
    assert rows["model endpoint"][0] == "ok"
    mark, detail = rows["model reply"]
    assert (code, mark) == (0, "warn") and "<think>" in detail
    assert rows["model context"][0] == "ok" and "max_model_len 32,768" in rows["model context"][1]


async def test_the_launch_form_shows_the_warning_and_still_launches(tmp_path):
    from textual.widgets import Static

    from om2w_tui.frontends.console.app import make_app
    from om2w_tui.frontends.console.screens.launch_form import LaunchScreen
    from tests.ui.pilots import remembered

    path = remembered(tmp_path, bench="offline", model="oracle-think", task_ids="offline_shop_search_01",
                      out=str(tmp_path / "runs" / "x"))
    app = make_app(None, last_launch=path, start_engine=False)
    async with app.run_test(size=(160, 50)) as pilot:
        report = ""
        for _ in range(120):   # the probe runs in the form's preflight thread: wait for its rows to be shown
            await pilot.pause(0.5)
            report = str(app.screen.query_one("#preflight-report", Static).render())
            if "model context" in report:
                break
        assert isinstance(app.screen, LaunchScreen)
        assert "⚠ model reply: " in report and "<think>" in report and "--reasoning-parser" in report, report
        assert "✔ model context: first step: " in report
        assert "new run: 1 task to run" in report      # a warning does not keep the run from starting


def test_the_console_process_never_loads_browser_use(tmp_path):
    """The probe runs apart: after run_checks asked the model, neither browser-use nor openai is in the process that
    asked (the console's), and the rows came back."""
    code = ("import sys\n"
            "from om2w_tui.engine.config import RunConfig\n"
            "from om2w_tui.engine.launch import run_checks\n"
            f"pre, checks = run_checks(RunConfig(out={str(tmp_path / 'out')!r}, bench='offline', model='oracle', "
            "task_ids=['offline_shop_search_01']))\n"
            "print([what for what, _, _ in checks if what.startswith('model ')])\n"
            "print(sorted(m for m in ('browser_use', 'openai', 'textual') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.stdout.splitlines()[-2:] == ["['model endpoint', 'model reply', 'model context']", "[]"], \
        done.stdout + done.stderr
