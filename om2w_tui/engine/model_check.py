"""The preflight asks the model what a run will ask: one request shaped like the agent's first step, and what it says.

`model_checks(cfg, tasks)` (for `om2w-tui doctor` and the launch form, through launch.run_checks) sends the run's
first step to the run's model through a short-lived process (`python -m om2w_tui.episode.model_probe`: browser-use
is a second to import and needs a Chromium, and the console's process must stay light), reads the server's
`max_model_len` from `GET /v1/models`, and turns both into check rows: whether the server took the screenshot and the
action schema, whether the reply parses into an action (naming a <think> prefix, prose, a fence, a cut, a wrong
schema), the latency, and the first step's tokens against max_model_len. What will go wrong is a WARNING row with
its remedy (protocol/model.py): the run can still start, the model guard watches it.

The verdicts (`verdicts`) are pure: the probe's JSON in, rows out. A probe's answer is kept a minute for the same
settings, so a form checked as you type asks once; only answers the server gave are kept.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.settings import key_variables
from om2w_tui.protocol.codec import CodecError, from_json, to_json
from om2w_tui.protocol.model import classify_error, context_limit, describe, kind_label, remedy, reply_problem, short
from om2w_tui.protocol.model_settings import ModelSettings
from om2w_tui.protocol.probe import ActionCheck, ProbeAnswer, ProbeQuestion, not_asked
from om2w_tui.protocol.worker import BrowserSettings
from om2w_tui.secret import EndpointURL

WARNING: Literal["warning"] = "warning"   # a check row's third state: the run can start; the row says what will fail
CheckState = bool | Literal["warning"]
Check = tuple[str, CheckState, str]       # (what, ok | WARNING, detail)

PROBE_MODULE = "om2w_tui.episode.model_probe"
SETUP_S = 90.0                 # the probe's Python, browser-use's import, Chromium and the page, before the call
PAGE_TOKENS = 10_000           # what a real site's page can add: browser-use keeps up to 40,000 characters of its
                               # elements (Agent's max_clickable_elements_length), ~10,000 tokens
SLOW_SHARE = 0.5               # a first step slower than this share of --llm-timeout is worth a warning
KEEP_S = 60.0                  # how long an answered probe is reused for the same settings
SAMPLE_TASK = "Find the price of the copper pour-over kettle."   # when the run has no task to show the model


@dataclass(frozen=True)
class ProbeSpec:
    """What the probe process needs: the run's settings, with no defaults of their own (no secret here: the key is
    added to the question on the probe's stdin when it is asked, never to its environment)."""

    llm: ModelSettings
    base_url: str
    instruction: str
    max_steps: int
    chromium: str
    browser: BrowserSettings | None
    withhold: tuple[str, ...]        # the run's key variables (settings.key_variables): not in the probe's environment

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def question(self, api_key: str) -> ProbeQuestion:
        """What the probe process is asked (the key added only now, on its way to the probe's stdin)."""
        return ProbeQuestion(llm=self.llm, base_url=self.base_url, api_key=api_key, instruction=self.instruction,
                             max_steps=self.max_steps, chromium=self.chromium, browser=self.browser)

    @property
    def timeout(self) -> float:
        return SETUP_S + self.llm.llm_timeout * (1 + self.llm.llm_retries) + 10


def probe_spec(cfg: RunConfig, base_url: str, tasks: list[Task]) -> ProbeSpec:
    """The run's first step as its worker would send it, on the run's first selected task (its step budget too)."""
    from om2w_tui.episode.instruction import instruction  # the template's filling, shared with the worker

    task = tasks[0] if tasks else Task("sample", SAMPLE_TASK, "the shop", max_steps=cfg.max_steps)
    return ProbeSpec(llm=cfg.model_settings(), base_url=base_url,
                     instruction=instruction(task.to_dict(), cfg.instruction_template, cfg.hint_field),
                     max_steps=task.max_steps, chromium=cfg.chromium or "", browser=cfg.browser_settings(),
                     withhold=key_variables(cfg))


# ── asking ───────────────────────────────────────────────
def ask(spec: ProbeSpec, api_key: str) -> ProbeAnswer:
    """The probe's answer (see episode/model_probe.py); a probe that fails, hangs or says nothing is said so. Its whole
    process group (Chromium too) is ended on a timeout."""
    # the workers' allow-list and start (the user's folder off the import path): the probe's Chromium too
    from om2w_tui.executors.local import python_module, worker_environment

    # the key travels on the probe's stdin only, as a worker's does in its spec: never in its (Chromium's) environment
    question = json.dumps(to_json(spec.question(api_key)))
    process = subprocess.Popen(python_module(PROBE_MODULE), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env=worker_environment(os.environ, withhold=spec.withhold))
    try:
        out, err = process.communicate(question, timeout=spec.timeout)
    except subprocess.TimeoutExpired:
        _end_group(process)
        return not_asked("probe", f"no answer within {spec.timeout:g} s")
    lines = out.strip().splitlines()
    try:
        return from_json(ProbeAnswer, json.loads(lines[-1]))
    except (IndexError, ValueError, CodecError):   # no answer, or not this version's: its last words say why
        return not_asked("probe", short(err.strip().splitlines()[-1] if err.strip() else
                                        f"it ended with code {process.returncode}"))


def _end_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.communicate()


def served_model_len(base_url: str, model: str, api_key: str, timeout: float = 10.0) -> int | None:
    """The model's `max_model_len` as vLLM lists it in GET /v1/models (its card by `GET /models/<id>` where the list
    lacks it); None where the server lists none (not vLLM, or an adapter)."""
    from om2w_tui.endpoint import get_json, run_sync  # httpx (slow to import) only when a model is checked

    url = EndpointURL(base_url).join("models")
    listed = run_sync(get_json(url, api_key, timeout))
    cards = listed.get("data") if isinstance(listed, dict) else None
    card = next((c for c in cards if isinstance(c, dict) and c.get("id") == model), None) \
        if isinstance(cards, list) else None
    if card is None:
        card = run_sync(get_json(url.join(model), api_key, timeout))
    value = card.get("max_model_len") if isinstance(card, dict) else None
    return value if isinstance(value, int) and value > 0 else None


_kept: dict[str, tuple[float, list[Check]]] = {}
_keeping = threading.Lock()
_asking: dict[str, threading.Lock] = {}


def model_checks(cfg: RunConfig, tasks: list[Task]) -> list[Check]:
    """The model's rows for a run's preflight: the built-in oracle is served for the question, as a run serves it."""
    key_spec = probe_spec(cfg, "built-in oracle" if cfg.builtin_oracle else cfg.endpoint.for_client(), tasks)
    key = key_spec.to_json()
    with _keeping:
        lock = _asking.setdefault(key, threading.Lock())
    with lock:   # a second check of the same settings waits for the first's answer
        kept = _kept.get(key)
        if kept is not None and time.monotonic() - kept[0] < KEEP_S:
            return kept[1]
        rows, answered = _ask_and_judge(cfg, key_spec, tasks)
        if answered:
            _kept[key] = (time.monotonic(), rows)
        return rows


def _ask_and_judge(cfg: RunConfig, spec: ProbeSpec, tasks: list[Task]) -> tuple[list[Check], bool]:
    if not cfg.builtin_oracle:
        return _judged(replace(spec, base_url=cfg.endpoint.for_client()), cfg.api_key())
    from om2w_tui.offline import OracleServer  # the oracle only when it is the model asked

    with OracleServer([t.to_dict() for t in tasks]) as oracle:
        return _judged(replace(spec, base_url=oracle.url), "EMPTY")


def _judged(spec: ProbeSpec, api_key: str) -> tuple[list[Check], bool]:
    outcome = ask(spec, api_key)
    limit = served_model_len(spec.base_url, spec.llm.model, api_key)
    return verdicts(outcome, limit, spec), outcome.ok and outcome.status is not None


# ── verdicts ─────────────────────────────────────────────
def verdicts(outcome: ProbeAnswer, max_model_len: int | None, spec: ProbeSpec) -> list[Check]:
    """The probe's answer as two rows: the reply (images, schema, action, latency) and the context."""
    return [reply_verdict(outcome, spec), context_verdict(outcome, max_model_len, spec)]


def reply_verdict(outcome: ProbeAnswer, spec: ProbeSpec) -> Check:
    what = "model reply"
    if not outcome.ok:
        return what, WARNING, (f"not asked: the first step could not be built ({outcome.stage or 'probe'}: "
                               f"{short(outcome.error)})")
    if outcome.status != 200:
        kind, message = _refusal(outcome)
        if kind == "bad_request" and _SCHEMA_REFUSED.search(message):
            return what, WARNING, (f"the server refuses the action schema (response_format): {message} → serve "
                                   f"with another structured-outputs backend (vLLM: "
                                   f"--structured-outputs-config.backend guidance; older: --guided-decoding-backend "
                                   f"guidance)")
        return what, WARNING, f"the first step was refused: {describe(kind, message)} → {remedy(kind, message)}"
    content, finish = outcome.content, outcome.finish_reason
    action = outcome.action or ActionCheck(valid=False, problem="the reply is not a chat completion")
    said = _how_it_went(outcome, spec)
    problem = reply_problem(content, finish, structured=True)
    mended = ""
    if problem is not None and _shape(*problem) == "not_unicode" and action.valid:   # the run mends it: no warning
        problem, mended = None, "; its text that is not Unicode (a lone surrogate) mended to U+FFFD, as the run does"
    if problem is not None:
        kind, message = problem
        mended = f"; the JSON {action.how} is a valid action" if action.valid else ""
        seen = f": {short(repr(content), 90)}" if content else ""
        return what, WARNING, f"{said}; but {_WORDS.get(_shape(kind, message), kind_label(kind))}{seen}{mended} → " \
                              f"{remedy(kind, message)}"
    if not action.valid:
        return what, WARNING, (f"{said}; but the reply is JSON the action schema refuses ({action.problem})"
                               f" → {remedy('unparseable')}")
    detail = f"{said}; the reply is a valid action ({', '.join(action.actions)}){mended}"
    if outcome.reasoning_field:
        detail += f", its thought in `{outcome.reasoning_field}` (kept as the step's thought)"
    latency = outcome.latency_s
    if latency > SLOW_SHARE * spec.llm.llm_timeout:
        return what, WARNING, (f"{detail}; but it took {latency:.1f} s of --llm-timeout {spec.llm.llm_timeout:g} → "
                               f"{remedy('timeout')}")
    return what, True, detail


# vLLM's refusals of a response_format's schema (v1/structured_output/backend_xgrammar.py and its siblings)
_SCHEMA_REFUSED = re.compile(r"JSON schema contains features not supported|transform json schema into|"
                             r"Grammar error|structured output|guided decoding|response_format", re.I)
_WORDS = {   # what is wrong with a reply, as a preflight row says it
    "think": "the reply opens with a <think> block before its JSON",
    "prose": "the reply is prose, not the action schema",
    "fenced": "the reply's JSON is inside a code fence",
    "invalid_json": "the reply is not valid JSON",
    "not_unicode": "the reply's JSON holds text that is not Unicode (a lone surrogate; the run mends it to U+FFFD)",
    "wrong_schema": "the reply is JSON but not an object",
    "truncated": "the reply was cut at the max tokens (finish_reason length)",
    "empty": "the reply is empty",
}


def _shape(kind: str, message: str) -> str:
    """The reply's shape for an unparseable reply (`think: ...` -> think), else the kind itself."""
    return message.split(":", 1)[0] if kind == "unparseable" else kind


def _refusal(outcome: ProbeAnswer) -> tuple[str, str]:
    """The kind and the server's words of a refused (or unanswered) first step."""
    status, text = outcome.status, outcome.error
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    kind, message = classify_error(status, body)
    if status is None and ("timeout" in text.lower() or "timed out" in text.lower() or "deadline" in text):
        kind = "timeout"
    if status is None and "not the OpenAI API" in text:   # endpoint.py's words for an answer that is not the API's
        kind = "not_api"
    return kind, message


def _how_it_went(outcome: ProbeAnswer, spec: ProbeSpec) -> str:
    images = ("the screenshot and the action schema accepted" if outcome.sent and outcome.sent.images else
              "the action schema accepted (no screenshot sent: --no-vision)")
    waits = "".join(f", after HTTP {r.status}" + (f" (Retry-After {r.retry_after} s)" if r.retry_after else "")
                    for r in outcome.retried)
    return f"answered in {outcome.latency_s:.1f} s{waits}: {images}"


def context_verdict(outcome: ProbeAnswer, max_model_len: int | None, spec: ProbeSpec) -> Check:
    what = "model context"
    cap = spec.llm.max_completion_tokens
    refused = outcome.ok and outcome.status not in (200, None)
    kind, message = _refusal(outcome) if refused else ("ok", "")
    limit = max_model_len or (context_limit(message) if kind == "context_length" else None)
    if kind == "context_length":
        return what, WARNING, (f"max_model_len {limit or '?'}: the first step alone does not fit with "
                               f"{cap} completion tokens → {remedy('context_length')}")
    prompt = outcome.prompt_tokens
    if limit is None:
        told = f"; the first step took {prompt:,} prompt tokens" if prompt is not None else ""
        return what, True, f"the server lists no max_model_len (GET /v1/models){told}"
    if prompt is None:
        return what, True, f"max_model_len {limit:,}; the first step's tokens are not known (no usage in the reply)"
    room = limit - prompt - cap
    told = f"first step: {prompt:,} prompt + {cap:,} completion tokens of max_model_len {limit:,}"
    if room < PAGE_TOKENS:
        return what, WARNING, (f"{told}: {room:,} left, less than a real site's page can add (browser-use keeps up to "
                               f"40,000 characters of its elements, ~{PAGE_TOKENS:,} tokens) before any history → "
                               f"{remedy('context_length')}")
    return what, True, f"{told} ({room:,} left for larger pages and the history)"
