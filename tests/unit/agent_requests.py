"""browser-use's requests to the model as the offline oracle and the vLLM stand-in read them: the offline task
templates, a page's browser state as browser-use 0.13.14 prints it, the user message and the agent's JSON schema."""

from __future__ import annotations

from om2w_tui.offline.suite import load_task_templates

TEMPLATES = load_task_templates()
SEARCH_TASK = next(t for t in TEMPLATES if t["task_id"] == "offline_shop_search_01")

# A home page of the shop as browser-use 0.13.14 prints it (format copied from a logged request).
SHOP_HOME_STATE = """<page_stats>9 links, 22 interactive, 0 iframes, 70 total elements</page_stats>
Current tab: 2BB6
Available tabs:
Tab 1A2B: http://127.0.0.1:9/other - 127.0.0.1:9/other
Tab 2BB6: http://127.0.0.1:41977/ - 127.0.0.1:41977

<page_info>0.0 pages above, 0.0 pages below</page_info>

Interactive elements:
[Start of page]
[24]<a id=home-link />
\tNorthwind Market
[1]<form id=search-form role=search />
\t|SHADOW(open)|[2]<input id=q name=q type=text placeholder=Search products aria-label=Search products />
\t[26]<button id=search-button type=submit />
\t\tSearch
*[28]<a id=cart-link />
\tCart (0)
|SHADOW(open)|*[3]<select id=quantity expanded=false compound_components=(name=Options,role=listbox,count=5) />
[End of page]"""

PRODUCT_STATE = """Current tab: 2BB6
Available tabs:
Tab 2BB6: http://127.0.0.1:41977/product/kettle-copper - 127.0.0.1:41977/product/kettle

Interactive elements:
[24]<a id=home-link />
\tNorthwind Market
Copper Pour-Over Kettle
Price:
$42.50
[99]<button id=add-to-cart type=submit aria-label=Add Copper Pour-Over Kettle to cart />
\tAdd to cart"""


def user_message(task: str, browser_state: str, step: int = 2, history: str = "") -> str:
    return (
        f"<user_request>\n{task}\n</user_request>\n\n"
        f"<agent_history>\nAgent initialized\n{history}\n</agent_history>\n\n"
        "<agent_state>\n<file_system>\n\n</file_system>\n</agent_state>\n"
        f"<browser_state>\n{browser_state}\n</browser_state>\n"
        f"<step_info>Step{step} maximum:30\nToday:2026-01-01</step_info>\n"
    )


def agent_messages(task: str, browser_state: str, step: int = 2, vision: bool = False) -> list[dict]:
    text = user_message(task, browser_state, step)
    content: str | list = text
    if vision:
        content = [
            {"type": "text", "text": text},
            {"type": "text", "text": "Current screenshot:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}},
        ]
    return [{"role": "system", "content": "You are a browser agent."}, {"role": "user", "content": content}]


AGENT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "agent_output",
        "strict": True,
        "schema": {"type": "object",
                   "properties": {"evaluation_previous_goal": {}, "memory": {}, "next_goal": {}, "action": {}}},
    },
}
