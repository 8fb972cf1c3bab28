"""One episode inside a worker process: a fresh Chromium, the task's website opened first, the arm's agent with a
step budget, a final screenshot, and the folder written as it goes. Stopping it (timeout, kill) cancels the task
that runs it; what was done until then is kept and recorded with the stop's reason as its status."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.engine.results import ENDPOINT_ERROR
from om2w_tui.episode.arms import load_arm
from om2w_tui.episode.arms.interface import ArmContext, ArmResult
from om2w_tui.episode.blocking import page_block
from om2w_tui.episode.browser import make_session, start_session
from om2w_tui.episode.instruction import instruction, step_budget
from om2w_tui.episode.rows import CallLog, write_rows
from om2w_tui.files import write_json_atomic

Emit = Callable[[dict[str, Any]], None]


class SiteBlocked(Exception):
    """The site answered with a bot check, a CAPTCHA or a 403/429 instead of its page."""


@dataclass
class EpisodeControl:
    """Shared between the worker loop and a running episode: why it is being stopped, and its arm."""
    stop_reason: str | None = None
    stop_error: str | None = None
    arm: Any = None
    paused: bool = False
    pending: list[str] = field(default_factory=list)
    cancellable: bool = True      # false once the episode is writing its end: a stop then changes nothing


_INFRA = re.compile(
    r"connection|timed? ?out|apiconnection|apistatus|internalserver|rate.?limit|\bcdp\b|websocket|target closed|"
    r"browser (failed|crashed|closed|disconnected)|chrom(e|ium)|model provider|no space left|read-only file system|"
    r"(error code|status[ _]?code)[=: ]*(5\d\d|429)")


def classify_error(exc: BaseException) -> str:
    """'infra' when the harness or its services failed (browser, model endpoint, network), else 'agent'."""
    return "infra" if _INFRA.search(f"{type(exc).__name__} {exc}".lower()) else "agent"


def endpoint_failure(histories: list[Any]) -> str | None:
    """The model endpoint's error when an agent stopped because its model calls failed (browser-use records them as
    step errors and gives up after a few), else None. A reply the agent could not parse is the model's own fault."""
    steps = [st for h in histories for st in getattr(h, "history", [])]
    if not steps or getattr(steps[-1], "model_output", None) is not None:
        return None
    errors = [getattr(r, "error", None) for r in getattr(steps[-1], "result", None) or []]
    text = next((e for e in errors if e), "")
    return text[:300] if text and classify_error(RuntimeError(text)) == "infra" else None


async def _bounded(coro: Awaitable[Any], seconds: float) -> Any:
    try:
        return await asyncio.wait_for(coro, seconds)
    except (TimeoutError, Exception):
        return None


async def run_episode(task: dict[str, Any], spec: dict[str, Any], emit: Emit,
                      control: EpisodeControl) -> dict[str, Any]:
    """-> the episode's part of its results record (status, steps, actions, screenshots, answer, error ...)."""
    folder = Path(spec["folder"])
    writer = TrajectoryWriter(folder, task["task_id"], task["confirmed_task"], schema=spec.get("schema", "v1"),
                              reference_length=task.get("reference_length"),
                              coordinates=spec.get("coordinates", "normalized"))
    scratch = Path(tempfile.mkdtemp(prefix=f"om2w-episode-{os.environ.get('OM2W_RUN_TAG', 'run')}-"))
    # browser-use's per-agent leftovers (screenshots too) and Chromium's own temp files go here, then away
    worker_tmp = os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(scratch)
    status, error, error_kind = "done", None, None
    result = ArmResult()
    session = None

    async def step_done(step: Any) -> None:
        lines = writer.add_step(step)
        state = getattr(step, "state", None)
        mo = getattr(step, "model_output", None)
        emit({"ev": "step", "step": writer.n_steps, "actions": lines, "url": getattr(state, "url", "") or "",
              "thought": str(getattr(mo, "next_goal", "") or "")[:300], "screenshot": writer.last_shot})

    async def record_step(actions: list[str], thought: str = "", png: bytes | None = None, url: str = "") -> None:
        writer.add_plain_step(list(actions), thought, png, url)
        emit({"ev": "step", "step": writer.n_steps, "actions": list(actions), "url": url, "thought": thought[:300],
              "screenshot": writer.last_shot})

    call_log = CallLog() if spec.get("record_rows") else None
    try:
        session = make_session(spec["chromium"], folder / "downloads", scratch / "profile", spec.get("browser"))
        try:
            await start_session(session, spec.get("browser"))
            await session.navigate_to(task["website"])   # the benchmark's rule: start on the task's website
        except asyncio.CancelledError:
            raise
        except Exception as e:
            raise RuntimeError(f"browser failed to start or open {task['website']}: {type(e).__name__}: {e}") from e
        ctx = ArmContext(
            task=task, instruction=instruction(task, spec.get("instruction_template"), spec.get("hint_field")),
            session=session, model=spec["model"], base_url=spec["base_url"],
            api_key=os.environ.get(spec.get("api_key_env") or "", "") or "EMPTY",
            temperature=float(spec.get("temperature", 0.0)), max_steps=step_budget(task, int(spec["max_steps"])),
            step_done=step_done, record_step=record_step, vision=bool(spec.get("vision", True)),
            llm_timeout=float(spec.get("llm_timeout", 120)), llm_retries=int(spec.get("llm_retries", 2)),
            options=dict(spec.get("arm_options") or {}), call_log=call_log,
            coordinates=spec.get("coordinates", "normalized"))
        blocked = await _bounded(page_block(session), 10)
        if blocked:
            raise SiteBlocked(blocked)
        control.arm = load_arm(spec.get("arm", "base"))(ctx)
        for cmd in control.pending:   # a pause that came while the browser started
            getattr(control.arm, cmd)()
        emit({"ev": "running"})
        result = await control.arm.run()
        if not result.agent_done and (failure := endpoint_failure(result.histories)):
            status, error, error_kind = "error", f"{ENDPOINT_ERROR}{failure}", "infra"
        elif not result.agent_done and (blocked := await _bounded(page_block(session), 10)):
            status, error = "blocked", blocked
    except SiteBlocked as e:
        status, error = "blocked", str(e)
    except asyncio.CancelledError:
        status = control.stop_reason or "killed"
        error = control.stop_error or status
    except Exception as e:
        status, error, error_kind = "error", f"{type(e).__name__}: {str(e)[:300]}", classify_error(e)
    control.cancellable = False
    rows: dict[str, Any] = {}
    try:
        if control.arm is not None and not result.histories:
            result = await _bounded(control.arm.partial(), 10) or ArmResult()
        final_png = None
        if session is not None:
            final_png = await _bounded(session.take_screenshot(), 10)
            if final_png is None and status == "done" and not result.agent_done:
                # browser-use ends an agent whose browser went away as if it had simply stopped: that is our fault
                status, error, error_kind = "error", "the browser crashed or closed during the episode", "infra"
            await _bounded(session.kill(), 10)
        writer.finish(result.answer, final_png, result.histories, cut_short=None if status == "done" else status)
        for name, doc in result.files.items():
            write_json_atomic(folder / name, doc)
        if call_log is not None:
            hint_field = spec.get("hint_field")
            n, left = write_rows(folder / "rows", task, call_log, task.get(hint_field) if hint_field else None)
            rows = {"rows": n, "hint_left": left}
    except OSError as e:   # the folder could not take the end of the episode (disk full): the record says so
        status, error, error_kind = "error", f"{type(e).__name__}: {e}", "infra"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        with contextlib.suppress(OSError):   # keep the folder to what the evaluator reads unless the agent downloaded
            (folder / "downloads").rmdir()
        tempfile.tempdir = None
        if worker_tmp is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = worker_tmp
    return {"status": status, "error": error, "error_kind": error_kind, "agent_done": result.agent_done,
            "steps": sum(len(getattr(h, "history", [])) for h in result.histories) or writer.n_steps,
            "actions": len(writer.actions), "screenshots": 0 if writer.blank else writer.n_shots,
            "answer": (result.answer or "")[:500], "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens, **rows,
            **({"blank_screenshot": True} if writer.blank else {})}
