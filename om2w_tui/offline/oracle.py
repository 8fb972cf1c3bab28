"""The oracle: an OpenAI-compatible chat-completions server that plays the offline tasks' known solutions.

Routes: `GET /v1/models`, `GET /v1/models/<id>`, `POST /v1/chat/completions`, `GET /health`.
The model name picks the behaviour (see MODES): `oracle` plays normally; `oracle-judge` plays the judge of
`om2w-tui judge` (see `judge_reply`); the others inject faults. The names in VLLM_MODES answer as vLLM's own server
does when a model or its serving is wrong (a context overflow, a <think> prefix, prose, truncation, an image sent to a
text-only model, a rate-limiting proxy), with vLLM's exact bodies (vllm_answers.py); their replies still carry the
known solution wherever a harness could recover it. Any name ending in `-flat` answers in vLLM <= 0.10.0's flat error
shape; an unknown name is vLLM's 404. Model cards are vLLM's, with `max_model_len` and `root`.
Run standalone (sites + oracle) with `python -m om2w_tui.offline.oracle --port P`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from om2w_tui.offline import vllm_answers as vllm
from om2w_tui.offline.agent_request import AgentRequest, message_text, normalise
from om2w_tui.offline.planner_play import planner_reply
from om2w_tui.offline.player import Decision, decide, find_task
from om2w_tui.offline.serving import BackgroundServer, QuietHandler
from om2w_tui.offline.suite import OfflineSuite
from om2w_tui.protocol.planner import FAMILIES

SLOW_DEFAULT_SECONDS = 3.0
MODES: dict[str, str] = {
    "oracle": "plays the offline solutions",
    "oracle-slow": f"sleeps {SLOW_DEFAULT_SECONDS:g} s before each reply (oracle-slow-<seconds> for any delay)",
    "oracle-hang": "never replies (the request blocks until the server stops)",
    "oracle-500": "answers HTTP 500 with an error body",
    "oracle-badjson": "answers 200 with message content that is not JSON",
    "oracle-nodone": "plays the solutions but scrolls where it would call done; on the last step, where only done "
                     "is allowed, a failed done (`oracle: only done is allowed at step N; ...`)",
    "oracle-nodone-unguided": "oracle-nodone served without guided decoding: on the last step it answers the "
                              "solution's next step as it is, outside the schema (browser-use counts an unparseable "
                              "reply; the episode ends out_of_steps)",
    "oracle-weak": "plays as oracle, but ends the tasks whose id's hash is divisible by 3 (3 of the 19 offline "
                   "tasks, the same every run) at once with a wrong answer: a second arm that really differs",
    "oracle-flaky": "every other request (the 1st, 3rd, ...) gets HTTP 500",
    "oracle-judge": "plays the judge of `om2w-tui judge` (key points, screenshot scores, verdicts); plays "
                    "agent requests as `oracle`",
    "oracle-judge-flaky": "oracle-judge, but every other request (the 1st, 3rd, ...) gets HTTP 500",
}
# answered as vLLM answers (vllm_answers.py); `-flat` after any name: vLLM <= 0.10.0's error shape and wordings
VLLM_MODES: dict[str, str] = {
    "oracle-context": f"HTTP 400 context length exceeded from each episode's second step on (max_model_len "
                      f"{vllm.MAX_MODEL_LEN}); oracle-context-<tokens>: max_model_len <tokens>, and any request "
                      f"longer (prompt and max completion tokens) refused",
    "oracle-think": "a <think>...</think> block before the right JSON (a Qwen3 served without --reasoning-parser)",
    "oracle-think-open": "the thought, </think>, then the right JSON (a chat template that opened the block)",
    "oracle-reasoning": "the right JSON, the thought in `reasoning_content` (vLLM <= 0.15 with --reasoning-parser)",
    "oracle-reasoning-new": "the right JSON, the thought in `reasoning` (vLLM since reasoning_content was removed)",
    "oracle-prose": "a prose reply that ignores response_format",
    "oracle-fenced": "the right JSON inside a ```json fence",
    "oracle-truncated": "JSON cut at the max tokens: finish_reason length, usage.completion_tokens the cap",
    "oracle-empty": "an empty reply (content \"\", finish_reason stop)",
    "oracle-surrogate": "the right JSON, its text holding an escape that is not Unicode (a lone \\ud800, as a model "
                        "emitting half of a character's bytes writes it)",
    "oracle-text-only": f"a text-only model ({vllm.TEXT_ROOT}): HTTP 400 \"... is not a multimodal model\" to any "
                        f"request with an image, the solution to one without",
    "oracle-429": f"a rate-limiting proxy in front (LiteLLM's body): HTTP 429 with Retry-After: "
                  f"{vllm.RETRY_AFTER_S} to two requests of every three (oracle-429-<n>: n of every n+1), the "
                  f"solution to the others",
}
MODES.update(VLLM_MODES)
JUDGE_MODES = ("oracle-judge", "oracle-judge-flaky")
NODONE_MODES = ("oracle-nodone", "oracle-nodone-unguided")   # never say done where they may act
TEXT_ONLY_MODES = ("oracle-text-only", "oracle-think", "oracle-think-open")   # their cards' root: a text model
FLAT_SUFFIX = "-flat"
_SLOW_WITH_DELAY = re.compile(r"oracle-slow-(?P<seconds>\d+(?:\.\d*)?|\.\d+)")
_WITH_NUMBER = re.compile(r"(?P<name>oracle-context|oracle-429)-(?P<n>\d+)")
CONTEXT_GROWTH_TOKENS = 512   # oracle-context: what each later step adds to the overflowing prompt it reports


@dataclass(frozen=True)
class Mode:
    name: str
    delay: float = 0.0
    shape: str = "nested"          # vLLM's error body (vllm_answers.SHAPES)
    limit: int | None = None       # oracle-context-<tokens>: its max_model_len, checked against every request
    refusals: int = 2              # oracle-429: requests refused before each one that passes

    @property
    def max_model_len(self) -> int:
        return self.limit or vllm.MAX_MODEL_LEN


def shape_of(model: str) -> str:
    return "flat" if model.endswith(FLAT_SUFFIX) else "nested"


def parse_mode(model: str) -> Mode | None:
    """The fault mode a model name asks for, or None for an unknown model."""
    base = model.removesuffix(FLAT_SUFFIX)
    mode = _base_mode(base)
    return replace(mode, shape=shape_of(model)) if mode is not None else None


def _base_mode(model: str) -> Mode | None:
    if model == "oracle-slow":
        return Mode("oracle-slow", SLOW_DEFAULT_SECONDS)
    if match := _SLOW_WITH_DELAY.fullmatch(model):
        return Mode("oracle-slow", float(match["seconds"]))
    if match := _WITH_NUMBER.fullmatch(model):
        n = int(match["n"])
        if match["name"] == "oracle-context":
            return Mode("oracle-context", limit=n or None)
        return Mode("oracle-429", refusals=n)
    if model in MODES:
        return Mode(model)
    return None


def openai_error(message: str, error_type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def chat_completion(model: str, content: str, prompt_chars: int) -> dict[str, Any]:
    prompt_tokens, completion_tokens = prompt_chars // 4, len(content) // 4
    return {
        "id": f"chatcmpl-oracle-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def agent_reply(tasks: list[dict[str, Any]], request: AgentRequest, *, allow_done: bool = True,
                guided: bool = True) -> str:
    """The assistant content: bare JSON with only the brain fields the request's schema asks for, plus `action`."""
    decision = decide(tasks, request, allow_done=allow_done, guided=guided)
    brain = {
        "thinking": decision.thinking,
        "evaluation_previous_goal": "Oracle: the page state was checked against the known solution.",
        "memory": decision.memory,
        "next_goal": decision.next_goal,
    }
    wanted = request.schema_properties
    reply: dict[str, Any] = {key: value for key, value in brain.items() if wanted is None or key in wanted}
    reply["action"] = decision.actions
    return json.dumps(reply, ensure_ascii=False)


WEAK_ANSWER = "oracle-weak: a wrong answer, given without looking"


def weak_fails(task: dict[str, Any]) -> bool:
    """Whether oracle-weak fails `task`: a task whose id's stable hash is divisible by 3 (the same in every run and
    process, unlike Python's hash)."""
    return int(hashlib.sha256(str(task.get("task_id", "")).encode("utf-8")).hexdigest(), 16) % 3 == 0


def weak_reply(request: AgentRequest) -> str:
    """oracle-weak on a task it fails: `done` at once, claiming success with a wrong answer (a judge must catch it)."""
    decision = Decision(actions=[{"done": {"text": WEAK_ANSWER, "success": True}}],
                        thinking="Oracle-weak: answering without looking.", memory="", next_goal="Answer.")
    reply: dict[str, Any] = {"thinking": decision.thinking, "evaluation_previous_goal": "Oracle-weak: unchecked.",
                             "memory": decision.memory, "next_goal": decision.next_goal}
    wanted = request.schema_properties
    reply = {key: value for key, value in reply.items() if wanted is None or key in wanted}
    reply["action"] = decision.actions
    return json.dumps(reply, ensure_ascii=False)


# ------------------------------------------------------------------------------------------------ the judge
#
# `om2w-tui judge` (evaluation/judge_prompts.py) asks for a reply format in its system prompts; a request is known
# by it:
#   "Verdict: NOT SUCCESS"  a WebVoyager-style verdict  -> "Verdict: SUCCESS" or "Verdict: NOT SUCCESS"
#   "Status: failure"       a WebJudge outcome          -> "Status: success" or "Status: failure"
#   "Score: <1-5>"          one screenshot's relevance  -> "Score: 5" for the trajectory's last screenshot,
#                           4 for the one before it, 2 for the others (the user text says "screenshot i of n")
#   "Key points:"           the task's key points       -> the task's clauses, numbered
# The verdict is success iff the task (found by its text after "Task:") is an offline task with reference answers
# and every one of them appears in the request's text from its "Action history:" or "Agent's final answer" heading
# on: that is, in what the judge was shown of the agent's actions and answer (never in the task or key points).
# The oracle sees no pixels: in plain WebJudge mode the answer is not shown, so an information task fails.

_TASK_LINE = re.compile(r"Task:\s*(?P<task>.*?)(?:\n\n|$)", re.DOTALL)
_SHOT_OF = re.compile(r"screenshot (?P<i>\d+) of (?P<n>\d+)", re.IGNORECASE)
_EVIDENCE = re.compile(r"Action history:|Agent's final answer")


def _texts(body: dict[str, Any]) -> tuple[str, str]:
    """(system text, user text) of a request: every text part of each role, joined."""
    system: list[str] = []
    user: list[str] = []
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            (system if message.get("role") == "system" else user).append(message_text(message.get("content")))
    return "\n".join(system), "\n".join(user)


def judge_prompt_chars(body: dict[str, Any]) -> int:
    system, user = _texts(body)
    return len(system) + len(user)


def _key_points(task_text: str) -> str:
    parts = [p.strip(" .") for p in re.split(r",\s*|;\s*|\.\s+|\s+and\s+|\s+then\s+", task_text)]
    return "\n".join(f"{i}. {p}" for i, p in enumerate((p for p in parts if p), 1))


def judge_reply(tasks: list[dict[str, Any]], body: dict[str, Any]) -> str | None:
    """The judge's reply to a request of `om2w-tui judge`, or None when the request is not one."""
    system, user = _texts(body)
    match = _TASK_LINE.search(user)
    task_text = match["task"].strip() if match else ""
    if "Verdict: NOT SUCCESS" in system or "Status: failure" in system:
        task = find_task(tasks, task_text)
        evidence = _EVIDENCE.search(user)
        seen = normalise(user[evidence.start():]) if evidence else ""
        references = (task or {}).get("reference_answer") or []
        references = [references] if isinstance(references, str) else references
        missing = [r for r in references if normalise(r) not in seen]
        ok = task is not None and bool(references) and not missing
        if task is None:
            why = "this is not one of the offline tasks"
        elif not references:
            why = f"task {task['task_id']} has no reference answer"
        elif missing:
            why = f"the evidence shown does not contain {', '.join(repr(m) for m in missing)}"
        else:
            why = f"every reference answer of {task['task_id']} is in the evidence shown"
        if "Verdict: NOT SUCCESS" in system:
            return f"Thoughts: oracle: {why}.\nVerdict: {'SUCCESS' if ok else 'NOT SUCCESS'}"
        return f"Thoughts: oracle: {why}.\nStatus: {'success' if ok else 'failure'}"
    if "Score: <1-5>" in system:
        shot = _SHOT_OF.search(user)
        if shot is None:
            score, why = 3, "no position given"
        else:
            i, n = int(shot["i"]), int(shot["n"])
            score = 5 if i == n else 4 if i == n - 1 else 2
            why = f"screenshot {i} of {n}"
        return f"Reasoning: oracle: {why}.\nScore: {score}"
    if "Key points:" in system:
        return "Key points:\n" + (_key_points(task_text) or "1. (no task text)")
    return None


def _model_entry(name: str) -> dict[str, Any]:
    """vLLM's model card for a served name; the agent arm's families as its LoRA cards are (a path as root, the base
    model as parent, no max_model_len: models/serving.py)."""
    if name in FAMILIES:
        card = vllm.model_card(name, f"/adapters/{name}", None)
        card["parent"] = "oracle"
        return card
    mode = parse_mode(name)
    base = mode.name if mode is not None else name
    root = vllm.TEXT_ROOT if base in TEXT_ONLY_MODES else vllm.VISION_ROOT
    return vllm.model_card(name, root, mode.max_model_len if mode is not None else vllm.MAX_MODEL_LEN)


class OracleHandler(QuietHandler):
    app: OracleServer

    def version_string(self) -> str:
        return "uvicorn"   # the Server header vLLM's answers carry (it serves through uvicorn)

    def send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.send_body(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [_model_entry(name) for name in (*MODES, *FAMILIES)]})
        elif path.startswith("/v1/models/"):
            name = path.removeprefix("/v1/models/")
            if parse_mode(name) is None and name not in FAMILIES:
                self.send_json(*vllm.model_not_found(shape_of(name), name))
            else:
                self.send_json(200, _model_entry(name))
        elif path in ("", "/health"):
            self.send_json(200, {"status": "ok", "tasks": len(self.app.tasks)})
        else:
            self.send_json(404, openai_error(f"Unknown path {path}", "invalid_request_error", "not_found"))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self.read_body()
        if path != "/v1/chat/completions":
            self.send_json(404, openai_error(f"Unknown path {path}", "invalid_request_error", "not_found"))
            return
        status, payload, headers = self.answer_chat(raw)
        self.app.count_call(raw)  # counted before sending, so a client that has its reply sees the new count
        self.send_json(status, payload, headers)

    def answer_chat(self, raw: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, body, headers) for one chat-completions request; raises _Dropped when nothing is to be sent."""
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as error:
            return 400, openai_error(f"Invalid JSON body: {error}", "invalid_request_error"), {}
        model = str(body.get("model", ""))
        # the `agent` arm's specialist families are served as adapters of the same oracle
        mode = parse_mode(model) or (parse_mode("oracle") if model in FAMILIES else None)
        if mode is None:
            return (*vllm.model_not_found(shape_of(model), model), {})
        if mode.name == "oracle-429" and self.app.next_refused(model, mode.refusals):
            return vllm.proxy_rate_limited()
        return (*self.answer_mode(mode, model, body), {})

    def answer_mode(self, mode: Mode, model: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if mode.name == "oracle-hang":
            self.wait_until_stopped()
            raise _Dropped
        flaky = mode.name in ("oracle-flaky", "oracle-judge-flaky")
        if mode.name == "oracle-500" or (flaky and self.app.next_flaky_fails()):
            return 500, openai_error("oracle: injected server error", "server_error", "internal_error")
        if mode.delay and self.server.stopping.wait(mode.delay):
            raise _Dropped
        if mode.name == "oracle-text-only" and vllm.has_image(body):
            return vllm.not_multimodal(mode.shape, vllm.TEXT_ROOT)
        if mode.name in JUDGE_MODES:
            judged = judge_reply(self.app.tasks, body)
            if judged is not None:
                return 200, chat_completion(model, judged, judge_prompt_chars(body))
        planned = planner_reply(self.app.tasks, body)
        if planned is not None:
            return 200, chat_completion(model, planned, len(json.dumps(body)))
        request = AgentRequest.from_body(body)
        if mode.name in VLLM_MODES:
            return vllm_answer(self.app.tasks, mode, model, body, request)
        if mode.name == "oracle-badjson":
            content = "oracle: this reply is deliberately not JSON {"
        elif mode.name == "oracle-weak" and (task := find_task(self.app.tasks, request.task_text)) is not None \
                and weak_fails(task):
            content = weak_reply(request)
        else:
            content = agent_reply(self.app.tasks, request, allow_done=mode.name not in NODONE_MODES,
                                  guided=mode.name != "oracle-nodone-unguided")
        return 200, chat_completion(model, content, request.prompt_chars)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except _Dropped:
            self.close_connection = True


def vllm_answer(tasks: list[dict[str, Any]], mode: Mode, model: str, body: dict[str, Any],
                request: AgentRequest) -> tuple[int, dict[str, Any]]:
    """What vLLM answers an agent step in one of VLLM_MODES: a refusal where the mode's serving would refuse, else
    the step's known solution in the mode's wrong (or mendable) form, with vLLM's usage."""
    prompt, cap = vllm.prompt_tokens(body), vllm.max_tokens(body)
    if refused := context_refusal(mode, request, prompt, cap):
        return refused
    decision = decide(tasks, request)
    answer = agent_reply(tasks, request)
    thought = decision.thinking
    reasoning = None
    if mode.name == "oracle-think":
        content = f"<think>\n{thought}\n</think>\n\n{answer}"
    elif mode.name == "oracle-think-open":
        content = f"{thought}\n</think>\n\n{answer}"
    elif mode.name in ("oracle-reasoning", "oracle-reasoning-new"):
        content, reasoning = answer, thought
    elif mode.name == "oracle-prose":
        content = prose(decision)
    elif mode.name == "oracle-fenced":
        content = f"```json\n{answer}\n```"
    elif mode.name == "oracle-truncated":
        budget = cap or max(mode.max_model_len - prompt, 1)
        return 200, vllm.completion(model, cut_reply(thought, budget), prompt, budget, finish_reason="length")
    elif mode.name == "oracle-empty":
        return 200, vllm.completion(model, "", prompt, 1)
    elif mode.name == "oracle-surrogate":
        content = json.dumps(with_lone_surrogate(json.loads(answer)))   # ASCII JSON: the surrogate as `\ud800`
    else:   # oracle-context (a step that fits), oracle-text-only without an image, oracle-429 let through
        content = answer
    field = "reasoning_content" if mode.name == "oracle-reasoning" else "reasoning"
    return 200, vllm.completion(model, content, prompt, vllm.text_tokens(content), reasoning=reasoning,
                                reasoning_field=field)


def context_refusal(mode: Mode, request: AgentRequest, prompt: int,
                    cap: int | None) -> tuple[int, dict[str, Any]] | None:
    """oracle-context's 400, or None when the request fits: with a limit of its own, any request whose prompt and
    completion budget pass it (as vLLM checks); without, every agent step from the second on, reported as a prompt
    that outgrew max_model_len by a little more each step (the arithmetic of vLLM's message holds: P + M > L)."""
    if mode.name != "oracle-context":
        return None
    limit = mode.max_model_len
    if mode.limit is not None:
        fits = prompt < limit and (cap is None or prompt + cap <= limit)
        return None if fits else vllm.context_exceeded(mode.shape, limit, prompt, cap)
    if request.step is None or request.step < 2:
        return None
    grown = max(prompt, limit - (cap or 0) + CONTEXT_GROWTH_TOKENS * (request.step - 1))
    return vllm.context_exceeded(mode.shape, limit, grown, cap)


def prose(decision: Decision) -> str:
    """The step's solution told in words, as a model that ignores response_format writes it."""
    steps = []
    for action in decision.actions:
        for name, args in action.items():
            said = ", ".join(f"{key} {value}" for key, value in (args or {}).items()) if isinstance(args, dict) else ""
            steps.append(f"{name} ({said})" if said else name)
    return f"{decision.next_goal.rstrip('.')}. I will {'; then '.join(steps) or 'wait'}."


def with_lone_surrogate(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply with half a character (U+D800, a lone surrogate) after its memory and each `done` text."""
    half = "\ud800"
    if isinstance(reply.get("memory"), str):
        reply["memory"] += f" {half}"
    for action in reply.get("action") or []:
        if isinstance(action.get("done"), dict) and isinstance(action["done"].get("text"), str):
            action["done"]["text"] += f" {half}"
    return reply


def cut_reply(thought: str, budget: int) -> str:
    """A JSON reply whose thinking runs on until the completion budget (in the oracle's tokens) cuts it."""
    text = '{"thinking": "' + json.dumps(thought)[1:-1]
    while len(text) < budget * vllm.CHARS_PER_TOKEN:
        text += " " + json.dumps(thought)[1:-1]
    return text[: budget * vllm.CHARS_PER_TOKEN]


class _Dropped(Exception):
    """The request was dropped on purpose (hang or slow reply cut short by stop); nothing is sent."""


class OracleServer:
    """The oracle on host:port (0 = a free port) in a daemon thread; `url` is the OpenAI base URL."""

    def __init__(self, tasks: list[dict[str, Any]], host: str = "127.0.0.1", port: int = 0, keep: bool = False):
        self.tasks = list(tasks)
        self._lock = threading.Lock()
        self._calls = 0
        self._keep = keep                  # keep every request body (tests read what the model was shown)
        self._bodies: list[bytes] = []
        self._flaky_requests = 0
        self._limited: dict[str, int] = {}   # oracle-429: requests seen, by model name
        self._server = BackgroundServer(OracleHandler, app=self, host=host, port=port, name="oracle")

    @property
    def url(self) -> str:
        return f"{self._server.base_url}/v1"

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def calls(self) -> int:
        """Chat-completions requests answered so far (any status; a hung request is never answered)."""
        with self._lock:
            return self._calls

    def count_call(self, body: bytes = b"") -> None:
        with self._lock:
            self._calls += 1
            if self._keep:
                self._bodies.append(body)

    @property
    def bodies(self) -> list[bytes]:
        """The chat-completions request bodies answered so far (with keep=True)."""
        with self._lock:
            return list(self._bodies)

    def next_flaky_fails(self) -> bool:
        with self._lock:
            self._flaky_requests += 1
            return self._flaky_requests % 2 == 1

    def next_refused(self, model: str, refusals: int) -> bool:
        """oracle-429: whether this request is one of the `refusals` before each one that passes."""
        with self._lock:
            seen = self._limited.get(model, 0)
            self._limited[model] = seen + 1
            return seen % (refusals + 1) < refusals

    def start(self) -> OracleServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> OracleServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """Serve the offline sites and the oracle until interrupted."""
    parser = argparse.ArgumentParser(
        prog="om2w-tui oracle", description="Serve the offline sites and the scripted oracle model."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="oracle port (default: any free port)")
    args = parser.parse_args(argv)
    with OfflineSuite(host=args.host) as suite:
        oracle = OracleServer(suite.tasks(), host=args.host, port=args.port)
        try:
            oracle.start()
        except OSError as error:
            print(f"om2w-tui oracle: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
            return 1
        try:
            print("Offline sites:")
            for name, url in suite.base_urls.items():
                print(f"  {name:<9} {url}/")
            print(f"Oracle (OpenAI-compatible): {oracle.url}")
            print("Models: " + ", ".join(MODES) + ", oracle-slow-<seconds>, oracle-context-<tokens>, "
                  "oracle-429-<n>; any of them with -flat: vLLM <= 0.10.0's error bodies")
            print("Press Ctrl-C to stop.", flush=True)
            threading.Event().wait()
        except KeyboardInterrupt:
            print("Stopping.", file=sys.stderr)
        finally:
            oracle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
