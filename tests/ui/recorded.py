"""A recorded run for the console's deterministic tests: the engine events and snapshots of a short run on the
offline suite (two slots, four sites), a frozen clock, the fake run (tests/fakes.py) as the recording left it,
and an episode folder with small PNG screenshots written by the test."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.events import (
    DispatchChanged,
    EpisodeFinished,
    EpisodeModelCall,
    EpisodeStarted,
    EpisodeStep,
    ModelStats,
    Pacing,
    RunSnapshot,
    RunStarted,
    RunSummary,
    SiteRow,
    SlotChanged,
    SlotRow,
)
from om2w_tui.engine.launch import Preflight
from om2w_tui.engine.results import EpisodeRecord
from tests.fakes import FakeRun

T0 = 1_750_000_000.0          # the frozen clock's start (epoch seconds)
LOOP0 = 5_000.0               # the engine's loop clock at T0
SHOP, WIKI, BOOKING, LONG = "127.0.0.1:41001", "127.0.0.1:41002", "127.0.0.1:41003", "127.0.0.1:41004"


class FrozenClock:
    """A clock that moves only when told to."""

    def __init__(self, t: float = T0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class StubRun(FakeRun):
    """The fake run (tests/fakes.py) as the recorded run left it: its snapshot, dispatch paused, two episodes, no
    errored task."""

    base: RunSnapshot = field(default_factory=lambda: snapshot())
    dispatch_paused: bool = True
    errored: dict[str, Any] = field(default_factory=dict)
    episodes: int | None = 2


def tasks() -> list[Task]:
    rows = [("offline_shop_search_01", SHOP, "easy"), ("offline_shop_filter_03", SHOP, "medium"),
            ("offline_wiki_port_06", WIKI, "easy"), ("offline_wiki_wal_07", WIKI, "medium"),
            ("offline_booking_rates_11", BOOKING, "easy"), ("offline_longpage_automated_14", LONG, "easy")]
    return [Task(tid, f"Do the task {tid}.", f"http://{site}/", level) for tid, site, level in rows]


def preflight_for(out: Path) -> Preflight:
    cfg = RunConfig(out=out, bench="offline", model="oracle", workers=2, pace_cooldown=90, max_steps=30)
    return Preflight(cfg, tasks(), Path("tasks.json"), settled=1,
                     checks=[("task file", True, "tasks.json: 16 tasks, 6 selected")])


def record(task_id: str, site: str, status: str = "done", steps: int = 3, answer: str = "", correct: bool = True,
           finished: float = T0, duration: float = 14.2, attempt: int = 1, slot: int = 0,
           error: str | None = None) -> EpisodeRecord:
    return EpisodeRecord(task_id=task_id, status=status, arm="base", website=f"http://{site}/", level="easy",
                         model="oracle", error=error, steps=steps, actions=steps, screenshots=steps + 1, answer=answer,
                         agent_done=status == "done", duration_s=duration, started_at=finished - duration,
                         finished_at=finished, attempt=attempt, slot=slot, correct=correct)


def events() -> list[Any]:
    """What the scheduler told its sinks during the first 40 seconds of the recorded run."""
    return [
        RunStarted(total=6, settled=1, workers=2, out="/runs/demo"),
        SlotChanged(0, "idle"), SlotChanged(1, "idle"),
        EpisodeStarted(0, "offline_shop_search_01", SHOP, "easy", 1, T0 - 40, 30),
        SlotChanged(0, "starting", "offline_shop_search_01"),
        EpisodeStarted(1, "offline_wiki_port_06", WIKI, "easy", 1, T0 - 38, 30),
        SlotChanged(1, "starting", "offline_wiki_port_06"),
        SlotChanged(0, "running", "offline_shop_search_01"),
        EpisodeStep(0, "offline_shop_search_01", 1, ['<input id="q" name="q"> Search products -> TYPE: kettle'],
                    f"http://{SHOP}/"),
        SlotChanged(1, "running", "offline_wiki_port_06"),
        EpisodeStep(1, "offline_wiki_port_06", 1, ['<a href="/docs/config"> Configuration -> CLICK'],
                    f"http://{WIKI}/"),
        EpisodeStep(0, "offline_shop_search_01", 2, ['<button id="search-button"> Search -> CLICK'],
                    f"http://{SHOP}/search?q=kettle"),
        EpisodeStep(0, "offline_shop_search_01", 3, ['<a id="product-link-kettle-copper"> Copper Kettle -> CLICK'],
                    f"http://{SHOP}/search?q=kettle"),
        EpisodeFinished(0, record("offline_shop_search_01", SHOP, answer="The Copper Pour-Over Kettle costs $42.50.",
                                  finished=T0 - 25, duration=15.0), judged=1, correct=1),
        SlotChanged(0, "idle"),
        EpisodeStarted(0, "offline_booking_rates_11", BOOKING, "easy", 1, T0 - 20, 30),
        SlotChanged(0, "starting", "offline_booking_rates_11"),
        SlotChanged(0, "running", "offline_booking_rates_11"),
        EpisodeStep(1, "offline_wiki_port_06", 2, ["SCROLL DOWN"], f"http://{WIKI}/docs/config"),
        EpisodeModelCall(1, "offline_wiki_port_06", "context_length", 0.4, 0, 0, CONTEXT_ERROR),
        EpisodeStep(0, "offline_booking_rates_11", 1, ['<a href="/rooms"> Rooms -> CLICK'], f"http://{BOOKING}/"),
        SlotChanged(1, "paused", "offline_wiki_port_06"),
        DispatchChanged(True, ""),
    ]


CONTEXT_ERROR = ("This model's maximum context length is 32768 tokens. However, you requested 35211 tokens (33211 "
                 "in the messages, 2000 in the completion).")
MODEL = ModelStats(calls=9, ok=8, failures={"context_length": 1}, calls_per_min=10.5, latency_p50_s=1.4,
                   latency_p95_s=2.9, tokens_in_per_s=1540.0, tokens_out_per_s=42.0,
                   last_error=f"context_length: {CONTEXT_ERROR}")


def snapshot() -> RunSnapshot:
    """The scheduler's snapshot at T0 (loop clock LOOP0): the shop cools down for another 65 s."""
    return RunSnapshot(
        now=LOOP0,
        slots=[SlotRow(0, "running", "offline_booking_rates_11", BOOKING, "easy", 1, T0 - 20, max_steps=30),
               SlotRow(1, "paused", "offline_wiki_port_06", WIKI, "easy", 2, T0 - 38, max_steps=30,
                       model_error="context_length")],
        sites=[SiteRow(SHOP, "cooling", LOOP0 + 65, left=1, done=1, errors=0, total=2, cooldown=90),
               SiteRow(WIKI, "running", 0.0, left=1, done=0, errors=0, total=2, cooldown=90),
               SiteRow(BOOKING, "running", 0.0, left=0, done=0, errors=0, total=1, cooldown=90),
               SiteRow(LONG, "free", 0.0, left=0, done=1, errors=0, total=1, cooldown=90)],
        paused=True, stopping=False, pacing=Pacing(1, 90), target_workers=2,
        summary=RunSummary(total=6, settled_before=1, finished=1, by_status={"done": 1}, pending=2, correct=1,
                           judged=1), model=MODEL)


def earlier_records() -> list[EpisodeRecord]:
    """results.jsonl of the folder before this run: one task done (the resume)."""
    return [record("offline_longpage_automated_14", LONG, answer="It was automated in 1987.", finished=T0 - 3600,
                   duration=21.0, slot=1)]


# ── an episode folder ──────────────────────────────────────
def png(width: int, height: int, colour: tuple[int, int, int], band: tuple[int, int, int]) -> bytes:
    """A small PNG: a page of `colour` with a header band of `band` (what a screenshot of a site looks like)."""
    rows = b""
    for y in range(height):
        c = band if y < height // 5 else colour
        line = bytes(c) * width
        if height // 3 < y < height // 3 + 3:   # a line of "text"
            ink = width // 2
            line = bytes(c) * (width // 8) + bytes((40, 40, 40)) * ink + bytes(c) * (width - width // 8 - ink)
        rows += b"\x00" + line

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def write_episode(out: Path, task_id: str = "offline_shop_search_01") -> Path:
    folder = out / task_id
    (folder / "trajectory").mkdir(parents=True, exist_ok=True)
    result = {
        "task_id": task_id,
        "task": 'Search Northwind Market for "kettle" and tell me the price of the Copper Pour-Over Kettle.',
        "final_result_response": "The Copper Pour-Over Kettle costs $42.50.",
        "action_history": ['<input id="q" name="q"> Search products -> TYPE: kettle',
                           '<button id="search-button"> Search -> CLICK',
                           '<a id="product-link-kettle-copper"> Copper Pour-Over Kettle -> CLICK'],
        "thoughts": ["The search box is at the top: type the product name.", "Run the search.",
                     "The kettle is the first result: open it to read its price."],
    }
    (folder / "result.json").write_text(json.dumps(result, indent=1))
    (folder / "history_0.json").write_text("{}")
    colours = [((250, 250, 245), (30, 90, 160)), ((245, 250, 250), (30, 90, 160)),
               ((250, 245, 240), (160, 60, 30)), ((240, 250, 240), (30, 130, 60))]
    for i, (page, band) in enumerate(colours):
        (folder / "trajectory" / f"{i}_full_screenshot.png").write_bytes(png(64, 36, page, band))
    return folder
