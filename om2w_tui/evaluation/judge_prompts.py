"""The WebJudge and WebVoyager prompts (our own words, the official method's steps): the reply formats they ask
for (the oracle's judge mode knows a request by them), the system prompts, each call's messages, and the screenshots
as the official method sends them (re-encoded as JPEG data URLs, `detail: high`)."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.conformance import EvaluatorView
from om2w_tui.files import SCREENSHOT_LIMIT, read_file

# The reply formats the prompts ask for; the oracle's judge mode (offline/oracle.py) recognises a request by them.
KEY_POINTS_FORMAT = "Key points:\n1. <first key point>\n2. <second key point>\n..."
SCORE_FORMAT = "Reasoning: <one or two sentences>\nScore: <1-5>"
VERDICT_FORMAT = "Thoughts: <your reasoning, key point by key point>\nStatus: success  OR  Status: failure"
WEBVOYAGER_FORMAT = "Thoughts: <your reasoning>\nVerdict: SUCCESS  OR  Verdict: NOT SUCCESS"

KEY_POINTS_SYSTEM = f"""You help to evaluate web agents. You are given a task that a web agent was asked to carry \
out on a website. List its key points: the requirements an outcome must meet for the task to count as done. \
Include every explicit constraint of the task (the item or information wanted, quantities, filters, sort orders, \
dates, places, price limits, what has to be reported or submitted). Keep each key point short and in the task's \
own words, and add nothing the task does not ask for.

Reply in this form:
{KEY_POINTS_FORMAT}"""

SCORE_SYSTEM = f"""You help to evaluate web agents. You are shown one screenshot taken while a web agent worked on \
a task, together with the task and its key points. Rate how much this screenshot tells about the key points: \
progress toward them, whether they are met, or that they cannot be met (for example the right search or filters \
applied, a list of results, an item's details, a confirmation page, or the information the task asks for).
1: nothing relevant to the key points.
2: on topic, but no real evidence.
3: relevant, with some evidence for a key point.
4: strong evidence for one or more key points.
5: clear evidence that settles one or more key points.

Reply in this form:
{SCORE_FORMAT}"""

VERDICT_SYSTEM = f"""You decide whether a web agent completed a task. You are given the task, its key points, the \
actions the agent took (one a line, in order) and the screenshots judged relevant, in the order they were taken.
Rules:
- Judge by the evidence: the actions and the screenshots. A key point is met only when the evidence shows it.
- Every key point must be met. Filters, sort orders, dates, quantities, places and limits must be exactly the ones \
the task asks for; a near match is a failure.
- When the task asks for information, that information must be shown in the evidence.
- When the task cannot be done as asked (say the item does not exist), the agent succeeds only if the evidence \
shows it searched properly and found that it cannot be done.
- An agent's final answer, where one is given, is its own claim: it counts only as far as the evidence supports it.

Reply in this form:
{VERDICT_FORMAT}"""

WEBVOYAGER_SYSTEM = f"""You decide whether a web agent completed a task. You are given the task, the agent's \
final answer, and the last screenshots of its attempt. The screenshots are the evidence: where the answer and the \
screenshots disagree, trust the screenshots. Every part of the task must be done; an answer that the screenshots \
do not support is not a success.

Reply in this form:
{WEBVOYAGER_FORMAT}"""




def jpeg_data_url(path: Path) -> str:
    """The screenshot as the official method sends it: re-encoded as JPEG (RGB) in a data URL. A file Pillow cannot
    read goes as it is (`check` reports it: the official evaluator crashes on it)."""
    raw = read_file(path, SCREENSHOT_LIMIT, own=True, what="screenshot")   # a FIFO, /dev/zero: InputError, named
    try:
        from PIL import Image  # Pillow comes with browser-use; imported here to keep the CLI's start light

        with Image.open(io.BytesIO(raw)) as img:
            buf = io.BytesIO()
            # as the official encoder: RGB and greyscale as they are (the same bytes), the rest as RGB
            (img if img.mode in ("RGB", "L") else img.convert("RGB")).save(buf, format="JPEG")
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    except Exception:   # noqa: BLE001 - any unreadable image: send the bytes, let the model say what it sees
        return "data:image/png;base64," + base64.b64encode(raw).decode("ascii")


def image_part(path: Path, cache: dict[Path, str] | None = None) -> dict[str, Any]:
    url = cache.get(path) if cache is not None else None
    if url is None:
        url = jpeg_data_url(path)
        if cache is not None:
            cache[path] = url
    return {"type": "image_url", "image_url": {"url": url, "detail": "high"}}


def numbered(actions: list[str]) -> str:
    return "\n".join(f"{i}. {a}" for i, a in enumerate(actions, 1)) or "(no actions)"


def key_points_messages(task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": KEY_POINTS_SYSTEM}, {"role": "user", "content": f"Task: {task}"}]


def score_messages(task: str, key_points: str, shot: Path, index: int, total: int,
                   cache: dict[Path, str] | None = None) -> list[dict[str, Any]]:
    text = (f"Task: {task}\n\nKey points:\n{key_points}\n\n"
            f"This is screenshot {index} of {total} of the agent's trajectory.")
    return [{"role": "system", "content": SCORE_SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": text}, image_part(shot, cache)]}]


def verdict_messages(ep: EvaluatorView, key_points: str, kept: list[tuple[int, Path, str]], total: int,
                     include_answer: bool, cache: dict[Path, str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """The outcome call: `kept` holds (1-based index, screenshot, the reasoning its score came with)."""
    text = f"Task: {ep.task}\n\nKey points:\n{key_points}\n\nAction history:\n{numbered(ep.action_history)}"
    if include_answer:
        text += f"\n\nAgent's final answer (its own claim, not evidence):\n{ep.final_result_response or '(none)'}"
    if kept:
        which = ", ".join(str(i) for i, _, _ in kept)
        text += (f"\n\nThe {len(kept)} screenshots below were judged relevant (screenshots {which} of {total}); "
                 f"what each one shows, in the same order:\n"
                 + "\n".join(f"{n}. (screenshot {i}) {why or '(no reasoning given)'}"
                             for n, (i, _, why) in enumerate(kept, 1)))
    else:
        text += f"\n\nNo screenshot was judged relevant ({total} in the trajectory)."
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] + [image_part(p, cache) for _, p, _ in kept]
    return [{"role": "system", "content": VERDICT_SYSTEM}, {"role": "user", "content": parts}], text


def webvoyager_messages(ep: EvaluatorView, last: int,
                        cache: dict[Path, str] | None = None) -> tuple[list[dict[str, Any]], str]:
    shots = webvoyager_shots(ep, last)
    text = f"Task: {ep.task}\n\nAgent's final answer:\n{ep.final_result_response or '(none)'}"
    text += (f"\n\nThe last {len(shots)} screenshots (of {len(ep.screenshots)}) follow." if shots
             else "\n\nThe trajectory has no screenshots.")
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] + [image_part(p, cache) for p in shots]
    return [{"role": "system", "content": WEBVOYAGER_SYSTEM}, {"role": "user", "content": parts}], text


def webvoyager_shots(ep: EvaluatorView, last: int) -> list[Path]:
    return ep.screenshots[-last:] if last > 0 else []


def encode_images(paths: list[Path]) -> dict[Path, str]:
    """Every screenshot's data URL, encoded once (in a thread: decoding and re-encoding PNGs is the CPU-heavy part
    of judging, and must not hold the event loop a run's scheduler and console share)."""
    return {p: jpeg_data_url(p) for p in dict.fromkeys(paths)}
