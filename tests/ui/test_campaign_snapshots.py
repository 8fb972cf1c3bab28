"""How the console looks on a campaign of two arms at 160x45: the dashboard (the slots' arm, the lanes' line with
one arm held by its model guard) and the comparison screen. Deterministic as tests/ui/test_snapshots.py is: the
recorded campaign fed through the engine's sink, a frozen clock. Update with `--snapshot-update` after checking."""

from __future__ import annotations

from . import recorded_campaign as C


def test_campaign_dashboard(snap_compare, tmp_path):
    app, clock, _, out = C.build_campaign(tmp_path, guard="context_length: 3 of the last 4 calls failed")

    async def run_before(pilot) -> None:
        await C.feed_campaign(pilot, app, clock, out)

    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)


def test_campaign_comparison(snap_compare, tmp_path):
    app, clock, _, out = C.build_campaign(tmp_path)

    async def run_before(pilot) -> None:
        await C.feed_campaign(pilot, app, clock, out)
        await pilot.press("c")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)
