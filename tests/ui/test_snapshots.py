"""How the console looks, at 80x24 and 160x45: the launch form, the dashboard and the episode view. Deterministic:
a recorded run fed through the engine's sink, a frozen clock, a stub preflight, PNGs written by the test, block
characters for the screenshots, no cursor blink. Update with `--snapshot-update` after checking the change."""

from __future__ import annotations

import pytest

from om2w_tui.frontends.console.app import make_app

from . import recorded as R
from .pilots import FakePreflight, build, checked, feed, remembered
from .pilots import settle_episode as settle

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])


@SIZES
def test_launch_form(snap_compare, tmp_path, size):
    path = remembered(tmp_path, bench="om2w", tasks="data/online_mind2web.json", model="qwen3-vl-8b",
                      vllm="http://gpu-node:8400/v1", api_key_env="OM2W_SNAPSHOT_KEY", workers="8",
                      out="runs/om2w-qwen3", pace_cooldown="120", levels="easy,medium")
    app = make_app(None, checks_fn=FakePreflight(settled=120, total=300), last_launch=path, start_engine=False,
                   cursor_blink=False)
    assert snap_compare(app, terminal_size=size, run_before=checked)


@SIZES
def test_dashboard(snap_compare, tmp_path, size):
    app, clock, _ = build(tmp_path)

    async def run_before(pilot) -> None:
        await feed(pilot, app, clock)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@SIZES
def test_episode_view(snap_compare, tmp_path, size):
    app, clock, _ = build(tmp_path)
    R.write_episode(tmp_path / "demo", "offline_shop_search_01")
    rec = R.record("offline_shop_search_01", R.SHOP, answer="The Copper Pour-Over Kettle costs $42.50.",
                   finished=R.T0 - 25, duration=15.0)

    async def run_before(pilot) -> None:
        await feed(pilot, app, clock)
        app.open_episode("offline_shop_search_01", rec)
        await settle(pilot)
        await pilot.press("right")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
