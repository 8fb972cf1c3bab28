"""Polite pacing per website: at most `per_site` episodes at a time on a site (one by default; 0: no limit), and a
cooldown from the end of one to the start of the next. Pure bookkeeping on a clock the caller gives (the event
loop's), so tests run it in virtual time."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class SiteState:
    running: int = 0           # episodes on the site now
    limit: int = 1             # episodes at once allowed (0: no limit)
    ready_at: float = 0.0      # clock time before which no episode may start here
    cooldown: float = 0.0      # the site's current cooldown (the run's default unless widened)

    @property
    def busy(self) -> bool:
        """No room for another episode now."""
        return bool(self.limit) and self.running >= self.limit


WIDEN_FLOOR_S = 60.0     # a widened cooldown is at least this, even where the run's default is 0
CAP_FACTOR, CAP_FLOOR_S = 16, 1800.0
# asyncio may run a timer up to its clock's resolution early: a site due within this is ready, so a wake-up at
# the cooldown's end never finds it 'not yet' and sets the same timer again forever
CLOCK_SLACK_S = 1e-3


class SitePacer:
    """Per site: busy or not, when the next episode may start, and its cooldown, which widens when the site shows
    a bot check and relaxes after clean episodes (as Scrapy's AutoThrottle adapts its delays)."""

    # whether `can_start` depends on this pacer's own state alone (its sites' deadlines and counts): then the
    # dispatcher may keep an index of ready sites; a pacer that also asks the world (other runs' lock files) says
    # False, and the dispatcher asks it about every site each time
    knows_all: bool = True

    def __init__(self, cooldown: float, per_site: int = 1):
        self.cooldown = float(cooldown)
        self.per_site = max(0, int(per_site))
        self.cap = max(self.cooldown * CAP_FACTOR, CAP_FLOOR_S)
        self._sites: dict[str, SiteState] = {}

    def state(self, site: str) -> SiteState:
        st = self._sites.get(site)
        if st is None:
            st = self._sites[site] = SiteState(limit=self.per_site, cooldown=self.cooldown)
        return st

    def can_start(self, site: str, now: float) -> bool:
        st = self.state(site)
        return not st.busy and now >= st.ready_at - CLOCK_SLACK_S

    def acquire(self, site: str, now: float) -> None:
        if not self.can_start(site, now):
            raise RuntimeError(f"site {site} is busy or cooling down")
        self.state(site).running += 1

    def release(self, site: str, now: float) -> None:
        st = self.state(site)
        st.running = max(0, st.running - 1)
        st.ready_at = max(st.ready_at, now + st.cooldown)

    def release_without_cooldown(self, site: str) -> None:
        """An episode that never reached the site (the worker failed to start it) leaves no cooldown."""
        st = self.state(site)
        st.running = max(0, st.running - 1)

    def widen(self, site: str) -> float:
        """A block seen on the site: double its cooldown (at least WIDEN_FLOOR_S, at most the cap)."""
        st = self.state(site)
        st.cooldown = min(self.cap, max(st.cooldown * 2, WIDEN_FLOOR_S))
        return st.cooldown

    def relax(self, site: str) -> float:
        """A clean episode on the site: a widened cooldown comes back towards the run's default gradually (its
        excess over the default halves with each clean episode), so one lucky episode does not undo a block."""
        st = self.state(site)
        excess = (st.cooldown - self.cooldown) / 2
        st.cooldown = self.cooldown + excess if excess >= max(1.0, self.cooldown * 0.05) else self.cooldown
        return st.cooldown

    def cooling_until(self, site: str, now: float) -> float | None:
        st = self.state(site)
        return st.ready_at if not st.busy and st.ready_at > now else None

    def held_elsewhere(self, site: str) -> bool:
        """Whether another run holds the site (only a pacer shared across runs can say yes)."""
        return False

    def end_round(self) -> None:
        """A dispatch round is over (a pacer shared across runs drops the locks the round did not use)."""

    def next_ready(self, sites: Iterable[str], now: float) -> float | None:
        """The earliest time one of `sites` (not busy, cooling) becomes free; None if none is cooling."""
        times = [st.ready_at for s in sites if not (st := self.state(s)).busy and st.ready_at - CLOCK_SLACK_S > now]
        return min(times) if times else None
