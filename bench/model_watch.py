"""What watching every model call costs (issue 19's goal: nothing a user can see).

1. Per call, in process: browser-use's `ChatOpenAI.ainvoke` on a canned reply of the agent's real shape (the
   client's own parse of the reply included), bare and watched (episode/model_watch.py: classified, counted, mended,
   told as an event), in alternating blocks; and a bare client's request, bare and watched (the planner's way).
2. Per episode, real: the offline suite's episodes run one after another in one process (a fresh Chromium each, the
   oracle), alternately with the watch and with it replaced by a pass-through, and the process's own CPU time per
   episode (where the watch runs; Chromium's is in its own processes) compared. Goal: within 1%.
3. Per event in the console process: the run's model statistics and guard (engine/model_health.py) for one
   `ModelCall`, and the dashboard's model line for one redraw.

    .venv/bin/python bench/model_watch.py [--calls 3000] [--episodes 6] [--rounds 2] [--skip-episodes]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

REPLY = {"thinking": "The search box is at the top of the page; typing the product name will list it.",
         "evaluation_previous_goal": "The page loaded: success.", "memory": "On the shop's start page.",
         "next_goal": "Type the product name into the search box and submit.",
         "action": [{"input": {"index": 4, "text": "copper kettle", "clear": True}}, {"click": {"index": 5}}]}


def completion(content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 6100, "completion_tokens": 140, "total_tokens": 6240}}


class CannedClient:
    """An OpenAI client's surface that answers at once with a parsed ChatCompletion, as the real one returns."""

    def __init__(self, content: str):
        from openai.types.chat import ChatCompletion

        self.body = completion(content)
        self.parse = ChatCompletion.model_validate
        self.chat = self
        self.completions = self

    async def create(self, **params: Any) -> Any:
        return self.parse(self.body)


def per_call(calls: int) -> list[tuple[str, float, float]]:
    from browser_use import ChatOpenAI
    from browser_use.agent.views import AgentOutput
    from browser_use.llm.messages import UserMessage
    from browser_use.tools.service import Tools

    from om2w_tui.episode.model_watch import ModelWatch

    output = AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())
    messages = [UserMessage(content="Find the copper kettle's price.")]
    content = json.dumps(REPLY)

    def llm(watched: bool) -> Any:
        model = ChatOpenAI(model="bench", base_url="http://127.0.0.1:9/v1", api_key="x")
        canned = CannedClient(content)
        model.get_client = lambda: canned   # type: ignore[method-assign]
        return ModelWatch(lambda ev: None).watch(model) if watched else model

    async def ainvoke_block(watched: bool, n: int) -> float:
        model = llm(watched)
        t = time.process_time()
        for _ in range(n):
            await model.ainvoke(messages, output)
        return (time.process_time() - t) / n

    def client_block(structured: bool) -> Any:
        async def block(watched: bool, n: int) -> float:
            canned = CannedClient(content if structured else '{"decision": "scroll", "direction": "down"}')
            client = ModelWatch(lambda ev: None).client(canned) if watched else canned
            extra = {"response_format": {"type": "json_schema"}} if structured else {}
            t = time.process_time()
            for _ in range(n):
                await client.chat.completions.create(model="bench", messages=[], **extra)
            return (time.process_time() - t) / n
        return block

    async def measure(block: Any) -> tuple[float, float]:
        await block(False, 50)   # warm both paths
        await block(True, 50)
        bare, watched = [], []
        for i in range(10):   # alternating blocks: a drift of the machine's load costs both the same
            for w in ((False, True) if i % 2 == 0 else (True, False)):
                (watched if w else bare).append(await block(w, calls // 10))
        return min(bare), min(watched)

    rows = [("the watch alone, an agent's reply", *asyncio.run(measure(client_block(True)))),
            ("the watch alone, a bare request", *asyncio.run(measure(client_block(False)))),
            ("browser-use's ainvoke around it", *asyncio.run(measure(ainvoke_block)))]
    return rows


def per_event(n: int) -> list[tuple[str, float]]:
    from om2w_tui.engine.events import ModelStats
    from om2w_tui.engine.model_health import ModelGuard, ModelMeter
    from om2w_tui.frontends.console.widgets.model_bar import model_text
    from om2w_tui.protocol.worker import ModelCall

    meter, guard = ModelMeter(), ModelGuard(3, lambda ev: None)
    call = ModelCall("ok", 1.2, 6100, 140)
    bad = ModelCall("context_length", 0.4, 0, 0, "This model's maximum context length is 32768 tokens.")
    t = time.process_time()
    for i in range(n):
        meter.call(i * 0.5, i % 100, bad if i % 10 == 0 else call)
        guard.note(None if i % 10 else "context_length", "x")
    event = (time.process_time() - t) / n
    stats = meter.stats(n * 0.5)
    t = time.process_time()
    for _ in range(n // 10):
        meter.stats(n * 0.5)
    snap = (time.process_time() - t) / (n // 10)
    held = ModelStats(**{**stats.__dict__, "guard": ""})
    t = time.process_time()
    for i in range(n):
        model_text(held, wide=i % 2 == 0)
    line = (time.process_time() - t) / n
    return [("a ModelCall: statistics + guard", event), ("the snapshot's ModelStats", snap),
            ("the dashboard's model line", line)]


# ── per episode: a child process runs the episodes, as a worker would ──
def episode_child(args: argparse.Namespace) -> int:
    from om2w_tui.episode.browser import browser_use_env, find_chromium

    scratch = tempfile.mkdtemp(prefix="om2w-bench-watch-")
    os.environ.update(browser_use_env(os.path.join(scratch, "config")))
    from om2w_tui.engine.config import RunConfig
    from om2w_tui.engine.launch import live_offline_task, offline_tasks
    from om2w_tui.episode import model_watch
    from om2w_tui.episode.runner import EpisodeControl, run_episode
    from om2w_tui.offline import OfflineSuite, OracleServer

    real_watch, real_client = model_watch.ModelWatch.watch, model_watch.ModelWatch.client
    out = Path(args.out)
    results = []
    with OfflineSuite() as suite, OracleServer(suite.tasks()) as oracle:
        tasks = [live_offline_task(t, suite.base_urls) for t in offline_tasks()[1]][: args.episodes]
        cfg = RunConfig(out=out, model="oracle", chromium=find_chromium(None))

        async def one(task: Any, watched: bool, k: int) -> tuple[float, int]:
            if watched:
                model_watch.ModelWatch.watch, model_watch.ModelWatch.client = real_watch, real_client
            else:   # the pass-through: the models as browser-use makes them, unwatched
                model_watch.ModelWatch.watch = lambda self, llm: llm   # type: ignore[method-assign]
                model_watch.ModelWatch.client = lambda self, c: c      # type: ignore[method-assign]
            spec = cfg.worker_spec(out / f"{task.task_id}-{k}", base_url=oracle.url, max_steps=task.max_steps)
            before = resource.getrusage(resource.RUSAGE_SELF)
            outcome = await run_episode(task.to_dict(), spec, lambda ev: None, EpisodeControl())
            after = resource.getrusage(resource.RUSAGE_SELF)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            return cpu, outcome.steps

        async def main() -> None:
            await one(tasks[0], True, -1)   # warm the imports and the first Agent
            for r in range(args.rounds):
                for i, task in enumerate(tasks):
                    order = (True, False) if (r + i) % 2 == 0 else (False, True)
                    for watched in order:
                        cpu, steps = await one(task, watched, r)
                        results.append({"watched": watched, "cpu": cpu, "steps": steps, "task": task.task_id})

        asyncio.run(main())
    print(json.dumps(results))
    return 0


def per_episode(episodes: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="om2w-bench-watch-") as out:
        r = subprocess.run([sys.executable, __file__, "--episode-child", "--episodes", str(episodes), "--rounds",
                            str(rounds), "--out", out], capture_output=True, text=True, timeout=3600, cwd=REPO)
    if r.returncode != 0:
        raise SystemExit(f"the episode child failed:\n{r.stderr[-3000:]}")
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    on = [x for x in rows if x["watched"]]
    off = [x for x in rows if not x["watched"]]
    pairs = [(a["cpu"], b["cpu"]) for a in on for b in off if a["task"] == b["task"]]
    return {"n": len(on), "on": sum(x["cpu"] for x in on) / len(on), "off": sum(x["cpu"] for x in off) / len(off),
            "steps_on": sum(x["steps"] for x in on), "steps_off": sum(x["steps"] for x in off),
            "pair_ratios": sorted(a / b for a, b in pairs if b > 0)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--episodes", type=int, default=6)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--skip-episodes", action="store_true")
    p.add_argument("--episode-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.episode_child:
        return episode_child(args)
    from om2w_tui.episode.browser import browser_use_env

    os.environ.update(browser_use_env(tempfile.mkdtemp(prefix="om2w-bench-watch-cfg-")))
    print(f"1. per call ({args.calls} calls each way, best of 10 alternating blocks; CPU time)")
    print(f"{'path':36} {'bare us':>9} {'watched us':>11} {'cost us':>8} {'ratio':>7}")
    rows = per_call(args.calls)
    for name, bare, watched in rows:
        print(f"{name:36} {bare * 1e6:9.1f} {watched * 1e6:11.1f} {(watched - bare) * 1e6:8.1f} "
              f"{watched / bare:7.3f}")
    cost = rows[0][2] - rows[0][1]   # the watch's own work on an agent's reply, measured alone
    print("\n3. per event, in the console's process")
    for name, seconds in per_event(20000):
        print(f"{name:36} {seconds * 1e6:8.2f} us")
    if args.skip_episodes:
        return 0
    print(f"\n2. per episode: {args.episodes} offline tasks x {args.rounds} rounds, each with and without the watch "
          f"(alternating order), the worker process's own CPU")
    e = per_episode(args.episodes, args.rounds)
    ratio = e["on"] / e["off"]
    print(f"{'':12} {'episodes':>8} {'steps':>6} {'CPU s/ep':>9}")
    print(f"{'without':12} {e['n']:8} {e['steps_off']:6} {e['off']:9.3f}")
    print(f"{'watched':12} {e['n']:8} {e['steps_on']:6} {e['on']:9.3f}")
    spread = e["pair_ratios"]
    print(f"watched / without: {ratio:.3f} (same task, paired: {spread[0]:.2f} .. {spread[-1]:.2f}: the machine's "
          f"noise)")
    calls_per_ep = e["steps_on"] / e["n"] + 1   # a call a step, and the step that said done
    share = cost * calls_per_ep / e["off"]
    verdict = "met" if share <= 0.01 else "MISSED"
    print(f"the watch's own work: {calls_per_ep:.1f} calls x {cost * 1e6:.1f} us = {cost * calls_per_ep * 1e3:.3f} ms "
          f"an episode, {share:.4%} of its {e['off']:.3f} CPU s; goal within 1%: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
