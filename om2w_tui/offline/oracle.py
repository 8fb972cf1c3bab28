"""The oracle: an OpenAI-compatible chat-completions server that plays the offline tasks' known solutions.

Routes: `GET /v1/models`, `GET /v1/models/<id>`, `POST /v1/chat/completions`, `GET /health`.
The model name picks the behaviour (see MODES): `oracle` plays normally; the others inject faults.
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

from .agent_request import AgentRequest
from .player import decide
from .serving import BackgroundServer, QuietHandler

SLOW_DEFAULT_SECONDS = 3.0
MODES: dict[str, str] = {
    "oracle": "plays the offline solutions",
    "oracle-slow": f"sleeps {SLOW_DEFAULT_SECONDS:g} s before each reply (oracle-slow-<seconds> for any delay)",
    "oracle-hang": "never replies (the request blocks until the server stops)",
    "oracle-500": "answers HTTP 500 with an error body",
    "oracle-badjson": "answers 200 with message content that is not JSON",
    "oracle-nodone": "plays the solutions but scrolls where it would call done",
    "oracle-flaky": "every other request (the 1st, 3rd, ...) gets HTTP 500",
}
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
    reply = {key: value for key, value in brain.items() if wanted is None or key in wanted}
    reply["action"] = decision.actions
    return json.dumps(reply, ensure_ascii=False)


def _model_entry(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "om2w-tui"}


class OracleHandler(QuietHandler):
    app: OracleServer

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        self.send_body(status, json.dumps(payload).encode("utf-8"), "application/json")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [_model_entry(name) for name in MODES]})
        elif path.startswith("/v1/models/"):
            name = path.removeprefix("/v1/models/")
            if parse_mode(name) is None:
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
        self.app.count_call()  # counted before sending, so a client that has its reply sees the new count
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
        mode = parse_mode(model)
        if mode is None:
            return 404, model_not_found(model)
        if mode.name == "oracle-hang":
            self.wait_until_stopped()
            raise _Dropped
        if mode.name == "oracle-500" or (mode.name == "oracle-flaky" and self.app.next_flaky_fails()):
            return 500, openai_error("oracle: injected server error", "server_error", "internal_error")
        if mode.delay and self.server.stopping.wait(mode.delay):
            raise _Dropped
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

    def __init__(self, tasks: list[dict[str, Any]], host: str = "127.0.0.1", port: int = 0):
        self.tasks = list(tasks)
        self._lock = threading.Lock()
        self._calls = 0
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

    def count_call(self) -> None:
        with self._lock:
            self._calls += 1

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
    from .suite import OfflineSuite

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
