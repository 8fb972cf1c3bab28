"""The site's pictures of a run's screenshots: a small JPEG thumbnail of each (a preview: lossy), and the full image
at its own size (a palette PNG: a page of at most 256 colours kept pixel for pixel, its own colours the palette;
otherwise 256 colours, text pixel-sharp, the photos on a page, found by content (`photo_mask`), at a third of their
resolution; or the original where that is smaller; none with `--link`, where the page links the run's own file).
`Made.lossy` says what a full image lost, for its page to say. Screenshots with the same bytes (a site's start page
in every task, a page that did not change) are made once: `first_copies` finds them.

Done in a pool of processes (one per core): decoding and encoding thousands of PNGs is the site's build time.
Browsers' PNGs are decoded by libspng (`pyspng`), the full images' rows deflated by libdeflate (`deflate`): 0.7 and
0.6 of Pillow's time for the same."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
import zlib
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.files import SCREENSHOT_LIMIT, read_file, read_start, write_new
from om2w_tui.json_input import InputError

THUMB_WIDTH = 320        # at most; a whole-number box reduction of the screenshot (fast, and sharp)
THUMB_SUFFIX = ".t.jpg"
# a preview: quality 50 with optimized Huffman tables is 0.7 of quality 70's bytes in 0.5 ms; WebP at 50 (0.6) takes 3
THUMB_QUALITY = 50
# the full image's palette: 256 keeps the text inside photos (labels, charts) readable, where 16 would not
FULL_COLOURS = 256
PALETTE_STRIDE = 3
# libdeflate's level for the full image's rows (150 of bench/html_report.py's pictures, against Pillow's zlib 3 at
# 9.0 ms and 0.324 of the screenshots' bytes): 4 takes 5.8 ms for 0.295; 3 6.7 ms for 0.299; 6 8.3 ms for 0.288
FULL_LEVEL = 4
# photos on a page (a shop's products, an article's picture) at a third of their resolution in the full image, each
# 3x3 block of pixels their average: the site's bytes 0.24 of the screenshots' where 0.32; text keeps every pixel
PHOTO_REDUCTION = 3
FEW_COLOURS = 2048       # a sample of fewer colours is a page of text, forms, tables: no photos (a photo has 10,000s)
PHOTO_DENSITY = 100      # of 255: the share of a cell's pixels that differ from their neighbour, for a photo
_CELL = 4                # sample pixels a side of a cell (12 of the picture's)
_DIFFERS = [0] + [255] * 255
_DENSE = [0] * (PHOTO_DENSITY + 1) + [255] * (255 - PHOTO_DENSITY)
# what a page says of a full image that is not the original (the original: `--link`, or the run's folder)
LOSSY_PALETTE = "256 colours"
LOSSY_PHOTOS = "256 colours, photos at a third of their resolution"
# below this many pictures a pool costs more to start than it saves
POOL_FROM = 40
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HEAD = 4096              # bytes of a file compared before the whole is hashed
POOL_CHUNK = 4           # pictures a worker takes at a time: ~0.2 s of work, the hand-over's cost negligible


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
    lossy: str = ""     # what the full image lost against the original ('' where it is the original, or none)


def make(job: Job) -> Made:
    """The thumbnail and the full image of one screenshot; never raises for a bad picture."""
    from PIL import Image, UnidentifiedImageError  # in the pool's processes: the report does not import Pillow

    try:   # the run's own file: never through a symlink, never a FIFO or a device, bounded
        raw = read_file(job.src, SCREENSHOT_LIMIT, own=True)
    except InputError:   # gone meanwhile, or no file of the run's: the page says the picture is missing
        return Made("", "")
    try:
        rgb = _fast_rgb(raw)
        if rgb is None:
            with Image.open(io.BytesIO(raw)) as im:
                im.load()
                rgb = im if im.mode == "RGB" else im.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError):
        if job.full is None:
            return Made("", "")
        write_new(job.full.with_suffix(job.src.suffix), raw)   # copied as it is: the page links it
        return Made("", job.full.with_suffix(job.src.suffix).name)
    w, h = rgb.size
    # the palette's sample: every third pixel's own colour (not an average: thin text keeps its colour)
    sample = rgb.resize((max(1, w // PALETTE_STRIDE), max(1, h // PALETTE_STRIDE)), Image.Resampling.NEAREST)
    photos = photo_mask(sample, (w, h)) if job.full is not None else None
    thumb = rgb.reduce(max(-(-w // THUMB_WIDTH), -(-h // (THUMB_WIDTH * 4))))
    job.thumb.parent.mkdir(parents=True, exist_ok=True)
    write_new(job.thumb, _encoded(thumb, "JPEG", quality=THUMB_QUALITY, optimize=True))
    if job.full is None:
        return Made(job.thumb.name, "", w, h)
    exact = rgb.getcolors(FULL_COLOURS)   # at most 256 colours (a plain page): its own palette, every pixel kept
    if exact is not None:
        palette = Image.new("P", (1, 1))
        palette.putpalette([v for _, colour in exact for v in colour])
    else:
        palette = sample.quantize(FULL_COLOURS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    full = rgb.quantize(palette=palette, dither=Image.Dither.NONE)
    if photos is not None:
        # each photo's 3x3 pixels as one (their average): a ninth of the pixels to store, rows thrice over cost little
        small = rgb.reduce(PHOTO_REDUCTION).quantize(palette=palette, dither=Image.Dither.NONE)
        small = small.resize((small.width * PHOTO_REDUCTION, small.height * PHOTO_REDUCTION),
                             Image.Resampling.NEAREST)
        full.paste(small.crop((0, 0, w, h)), (0, 0), photos)
    png = palette_png(full, FULL_LEVEL)
    if len(png) >= len(raw):       # the original where it is the smaller
        target = job.full.with_suffix(job.src.suffix)
        write_new(target, raw)
        return Made(job.thumb.name, target.name, w, h)
    target = job.full.with_suffix(".png")
    write_new(target, png)
    lost = LOSSY_PHOTOS if photos is not None else "" if exact is not None else LOSSY_PALETTE
    return Made(job.thumb.name, target.name, w, h, lost)


def _fast_rgb(raw: bytes) -> Any:
    """The picture decoded by libspng (pyspng) where it is what browsers write (an 8-bit RGB or RGBA PNG, not
    interlaced) and not larger than Pillow opens: the same pixels as Pillow's (alpha dropped, as `convert("RGB")`
    does) in 0.7 of its time (Pillow undoes the Paeth filter Chromium uses slowly). None: Pillow decodes it (another
    kind of picture, a damaged one, whose error Pillow names, or no pyspng)."""
    from PIL import Image  # in the pool's processes, as make's

    if raw[:8] != PNG_SIGNATURE or raw[12:16] != b"IHDR" or len(raw) < 33:
        return None
    width, height = struct.unpack(">II", raw[16:24])
    depth, colour, interlace = raw[24], raw[25], raw[28]
    if depth != 8 or colour not in (2, 6) or interlace or not 0 < width * height <= (Image.MAX_IMAGE_PIXELS or 0):
        return None
    if not _chunks_whole(raw):   # libspng as pyspng sets it decodes damaged data into a picture: Pillow refuses it
        return None
    try:
        import pyspng  # only here: numpy and libspng load in the pool's processes, never in the report's
        pixels = pyspng.load(raw, format="RGB")
    except Exception:   # noqa: BLE001 -- no pyspng, or data libspng refuses: Pillow decodes it, or names the fault
        return None
    return Image.fromarray(pixels, "RGB")


def _chunks_whole(raw: bytes) -> bool:
    """Every chunk of the PNG whole (its CRC holds) and the last one IEND."""
    at = 8
    while at + 12 <= len(raw):
        n, kind = struct.unpack(">I4s", raw[at:at + 8])
        end = at + 8 + n
        if end + 4 > len(raw) or zlib.crc32(raw[at + 4:end]) != struct.unpack(">I", raw[end:end + 4])[0]:
            return False
        if kind == b"IEND":
            return True
        at = end + 4
    return False


def photo_mask(sample: Any, size: tuple[int, int]) -> Any:
    """Where the picture of `size` shows photos, judged on its sample (every third pixel): a mask of `size` (255 in
    the photos), or None where it shows none. A page of few colours (text, forms, tables: under FEW_COLOURS in the
    sample) has none. Otherwise a photo is where nearly every pixel differs from its neighbour (a texture; text is
    strokes on a flat ground): cells of 12x12 pixels where over PHOTO_DENSITY of them do, and whose eight
    neighbours do too (so the cells at a photo's edge, and text beside it, stay as they are)."""
    from PIL import Image, ImageChops, ImageFilter  # in the pool's processes, as make's

    if sample.width < 8 or sample.height < 8 or sample.getcolors(FEW_COLOURS) is not None:
        return None
    grey = sample.convert("L")
    moved = ImageChops.difference(grey.crop((1, 0, grey.width, grey.height)),
                                  grey.crop((0, 0, grey.width - 1, grey.height))).point(_DIFFERS)
    cells = moved.filter(ImageFilter.BoxBlur(2)).reduce(_CELL).point(_DENSE).filter(ImageFilter.MinFilter(3))
    if cells.getbbox() is None:
        return None
    side = _CELL * PALETTE_STRIDE
    return cells.resize((cells.width * side, cells.height * side), Image.Resampling.NEAREST).crop((0, 0, *size))


def palette_png(picture: Any, level: int) -> bytes:
    """A palette picture (Pillow's mode P) as a PNG: its rows unfiltered, as Pillow writes a palette picture, but
    deflated by libdeflate (the `deflate` package) where Pillow has zlib, in 0.6 of the time and 0.91 of the bytes."""
    import deflate  # in the pool's processes, as Pillow

    width, height = picture.size
    indices = picture.tobytes()
    rows = b"".join(b"\0" + indices[y * width:(y + 1) * width] for y in range(height))   # filter 0 (none) a row
    used = int(picture.getextrema()[1]) + 1     # every index written has its colour (PNG requires it)
    colours = bytes(picture.getpalette("RGB") or b"")[:768].ljust(3 * used, b"\0")
    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)   # 8 bits an index, colour type 3: a palette
    return b"".join((PNG_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"PLTE", colours),
                     _chunk(b"IDAT", deflate.zlib_compress(rows, level)), _chunk(b"IEND", b"")))


def _chunk(kind: bytes, data: bytes | bytearray) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _encoded(picture: Any, fmt: str, **options: Any) -> bytes:
    buf = io.BytesIO()
    picture.save(buf, fmt, **options)
    return buf.getvalue()


def first_copies(paths: Sequence[Path]) -> list[int]:
    """For each path, the index of the first path with the same bytes (its own where none before it has them).
    Only files whose size another shares have their first HEAD bytes read, and only those whose start another
    shares too are read whole and hashed (a run's screenshots of one size differ near the start, where a PNG's
    header and first rows are: reading them all was 0.8 ms a file); a path that is no regular file is its own."""
    sizes: list[int] = []
    for p in paths:
        try:
            st = os.lstat(p)
        except OSError:
            st = None
        sizes.append(st.st_size if st is not None and stat.S_ISREG(st.st_mode) else -1)
    shared = {n for n, k in Counter(sizes).items() if n >= 0 and k > 1}
    heads: dict[int, bytes] = {}
    for i, (p, n) in enumerate(zip(paths, sizes)):
        if n in shared:
            try:
                heads[i] = read_start(p, HEAD, own=True)
            except InputError:   # the worker says it is missing
                pass
    alike = {k for k, c in Counter((sizes[i], h) for i, h in heads.items()).items() if c > 1}
    first: dict[tuple[int, bytes], int] = {}
    out = []
    for i, p in enumerate(paths):
        if i not in heads or (sizes[i], heads[i]) not in alike:
            out.append(i)
            continue
        try:
            digest = hashlib.sha256(read_file(p, SCREENSHOT_LIMIT, own=True)).digest()   # SHA-NI: 2.5x blake2b
        except InputError:
            out.append(i)
            continue
        out.append(first.setdefault((sizes[i], digest), i))
    return out


def make_all(jobs: Sequence[Job], workers: int | None = None) -> list[Made]:
    """Every job, in order, in a pool of `workers` processes (default: one per core)."""
    n = workers or os.cpu_count() or 1
    if len(jobs) < POOL_FROM or n <= 1:
        return [make(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=n) as pool:
        # small chunks: no worker left alone with a long last chunk (on 2 cores, a 187-picture one was ~8 s alone)
        return list(pool.map(make, jobs, chunksize=POOL_CHUNK))
