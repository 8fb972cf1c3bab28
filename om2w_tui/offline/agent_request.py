"""Reading one browser-use 0.13 chat-completions request: the task, current URL, page elements and step.

The user message browser-use sends holds tagged sections:
`<user_request>`, `<agent_history>`, `<agent_state>`, `<browser_state>`, `<step_info>`. Inside
`<browser_state>` the current tab is `Current tab: 2BB6` plus a line `Tab 2BB6: <url> - <title>`, and each
interactive element is one line such as

    [24]<a id=home-link />
    |SHADOW(open)|*[3]<select id=quantity expanded=false ... />

indented with tabs by nesting depth, with the element's text on the following, deeper-indented lines. A
leading `*` marks elements new since the last step; inputs, selects and checkboxes show their current state
(`value=2025-07-01`, `checked=true`); text nodes of one character are left out; a URL whose query is longer than
25 characters is shortened (`/book?checkin=2025-09-12&check...0691d93`).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

_ELEMENT_LINE = re.compile(
    r"^(?P<depth>\t*)(?:\|SHADOW\((?:open|closed)\)\|)?(?P<new>\*)?(?:\|scroll element)?\[(?P<index>\d+)\]"
    r"<(?P<tag>[\w-]+)(?P<attributes>.*?) />"
)
_TAB_LINE = re.compile(r"^Tab (?P<tab>\w{4}): (?P<url>\S+)", re.MULTILINE)
_CURRENT_TAB = re.compile(r"^Current tab: (?P<tab>\w{4})", re.MULTILINE)
_GRID = {"0-1000 grid": "normalized", "are pixels of the screenshot": "pixels"}   # om2w-tui's coordinate prompts
_PNG_URL = re.compile(r"^data:image/(?:png|jpeg|jpg|webp);base64,(.*)$", re.S)
_STEP_INFO = re.compile(r"Step\s*(?P<step>\d+)\s+maximum:\s*(?P<maximum>\d+)")


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def message_text(content: Any) -> str:
    """The text of a message's content: a plain string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return ""


def last_image(content: Any) -> bytes | None:
    """The bytes of the last data-URL image in a message's content parts."""
    found = None
    for part in content if isinstance(content, list) else []:
        url = part.get("image_url", {}).get("url") if isinstance(part, dict) else None
        match = _PNG_URL.match(url) if isinstance(url, str) else None
        if match:
            found = match.group(1)
    return base64.b64decode(found) if found else None


def section(text: str, tag: str) -> str:
    """The body of the first `<tag>...</tag>` block, or '' when absent."""
    start = text.find(f"<{tag}>")
    if start < 0:
        return ""
    start += len(tag) + 2
    end = text.find(f"</{tag}>", start)
    return text[start : end if end >= 0 else len(text)].strip("\n")


@dataclass
class PageElement:
    index: int
    tag: str
    attributes: str
    text: str
    is_new: bool

    def matches(self, selector: str | dict[str, str]) -> bool:
        """`selector` is 'key=value' or a dict of them; keys: an attribute name, `tag`, or `text` (contained)."""
        if isinstance(selector, str):
            key, _, value = selector.partition("=")
            criteria = {key.strip(): value.strip()}
        else:
            criteria = selector
        for key, value in criteria.items():
            if key == "tag":
                if self.tag.lower() != value.lower():
                    return False
            elif key == "text":
                if normalise(value) not in normalise(self.text):
                    return False
            elif not re.search(rf"(?:^| ){re.escape(key)}={re.escape(value)}(?= [\w:-]+=|$)", self.attributes):
                return False
        return True


def parse_elements(browser_state: str) -> list[PageElement]:
    elements: list[PageElement] = []
    open_elements: list[tuple[int, PageElement]] = []  # elements whose text lines may still follow, with their depth
    for line in browser_state.splitlines():
        depth = len(line) - len(line.lstrip("\t"))
        while open_elements and open_elements[-1][0] >= depth:
            open_elements.pop()
        match = _ELEMENT_LINE.match(line)
        if match:
            element = PageElement(
                index=int(match["index"]),
                tag=match["tag"],
                attributes=match["attributes"].strip(),
                text="",
                is_new=bool(match["new"]),
            )
            elements.append(element)
            open_elements.append((depth, element))
        elif line.strip():
            for _, element in open_elements:
                element.text = f"{element.text} {line.strip()}".strip()
    return elements


@dataclass
class AgentRequest:
    """What the oracle needs from one request; every field is derived from the request alone."""

    model: str
    user_text: str
    task_text: str
    history: str
    browser_state: str
    url: str | None
    elements: list[PageElement] = field(default_factory=list)
    step: int | None = None
    max_steps: int | None = None
    schema_properties: set[str] | None = None
    schema_actions: set[str] | None = None   # the actions the response_format allows (at the last step: `done`)
    prompt_chars: int = 0
    screenshot: bytes | None = None   # the page as the model is shown it (the last image of the state message)
    grid: str | None = None           # the coordinates the system prompt asks for: normalized | pixels | None

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> AgentRequest:
        messages = body.get("messages") or []
        texts = [message_text(m.get("content")) for m in messages if isinstance(m, dict)]
        user_texts = [message_text(m.get("content")) for m in messages
                      if isinstance(m, dict) and m.get("role") == "user"]
        # browser-use may append short user messages (e.g. a planning nudge) after the state message
        state_texts = [text for text in user_texts if "<user_request>" in text]
        user_text = (state_texts or user_texts or [""])[-1]
        browser_state = section(user_text, "browser_state")
        step_match = _STEP_INFO.search(section(user_text, "step_info"))
        system = "\n".join(message_text(m.get("content")) for m in messages
                           if isinstance(m, dict) and m.get("role") == "system")
        state_messages = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"
                          and "<user_request>" in message_text(m.get("content"))]
        return cls(
            model=str(body.get("model", "")),
            user_text=user_text,
            task_text=section(user_text, "user_request").strip(),
            history=section(user_text, "agent_history"),
            browser_state=browser_state,
            url=current_url(browser_state),
            elements=parse_elements(browser_state),
            step=int(step_match["step"]) if step_match else None,
            max_steps=int(step_match["maximum"]) if step_match else None,
            schema_properties=_schema_properties(body.get("response_format")),
            schema_actions=schema_actions(body.get("response_format")),
            prompt_chars=sum(len(text) for text in texts),
            screenshot=last_image(state_messages[-1].get("content")) if state_messages else None,
            grid=_GRID.get(next((k for k in _GRID if k in system), ""), None),
        )

    def find(self, selector: str | dict[str, str]) -> PageElement | None:
        return next((element for element in self.elements if element.matches(selector)), None)


def current_url(browser_state: str) -> str | None:
    """The URL of the tab marked current; with no mark (browser-use omits it when ambiguous), the last tab."""
    tabs = {m["tab"]: m["url"] for m in _TAB_LINE.finditer(browser_state)}
    current = _CURRENT_TAB.search(browser_state)
    if current and current["tab"] in tabs:
        return tabs[current["tab"]]
    return list(tabs.values())[-1] if tabs else None


def _schema_properties(response_format: Any) -> set[str] | None:
    """Top-level fields of the agent_output JSON schema, when the request carries one."""
    try:
        properties = response_format["json_schema"]["schema"]["properties"]
    except (KeyError, TypeError):
        return None
    return set(properties) if isinstance(properties, dict) else None


def schema_actions(response_format: Any) -> set[str] | None:
    """The action names the agent_output schema allows in its `action` list (each item one object named by its
    action: one schema, or an `anyOf` of them, `$ref`s into `$defs` followed); None without such a schema."""
    try:
        schema = response_format["json_schema"]["schema"]
        items = schema["properties"]["action"]["items"]
    except (KeyError, TypeError):
        return None
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def names(node: Any, depth: int = 0) -> set[str]:
        if not isinstance(node, dict) or depth > 8:
            return set()
        ref = node.get("$ref")
        if isinstance(ref, str) and isinstance(defs, dict):
            return names(defs.get(ref.rsplit("/", 1)[-1]), depth + 1)
        found: set[str] = set()
        for key in ("anyOf", "oneOf"):
            for option in node.get(key) or []:
                found |= names(option, depth + 1)
        if isinstance(node.get("properties"), dict):
            found |= set(node["properties"])
        return found

    found = names(items)
    return found or None
