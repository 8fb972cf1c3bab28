"""How often events may redraw the dashboard's panels (`RedrawPace`): quickly while the machine has cores to spare,
less often while the once-a-second tick comes late (the workers fill the cores). Pure bookkeeping on the clock the
dashboard gives; no Textual."""

from __future__ import annotations

REDRAW_EVERY_S = 0.2   # events redraw the panels at most this often (the first after a quiet spell at once) ...
REDRAW_BUSY_S = 1.0    # ... and this often while the machine is busy (the clock's tick came late lately)
LATE_TICK_S = 0.02     # a tick this late says the loop waits for a core ...
BUSY_HOLD_S = 10.0     # ... and the machine counts as busy for this long after it


class RedrawPace:
    """How often events may redraw the panels. Drawing is most of the console's work, and on a machine whose cores
    the workers fill, each redraw's time is stretched and delays whatever the loop does next (bench/console_lag.py:
    at most every 0.2 s, the loop lagged 1.8x a bare process at p99; every 1 s, 1.35x). So the pace follows the
    once-a-second tick: within BUSY_HOLD_S of a tick later than LATE_TICK_S, REDRAW_BUSY_S; else REDRAW_EVERY_S."""

    def __init__(self) -> None:
        self.every = REDRAW_EVERY_S
        self._last_tick: float | None = None
        self._busy_until = float("-inf")

    def tick(self, now: float, period: float = 1.0) -> float:
        """A tick of the `period` s clock at monotonic `now`: -> the pace from here."""
        if self._last_tick is not None and now - self._last_tick - period > LATE_TICK_S:
            self._busy_until = now + BUSY_HOLD_S
        self._last_tick = now
        self.every = REDRAW_BUSY_S if now < self._busy_until else REDRAW_EVERY_S
        return self.every
