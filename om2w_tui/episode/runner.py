"""One episode inside a worker process: a fresh Chromium, the task's website opened first, the arm's agent with a
step budget, a final screenshot, and the folder written as it goes. Stopping it (timeout, kill) cancels the task
that runs it; what was done until then is kept and recorded with the stop's reason as its status.

How it ended is an `Outcome` (protocol/worker.py) whose fault kind is decided here, from typed facts: an OSError
whose errno says the disk is full is the folder's (`storage`); an episode whose last agent step's model call failed
ended on its model (`model`: the same request fails again), or on its endpoint when that failure was the server's
being down or overloaded (`endpoint`), as the episode's model calls say (episode/model_watch.py). An agent that
used its whole step budget without saying `done` ended `out_of_steps`. A site that did not answer its first page
load (Chromium's network error of the site: protocol/faults.py `SITE_NET_ERRORS`) ended in error with the words "the
site did not answer", kind `infra` (run again within `--retries`); the failure classes read it as the site's.

The answer is only what the agent answered: the text of its `done`. An episode that ended any other way (killed,
timed out, crashed, out of steps) has an empty answer in `result.json` and its record; what its last action
returned stays in the trajectory (the histories)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.trajectory import TrajectoryWriter
from om2w_tui.episode.arms import load_arm
from om2w_tui.episode.arms.interface import MAX_FAILURES, ArmContext, ArmResult, agent_steps
from om2w_tui.episode.blocking import last_page, page_block, probe_page
from om2w_tui.episode.browser import make_session, start_session
from om2w_tui.episode.instruction import instruction
from om2w_tui.episode.model_watch import ModelWatch
from om2w_tui.episode.rows import CallLog, write_rows
from om2w_tui.files import write_atomic, write_json_atomic
from om2w_tui.protocol.codec import to_json
from om2w_tui.protocol.faults import SITE_DOWN, FaultKind, site_net_error
from om2w_tui.protocol.model import call_fault, describe
from om2w_tui.protocol.worker import (
    EPISODE_SCRATCH,
    EPISODE_SCRATCH_PREFIX,
    SCRATCH_VAR,
    Event,
    Outcome,
    Running,
    Status,
    Step,
    WorkerSpec,
)

Emit = Callable[[Event], None]
# how an episode ended by its model endpoint's failures is worded (the fault itself travels as `endpoint`)
ENDPOINT_WORDS = "model endpoint: "
MODEL_WORDS = "model: "
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EDQUOT})
LAST_PAGE_S = 2.0      # seconds the page an episode ended on is given to be read (`last_page` in result.json)


class SiteBlocked(Exception):
    """The site answered with a bot check, a CAPTCHA or a 403/429 instead of its page."""


class SiteDown(Exception):
    """The site did not answer its page load (a network error of its own: refused, not resolved, timed out, TLS)."""


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
    r"browser (failed|crashed|closed|disconnected)|chrom(e|ium)|model provider|"
    r"(error code|status[ _]?code)[=: ]*(5\d\d|429)")


def fault_of(exc: BaseException) -> FaultKind:
    """Whose fault an exception that ended an episode was: the out folder's (its errno says so), the harness's (the
    browser, the network: what browser-use and CDP raise, told by their words, as they carry no type for it), or
    else the agent's."""
    if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
        return FaultKind.STORAGE
    return FaultKind.INFRA if _INFRA.search(f"{type(exc).__name__} {exc}".lower()) else FaultKind.AGENT


def _model_raised(exc: BaseException) -> bool:
    """Whether an exception came from a model call (the watch counted it: its kind decides the fault)."""
    from browser_use.llm.exceptions import ModelError  # loaded with the arm that raised it
    from openai import OpenAIError

    e: BaseException | None = exc
    for _ in range(8):
        if e is None:
            return False
        if isinstance(e, OpenAIError | ModelError):
            return True
        e = e.__cause__ or e.__context__
    return False


def ended_on_model(watch: ModelWatch) -> tuple[str, FaultKind, str] | None:
    """(call kind, fault, error) when the episode stopped on its model's or its endpoint's failures, else None."""
    kind = watch.calls.ended_on(MAX_FAILURES)
    if kind is None:
        return None
    words = describe(kind, watch.calls.first.get(kind, ""))
    fault = call_fault(kind)
    return kind, fault, f"{ENDPOINT_WORDS if fault is FaultKind.ENDPOINT else MODEL_WORDS}{words}"


async def _bounded(coro: Awaitable[Any], seconds: float) -> Any:
    try:
        return await asyncio.wait_for(coro, seconds)
    except (TimeoutError, Exception):
        return None


def agents_answer(result: ArmResult) -> str:
    """The agent's answer: its words when it said `done`, else "" (what its last action returned is no answer: it
    stays in the trajectory's histories, never in `final_result_response` or the record). An episode that did not
    end `done` has none either (see the module's docstring)."""
    return (result.answer or "") if result.agent_done else ""


def _steps_of(result: ArmResult, writer: TrajectoryWriter) -> int:
    """The agent's steps: its histories' (the steps run within the budget, the last forced `done` try included;
    browser-use's end-of-budget marker is none), else the steps the arm recorded itself."""
    return sum(agent_steps(h) for h in result.histories) or writer.n_steps


@dataclass
class _End:
    """How the episode is ending, decided as it goes."""
    status: Status = "done"
    error: str | None = None
    fault: FaultKind | None = None
    model_fault: str | None = None

    def set(self, status: Status, error: str | None, fault: FaultKind | None = None) -> None:
        self.status, self.error, self.fault = status, error, fault


# Chromium's singleton socket lives in `$TMPDIR/.org.chromium.Chromium.XXXXXX/SingletonSocket`, and a Unix socket's
# path holds 107 bytes at most: under a long TMPDIR (a cluster's /scratch/slurm-job-N/tmp, a test's folder) every
# Chromium failed to start and every episode ended as the harness's fault
SOCKET_PATH_MAX = 107
CHROMIUM_SOCKET_TAIL = len("/.org.chromium.Chromium.XXXXXX/SingletonSocket")
SHORT_TEMP = "/tmp"


def episode_temp_base(prefix: str) -> str | None:
    """Where the episode's temp folder (its Chromium's TMPDIR) is made: the temp folder as usual (None), or /tmp
    where that path would leave Chromium's socket path too long."""
    path = len(os.path.join(tempfile.gettempdir(), prefix + "x" * 8)) + CHROMIUM_SOCKET_TAIL
    return SHORT_TEMP if path > SOCKET_PATH_MAX and os.path.isdir(SHORT_TEMP) else None


def _name_scratch(scratch: Path) -> Path | None:
    """Write the episode's temp folder's path where the worker's parent looks for it (-> that file; None: this worker
    has no parent's folder, or it could not be written: the episode goes on, its own end removes the folder)."""
    parent = os.environ.get(SCRATCH_VAR)
    if not parent:
        return None
    try:
        write_atomic(Path(parent) / EPISODE_SCRATCH, str(scratch))
    except OSError:
        return None
    return Path(parent) / EPISODE_SCRATCH


async def run_episode(task: dict[str, Any], spec: WorkerSpec, emit: Emit, control: EpisodeControl) -> Outcome:
    """Run one episode into `spec.folder` -> its outcome (the record's part the worker knows)."""
    folder = Path(spec.folder)
    writer = TrajectoryWriter(folder, task["task_id"], task["confirmed_task"], schema=spec.schema,
                              reference_length=task.get("reference_length"), coordinates=spec.llm.coordinates)
    prefix = f"{EPISODE_SCRATCH_PREFIX}{os.environ.get('OM2W_RUN_TAG', 'run')}-"
    scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=episode_temp_base(prefix)))
    # browser-use's per-agent leftovers (screenshots too) and Chromium's own temp files go here, then away; the
    # worker's parent is told where, to remove it should this worker be killed before the end (protocol/worker.py)
    named = _name_scratch(scratch)
    worker_tmp = os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(scratch)
    end = _End()
    result = ArmResult()
    returned = False          # the arm's run() gave its result (else its partial() says what it did)
    session = None
    call_log = CallLog() if spec.record_rows else None
    watch = ModelWatch(emit, spec.llm.mend_thinking, call_log)

    async def step_done(step: Any) -> None:
        lines = writer.add_step(step, thought=watch.take_thought())
        state = getattr(step, "state", None)
        frame = writer.frames[-1] if writer.frames else {}
        emit(Step(writer.n_steps, lines, str(getattr(state, "url", "") or ""), str(frame.get("thought") or "")[:300],
                  writer.last_shot))

    async def record_step(actions: list[str], thought: str = "", png: bytes | None = None, url: str = "") -> None:
        writer.add_plain_step(list(actions), thought, png, url)
        emit(Step(writer.n_steps, list(actions), url, thought[:300], writer.last_shot))

    try:
        session = make_session(spec.chromium, folder / "downloads", scratch / "profile", spec.browser.as_dict())
        try:
            await start_session(session, spec.browser.as_dict())
        except asyncio.CancelledError:
            raise
        except Exception as e:
            raise RuntimeError(f"browser failed to start: {type(e).__name__}: {e}") from e
        try:
            await session.navigate_to(task["website"])   # the benchmark's rule: start on the task's website
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if code := site_net_error(str(e)):   # the site's own network error, not the browser's
                raise SiteDown(f"{SITE_DOWN} at {task['website']}: {code}") from e
            raise RuntimeError(f"browser failed to open {task['website']}: {type(e).__name__}: {e}") from e
        ctx = ArmContext(
            task=task, instruction=instruction(task, spec.instruction_template, spec.hint_field),
            session=session, llm=spec.llm, base_url=spec.base_url, api_key=spec.api_key or "EMPTY",
            max_steps=spec.max_steps, step_done=step_done, record_step=record_step,
            options=dict(spec.arm_options), call_log=call_log, watch=watch)
        blocked = await _bounded(page_block(session), 10)
        if blocked:
            raise SiteBlocked(blocked)
        control.arm = load_arm(spec.arm)(ctx)
        for cmd in control.pending:   # a pause that came while the browser started
            getattr(control.arm, cmd)()
        emit(Running())
        result = await control.arm.run()
        returned = True
        if not result.agent_done and (on_model := ended_on_model(watch)):
            end.model_fault, fault, error = on_model
            end.set("error", error, fault)
        elif not result.agent_done and (blocked := await _bounded(page_block(session), 10)):
            end.set("blocked", blocked)
        elif not result.agent_done and (result.out_of_steps or _steps_of(result, writer) >= ctx.max_steps):
            end.set("out_of_steps", None)
    except SiteBlocked as e:
        end.set("blocked", str(e))
    except SiteDown as e:   # recorded as infra: a site down for a moment is run again within --retries
        end.set("error", str(e), FaultKind.INFRA)
    except asyncio.CancelledError:
        reason: Status = "timeout" if control.stop_reason == "timeout" else "killed"
        end.set(reason, control.stop_error or reason)
    except Exception as e:
        end.set("error", f"{type(e).__name__}: {str(e)[:300]}", fault_of(e))
        if _model_raised(e) and (on_model := ended_on_model(watch)):   # an arm let a model call's failure out
            end.model_fault, fault, error = on_model
            end.set("error", error, fault)
    control.cancellable = False
    rows: dict[str, Any] = {}
    answer = ""
    try:
        if control.arm is not None and not returned:
            result = await _bounded(control.arm.partial(), 10) or ArmResult()
        answer = agents_answer(result) if end.status == "done" else ""
        final_png, ended_on = None, None
        if session is not None:
            # the page it ended on (its URL, title, HTTP status): read in a moment, or not at all (a page still loading
            # would hold the slot: measured 7 s on a site that never answers)
            ended_on = await _bounded(probe_page(session), LAST_PAGE_S)
            final_png = await _bounded(session.take_screenshot(), 10)
            if final_png is None and end.status in ("done", "out_of_steps") and not result.agent_done:
                # browser-use ends an agent whose browser went away as if it had simply stopped: that is our fault
                end.set("error", "the browser crashed or closed during the episode", FaultKind.INFRA)
            await _bounded(session.kill(), 10)
        writer.finish(answer, final_png, result.histories, cut_short=None if end.status == "done" else end.status,
                      last_page=last_page(ended_on) if ended_on else None)
        for name, doc in result.files.items():
            write_json_atomic(folder / name, doc)
        if call_log is not None:
            hint = task.get(spec.hint_field) if spec.hint_field else None
            n, left = write_rows(folder / "rows", task, call_log, hint, to_json(watch.calls))
            rows = {"rows": n, "hint_left": left}
    except OSError as e:   # the folder could not take the end of the episode (disk full): the record says so
        kind = FaultKind.STORAGE if e.errno in STORAGE_ERRNOS else FaultKind.INFRA
        end.set("error", f"{type(e).__name__}: {e}", kind)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if named is not None:
            named.unlink(missing_ok=True)
        with contextlib.suppress(OSError):   # keep the folder to what the evaluator reads unless the agent downloaded
            (folder / "downloads").rmdir()
        tempfile.tempdir = None
        if worker_tmp is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = worker_tmp
    return Outcome(
        status=end.status, error=end.error, fault=end.fault, agent_done=result.agent_done,
        steps=_steps_of(result, writer), actions=len(writer.actions),
        screenshots=0 if writer.blank else writer.n_shots, answer=answer[:500] if end.status == "done" else "",
        prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens, model=watch.calls,
        model_fault=end.model_fault, rows=rows.get("rows"), hint_left=rows.get("hint_left"),
        blank_screenshot=True if writer.blank else None)

