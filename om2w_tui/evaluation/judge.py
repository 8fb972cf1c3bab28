"""Judging a finished run with a model: the WebJudge method of the Online-Mind2Web paper, and a WebVoyager-style
single call. Prompts are our own words; the method and the output file follow the official evaluator.

WebJudge (`--mode webjudge`), per task, as the official method does it:
  1. key points: the model lists what the task requires (from the task text alone);
  2. key screenshots: the model scores every screenshot 1-5 for how much it shows about the key points (one vision
     call per screenshot, a JPEG data URL with `detail: high`); those scoring at least --score-threshold are kept,
     the first MAX_KEPT of them, with the reasoning the model gave for each;
  3. outcome: one call with the task, the key points, the action history, the kept screenshots' reasoning and the
     kept screenshots; the reply ends in `Status: success` or `Status: failure`.
  Every call is sent with temperature 0 and max_tokens 512, the official settings (an endpoint that refuses one of
  them gets the call again without it). Replies are read as the official evaluator reads them (`parsing="official"`,
  the default: `official_score`, `official_status`), so that our numbers are the official method's numbers; the
  lenient reading (`parsing="lenient"`: `parse_score`, `parse_status`) also reads the markdown, bullets and headings
  its prompts invite and it misreads (`**Status**: success` is 0 there, 1 here; `Score (1-5): 2` is 1 there, 2
  here). `compare_readings` counts the replies of a file the two read differently; the report shows it.
  As in the official method the agent's final answer is not shown to the judge (an agent's own claims give false
  positives); `--include-answer` shows it, marked as a claim that only the evidence can confirm (mode
  `webjudge-answer`, in a file of its own).
WebVoyager (`--mode webvoyager`): one call with the task, the agent's final answer and its last screenshots; the
  reply ends in `Verdict: SUCCESS` or `Verdict: NOT SUCCESS`.

Output: `<out>/om2w-tui_<Mode>_<model>_score_threshold_<t>_auto_eval_results.json`: the official evaluator's name
with `om2w-tui_` before it (its own name would make an official run in the same folder resume from our file and
judge nothing), shaped as its output (a file, never a folder, so the run's folder stays one subfolder per task):
one JSON object a line, the task's result.json with `key_points`, `image_judge_record` as
`[{Response, Score}]`, `input_text`, `system_msg`, `evaluation_details` and `predicted_label` added, and ours
beside them (`mode`, `judge_model`, `kept_screenshots`, `usage`, the judged episode's `attempt` and
`episode_started_at` ...). Of a run that keeps records only the tasks it settled are judged, each its settling
episode; a task whose verdict in the file is of that episode is skipped, so the same command resumes, and one run
again since is judged again, its new line the one that counts (`verdicts.py`, the live judge's rule too). The
folder is read with `conformance.read_run`, exactly as the official evaluator reads it.

`--official PATH` runs the user's own checkout of the official evaluator (its `src/run.py`) on the run instead,
against the same endpoint, and keeps its output in the run's folder as `official_<its file name>`.

This module is the caller: the chat calls (bounded, retried, a refused setting dropped), one task's judgement and
a run's. Its rooms: the settings `judge_settings.py`, the output file's name and lines `judge_files.py`, the
prompts `judge_prompts.py`, reading the replies `judge_replies.py`. The command line (`om2w-tui judge`, its flags
and its exit codes) is `cli/judge.py`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.conformance import EvaluatorView, read_run, task_dirs
from om2w_tui.evaluation.judge_files import adopt_legacy_output, append_line, mixed_reading, output_path, read_judged
from om2w_tui.evaluation.judge_prompts import (
    VERDICT_SYSTEM,
    WEBVOYAGER_SYSTEM,
    encode_images,
    key_points_messages,
    score_messages,
    verdict_messages,
    webvoyager_messages,
    webvoyager_shots,
)
from om2w_tui.evaluation.judge_replies import parse_key_points, parse_reasoning, read_score, read_status
from om2w_tui.evaluation.judge_settings import Settings
from om2w_tui.evaluation.verdicts import Settled, episode_mark

MAX_KEPT = 50


class JudgeFatal(RuntimeError):
    """A failure that no retry or other task can fix (bad key, unknown model): the whole run stops."""


def unknown_tasks(out: Path, task_ids: list[str]) -> str:
    """Why `--task-ids` names a task the run has no folder of ("" when it names none): a usage error, said before
    anything is judged or written."""
    dirs = task_dirs(out) if Path(out).is_dir() else []
    missing = [t for t in dict.fromkeys(task_ids) if t not in set(dirs)]
    if not missing:
        return ""
    return (f"--task-ids: no task folder {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} in {out} "
            f"({len(dirs)} task folders{', e.g. ' + ', '.join(dirs[:3]) if dirs else ''}); nothing judged")


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "calls": self.calls}


def judge_client(base_url: str, api_key: str, s: Settings) -> Any:
    """The judge's AsyncOpenAI client: each call within --request-timeout in all (connect and the whole reply) and
    a reply of at most endpoint.JUDGE_REPLY_BYTES; the retries are the Caller's own."""
    from om2w_tui.endpoint import JUDGE_REPLY_BYTES, openai_client  # httpx and openai only when a judge calls

    return openai_client(base_url, api_key, s.request_timeout, JUDGE_REPLY_BYTES, max_retries=0)


class Caller:
    """Chat calls with bounded concurrency and retries with backoff on 5xx, 429, timeouts and connection errors."""

    def __init__(self, client: Any, s: Settings, sleep: Callable[[float], Any] = asyncio.sleep,
                 log: Callable[[str], None] = print):
        self.client, self.s, self.sleep, self.log = client, s, sleep, log
        self.sem = asyncio.Semaphore(s.workers)
        self.retried = 0
        self.temperature = s.temperature
        self.token_limit = "max_tokens" if s.max_tokens else None

    def _settings(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        if self.token_limit:
            extra[self.token_limit] = self.s.max_tokens
        return extra

    def _refused_setting(self, e: Exception) -> bool:
        """An endpoint that refuses a sampling setting (reasoning models take no temperature but their default,
        and `max_completion_tokens` for `max_tokens`): drop or rename it for every later call; True if done."""
        text = _message(e).lower()
        if self.temperature is not None and "temperature" in text:
            self.log(f"the endpoint refuses temperature {self.temperature}: sending none from now on")
            self.temperature = None
            return True
        if self.token_limit == "max_tokens" and "max_tokens" in text:
            self.log("the endpoint refuses max_tokens: sending max_completion_tokens from now on")
            self.token_limit = "max_completion_tokens"
            return True
        return False

    async def __call__(self, messages: list[dict[str, Any]], usage: Usage) -> str:
        import openai  # only when a judge calls: `report` reads judge files without the client

        attempt = 0
        while True:
            try:
                async with self.sem:
                    r = await self.client.chat.completions.create(model=self.s.model, messages=messages,
                                                                  **self._settings())
            except openai.BadRequestError as e:
                if self._refused_setting(e):
                    continue
                raise RuntimeError(f"HTTP {e.status_code}: {_message(e)}") from None
            except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
                raise JudgeFatal(f"the endpoint refused the API key (HTTP {e.status_code}): set the variable named "
                                 f"by --api-key-env") from None
            except openai.NotFoundError as e:
                raise JudgeFatal(f"the endpoint does not serve --judge-model {self.s.model} (HTTP 404: "
                                 f"{_message(e)})") from None
            except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as e:
                attempt += 1
                if attempt > self.s.retries:
                    raise RuntimeError(f"gave up after {attempt} tries: {type(e).__name__}: {_message(e)}") from None
                self.retried += 1
                delay = min(60.0, self.s.backoff * 2 ** (attempt - 1)) * (0.75 + 0.5 * random.random())
                await self.sleep(delay)
                continue
            except openai.APIStatusError as e:
                raise RuntimeError(f"HTTP {e.status_code}: {_message(e)}") from None
            usage.calls += 1
            return _reply_text(r, usage)


def _reply_text(r: Any, usage: Usage) -> str:
    """A chat completion's text, its usage counted; an answer that is not one (a server's own JSON, a bare string)
    is the endpoint's failure, said as such."""
    choices = getattr(r, "choices", None)
    message = getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
    if message is None:
        seen = f"{r!s:.80}" if isinstance(r, str) else "JSON without choices"
        raise RuntimeError(f"the endpoint answered {seen}, not a chat completion (not the OpenAI API)")
    counts = getattr(r, "usage", None)
    usage.prompt_tokens += int(getattr(counts, "prompt_tokens", 0) or 0)
    usage.completion_tokens += int(getattr(counts, "completion_tokens", 0) or 0)
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def _message(e: Exception) -> str:
    from om2w_tui.endpoint import reply_error  # loaded already by the client that raised

    if (refused := reply_error(e)) is not None:   # the deadline, the reply cap, not the API: its own words
        return str(refused)[:300]
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(e)[:300]


def select_kept(scores: list[int], threshold: int, limit: int = MAX_KEPT) -> list[int]:
    """Indices (0-based) of the screenshots kept: score >= threshold, the first `limit` of them in trajectory order,
    as the official method keeps them."""
    return [i for i, sc in enumerate(scores) if sc >= threshold][:limit]


async def judge_episode(ep: EvaluatorView, s: Settings, call: Caller) -> dict[str, Any]:
    """One task's judgement, as the line of the output file."""
    usage = Usage()
    # the official line is the task's result.json with the judgement added; ours adds a few keys of its own
    rec: dict[str, Any] = dict(ep.result)
    rec.update({
        "task_id": ep.task_id, "task": ep.task, "mode": s.mode_name, "judge_model": s.model,
        "score_threshold": s.score_threshold, "parsing": s.parsing, "schema": ep.schema,
        "judged_actions": ep.action_history,
        "final_result_response": ep.final_result_response, "screenshots": len(ep.screenshots),
    })
    shots = webvoyager_shots(ep, s.last_screenshots) if s.mode == "webvoyager" else ep.screenshots
    cache = await asyncio.to_thread(encode_images, shots)
    if s.mode == "webvoyager":
        messages, text = webvoyager_messages(ep, s.last_screenshots, cache)
        response = await call(messages, usage)
        label = read_status(response, s.parsing, "webvoyager")
        system = WEBVOYAGER_SYSTEM
    else:
        key_points = parse_key_points(await call(key_points_messages(ep.task), usage))
        total = len(ep.screenshots)
        replies = await asyncio.gather(*(call(score_messages(ep.task, key_points, p, i + 1, total, cache), usage)
                                         for i, p in enumerate(ep.screenshots)))
        scores = [read_score(r, s.parsing) for r in replies]
        kept = select_kept(scores, s.score_threshold)
        rec["key_points"] = key_points
        rec["image_judge_record"] = [{"Response": r, "Score": sc} for sc, r in zip(scores, replies)]
        rec["image_judge_screenshots"] = [p.name for p in ep.screenshots]
        rec["kept_screenshots"] = [ep.screenshots[i].name for i in kept]
        messages, text = verdict_messages(ep, key_points,
                                          [(i + 1, ep.screenshots[i], parse_reasoning(replies[i])) for i in kept],
                                          total, s.include_answer, cache)
        response = await call(messages, usage)
        label = read_status(response, s.parsing)
        system = VERDICT_SYSTEM
    rec.update({"input_text": text, "system_msg": system, "response": response,
                "evaluation_details": {"response": response, "predicted_label": label},
                "predicted_label": label, "usage": usage.as_dict(), "judged_at": time.time()})
    return rec


@dataclass
class JudgeOutcome:
    path: Path
    tasks: int                     # task folders in the run
    judged: int = 0                # judged by this call
    skipped: int = 0               # already in the output file
    unsettled: list[str] = field(default_factory=list)   # not settled by the run: not judged
    unreadable: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    successes: int = 0             # over every line of the output file
    in_file: int = 0


async def judge_run(out: Path, s: Settings, client: Any, *, task_ids: list[str] | None = None,
                    log: Callable[[str], None] = print, sleep: Callable[[float], Any] = asyncio.sleep,
                    settled: Settled | None = None) -> JudgeOutcome:
    """Judge the run's settled tasks not judged yet into its judge file; `settled`: its records as the caller read
    them just before (`judge`'s checks before the network), else read here."""
    out = Path(out)
    if settled is None:
        settled = Settled.read(out)   # before the folders: a task settled is read as it settled (verdicts.py)
    run = read_run(out)
    adopt_legacy_output(out, s, log)
    path = output_path(out, s)
    outcome = JudgeOutcome(path, len(run.task_dirs))
    done = read_judged(path, log)   # InputError for a file that is a symlink, a FIFO: `judge` exits 2 naming it
    if mixed := mixed_reading(path, settled.current(done), s):
        raise JudgeFatal(mixed)
    if missing := unknown_tasks(out, task_ids or []):
        raise JudgeFatal(missing)
    names = run.task_dirs if not task_ids else [t for t in run.task_dirs if t in set(task_ids)]
    outcome.unsettled = sorted(d for d in names if not settled.settled(d))
    if outcome.unsettled:
        log(f"not settled yet, not judged: {len(outcome.unsettled)} task(s) the run has no settling record of (to "
            f"run, running, or stopped under them; e.g. {outcome.unsettled[0]}): judge again once the run settles "
            f"them")
    names = [d for d in names if settled.settled(d)]
    unreadable = {d for d in names if d not in run.episodes}
    outcome.unreadable = sorted(unreadable)
    for p in run.problems:
        if any(p.startswith(f"{d}:") for d in unreadable):
            log(f"cannot judge: {p}")
    current = settled.current(done)
    todo = [run.episodes[d] for d in names if d in run.episodes and d not in current]
    outcome.skipped = sum(1 for d in names if d in current)
    if outcome.skipped:
        log(f"resuming: {outcome.skipped} task(s) already judged in {path.name}")
    if stale := sorted(d for d in names if d in done and d not in current):
        log(f"judged again: {len(stale)} task(s) whose verdict in {path.name} is of an earlier episode (run again "
            f"since; e.g. {stale[0]}): the new line replaces it")
    call = Caller(client, s, sleep, log)
    task_sem = asyncio.Semaphore(max(1, s.workers))
    n_total = len(todo)
    counter = 0

    async def one(ep: EvaluatorView) -> None:
        nonlocal counter
        async with task_sem:
            try:
                rec = await judge_episode(ep, s, call)
                if (settling := settled.episode(ep.task_id)) is not None:
                    rec.update(episode_mark(settling))
            except JudgeFatal:
                raise
            except Exception as e:   # noqa: BLE001 - one task's failure must not cost the others
                outcome.failed[ep.task_id] = f"{type(e).__name__}: {e}" if not isinstance(e, RuntimeError) else str(e)
                counter += 1
                log(f"[{counter}/{n_total}] {ep.task_id}  not judged: {outcome.failed[ep.task_id]}")
                return
            append_line(path, rec)
            outcome.judged += 1
            counter += 1
            kept = f"  kept {len(rec['kept_screenshots'])}/{rec['screenshots']} screenshots" \
                if "kept_screenshots" in rec else ""
            log(f"[{counter}/{n_total}] {ep.task_id}  {'success' if rec['predicted_label'] == 1 else 'failure'}{kept}")

    jobs = [asyncio.ensure_future(one(ep)) for ep in todo]
    try:
        await asyncio.gather(*jobs)
    finally:
        for j in jobs:
            j.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
    final = settled.current(read_judged(path))
    in_run = {d: r for d, r in final.items() if d in set(run.task_dirs)}
    outcome.in_file = len(in_run)
    outcome.successes = sum(1 for r in in_run.values() if r.get("predicted_label") == 1)
    return outcome
