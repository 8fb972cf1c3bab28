"""The agent's tool set, as the seed runner gives it: browser-use's actions, coordinate clicking for vision models
(`--coordinates off|pixels|normalized`), and a `drag` action (element to element, or by coordinates) that
browser-use's defaults lack.

Normalized coordinates are on a 0-1000 grid over the screenshot, as the Qwen-VL family answers: the screenshot keeps
its aspect and size, and a point is scaled to the viewport's CSS pixels when the action runs. browser-use 0.13 has
that conversion (`llm_screenshot_size` against the viewport it measured), but turns it on only together with
resizing the screenshot; here the session gets the 1000x1000 grid and the agent's screenshots stay as they are."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

if TYPE_CHECKING:   # browser-use ships its types; importing it at run time costs seconds, so only a worker does
    from browser_use import BrowserSession, Tools
    from cdp_use.cdp.input.commands import DispatchMouseEventParameters

COORDINATE_MODES = ("off", "pixels", "normalized")
GRID = 1000
DRAG_STEPS = 12          # mouse moves between press and release: pointer handlers see a real drag, not a jump

COORDINATE_PROMPT = {
    "pixels": "Coordinates (click's coordinate_x/coordinate_y, drag's from_x/from_y/to_x/to_y) are pixels of the "
              "screenshot: (0, 0) is its top left corner. Use them only for what has no element index.",
    "normalized": f"Coordinates (click's coordinate_x/coordinate_y, drag's from_x/from_y/to_x/to_y) are on a "
                  f"0-{GRID} grid over the screenshot, whatever its size in pixels: (0, 0) is the top left corner, "
                  f"({GRID}, {GRID}) the bottom right. Use them only for what has no element index.",
}


class DragByIndex(BaseModel):
    model_config = {"title": "DragAction"}
    from_index: int = Field(ge=1, description="index of the element to drag (a slider's handle, a list item)")
    to_index: int = Field(ge=1, description="index of the element to drop it on")


class DragAction(BaseModel):
    from_index: int | None = Field(default=None, ge=1, description="index of the element to drag")
    to_index: int | None = Field(default=None, ge=1, description="index of the element to drop it on")
    from_x: int | None = Field(default=None, description="start point, when the element has no index")
    from_y: int | None = None
    to_x: int | None = Field(default=None, description="end point, when the target has no index")
    to_y: int | None = None


async def viewport_size(session: BrowserSession) -> tuple[float, float]:
    """The viewport in CSS pixels: what browser-use measured with the last page state, else asked of the page."""
    size = getattr(session, "_original_viewport_size", None)
    if size:
        return float(size[0]), float(size[1])
    cdp = await session.get_or_create_cdp_session()
    metrics = await cdp.cdp_client.send.Page.getLayoutMetrics(session_id=cdp.session_id)
    view = metrics["cssLayoutViewport"]
    return float(view["clientWidth"]), float(view["clientHeight"])


async def to_viewport(session: BrowserSession, x: float, y: float, mode: str) -> tuple[float, float]:
    """A model's point in CSS pixels of the viewport."""
    if mode != "normalized":
        return float(x), float(y)
    width, height = await viewport_size(session)
    return x * width / GRID, y * height / GRID


async def _element_centre(session: BrowserSession, index: int) -> tuple[float, float] | None:
    node = await session.get_element_by_index(index)
    if node is None:
        return None
    cdp = await session.get_or_create_cdp_session()
    try:   # off screen, it has no point to press on
        await cdp.cdp_client.send.DOM.scrollIntoViewIfNeeded(params={"backendNodeId": node.backend_node_id},
                                                             session_id=cdp.session_id)
    except Exception:
        pass
    rect = await session.get_element_coordinates(node.backend_node_id, cdp)
    if rect is None:
        return None
    return rect.x + rect.width / 2, rect.y + rect.height / 2


async def drag_mouse(session: BrowserSession, start: tuple[float, float], end: tuple[float, float]) -> None:
    """Press the left button at `start`, move there in steps, release at `end` (real input events: pointer and
    mouse handlers, range inputs and sliders see what a person's drag makes them see)."""
    cdp = await session.get_or_create_cdp_session()

    async def mouse(kind: str, x: float, y: float, buttons: int) -> None:
        params: DispatchMouseEventParameters = {"type": kind, "x": x, "y": y, "buttons": buttons}
        if kind != "mouseMoved":
            params["button"], params["clickCount"] = "left", 1
        elif buttons:
            params["button"] = "left"
        await cdp.cdp_client.send.Input.dispatchMouseEvent(params=params, session_id=cdp.session_id)

    (x0, y0), (x1, y1) = start, end
    await mouse("mouseMoved", x0, y0, 0)
    await mouse("mousePressed", x0, y0, 1)
    for i in range(1, DRAG_STEPS + 1):
        await mouse("mouseMoved", x0 + (x1 - x0) * i / DRAG_STEPS, y0 + (y1 - y0) * i / DRAG_STEPS, 1)
        await asyncio.sleep(0.01)
    await mouse("mouseReleased", x1, y1, 0)


def make_tools(coordinates: str = "normalized") -> Tools[None]:
    """browser-use's Tools with coordinate clicking as asked and the drag action."""
    from browser_use import Tools  # browser-use (slow to import) only inside a worker
    from browser_use.agent.views import ActionResult  # browser-use only inside a worker

    if coordinates not in COORDINATE_MODES:
        raise ValueError(f"--coordinates {coordinates}: one of {', '.join(COORDINATE_MODES)}")
    tools: Tools[None] = Tools()     # no context object: the actions take only the session
    tools.set_coordinate_clicking(coordinates != "off")

    async def _point(session: BrowserSession, index: int | None, x: int | None,
                     y: int | None) -> tuple[float, float] | str:
        if index is not None:
            return await _element_centre(session, index) or f"element {index} is not on the page"
        if x is None or y is None or coordinates == "off":
            return "give an element index, or both coordinates"
        return await to_viewport(session, x, y, coordinates)

    model: type[BaseModel] = DragByIndex if coordinates == "off" else DragAction
    how = "" if coordinates == "off" else ", or by coordinates for what has no index"

    @tools.registry.action(f"Drag one element onto another (sliders, reorderable lists, drag and drop){how}.",
                           param_model=model)
    # the registry names the action after the function, and rejects any annotation of browser_session but its own
    async def drag(params, browser_session):  # type: ignore[no-untyped-def]
        start = await _point(browser_session, params.from_index, getattr(params, "from_x", None),
                             getattr(params, "from_y", None))
        end = await _point(browser_session, params.to_index, getattr(params, "to_x", None),
                           getattr(params, "to_y", None))
        if isinstance(start, str):
            return ActionResult(error=f"drag from: {start}")
        if isinstance(end, str):
            return ActionResult(error=f"drag to: {end}")
        await drag_mouse(browser_session, start, end)
        memory = f"Dragged {_where(params, 'from')} to {_where(params, 'to')}"
        return ActionResult(extracted_content=memory, long_term_memory=memory)

    return tools


def _where(params: Any, end: str) -> str:
    index = getattr(params, f"{end}_index")
    if index is not None:
        return f"element {index}"
    return f"({getattr(params, f'{end}_x')}, {getattr(params, f'{end}_y')})"


def agent_kwargs(coordinates: str) -> dict[str, Any]:
    """What an Agent is built with for this coordinate mode: the tools, and a word on the coordinates' scale."""
    kwargs: dict[str, Any] = {"tools": make_tools(coordinates)}
    if coordinates in COORDINATE_PROMPT:
        kwargs["extend_system_message"] = COORDINATE_PROMPT[coordinates]
    return kwargs


def use_coordinates(session: BrowserSession, coordinates: str) -> None:
    """After an Agent is built (it resets the session's `llm_screenshot_size`): clicks on the 0-1000 grid are scaled
    to the viewport by browser-use's own conversion, while the screenshots keep their size and aspect."""
    session.llm_screenshot_size = (GRID, GRID) if coordinates == "normalized" else None
