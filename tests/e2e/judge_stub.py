"""A judge model for tests: an OpenAI-compatible chat-completions server on 127.0.0.1 that answers the requests of
the official WebJudge method and of `om2w-tui judge` alike, whatever their wording, so that both can be judged on
the same replies.

A request is known by its system prompt: one asking for a `Status:` is a verdict, one asking for a `Score` is a
screenshot's score, one asking for key points is the key points. A screenshot's score comes from its pixels (a
fingerprint of the decoded image, so a JPEG made by either side scores the same), and so does the format of the
reply, which cycles through the forms the official evaluator reads right (plain, markdown bold, bullets, headings,
trailing remarks). Each score's reasoning names the screenshot (`shot-<fingerprint>`); the verdict is success when
at least two screenshots were shown and the text carries a reasoning for each of them, so a judge that drops the
kept screenshots' reasoning, or keeps others than the official method keeps, gives other verdicts.

Every request is recorded (`requests`), with what it was and which screenshot it scored. It is a use of
tests/fakes.py's `StubServer`.

`StubJudge(fault=...)` answers chat requests (and GET /models too with `fault_models=True`) as a broken endpoint does:
`trickle` sends a 200 and then one byte a second, never ending; `endless` a 200 JSON body that never ends, as fast as
it can; `huge` a whole chat completion of 50 MB; `html` a 200 HTML page (a proxy's login page, a web server's index).
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import threading
from typing import Any

from tests.fakes import Reply, Request, StubServer, every

SCORE_FORMATS = (
    "1. **Reasoning**: {why}\n2. **Score**: {n}",
    "Reasoning: {why}\nScore: {n}",
    "- **Reasoning**: {why}\n- **Score**: {n}",
    "### Reasoning\n{why}\n\n### Score\n{n}",
    "**Reasoning**: {why}\n\n**Score**: {n}\n\nThe rest of the page adds nothing.",
)
_TOKEN = re.compile(r"shot-[0-9a-f]{8}")


def fingerprint(data_url: str) -> str:
    from PIL import Image

    raw = base64.b64decode(data_url.split(",", 1)[1])
    with Image.open(io.BytesIO(raw)) as img:
        thumb = img.convert("L").resize((16, 16))
    return hashlib.sha1(bytes(v >> 3 for v in thumb.tobytes())).hexdigest()[:8]


def _texts(body: dict[str, Any]) -> tuple[str, str, list[str]]:
    system, user, images = [], [], []
    for m in body.get("messages") or []:
        content = m.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        for part in parts:
            if part.get("type") == "text":
                (system if m.get("role") == "system" else user).append(part["text"])
            elif part.get("type") == "image_url":
                images.append(part["image_url"]["url"])
    return "\n".join(system), "\n".join(user), images


def _task_of(user: str) -> str:
    m = re.search(r"(?:^|\n)\**(?:User )?Task\**:\**\s*(.*)", user)
    return m.group(1).strip() if m else ""


def reply(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    system, user, images = _texts(body)
    task = _task_of(user)
    if "Status:" in system:
        shown = len(_TOKEN.findall(user))
        ok = len(images) >= 2 and shown >= len(images)
        why = f"{len(images)} screenshots shown, {shown} with their reasoning"
        return (f"Thoughts: {why}.\nStatus: \"{'success' if ok else 'failure'}\"",
                {"kind": "verdict", "task": task, "images": len(images), "success": ok})
    if "score" in system.lower() and images:
        fp = fingerprint(images[0])
        n = int(fp, 16) % 5 + 1
        text = SCORE_FORMATS[int(fp, 16) // 5 % len(SCORE_FORMATS)].format(
            why=f"The page (shot-{fp}) shows part of the task.", n=n)
        return text, {"kind": "score", "task": task, "shot": fp, "score": n,
                      "detail": body["messages"][-1]["content"][-1]["image_url"].get("detail"),
                      "jpeg": base64.b64decode(images[0].split(",", 1)[1])[:3] == b"\xff\xd8\xff"}
    if "key point" in system.lower():
        return "**Key Points**:\n1. Open the right page\n2. Find what the task asks for", {"kind": "key_points",
                                                                                          "task": task}
    return "I do not know this request.", {"kind": "other", "task": task}


FAULTS = ("trickle", "endless", "huge", "html")
HUGE_BYTES = 50 << 20


def fault_reply(fault: str) -> Reply:
    """One of FAULTS as the answer; a trickle or an endless body goes on until the client leaves or the stub stops."""
    if fault == "html":
        return Reply(200, "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>It works</body>"
                          "</html>")
    if fault == "huge":
        content = "Status: success " * (HUGE_BYTES // 16)
        return Reply(200, {"id": "stub", "object": "chat.completion", "created": 0, "model": "stub-judge",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": content}}]})
    return Reply(200, b'{"id": "stub", "choices": [{"message": {"content": "', {"Content-Type": "application/json"},
                 stream=every(1.0, b"x") if fault == "trickle" else every(0, b"y" * 65536))


class StubJudge:
    """`with StubJudge() as judge:` -> judge.url (an OpenAI base URL) and judge.requests (what each was)."""

    def __init__(self, fault: str = "", fault_models: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        models = fault_reply(fault) if fault and fault_models else Reply(
            200, {"object": "list", "data": [{"id": "stub-judge", "object": "model"}]})
        self.server = StubServer(default=lambda req: models if req.method == "GET" else self._chat(req, fault))
        self.url = f"{self.server.url}/v1"

    def _chat(self, req: Request, fault: str) -> Reply:
        body = req.json()
        if fault:
            with self.lock:
                self.requests.append({"kind": fault, "model": body.get("model")})
            return fault_reply(fault)
        text, seen = reply(body)
        seen.update({"model": body.get("model"), "temperature": body.get("temperature"),
                     "max_tokens": body.get("max_tokens")})
        with self.lock:
            self.requests.append(seen)
        return Reply(200, {"id": "stub", "object": "chat.completion", "created": 0, "model": body.get("model"),
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

    def __enter__(self) -> StubJudge:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.__exit__(*exc)


if __name__ == "__main__":   # serve it by hand: python tests/e2e/judge_stub.py
    import time

    with StubJudge() as judge:
        print(judge.url, flush=True)
        while True:
            time.sleep(3600)
