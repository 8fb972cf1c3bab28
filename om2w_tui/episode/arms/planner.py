"""The `agent` arm: a planner model that looks at the page and either delegates a subtask to a specialist
browser-use Agent in the same browser, scrolls to read, or answers.

A specialist is chosen by family (drag, io, select, rest, reasoning): the family's own served model (a LoRA
adapter named after it) when it is in `adapters`, else `fallback`. `max_steps` is the specialists' total budget of
site actions; `planner_turns` caps the planner. The trajectory holds the planner's own steps (the page it looked
at, the scrolls it made to read an answer) and the specialists' steps in the order they ran; the delegation itself
is never an action. Besides the histories it writes `planner_history.json` and `subtasks.json`.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import TYPE_CHECKING, Any

from om2w_tui.episode.arms.interface import (
    ArmContext,
    ArmResult,
    StepReporter,
    agent_steps,
    agent_usage,
    new_agent,
    run_agent,
)
from om2w_tui.protocol.planner import FAMILIES, PLANNER_MARKER

if TYPE_CHECKING:   # openai is imported when the arm runs
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletionMessageParam

PLANNER_SYSTEM = PLANNER_MARKER + """
You see a web task, the page the browser shows now, and what your specialists did so far. Each turn, choose one:
- delegate a subtask to a specialist who acts in the same browser. Families: drag (drag and drop, sliders),
  io (typing into fields, forms), select (dropdowns, date pickers, options), rest (clicking, navigating, searching),
  reasoning (reading the page and working out an answer). Give a subtask small enough for one specialist.
- scroll the page to read more of it yourself ("down" or "up").
- answer, when the task is done or its answer is on the page or in the specialists' reports.
Reply with one JSON object and nothing else:
{"thought": "...", "decision": "delegate", "family": "rest", "subtask": "..."}
{"thought": "...", "decision": "scroll", "direction": "down"}
{"thought": "...", "decision": "answer", "answer": "..."}"""


def parse_decision(text: str) -> dict[str, Any]:
    """The planner's JSON decision; tolerant of code fences and prose around one JSON object."""
    text = (text or "").strip()
    match = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(match.group(0) if match else text)
    except (ValueError, AttributeError):
        return {"decision": "invalid", "raw": text[:500]}
    return data if isinstance(data, dict) else {"decision": "invalid", "raw": text[:500]}


class PlannerArm:
    def __init__(self, ctx: ArmContext):
        if ctx.record_step is None:
            raise ValueError("the agent arm records the planner's own steps: its ArmContext needs record_step")
        self.ctx = ctx
        self.record_step = ctx.record_step
        opts = ctx.options
        self.planner_name = opts.get("planner_name") or ctx.llm.model
        self.adapters = set(opts.get("adapters") or [])
        self.fallback = opts.get("fallback") or ctx.llm.model
        self.turns = int(opts.get("planner_turns") or 8)
        self.planner_log: list[dict[str, Any]] = []
        self.trace: list[dict[str, Any]] = []
        # browser-use's objects, as interface.py hands them (untyped there: a plugin arm may bring its own)
        self.histories: list[Any] = []      # finished specialists' histories (AgentHistoryList)
        self.current: Any = None            # the specialist running now (a browser_use Agent)
        self.steps = StepReporter(ctx)
        self.answer: str | None = None
        self.out_of_steps = False          # every planner turn was taken without an answer
        self.prompt_tokens = self.completion_tokens = 0

    def model_for(self, family: str) -> str:
        return family if family in self.adapters else self.fallback

    # ── the planner's own turn ──────────────────────────────
    async def _ask_planner(self, client: AsyncOpenAI, png: bytes | None, url: str) -> tuple[dict[str, Any], str]:
        c = self.ctx
        reports = "\n".join(f"{i + 1}. [{t['family']}] {t['subtask']} -> "
                            f"{'done' if t['done'] else 'not done'}: {t['result'] or '(no report)'}"
                            for i, t in enumerate(self.trace)) or "(none yet)"
        used = sum(t["steps"] for t in self.trace)
        text = (f"<task>{c.instruction}</task>\n<url>{url}</url>\n<specialist_reports>\n{reports}\n"
                f"</specialist_reports>\n<budget>{max(0, c.max_steps - used)} site actions left</budget>")
        content: Any = text
        if png and c.llm.vision:
            content = [{"type": "text", "text": text},
                       {"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                           base64.b64encode(png).decode()}}]
        messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": PLANNER_SYSTEM},
                                                      {"role": "user", "content": content}]
        if c.call_log is not None:   # the planner's turns are segment 0 of the rows
            c.call_log.segment = 0
        reply = await client.chat.completions.create(model=self.planner_name, messages=messages,
                                                      **c.llm.sampling())
        if reply.usage:
            self.prompt_tokens += reply.usage.prompt_tokens or 0
            self.completion_tokens += reply.usage.completion_tokens or 0
        raw = reply.choices[0].message.content or ""   # recorded as a row by the watched client
        return parse_decision(raw), raw

    async def _look(self) -> tuple[bytes | None, str]:
        session = self.ctx.session
        try:
            png = await session.take_screenshot()
        except Exception:
            png = None
        try:
            url = await session.get_current_page_url()
        except Exception:
            url = ""
        return png, url

    async def _scroll(self, down: bool) -> None:
        page = await self.ctx.session.get_current_page()
        if page is not None:
            await page.evaluate(f"() => window.scrollBy(0, {'1' if down else '-1'} * window.innerHeight * 0.8)")

    # ── a specialist ────────────────────────────────────────
    async def _delegate(self, family: str, subtask: str, budget: int) -> dict[str, Any]:
        c = self.ctx
        model = self.model_for(family)
        if c.call_log is not None:   # --record-rows: the specialists' calls are rows too, one segment each
            c.call_log.segment = len(self.trace) + 1
        llm = c.chat_model(model)
        entry = {"family": family, "model": model, "subtask": subtask, "started_at": time.time(), "steps": 0,
                 "done": False, "result": None, "ended_at": None}
        self.trace.append(entry)
        self.current = self.steps.follow(new_agent(c, subtask, llm))
        history = await run_agent(c, self.current, budget, self.steps.report)
        await self.steps.report()
        prompt, completion = await agent_usage(self.current)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        entry.update(steps=agent_steps(history), done=history.is_done(), ended_at=time.time(),
                     result=history.final_result())
        self.histories.append(history)
        self.current = None
        return entry

    # ── the episode ─────────────────────────────────────────
    async def run(self) -> ArmResult:
        c = self.ctx
        client = c.openai_client()
        for turn in range(self.turns):
            used = sum(t["steps"] for t in self.trace)
            png, url = await self._look()
            started = time.time()
            decision, raw = await self._ask_planner(client, png, url)
            kind = decision.get("decision")
            thought = str(decision.get("thought") or "")
            self.planner_log.append({"turn": turn, "started_at": started, "ended_at": time.time(), "url": url,
                                     "decision": decision, "reply": raw})
            if kind == "answer":
                self.answer = str(decision.get("answer") or "")
                await self.record_step([], thought, png, url)      # the page the answer was read from
                break
            if kind == "scroll":
                down = str(decision.get("direction", "down")).lower() != "up"
                await self.record_step([f"SCROLL {'DOWN' if down else 'UP'}"], thought, png, url)
                await self._scroll(down)
                continue
            if kind == "delegate" and used < c.max_steps:
                family = str(decision.get("family") or "rest").lower()
                family = family if family in FAMILIES else "rest"
                await self.record_step([], thought, png, url)      # what the planner looked at before delegating
                await self._delegate(family, str(decision.get("subtask") or c.instruction), c.max_steps - used)
                continue
            if kind == "delegate":   # the specialists' budget is spent: the planner must answer from here
                continue
            self.planner_log[-1]["error"] = "the planner's reply was not a decision"
        else:   # every turn taken without an answer
            self.out_of_steps = True
        return self._result()

    def _result(self) -> ArmResult:
        histories = self.histories + ([self.current.history] if self.current is not None else [])
        # only the planner answers: a specialist's last report stays in subtasks.json
        return ArmResult(histories=histories, answer=self.answer, agent_done=self.answer is not None,
                         out_of_steps=self.out_of_steps,
                         prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                         files={"planner_history.json": {"planner": self.planner_name, "turns": self.planner_log},
                                "subtasks.json": {"trace": self.trace}})

    async def partial(self) -> ArmResult:
        """A stop keeps the finished specialists and the one running, with every step they took."""
        await self.steps.report()
        if self.current is not None and self.trace and self.trace[-1]["ended_at"] is None:
            self.trace[-1].update(steps=agent_steps(self.current.history), ended_at=time.time(), stopped=True)
        return self._result()

    def pause(self) -> None:
        if self.current is not None:
            self.current.pause()

    def resume(self) -> None:
        if self.current is not None:
            self.current.resume()
