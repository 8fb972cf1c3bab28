"""The Sites panel shows a site another run holds (through a shared --pace-dir) as such."""

from __future__ import annotations

import dataclasses

from om2w_tui.frontends.console.widgets.panels import SitesTable

from . import recorded as R
from .pilots import build, cells, feed


async def test_a_site_held_by_another_run_says_so(tmp_path):
    app, clock, run = build(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await feed(pilot, app, clock)
        snap = R.snapshot()
        sites = [dataclasses.replace(s, state="held elsewhere", ready_at=0.0) if s.site == R.LONG else s
                 for s in snap.sites]
        held = dataclasses.replace(snap, sites=sites)
        run.base = held   # a snapshot the console asks the run for meanwhile (a loaded machine's late tick) says so too
        app.sink.snapshot(held, clock())
        await pilot.pause()
        app.screen.render_all()
        sites = app.screen.query_one(SitesTable)
        assert cells(sites, R.LONG)[1] == "held elsewhere"
        assert sites.get_row(R.LONG)[1].style == "magenta"
