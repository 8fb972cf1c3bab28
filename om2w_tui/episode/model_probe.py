"""The preflight's one model call: the agent's first step, built by browser-use itself, sent to the run's model.

Run as `python -m om2w_tui.episode.model_probe` with its question on stdin (protocol/probe.py's `ProbeQuestion`, the
run's settings as engine/model_check.py put them); prints its `ProbeAnswer` as one JSON line, both through the one
codec: what was sent and what came back. It runs apart from the console because browser-use costs a second to
import and a Chromium to run: the console's process never loads either.

The step is the real one a worker's first step makes: a fresh browser pinned to the run's browser settings on a
stand-in page (the offline shop, served here on 127.0.0.1: a preflight never visits the sites a run paces), the
run's agent (`new_agent`: its tools, coordinates, vision, browser-use's own system prompt for them), browser-use's
`_prepare_context` for step 1 (the user message, the screenshot, the page's action model), and browser-use's
`ChatOpenAI` as every step builds it (`chat_openai`: the run's model settings, its sampling, max completion tokens,
timeout and retries; its `response_format` is the action schema through `SchemaOptimizer`). Every HTTP answer is
read as it arrives, so a reply that browser-use would refuse (prose, a <think> prefix, a cut) is seen as the server
sent it; the reply is then checked against the step's real action model, as sent and after splitting off a <think>
block or a code fence.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from om2w_tui.episode.browser import browser_use_env
from om2w_tui.protocol.codec import CodecError, from_json, to_json
from om2w_tui.protocol.model import mend_text, split_thinking
from om2w_tui.protocol.probe import ActionCheck, ProbeAnswer, ProbeQuestion, Retried, Sent, not_asked

TEXT_KEPT = 4000          # of a reply's content or an error body: enough to name the problem and show its end


class Answers:
    """Every HTTP answer of the model endpoint, read as it arrives (an httpx response hook)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, response: Any) -> None:
        await response.aread()
        self.seen.append({"status": response.status_code, "retry_after": response.headers.get("retry-after"),
                          "server": response.headers.get("server"), "text": response.text})


def main() -> int:
    try:
        spec = from_json(ProbeQuestion, json.loads(sys.stdin.read()))
    except (ValueError, CodecError) as e:   # not asked by this version's preflight: said, nothing started
        print(json.dumps(to_json(not_asked("probe", f"the question: {e}"[:TEXT_KEPT]))), flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="om2w-model-probe-") as scratch:
        os.environ.update(browser_use_env(Path(scratch) / "config"))
        os.environ["TMPDIR"] = tempfile.tempdir = scratch   # browser-use's and Chromium's leftovers go with it
        try:
            outcome = asyncio.run(probe(spec, Path(scratch)))
        except Exception as e:   # the probe's own failure: said, never a traceback on the console
            outcome = not_asked("probe", f"{type(e).__name__}: {e}"[:TEXT_KEPT])
    print(json.dumps(to_json(outcome)), flush=True)
    return 0


async def probe(spec: ProbeQuestion, scratch: Path) -> ProbeAnswer:
    from om2w_tui.offline.serving import BackgroundServer  # the stand-in page, served only here
    from om2w_tui.offline.sites import SITE_HANDLERS  # as above

    page = BackgroundServer(SITE_HANDLERS["shop"], app=None, name="probe-shop")
    page.start()
    session = None
    try:
        session, failed = await _open_browser(spec, scratch, page.base_url + "/")
        if failed:
            return failed
        return await _first_step(spec, session)
    finally:
        if session is not None:
            await _quietly(session.kill())
        page.stop()


async def _open_browser(spec: ProbeQuestion, scratch: Path, url: str) -> tuple[Any, ProbeAnswer | None]:
    from om2w_tui.episode.browser import make_session, start_session  # browser-use only in this process

    browser = spec.browser.as_dict() if spec.browser is not None else None
    session = make_session(spec.chromium, scratch / "downloads", scratch / "profile", browser)
    try:
        await asyncio.wait_for(start_session(session, browser), 60)
        await asyncio.wait_for(session.navigate_to(url), 30)
    except Exception as e:
        return session, not_asked("browser", f"{type(e).__name__}: {e}"[:TEXT_KEPT])
    return session, None


async def _first_step(spec: ProbeQuestion, session: Any) -> ProbeAnswer:
    from browser_use.agent.views import AgentStepInfo  # browser-use only in this process

    answers = Answers()
    agent = _agent(spec, session, answers)
    await agent._prepare_context(AgentStepInfo(step_number=0, max_steps=spec.max_steps))
    messages = agent._message_manager.get_messages()
    agent._process_messsages_and_replace_long_urls_shorter_ones(messages)   # as the agent's get_model_output does
    sent = _what_was_sent(messages, spec, agent)
    started = time.monotonic()
    failure = ""
    try:
        await asyncio.wait_for(agent.llm.ainvoke(messages, output_format=agent.AgentOutput),
                               spec.llm.llm_timeout * (1 + spec.llm.llm_retries))
    except Exception as e:   # browser-use refuses what it cannot parse: the answers below say what came
        from om2w_tui.endpoint import reply_error  # loaded with the client that raised

        refused = reply_error(e)
        failure = str(refused) if refused is not None else f"{type(e).__name__}: {e}"
    latency = time.monotonic() - started
    return replace(_answer(answers, failure, agent), sent=sent, latency_s=round(latency, 3))


def _agent(spec: ProbeQuestion, session: Any, answers: Answers) -> Any:
    from om2w_tui.episode.arms.interface import ArmContext, chat_openai, new_agent  # browser-use only here

    async def nothing(*_args: Any) -> None:
        return None

    llm = chat_openai(spec.llm, spec.base_url, spec.api_key, event_hooks={"response": [answers]})
    ctx = ArmContext(task={}, instruction=spec.instruction, session=session, llm=spec.llm, base_url=spec.base_url,
                     api_key="", max_steps=spec.max_steps, step_done=nothing)
    return new_agent(ctx, ctx.instruction, llm)


def _what_was_sent(messages: list[Any], spec: ProbeQuestion, agent: Any) -> Sent:
    from browser_use.llm.openai.serializer import OpenAIMessageSerializer  # browser-use only in this process

    serialised: list[dict[str, Any]] = [dict(m) for m in OpenAIMessageSerializer.serialize_messages(messages)]
    contents = [m.get("content") for m in serialised]
    parts: list[Any] = [p for c in contents if isinstance(c, list) for p in c if isinstance(p, dict)]
    chars = sum(len(c) for c in contents if isinstance(c, str))
    chars += sum(len(str(p.get("text", ""))) for p in parts if p.get("type") == "text")
    return Sent(messages=len(serialised), images=sum(1 for p in parts if p.get("type") == "image_url"),
                text_chars=chars, schema=agent.AgentOutput.__name__,
                max_completion_tokens=spec.llm.max_completion_tokens, sampling=spec.llm.sampling())


def _answer(answers: Answers, failure: str, agent: Any) -> ProbeAnswer:
    """The last HTTP answer (those before it were retried: 429s, 5xx), its reply read apart, and the reply checked
    against the step's action model."""
    if not answers.seen:
        return ProbeAnswer(ok=True, error=failure[:TEXT_KEPT])
    last = answers.seen[-1]
    retried = [Retried(a["status"], a["retry_after"]) for a in answers.seen[:-1]]
    out = ProbeAnswer(ok=True, status=last["status"], server=last["server"], retried=retried)
    if last["status"] != 200:
        return replace(out, error=last["text"][:TEXT_KEPT])
    try:
        body = json.loads(last["text"])
        choice = body["choices"][0]
        message = choice.get("message") or {}
        usage = body.get("usage") or {}
        content = message.get("content")
        finish = choice.get("finish_reason")
        prompt = usage.get("prompt_tokens")
        if not (content is None or isinstance(content, str)) or not (finish is None or isinstance(finish, str)):
            raise TypeError("not a chat completion's message")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return replace(out, unreadable=last["text"][:TEXT_KEPT])
    reasoning = next((f for f in ("reasoning_content", "reasoning") if message.get(f)), None)
    return replace(out, content=_kept(content), content_chars=len(content or ""), finish_reason=finish,
                   prompt_tokens=prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else None,
                   reasoning_field=reasoning, action=check_action(content or "", agent.AgentOutput))


def check_action(content: str, action_model: Any) -> ActionCheck:
    """Whether `content` is the step's action as sent, or once a <think> block or a code fence is taken off; the
    actions it names, or the first thing the action model refuses."""
    tried = [("as sent", content)]
    if (split := split_thinking(content)) is not None:
        tried.append(("after the <think> block", split[1]))
    if content.lstrip().startswith("```"):
        tried.append(("inside the code fence", content.strip().strip("`").removeprefix("json").strip()))
    mended, changed = mend_text(content)
    if changed:   # as the worker reads it (episode/model_watch.py): text that is not Unicode made U+FFFD
        tried.append(("once its text that is not Unicode is mended", mended))
    problem = ""
    for how, text in tried:
        try:
            parsed = action_model.model_validate_json(text)
        except Exception as e:   # pydantic's ValidationError: its first error says what
            problem = problem or _first_error(e)
            continue
        names = [next(iter(a.model_dump(exclude_none=True)), "?") for a in parsed.action]
        return ActionCheck(valid=True, how=how, actions=names)
    return ActionCheck(valid=False, problem=problem[:300])


def _first_error(e: Exception) -> str:
    errors = getattr(e, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            return f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg', '')}".strip(": ")
        except Exception:
            pass
    return f"{type(e).__name__}: {e}"


def _kept(text: str | None) -> str | None:
    if text is None or len(text) <= TEXT_KEPT:
        return text
    return text[: TEXT_KEPT - 200] + " … " + text[-200:]


async def _quietly(awaitable: Any) -> None:
    try:
        await asyncio.wait_for(awaitable, 10)
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(main())
