"""The oracle: an OpenAI-compatible chat-completions server that plays the offline tasks' known solutions.

Routes: `GET /v1/models`, `GET /v1/models/<id>`, `POST /v1/chat/completions`, `GET /health`.
The model name picks the behaviour (see MODES): `oracle` plays normally; `oracle-judge` plays the judge of
`om2w-tui judge` (see `judge_reply`); the others inject faults.
Run standalone (sites + oracle) with `python -m om2w_tui.offline.oracle --port P`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from om2w_tui.episode.arms.planner import FAMILIES
from om2w_tui.offline.agent_request import AgentRequest, message_text, normalise
from om2w_tui.offline.planner_play import planner_reply
from om2w_tui.offline.player import decide, find_task
from om2w_tui.offline.serving import BackgroundServer, QuietHandler
from om2w_tui.offline.suite import OfflineSuite

SLOW_DEFAULT_SECONDS = 3.0
MODES: dict[str, str] = {
    "oracle": "plays the offline solutions",
    "oracle-slow": f"sleeps {SLOW_DEFAULT_SECONDS:g} s before each reply (oracle-slow-<seconds> for any delay)",
    "oracle-hang": "never replies (the request blocks until the server stops)",
    "oracle-500": "answers HTTP 500 with an error body",
    "oracle-badjson": "answers 200 with message content that is not JSON",
    "oracle-nodone": "plays the solutions but scrolls where it would call done",
    "oracle-flaky": "every other request (the 1st, 3rd, ...) gets HTTP 500",
    "oracle-judge": "plays the judge of `om2w-tui judge` (key points, screenshot scores, verdicts); plays "
                    "agent requests as `oracle`",
    "oracle-judge-flaky": "oracle-judge, but every other request (the 1st, 3rd, ...) gets HTTP 500",
}
JUDGE_MODES = ("oracle-judge", "oracle-judge-flaky")
_SLOW_WITH_DELAY = re.compile(r"oracle-slow-(?P<seconds>\d+(?:\.\d*)?|\.\d+)")


@dataclass(frozen=True)
class Mode:
    name: str
    delay: float = 0.0


def parse_mode(model: str) -> Mode | None:
    """The fault mode a model name asks for, or None for an unknown model."""
    if model == "oracle-slow":
        return Mode("oracle-slow", SLOW_DEFAULT_SECONDS)
    if match := _SLOW_WITH_DELAY.fullmatch(model):
        return Mode("oracle-slow", float(match["seconds"]))
    if model in MODES:
        return Mode(model)
    return None


def openai_error(message: str, error_type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def model_not_found(model: str) -> dict[str, Any]:
    return openai_error(f"The model `{model}` does not exist.", "invalid_request_error", "model_not_found")


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


def agent_reply(tasks: list[dict[str, Any]], request: AgentRequest, *, allow_done: bool = True) -> str:
    """The assistant content: bare JSON with only the brain fields the request's schema asks for, plus `action`."""
    decision = decide(tasks, request, allow_done=allow_done)
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


# ------------------------------------------------------------------------------------------------ the judge
#
# `om2w-tui judge` (evaluation/judge.py) asks for a reply format in its system prompts; a request is known by it:
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
    return {"id": name, "object": "model", "created": 0, "owned_by": "om2w-tui"}


class OracleHandler(QuietHandler):
    app: OracleServer

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        self.send_body(status, json.dumps(payload).encode("utf-8"), "application/json")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [_model_entry(name) for name in (*MODES, *FAMILIES)]})
        elif path.startswith("/v1/models/"):
            name = path.removeprefix("/v1/models/")
            if parse_mode(name) is None and name not in FAMILIES:
                self.send_json(404, model_not_found(name))
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
        status, payload = self.answer_chat(raw)
        self.app.count_call(raw)  # counted before sending, so a client that has its reply sees the new count
        self.send_json(status, payload)

    def answer_chat(self, raw: bytes) -> tuple[int, dict[str, Any]]:
        """(status, body) for one chat-completions request; raises _Dropped when nothing is to be sent."""
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as error:
            return 400, openai_error(f"Invalid JSON body: {error}", "invalid_request_error")
        model = str(body.get("model", ""))
        # the `agent` arm's specialist families are served as adapters of the same oracle
        mode = parse_mode(model) or (parse_mode("oracle") if model in FAMILIES else None)
        if mode is None:
            return 404, model_not_found(model)
        if mode.name == "oracle-hang":
            self.wait_until_stopped()
            raise _Dropped
        flaky = mode.name in ("oracle-flaky", "oracle-judge-flaky")
        if mode.name == "oracle-500" or (flaky and self.app.next_flaky_fails()):
            return 500, openai_error("oracle: injected server error", "server_error", "internal_error")
        if mode.delay and self.server.stopping.wait(mode.delay):
            raise _Dropped
        if mode.name in JUDGE_MODES:
            judged = judge_reply(self.app.tasks, body)
            if judged is not None:
                return 200, chat_completion(model, judged, judge_prompt_chars(body))
        planned = planner_reply(self.app.tasks, body)
        if planned is not None:
            return 200, chat_completion(model, planned, len(json.dumps(body)))
        request = AgentRequest.from_body(body)
        if mode.name == "oracle-badjson":
            content = "oracle: this reply is deliberately not JSON {"
        else:
            content = agent_reply(self.app.tasks, request, allow_done=mode.name != "oracle-nodone")
        return 200, chat_completion(model, content, request.prompt_chars)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except _Dropped:
            self.close_connection = True


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
            print("Models: " + ", ".join(MODES) + ", oracle-slow-<seconds>")
            print("Press Ctrl-C to stop.", flush=True)
            threading.Event().wait()
        except KeyboardInterrupt:
            print("Stopping.", file=sys.stderr)
        finally:
            oracle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
