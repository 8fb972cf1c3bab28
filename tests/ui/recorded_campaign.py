"""A recorded campaign for the console's tests: two arms (`base`, `agent`), one repeat each, on three tasks of the
recorded run's offline suite, two slots; the events and the snapshot the lanes scheduler reports (each event with its
lane, the snapshot's LaneRows and pairing gaps), and the fake run (tests/fakes.py) with those lanes."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui.engine.events import (
    EpisodeFinished,
    EpisodeStarted,
    EpisodeStep,
    GapFigures,
    LaneRow,
    Pacing,
    PairingGaps,
    RunSnapshot,
    RunStarted,
    RunSummary,
    SiteRow,
    SlotChanged,
    SlotRow,
)
from om2w_tui.engine.results import EpisodeRecord
from tests.fakes import FakeRun

from . import recorded as R
from .pilots import build

SHOP_T, WIKI_T, BOOK_T = "offline_shop_search_01", "offline_wiki_port_06", "offline_booking_rates_11"


def rec(lane: str, task_id: str, site: str, correct: bool, finished: float) -> EpisodeRecord:
    return dataclasses.replace(R.record(task_id, site, answer=f"{lane}'s answer", correct=correct, finished=finished),
                               arm=lane)


def finished(slot: int, lane: str, task_id: str, site: str, correct: bool, at: float) -> list[Any]:
    return [EpisodeStarted(slot, task_id, site, "easy", 1, at - 14, 30, lane=lane),
            SlotChanged(slot, "running", task_id, lane=lane),
            EpisodeStep(slot, task_id, 1, ["CLICK"], f"http://{site}/"),
            EpisodeFinished(slot, rec(lane, task_id, site, correct, at), lane=lane),
            SlotChanged(slot, "idle")]


def events(out: Path) -> list[Any]:
    """base solved the shop and the booking task and not the wiki one; agent the wiki one and not the shop's; agent
    runs the booking task now (slot 1), base the long page (slot 0)."""
    return [
        RunStarted(total=12, settled=0, workers=2, out=str(out)),
        SlotChanged(0, "idle"), SlotChanged(1, "idle"),
        *finished(0, "base", SHOP_T, R.SHOP, True, R.T0 - 300),
        *finished(1, "agent", SHOP_T, R.SHOP, False, R.T0 - 200),
        *finished(0, "agent", WIKI_T, R.WIKI, True, R.T0 - 190),
        *finished(1, "base", WIKI_T, R.WIKI, False, R.T0 - 100),
        *finished(0, "base", BOOK_T, R.BOOKING, True, R.T0 - 60),
        EpisodeStarted(1, BOOK_T, R.BOOKING, "easy", 1, R.T0 - 20, 30, lane="agent"),
        SlotChanged(1, "running", BOOK_T, lane="agent"),
        EpisodeStarted(0, "offline_longpage_automated_14", R.LONG, "easy", 1, R.T0 - 10, 30, lane="base"),
        SlotChanged(0, "running", "offline_longpage_automated_14", lane="base"),
    ]


def lanes(out: Path, guard: str = "") -> tuple[LaneRow, ...]:
    return (LaneRow("base", "base", 1, str(out / "base"), total=6, done=3, errors=0, correct=2, judged=3),
            LaneRow("agent", "agent", 1, str(out / "agent"), total=6, done=2, errors=0, correct=1, judged=2,
                    guard=guard))


def snapshot(out: Path, guard: str = "") -> RunSnapshot:
    return RunSnapshot(
        now=R.LOOP0,
        slots=[SlotRow(0, "running", "offline_longpage_automated_14", R.LONG, "easy", 1, R.T0 - 10, max_steps=30,
                       lane="base"),
               SlotRow(1, "running", BOOK_T, R.BOOKING, "easy", 1, R.T0 - 20, max_steps=30, lane="agent")],
        sites=[SiteRow(R.SHOP, "free", 0.0, left=2, done=2, total=4, cooldown=90),
               SiteRow(R.WIKI, "free", 0.0, left=2, done=2, total=4, cooldown=90),
               SiteRow(R.BOOKING, "running", 0.0, left=0, done=1, total=2, cooldown=90),
               SiteRow(R.LONG, "running", 0.0, left=1, done=0, total=2, cooldown=90)],
        paused=False, pacing=Pacing(1, 90), target_workers=2, lanes=lanes(out, guard),
        summary=RunSummary(total=12, finished=5, by_status={"done": 5}, pending=5, lanes=lanes(out, guard),
                           pairing=PairingGaps(GapFigures(2, 95.0, 100.0, 100.0), GapFigures(2, 95.0, 100.0, 100.0),
                                               lanes=2, compared=1)))


@dataclass
class CampaignRun(FakeRun):
    """The fake run as the recorded campaign left it (dispatch going, two episodes, no errored task), with
    `pause_lane` (RunControl's): recorded in `commands` as ("pause_lane", name, paused), and its snapshot's LaneRow
    says the lane paused."""

    base: RunSnapshot = field(default_factory=RunSnapshot)
    errored: dict[str, Any] = field(default_factory=dict)
    lanes_paused: dict[str, bool] = field(default_factory=dict)   # lane -> paused, as pause_lane set it

    def pause_lane(self, name: str, paused: bool = True) -> bool:
        self.commands.append(("pause_lane", name, paused))
        if not any(row.name == name for row in self.base.lanes):
            return False
        self.lanes_paused[name] = paused
        return True

    def snapshot(self) -> RunSnapshot:
        snap = super().snapshot()
        return dataclasses.replace(snap, lanes=tuple(
            dataclasses.replace(row, paused=self.lanes_paused.get(row.name, row.paused)) for row in snap.lanes))


def build_campaign(tmp_path: Path, guard: str = "", **kw: Any) -> tuple[Any, R.FrozenClock, CampaignRun, Path]:
    """The console on the recorded campaign's folder (`study/`, its lanes `base/` and `agent/` beside
    campaign.json), the fake run as its control; feed it with `feed_campaign`."""
    app, clock, _ = build(tmp_path, **kw)
    out = tmp_path / "demo"        # build's folder: the campaign's here
    (out / "results.jsonl").unlink()
    for lane in ("base", "agent"):
        (out / lane).mkdir()
    (out / "campaign.json").write_text(json.dumps({"format": 1, "lanes": [
        {"name": "base", "arm": "base", "repeat": 1}, {"name": "agent", "arm": "agent", "repeat": 1}]}))
    stub = CampaignRun(base=snapshot(out, guard))
    app.control = stub
    return app, clock, stub, out


async def feed_campaign(pilot: Any, app: Any, clock: R.FrozenClock, out: Path) -> None:
    await pilot.pause()
    evs = events(out)
    app.sink.handle(evs[0])
    await pilot.pause()
    clock.t = R.T0
    for ev in evs[1:]:
        app.sink.handle(ev)
    app.sink.snapshot(app.control.snapshot(), clock())
    await pilot.pause()
    app.screen.render_all()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()   # a loaded machine draws late: the panels as they settle, every time
    await pilot.pause()


async def open_comparison(pilot: Any, app: Any, clock: R.FrozenClock, out: Path) -> Any:
    """The recorded campaign fed to the console, then its comparison screen (`c`) opened: that screen."""
    await feed_campaign(pilot, app, clock, out)
    await pilot.press("c")
    await pilot.pause()
    return app.screen
