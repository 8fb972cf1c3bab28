"""The site's pictures of a run's screenshots: a small JPEG thumbnail of each, and the full image (a JPEG of the
same size, or the original where that is smaller; none with `--link`, where the page links the run's own file).

Done in a pool of processes (one per core): decoding and encoding thousands of PNGs is the site's build time."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

THUMB_WIDTH = 360
THUMB_QUALITY = 70
FULL_QUALITY = 75
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

    try:
        with Image.open(job.src) as im:
            im.load()
            rgb = im.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError):
        full = ""
        if job.full is not None:
            try:
                shutil.copyfile(job.src, job.full.with_suffix(job.src.suffix))
                full = job.full.with_suffix(job.src.suffix).name
            except OSError:   # gone meanwhile: the page says the picture is missing
                full = ""
        return Made("", full)
    w, h = rgb.size
    thumb = rgb.copy()
    thumb.thumbnail((THUMB_WIDTH, max(1, THUMB_WIDTH * 4)), Image.Resampling.BILINEAR, reducing_gap=2.0)
    job.thumb.parent.mkdir(parents=True, exist_ok=True)
    thumb.save(job.thumb, "JPEG", quality=THUMB_QUALITY, optimize=False)
    full = ""
    if job.full is not None:
        target = job.full.with_suffix(".jpg")
        rgb.save(target, "JPEG", quality=FULL_QUALITY)
        if target.stat().st_size >= job.src.stat().st_size:   # the original is smaller: keep it
            target.unlink()
            target = job.full.with_suffix(job.src.suffix)
            shutil.copyfile(job.src, target)
        full = target.name
    return Made(job.thumb.name, full, w, h)


def make_all(jobs: Sequence[Job], workers: int | None = None) -> list[Made]:
    """Every job, in order, in a pool of `workers` processes (default: one per core)."""
    n = workers or os.cpu_count() or 1
    if len(jobs) < POOL_FROM or n <= 1:
        return [make(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=n) as pool:
        return list(pool.map(make, jobs, chunksize=max(1, len(jobs) // (n * 8))))
