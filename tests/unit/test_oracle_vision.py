"""The oracle acting as a vision model: it finds a colour in the screenshot and answers with a click on the grid the
system prompt asks for; a drag's ends are element selectors."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image, ImageDraw

from om2w_tui.episode.tools import COORDINATE_PROMPT
from om2w_tui.offline.agent_request import AgentRequest
from om2w_tui.offline.player import MissingElement, resolve_action

STATE = ("<user_request>t</user_request><browser_state>Current tab: AB12\nTab AB12: http://x/board - b\n"
         "[3]<li id=item-tests role=option />\n\tRun the tests\n[5]<li id=item-backup role=option />\n"
         "\tBack up</browser_state>")


def _png(width=800, height=500, dot=(600, 100)) -> bytes:
    image = Image.new("RGB", (width, height), "#f2f2ee")
    ImageDraw.Draw(image).ellipse([dot[0] - 10, dot[1] - 10, dot[0] + 10, dot[1] + 10], fill="#e0201b")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _request(grid: str | None, png: bytes | None) -> AgentRequest:
    system = "You are a browser agent. " + (COORDINATE_PROMPT[grid] if grid else "")
    parts = [{"type": "text", "text": STATE}]
    if png:
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return AgentRequest.from_body({"model": "oracle", "messages": [{"role": "system", "content": system},
                                                                   {"role": "user", "content": parts}]})


def test_a_colour_in_the_screenshot_becomes_a_click_on_the_grid_asked_for():
    png = _png()
    assert resolve_action({"click": {"at_colour": "#e0201b"}}, _request("normalized", png)) == \
        {"click": {"coordinate_x": 750, "coordinate_y": 200}}
    assert resolve_action({"click": {"at_colour": "#e0201b"}}, _request("pixels", png)) == \
        {"click": {"coordinate_x": 600, "coordinate_y": 100}}


@pytest.mark.parametrize("grid, png", [(None, _png()), ("normalized", None), ("normalized", _png(dot=(-50, -50)))])
def test_no_grid_no_screenshot_or_no_colour_is_a_missing_target(grid, png):
    with pytest.raises(MissingElement):
        resolve_action({"click": {"at_colour": "#e0201b"}}, _request(grid, png))


def test_a_drags_ends_are_element_indices():
    assert resolve_action({"drag": {"from_el": "id=item-backup", "to_el": "id=item-tests"}}, _request(None, None)) == \
        {"drag": {"from_index": 5, "to_index": 3}}
