"""Python's garbage collector while a console screen runs: its pauses stop the event loop, and they were the
screens' worst stalls (measured with `gc.callbacks` in bench/scale.py and bench/label_screen.py).

Two settings, set when an app mounts and put back when it unmounts:
- a young generation of 20,000 objects (Python's is 700): a frame's short-lived render objects die young instead
  of being promoted into full collections (at 700, a console of 1,000 slots ran a full collection every ~3 s that
  took 0.2-0.8 s over its ~350,000 objects);
- once the first screen is drawn, what lives as long as the app (Textual, the DOM, the styles, the modules) is moved
  out of the collector's reach (`gc.freeze`): a full collection then walks only what came after (the label screen's
  full collection went from 77-117 ms to 42 ms). Frozen objects are still freed when nothing refers to them; only a
  cycle among them that dies later is never collected, and the objects of a first frame that do so are a few
  thousand, once."""

from __future__ import annotations

import gc

GC_THRESHOLDS = (20_000, 20, 10)


class Collector:
    """The collector's settings for one app's life: `start` on mount, `freeze` once drawn, `stop` on unmount."""

    def __init__(self) -> None:
        self._before: tuple[int, int, int] | None = None
        self._frozen = False

    def start(self) -> None:
        if self._before is None:
            self._before = gc.get_threshold()
            gc.set_threshold(*GC_THRESHOLDS)

    def freeze(self) -> None:
        if not self._frozen:
            gc.collect()
            gc.freeze()
            self._frozen = True

    def stop(self) -> None:
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
        if self._before is not None:
            gc.set_threshold(*self._before)
            self._before = None
