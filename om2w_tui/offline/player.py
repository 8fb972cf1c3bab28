"""Playing a task's scripted solution: pick the agent's next actions from one request, statelessly.

A solution is an ordered list of rules, most specific (latest page state) first:

    {"when": {"url_contains": "/cart", "text_contains": ["Aurora Desk Lamp", "66.75"]},
     "do": [{"done": {"text": "The cart total is $66.75.", "success": true}}],
     "remember": "optional text put in the reply's memory (it comes back in <agent_history>)"}

Conditions (all optional, a string or a list of strings, all must hold):
  url_contains / url_not_contains             substrings of the current tab's URL
  text_contains / text_not_contains           in <browser_state> (case- and whitespace-insensitive)
  history_contains / history_not_contains     in <agent_history> (e.g. a fact the oracle remembered earlier)
  has_element / lacks_element                 element selectors (see below)
The first rule whose conditions hold is played. In its actions every `"el": SELECTOR` is replaced with the
element's `"index"` (a drag's `"from_el"`/`"to_el"` become `from_index`/`to_index`); a selector is 'key=value'
(an attribute as browser-use prints it, `tag`, or `text`, which is contained in the element's text) or a dict of
several. `"at_colour": "#rrggbb"` in a click is found in the request's screenshot, as a vision model would see it,
and becomes `coordinate_x`/`coordinate_y` on the grid the system prompt asks for (0-1000, or pixels). `navigate`
URLs may be relative to the current page. When no rule holds or a selector is not on the page, the oracle scrolls
down one page, and gives up with a failed `done` from step GIVE_UP_AT_STEP (or the agent's last step) on.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from om2w_tui.offline.agent_request import AgentRequest, normalise

GIVE_UP_AT_STEP = 20
SCROLL_DOWN = {"scroll": {"down": True, "pages": 1.0}}
UNKNOWN_TASK_TEXT = "oracle: unknown task"


@dataclass
class Decision:
    actions: list[dict[str, Any]]
    thinking: str
    memory: str
    next_goal: str


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def find_task(tasks: list[dict[str, Any]], task_text: str) -> dict[str, Any] | None:
    """The task whose confirmed_task appears in the request's task text; the longest such text wins."""
    haystack = normalise(task_text)
    if not haystack:
        return None
    matching = [task for task in tasks if (text := normalise(task.get("confirmed_task", ""))) and text in haystack]
    return max(matching, key=lambda task: len(task["confirmed_task"]), default=None)


def rule_holds(when: dict[str, Any], request: AgentRequest) -> bool:
    url = request.url or ""
    text = normalise(request.browser_state)
    history = normalise(request.history)
    checks = [
        all(part in url for part in _as_list(when.get("url_contains"))),
        not any(part in url for part in _as_list(when.get("url_not_contains"))),
        all(normalise(part) in text for part in _as_list(when.get("text_contains"))),
        not any(normalise(part) in text for part in _as_list(when.get("text_not_contains"))),
        all(normalise(part) in history for part in _as_list(when.get("history_contains"))),
        not any(normalise(part) in history for part in _as_list(when.get("history_not_contains"))),
        all(request.find(selector) is not None for selector in _as_list(when.get("has_element"))),
        not any(request.find(selector) is not None for selector in _as_list(when.get("lacks_element"))),
    ]
    return all(checks)


class MissingElement(LookupError):
    pass


def _index_of(selector: Any, request: AgentRequest) -> int:
    element = request.find(selector)
    if element is None:
        raise MissingElement(json.dumps(selector))
    return element.index


def colour_centre(png: bytes, colour: str, tolerance: int = 48) -> tuple[float, float, int, int] | None:
    """(x, y, width, height): the centre of the pixels of `colour` (`#rrggbb`) in a screenshot, and its size; None
    when the colour is not on it. This is the oracle's eyes: what a vision model would locate in the image."""
    from PIL import Image, ImageChops  # only vision tasks need the pixels

    image = Image.open(io.BytesIO(png)).convert("RGB")
    wanted = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    masks = [band.point(lambda v, w=w: 255 if abs(v - w) <= tolerance else 0) for band, w in zip(image.split(), wanted)]
    box = ImageChops.multiply(ImageChops.multiply(masks[0], masks[1]), masks[2]).getbbox()
    if box is None:
        return None
    # the box ends one past its last pixel
    return (box[0] + box[2] - 1) / 2, (box[1] + box[3] - 1) / 2, image.width, image.height


def resolve_action(action: dict[str, Any], request: AgentRequest) -> dict[str, Any]:
    """One solution action as browser-use expects it: selectors become indices (`el`, and a drag's `from_el` and
    `to_el`), a colour seen in the screenshot becomes a click's coordinates (`at_colour`, on the grid the system
    prompt asks for), relative URLs absolute."""
    (name, params), = action.items()
    params = dict(params or {})
    if "el" in params:
        params = {"index": _index_of(params.pop("el"), request), **params}
    for end in ("from", "to"):
        if f"{end}_el" in params:
            params[f"{end}_index"] = _index_of(params.pop(f"{end}_el"), request)
    if "at_colour" in params:
        colour = params.pop("at_colour")
        seen = colour_centre(request.screenshot, colour) if request.screenshot and request.grid else None
        if seen is None:
            raise MissingElement(f"{colour} in the screenshot")
        x, y, width, height = seen
        if request.grid == "normalized":
            x, y = x * 1000 / width, y * 1000 / height
        params.update(coordinate_x=round(x), coordinate_y=round(y))
    if name == "navigate" and request.url and "url" in params:
        params["url"] = urljoin(request.url, params["url"])
    return {name: params}


def _describe(actions: list[dict[str, Any]]) -> str:
    compact = [f"{name} {json.dumps(params, separators=(',', ':'))}"
               for action in actions for name, params in action.items()]
    return ", ".join(compact)


def give_up_or_scroll(request: AgentRequest, reason: str, *, allow_done: bool = True) -> Decision:
    step, maximum = request.step, request.max_steps
    out_of_steps = step is not None and (step >= GIVE_UP_AT_STEP or (maximum is not None and step >= maximum))
    if allow_done and out_of_steps:
        return Decision(
            actions=[{"done": {"text": f"oracle: gave up at step {step}: {reason}", "success": False}}],
            thinking=f"Oracle: {reason}; no steps left to look further.",
            memory=f"Gave up: {reason}.",
            next_goal="Report failure.",
        )
    return Decision(
        actions=[SCROLL_DOWN],
        thinking=f"Oracle: {reason}; scrolling to look further.",
        memory=f"Looking for the next element: {reason}.",
        next_goal="Scroll down one page.",
    )


def decide(tasks: list[dict[str, Any]], request: AgentRequest, *, allow_done: bool = True,
           guided: bool = True) -> Decision:
    """The next actions for this request, within the actions its schema allows (as a server with guided decoding
    answers). With allow_done=False (the oracle-nodone fault) every `done` becomes a scroll: on a step whose schema
    allows only `done` (browser-use's last), that is no answer within it, so it says a failed `done` there
    (`within_schema`); with guided=False too (oracle-nodone-unguided, a server without guided decoding) it answers
    the solution's next step there as it is, outside the schema (a scroll where that step was `done`)."""
    decision = _decide(tasks, request, allow_done=allow_done)
    if not allow_done:
        decision.actions = [SCROLL_DOWN if "done" in action else action for action in decision.actions]
        decision.next_goal = _describe(decision.actions)   # never the answer it did not give
    return within_schema(decision, request) if guided else decision


def within_schema(decision: Decision, request: AgentRequest) -> Decision:
    """The decision as the request's schema allows it: the actions it allows, up to the first it does not; where
    none is left and `done` is allowed (browser-use's last step asks for `done` only), a failed `done` that says
    where the solution was."""
    allowed = request.schema_actions
    if allowed is None:
        return decision
    kept: list[dict[str, Any]] = []
    for action in decision.actions:
        if next(iter(action)) not in allowed:
            break
        kept.append(action)
    if kept or "done" not in allowed:
        decision.actions = kept or decision.actions
        return decision
    step = f" at step {request.step}" if request.step is not None else ""
    return Decision(
        actions=[{"done": {"text": f"oracle: only `done` is allowed{step}; the solution's next step was: "
                                   f"{decision.next_goal}", "success": False}}],
        thinking=f"Oracle: the step budget is spent{step}; reporting what is left.",
        memory=decision.memory,
        next_goal="Report failure: the step budget is spent.",
    )


def _decide(tasks: list[dict[str, Any]], request: AgentRequest, *, allow_done: bool) -> Decision:
    task = find_task(tasks, request.task_text)
    if task is None:
        return Decision(
            actions=[{"done": {"text": UNKNOWN_TASK_TEXT, "success": False}}],
            thinking="Oracle: this task is not one of the offline tasks.",
            memory="Unknown task.",
            next_goal="Stop.",
        )
    if not task.get("solution"):
        return Decision(
            actions=[{"done": {"text": f'oracle: no known solution for task {task.get("task_id")}', "success": False}}],
            thinking="Oracle: this task has no scripted solution.",
            memory="No solution to play.",
            next_goal="Stop.",
        )
    for number, rule in enumerate(task["solution"], start=1):
        if not rule_holds(rule.get("when") or {}, request):
            continue
        try:
            actions = [resolve_action(action, request) for action in rule.get("do") or []]
        except MissingElement as missing:
            reason = f"element {missing} of rule {number} is not on the page"
            return give_up_or_scroll(request, reason, allow_done=allow_done)
        if not actions:
            continue
        return Decision(
            actions=actions,
            thinking=f'Oracle for {task["task_id"]}: rule {number} holds on {request.url}.',
            memory=rule.get("remember") or f"Rule {number} of the solution holds on {request.url}.",
            next_goal=_describe(actions),
        )
    return give_up_or_scroll(request, "no rule of the solution holds on this page", allow_done=allow_done)
