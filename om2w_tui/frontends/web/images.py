"""The site's pictures of a run's screenshots: a small JPEG thumbnail of each (a preview: lossy), and the full image
at its own size (a palette PNG: text stays pixel-sharp, photos lose colour depth; or the original where that is
smaller; none with `--link`, where the page links the run's own file). Screenshots with the same bytes (a site's
start page in every task, a page that did not change) are made once: `first_copies` finds them.

Done in a pool of processes (one per core): decoding and encoding thousands of PNGs is the site's build time."""

from __future__ import annotations

import hashlib
import io
import os
import stat
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.files import SCREENSHOT_LIMIT, read_file, write_new
from om2w_tui.json_input import InputError

THUMB_WIDTH = 320        # at most; a whole-number box reduction of the screenshot (fast, and sharp)
THUMB_SUFFIX = ".t.jpg"
# a preview: quality 50 with optimized Huffman tables is 0.7 of quality 70's bytes in 0.5 ms; WebP at 50 (0.6) takes 3
THUMB_QUALITY = 50
# the full image's palette: 256 keeps the text inside photos (labels, charts) readable, where 16 would not
FULL_COLOURS = 256
PALETTE_STRIDE = 3
FULL_LEVEL = 5           # zlib: 3 makes files a sixth larger; 6 saves 1% for a fifth more time, 9 takes 4x
# below this many pictures a pool costs more to start than it saves
POOL_FROM = 40


@dataclass(frozen=True)
class Job:
    """One screenshot: where it is, where its thumbnail goes, where its full image goes (None: linked)."""

    src: Path
    thumb: Path
    full: Path | None


@dataclass(frozen=True)
class Made:
    """What became of a job: the thumbnail's and the full image's file names ('' where none was made: a file
    Pillow cannot read is copied as it is, with no thumbnail), and the picture's size."""

    thumb: str
    full: str
    width: int = 0
    height: int = 0


def make(job: Job) -> Made:
    """The thumbnail and the full image of one screenshot; never raises for a bad picture."""
    from PIL import Image, UnidentifiedImageError  # in the pool's processes: the report does not import Pillow

    try:   # the run's own file: never through a symlink, never a FIFO or a device, bounded
        raw = read_file(job.src, SCREENSHOT_LIMIT, own=True)
    except InputError:   # gone meanwhile, or no file of the run's: the page says the picture is missing
        return Made("", "")
    try:
        with Image.open(io.BytesIO(raw)) as im:
            im.load()
            rgb = im if im.mode == "RGB" else im.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError):
        if job.full is None:
            return Made("", "")
        write_new(job.full.with_suffix(job.src.suffix), raw)   # copied as it is: the page links it
        return Made("", job.full.with_suffix(job.src.suffix).name)
    w, h = rgb.size
    thumb = rgb.reduce(max(-(-w // THUMB_WIDTH), -(-h // (THUMB_WIDTH * 4))))
    job.thumb.parent.mkdir(parents=True, exist_ok=True)
    write_new(job.thumb, _encoded(thumb, "JPEG", quality=THUMB_QUALITY, optimize=True))
    full = ""
    if job.full is not None:
        # the palette chosen on every third pixel's own colour (not an average: thin text keeps its colour) in
        # half the time of choosing it on all
        sample = rgb.resize((max(1, w // PALETTE_STRIDE), max(1, h // PALETTE_STRIDE)), Image.Resampling.NEAREST)
        palette = sample.quantize(FULL_COLOURS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        png = _encoded(rgb.quantize(palette=palette, dither=Image.Dither.NONE), "PNG", compress_level=FULL_LEVEL)
        smaller = png if len(png) < len(raw) else raw      # the original where it is the smaller
        target = job.full.with_suffix(".png" if smaller is png else job.src.suffix)
        write_new(target, smaller)
        full = target.name
    return Made(job.thumb.name, full, w, h)


def _encoded(picture: Any, fmt: str, **options: Any) -> bytes:
    buf = io.BytesIO()
    picture.save(buf, fmt, **options)
    return buf.getvalue()


def first_copies(paths: Sequence[Path]) -> list[int]:
    """For each path, the index of the first path with the same bytes (its own where none before it has them).
    Only files whose size another shares are read and hashed; a path that is no regular file is its own."""
    sizes: list[int] = []
    for p in paths:
        try:
            st = os.lstat(p)
        except OSError:
            st = None
        sizes.append(st.st_size if st is not None and stat.S_ISREG(st.st_mode) else -1)
    shared = {n for n, k in Counter(sizes).items() if n >= 0 and k > 1}
    first: dict[tuple[int, bytes], int] = {}
    out = []
    for i, (p, n) in enumerate(zip(paths, sizes)):
        if n not in shared:
            out.append(i)
            continue
        try:
            digest = hashlib.blake2b(read_file(p, SCREENSHOT_LIMIT, own=True), digest_size=20).digest()
        except InputError:   # the worker says it is missing
            out.append(i)
            continue
        out.append(first.setdefault((n, digest), i))
    return out


def make_all(jobs: Sequence[Job], workers: int | None = None) -> list[Made]:
    """Every job, in order, in a pool of `workers` processes (default: one per core)."""
    n = workers or os.cpu_count() or 1
    if len(jobs) < POOL_FROM or n <= 1:
        return [make(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=n) as pool:
        return list(pool.map(make, jobs, chunksize=max(1, len(jobs) // (n * 8))))
