"""`report --html DIR` without a browser: the folders it refuses (exit 2, nothing written), a failed build that
leaves no half site, the old site replaced whole, --prices read and refused, and a run's pages' contents (failure
classes, the judge's screenshot scores, labels, cost) from a run folder written by the project's writers."""

from __future__ import annotations

import io
import json
import re
import zlib
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageStat

from om2w_tui.cli.main import main as cli_main
from om2w_tui.evaluation.label_session import LabelSession
from om2w_tui.evaluation.report import summarize
from om2w_tui.frontends.web import images
from om2w_tui.frontends.web import site as web_site
from om2w_tui.frontends.web.prices import PricesError, read_prices

from .helpers import web_png
from .helpers import web_run as make_run


@pytest.fixture
def run(tmp_path) -> Path:
    return make_run(tmp_path / "run")


def report(*args: str) -> int:
    return cli_main(["report", *args])


def test_a_site_of_a_run_shows_the_failure_class_the_judge_per_screenshot_and_the_cost(run, tmp_path, capsys):
    prices = tmp_path / "prices.toml"
    prices.write_text('[m1]\ninput = 1.0\noutput = 10.0\n\n[j1]\ninput = 2\noutput = 4\n')
    site = tmp_path / "site"
    assert report(str(run), "--html", str(site), "--prices", str(prices)) == 0
    index = (site / "index.html").read_text()
    assert 'data-failure="loop">1<' in index
    shown = {k: int(n) for k, n in re.findall(r'data-failure="(\w+)">(\d+)<', index)}
    assert shown == summarize(run).failures == {"loop": 1}      # `report`'s counts: one rule set
    # steps, time and tokens in `report`'s number format: whole numbers without decimals, thousands grouped
    metrics = dict(re.findall(r"<tr><th>(\w+)</th><td>\d+</td>((?:<td>[^<]*</td>){3})</tr>", index))
    assert re.findall(r"<td>(.*?)</td>", metrics["steps"]) == ["2", "2.8", "4"]
    assert re.findall(r"<td>(.*?)</td>", metrics["prompt_tokens"]) == ["1,000", "1,000", "2,000"]
    assert "$0.0040" in index          # (2000 prompt x $1 + 200 completion x $10) / 1e6 for the agent
    assert "$0.0063" in index          # the judge apart: (3000 x $2 + 70 x $4) / 1e6
    # the judge's cost per episode it judged (2) and per success (1), beside its total
    judge_dollars = re.search(r'data-check="judge-dollars"><th>judge dollars</th>(.*?)</tr>', index)
    assert judge_dollars and re.findall(r"<td>(.*?)</td>", judge_dollars[1]) == ["$0.0063", "$0.0031", "$0.0063"]
    task = (site / "r1" / "t" / "ok_1.html").read_text()
    assert "judge's score 5" in task and "Reasoning: shows $12" in task and "1. the price" in task
    looped = (site / "r1" / "t" / "loop_2.html").read_text()
    assert "<b>loop (" in looped and "More -&gt; CLICK" in looped
    made = {p.name: p for p in (site / "r1" / "s" / "ok_1").iterdir()}
    # its last screenshot has loop_2's last one's bytes: made once, in loop_2's folder, shown on both pages
    assert set(made) == {"0.t.jpg", "0.png"}
    assert 'src="../s/loop_2/3.t.jpg"' in task and 'href="../s/loop_2/3.png"' in task
    with Image.open(made["0.t.jpg"]) as im:
        assert im.size[0] == 267 and im.format == "JPEG"       # 800 px reduced by 3: at most 320
    original = run / "ok_1" / "trajectory" / "0_full_screenshot.png"
    assert made["0.png"].stat().st_size <= original.stat().st_size
    assert 'data-failure="loop"' in (site / "r1" / "tasks.html").read_text()


def page_like(photo: bool = False) -> bytes:
    """A screenshot of a page: a header bar, lines of small text in two colours, a noisy grey picture; `photo`: a
    colour photo beside the text too (a shop's product: thousands of colours, every pixel unlike its neighbour)."""
    im = Image.new("RGB", (1280, 1100), (250, 250, 252))
    draw = ImageDraw.Draw(im)
    draw.rectangle((0, 0, 1280, 60), fill=(30, 40, 70))
    for i, y in enumerate(range(80, 1060, 18)):
        draw.text((20 + i % 7 * 5, y), f"line {i} price rating review cart checkout $ {i * 37 % 100}.99 " * 3,
                  fill=(20, 60, 200) if i % 5 == 0 else (30, 30, 30))
    im.paste(Image.effect_noise((300, 220), 40).convert("RGB"), (950, 120))
    if photo:
        im.paste(Image.merge("RGB", [Image.effect_noise((330, 300), s) for s in (30, 50, 70)]), (930, 500))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def test_the_full_image_is_a_palette_png_at_full_size_with_the_text_kept_and_a_third_of_the_bytes(tmp_path):
    src = tmp_path / "0_full_screenshot.png"
    src.write_bytes(page_like())
    made = images.make(images.Job(src, tmp_path / "s" / "0.t.jpg", tmp_path / "s" / "0"))
    assert (made.thumb, made.full, made.lossy) == ("0.t.jpg", "0.png", images.LOSSY_PALETTE)
    with Image.open(src) as a, Image.open(tmp_path / "s" / "0.png") as b:
        assert b.format == "PNG" and b.mode == "P" and b.size == a.size == (1280, 1100)
        # not scaled, not blurred: every pixel of the text's colour within a few levels of the original's
        diff = ImageChops.difference(a.convert("RGB"), b.convert("RGB")).crop((0, 0, 900, 1100)).getextrema()
        assert max(hi for _, hi in diff) <= 24
    assert (tmp_path / "s" / "0.png").stat().st_size <= src.stat().st_size / 3
    with Image.open(tmp_path / "s" / "0.t.jpg") as t:
        assert t.format == "JPEG" and t.size == (320, 275)
    # a preview: under 0.8 of the bytes of the JPEG (quality 70) the site made before
    with Image.open(src) as a:
        jpeg = io.BytesIO()
        a.convert("RGB").reduce(4).save(jpeg, "JPEG", quality=70)
    assert (tmp_path / "s" / "0.t.jpg").stat().st_size < 0.8 * len(jpeg.getvalue())


def test_a_page_of_at_most_256_colours_is_kept_pixel_for_pixel_and_says_nothing_lost(tmp_path):
    """A plain page (text in a few colours, no antialiasing, as a form or a solid error page): its own colours as the
    palette, so the full image is the original's pixels exactly (and smaller): the page says no "not the original"."""
    im = Image.new("RGB", (1280, 800), (255, 255, 255))
    draw = ImageDraw.Draw(im)
    draw.fontmode = "1"   # no antialiasing: 4 colours in all
    for i, y in enumerate(range(20, 780, 16)):
        ink = [(0, 0, 0), (200, 0, 0), (0, 0, 180)][i % 3]
        draw.text((10, y), f"row {i} of a plain form: name, address, card", fill=ink)
    src = tmp_path / "0_full_screenshot.png"
    src.write_bytes(_png(im))
    made = images.make(images.Job(src, tmp_path / "s" / "0.t.jpg", tmp_path / "s" / "0"))
    assert made.full == "0.png" and made.lossy == ""
    with Image.open(tmp_path / "s" / "0.png") as b:
        assert b.mode == "P" and b.convert("RGB").tobytes() == im.tobytes()


def test_the_palette_png_reads_back_as_the_picture_with_a_colour_for_every_index():
    """The full image's own PNG writer (libdeflate's deflate): Pillow reads back the same indices and colours, for a
    palette of 1 to 256 colours, and one whose indices go past its colours (padded: PNG requires a colour each)."""
    grain = Image.effect_noise((37, 23), 80).convert("RGB")
    for n in (1, 2, 16, 256):
        picture = grain.quantize(n)
        with Image.open(io.BytesIO(images.palette_png(picture, images.FULL_LEVEL))) as back:
            back.load()
            assert back.mode == "P" and back.size == picture.size and back.tobytes() == picture.tobytes()
            assert back.convert("RGB").tobytes() == picture.convert("RGB").tobytes()
    past = Image.new("P", (5, 4), 200)
    past.putpalette([1, 2, 3] * 4)
    with Image.open(io.BytesIO(images.palette_png(past, 1))) as back:
        back.load()
        assert back.getextrema() == (200, 200) and len(back.getpalette()) >= 3 * 201


def test_photos_on_a_page_are_stored_at_a_third_of_their_resolution_and_its_text_as_it_was(tmp_path, monkeypatch):
    """The choice by content: a page with a colour photo gets its photo in 3x3 blocks of one colour (a ninth of the
    pixels to store), its text as on a page of text (within a few levels of the original) and says so; a page of
    few colours (text, a grey picture) keeps every pixel."""
    text_only, with_photo = tmp_path / "0.png", tmp_path / "1.png"
    text_only.write_bytes(page_like())
    with_photo.write_bytes(page_like(photo=True))
    made = [images.make(images.Job(src, tmp_path / "s" / f"{i}.t.jpg", tmp_path / "s" / f"{i}"))
            for i, src in enumerate((text_only, with_photo))]
    assert [m.lossy for m in made] == [images.LOSSY_PALETTE, images.LOSSY_PHOTOS]
    with Image.open(text_only) as a0, Image.open(with_photo) as a1, Image.open(tmp_path / "s" / "0.png") as b0, \
            Image.open(tmp_path / "s" / "1.png") as b1:
        full0, full1 = b0.convert("RGB"), b1.convert("RGB")
        for a, b in ((a0, full0), (a1, full1)):
            diff = ImageChops.difference(a.convert("RGB"), b).crop((0, 0, 900, 1100)).getextrema()
            assert max(hi for _, hi in diff) <= 24            # the text: pixel-sharp
        inside = (960, 528, 1230, 774)                       # the photo, its edge left out (on the 3-pixel grid)

        def blocky(im: Image.Image, box: tuple[int, int, int, int] = inside) -> bool:
            part = im.crop(box)
            return part.resize((part.width // 3, part.height // 3), Image.Resampling.NEAREST).resize(
                part.size, Image.Resampling.NEAREST).tobytes() == part.tobytes()

        assert blocky(full1) and not blocky(a1.convert("RGB")) and not blocky(full0, (960, 132, 1236, 330))
        # each block is the photo's average there, in the palette's colours
        was, now = ImageStat.Stat(a1.convert("RGB").crop(inside)).mean, ImageStat.Stat(full1.crop(inside)).mean
        assert all(abs(x - y) < 12 for x, y in zip(was, now))
    # the bytes: under 0.7 of the same page's full image with the photo's every pixel
    monkeypatch.setattr(images, "photo_mask", lambda sample, size: None)
    assert images.make(images.Job(with_photo, tmp_path / "p" / "1.t.jpg", tmp_path / "p" / "1")).lossy == "256 colours"
    assert (tmp_path / "s" / "1.png").stat().st_size < 0.7 * (tmp_path / "p" / "1.png").stat().st_size


def test_a_task_page_says_which_full_images_are_not_the_original_and_with_link_links_the_original(run, tmp_path):
    """A full image that lost something against the run's file (its colours, its photos' resolution) says so under
    its thumbnail; one that is the run's file (smaller than any made), or linked with --link, says nothing."""
    (run / "ok_1" / "trajectory" / "0_full_screenshot.png").write_bytes(page_like(photo=True))
    (run / "loop_2" / "trajectory" / "0_full_screenshot.png").write_bytes(page_like())
    site = web_site.build_site(tmp_path / "site", [summarize(run)])
    ok, looped = ((site / "r1" / "t" / f"{t}.html").read_text() for t in ("ok_1", "loop_2"))
    assert "full image: 256 colours, photos at a third of their resolution, not the original" in ok
    assert looped.count("full image: 256 colours, not the original") == 1     # its solid-colour shots: the originals
    assert 'href="../s/loop_2/1.png"' in looped and "not the original" not in looped.split('id="step-2"')[1]
    linked = web_site.build_site(tmp_path / "linked", [summarize(run)], link=True)
    page = (linked / "r1" / "t" / "ok_1.html").read_text()
    assert "not the original" not in page
    assert 'href="../../../run/ok_1/trajectory/0_full_screenshot.png"' in page


def test_screenshots_with_the_same_bytes_are_made_once_across_tasks_and_runs_and_each_page_shows_them(tmp_path):
    """A site's start page in every task, a copied run: one thumbnail and one full image for the same bytes, every
    page's pictures found where it points; different bytes stay apart."""
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    (b / "loop_2" / "trajectory" / "0_full_screenshot.png").write_bytes(web_png(7))   # the same size, not bytes
    site = web_site.build_site(tmp_path / "site", [summarize(a), summarize(b)])
    shots = sorted(p for p in [*a.rglob("*_full_screenshot.png"), *b.rglob("*_full_screenshot.png")])
    assert len({p.read_bytes() for p in shots}) == 6 and len(shots) == 12
    assert len(list(site.rglob("*.t.jpg"))) == 6
    for page in site.glob("r*/t/*.html"):
        pictures = re.findall(r'(?:src|href)="(\.\./s/[^"]+|\.\./\.\./r\d/s/[^"]+)"', page.read_text())
        assert pictures and all((page.parent / p).resolve().is_file() for p in pictures), page
    run2 = (site / "r2" / "t" / "loop_2.html").read_text()
    assert 'src="../s/loop_2/0.t.jpg"' in run2 and 'src="../../r1/s/loop_2/1.t.jpg"' in run2
    assert images.first_copies([shots[0], tmp_path / "gone.png", shots[0]]) == [0, 1, 0]
    # one size and one start (a page's header and first rows), different further on: apart; the same bytes: one
    start = bytes(range(256)) * 20
    files = [tmp_path / f"{n}.png" for n in range(4)]
    for f, tail in zip(files, (b"a" * 9000, b"a" * 8999 + b"b", b"a" * 9000, b"c" * 9000)):
        f.write_bytes(start + tail)
    assert images.first_copies(files) == [0, 1, 0, 3]


def test_a_v1_runs_task_page_shows_each_steps_url(tmp_path):
    """The default layout (v1) keeps each step's URL too (`action_urls`; before it, the browser-use histories): the
    page shows it beside the step, as for v2."""
    run = make_run(tmp_path / "run", schema="v1")
    site = web_site.build_site(tmp_path / "site", [summarize(run)])
    steps = re.findall(r'<p class="url"><code>(.*?)</code></p>', (site / "r1" / "t" / "loop_2.html").read_text())
    assert steps == ["http://127.0.0.1:9/shop"] * 3


def test_refused_inside_a_run_folder_over_other_files_and_over_a_file(run, tmp_path, capsys):
    for dest in (run / "site", run / "ok_1" / "x", tmp_path):
        assert report(str(run), "--html", str(dest)) == 2
    err = capsys.readouterr().err
    assert "inside the run folder" in err and "not a site written by om2w-tui" in err
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert report(str(run), "--html", str(afile)) == 2
    assert not (run / "site").exists() and not (run / "ok_1" / "x").exists() and afile.read_text() == "x"
    assert report(str(run), "--link") == 2 and "--link and --prices go with --html" in capsys.readouterr().err


def test_bad_prices_exit_2_naming_the_file(run, tmp_path, capsys):
    for text in ("[m1]\ninput = 1\n", "[m1\n", '{"m1": {"input": -1, "output": 2}}', "[]"):
        bad = tmp_path / "p.toml"
        bad.write_text(text)
        with pytest.raises(PricesError, match=str(bad)):
            read_prices(bad)
        assert report(str(run), "--html", str(tmp_path / "site"), "--prices", str(bad)) == 2
        assert str(bad) in capsys.readouterr().err
        assert not (tmp_path / "site").exists()
    # the message names what is wrong in the entry: a value that is not a number, a key missing, a key too many
    for text, said in (('[m1]\ninput = "x"\n', "['m1'] input = 'x': it must be a number >= 0"),
                       ('[m1]\ninput = 1\noutput = true\n', "['m1'] output = True: it must be a number"),
                       ("[m1]\noutput = 1\n", "'m1' has no `input`"),
                       ("[m1]\ninput = 1\noutput = 1\nextra = 1\n", "'m1' has `extra`, which is not a price")):
        bad.write_text(text)
        with pytest.raises(PricesError) as refused:
            read_prices(bad)
        assert str(refused.value).startswith(f"--prices {bad}: ") and said in str(refused.value)
    good = tmp_path / "p.json"
    good.write_text('{"m1": {"input": 0.15, "output": 0.6}}')
    assert read_prices(good)["m1"].cost(1e6, 1e6) == pytest.approx(0.75)


def test_a_failed_build_leaves_the_old_site_and_no_half_one(run, tmp_path, monkeypatch):
    site = tmp_path / "site"
    assert report(str(run), "--html", str(site)) == 0
    before = sorted(str(p.relative_to(site)) for p in site.rglob("*"))

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(web_site, "_render", broken)
    with pytest.raises(OSError):
        web_site.build_site(site, [summarize(run)])
    assert sorted(str(p.relative_to(site)) for p in site.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "site"]   # no building folder left beside it
    monkeypatch.undo()
    (run / "ok_1" / "result.json").unlink()   # the site of the run as it is now replaces the old whole
    assert report(str(run), "--html", str(site)) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "site"]


def test_a_screenshot_pillow_cannot_read_is_copied_and_linked_not_shown(tmp_path):
    out = make_run(tmp_path / "run")
    (out / "ok_1" / "trajectory" / "0_full_screenshot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    site = web_site.build_site(tmp_path / "site", [summarize(out)])
    page = (site / "r1" / "t" / "ok_1.html").read_text()
    assert "no thumbnail: not a picture Pillow reads" in page
    assert (site / "r1" / "s" / "ok_1" / "0.png").read_bytes().startswith(b"\x89PNG")


def _png(picture: Image.Image, **options) -> bytes:
    buf = io.BytesIO()
    picture.save(buf, "PNG", **options)
    return buf.getvalue()


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_a_browsers_png_is_decoded_by_libspng_to_the_pixels_pillow_gives(mode):
    """The fast decoder takes 8-bit RGB(A) PNGs, as Chromium writes them, with Paeth-filtered rows (optimize)."""
    grain = Image.effect_noise((64, 48), 60).convert("RGB")
    picture = Image.merge("RGBA", (*grain.split(), grain.getchannel(0))) if mode == "RGBA" else grain
    for raw in (_png(picture), _png(picture, optimize=True)):
        fast = images._fast_rgb(raw)
        assert fast is not None and fast.mode == "RGB"
        assert fast.tobytes() == Image.open(io.BytesIO(raw)).convert("RGB").tobytes()


def test_other_pngs_and_damaged_ones_are_left_to_pillow():
    """Grey, palette, 16-bit and interlaced pictures are Pillow's; so is a PNG one byte of which is damaged anywhere
    (libspng, as pyspng sets it, would decode it into a picture), and one cut short."""
    grain = Image.effect_noise((20, 16), 60)
    for other in (grain, grain.convert("P"), grain.convert("I;16")):
        assert images._fast_rgb(_png(other)) is None
    raw = _png(grain.convert("RGB"))
    assert images._fast_rgb(raw) is not None
    ihdr = raw[12:28] + b"\x01"       # the same header saying Adam7 interlacing (Pillow writes none), CRC mended
    assert images._fast_rgb(raw[:12] + ihdr + zlib.crc32(ihdr).to_bytes(4, "big") + raw[33:]) is None
    for at in range(8, len(raw)):
        damaged = bytearray(raw)
        damaged[at] ^= 0x55
        assert images._fast_rgb(bytes(damaged)) is None, at
    assert images._fast_rgb(raw[:-12]) is None


def test_slugs_are_safe_names_and_unique():
    taken: set[str] = set()
    assert web_site.slug("a/b", taken) == "a_b"
    assert web_site.slug("a:b", taken) == "a_b-2"
    assert web_site.slug("../..", taken) == "task"


def test_several_runs_get_a_comparison_and_each_task_side_by_side_with_the_first_different_step(tmp_path):
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    # run b's looping task clicks something else at its second step
    result = json.loads((b / "loop_2" / "result.json").read_text())
    result["action_history"][1]["action"] = "SCROLL DOWN"
    (b / "loop_2" / "result.json").write_text(json.dumps(result))
    assert report(str(a), str(b), "--html", str(tmp_path / "site")) == 0
    site = tmp_path / "site"
    pair = (site / "pair" / "loop_2.html").read_text()
    assert '<tr id="row-2" class="diverge">' in pair and "go different ways at" in pair
    assert "the same actions throughout" in (site / "pair" / "ok_1.html").read_text()
    compare = (site / "compare.html").read_text()
    # the comparison lists every task's first different step, linked to that row of the side by side
    assert '<td data-first="2"><a href="pair/loop_2.html#row-2">different from step 2</a>' in compare
    assert '<td data-first=""><a href="pair/ok_1.html">the same actions throughout</a>' in compare
    assert 'href="../../pair/ok_1.html"' in (site / "r2" / "t" / "ok_1.html").read_text()


def test_one_task_page_alone_links_no_page_it_lacks_and_refuses_a_task_not_there(run, tmp_path):
    """`build_task_page` (the console's `o`): the task's page, its thumbnails and the assets; no index, no list."""
    s = summarize(run)
    page = web_site.build_task_page(tmp_path / "pages" / "loop_2", s, "loop_2")
    body = page.read_text()
    assert page.name == "loop_2.html" and "More -&gt; CLICK" in body and "<b>loop (" in body
    assert "tasks.html" not in body and "index.html" not in body
    assert not (tmp_path / "pages" / "loop_2" / "index.html").exists()
    with pytest.raises(web_site.SiteError, match="nope: not a task of"):
        web_site.build_task_page(tmp_path / "pages" / "nope", s, "nope")


def test_an_older_writers_row_reads_on_the_site_and_in_the_label_session_as_in_the_report(run, tmp_path):
    """A row of another writer (a fault kind this version lacks, no counts, a task text of its own) is read as an
    `EpisodeRecord` everywhere: its kind kept in its words, the numbers it lacks shown `-` as `report` shows them."""
    old = {"task_id": "old_3", "status": "error", "error": "browser gone", "error_kind": "gremlin",
           "website": "http://127.0.0.1:9/", "task": "find the old price", "agent_done": 1, "finished_at": 5}
    with (run / "results.jsonl").open("a") as f:
        f.write(json.dumps(old) + "\n")
    s = summarize(run)
    row = s.per_task["old_3"]
    assert row.steps is None and row.duration_s is None and row.prompt_tokens is None   # the report's read
    body = web_site.build_task_page(tmp_path / "pages" / "old_3", s, "old_3").read_text()
    assert "<code>browser gone</code> (gremlin)" in body            # the unknown kind in its writer's words
    assert "<td>- · - · -</td>" in body and "<td>- s</td>" in body  # steps, actions, screenshots; duration
    assert "<td>- prompt, - completion</td>" in body and "find the old price" in body
    assert "<td>true</td>" in body                                   # agent_done 1: read as the record reads it
    info = LabelSession(run, "ann").info["old_3"]
    assert info.record is not None and info.record.error_kind_as_read == "gremlin"
    assert not info.record.recorded("steps") and info.website == "http://127.0.0.1:9/"


def test_a_task_with_no_answer_says_why_on_its_page_and_in_the_list_never_the_last_actions_output(run, tmp_path):
    """The web report's answer follows every view's rule (frontends/answer.py): a killed episode whose older record
    kept its last action's output shows `no answer (killed)`."""
    leftover = 'Clicked button "Apply filters"'
    old = {"task_id": "killed_4", "status": "killed", "error": "killed by user", "answer": leftover,
           "website": "http://127.0.0.1:9/", "agent_done": False, "finished_at": 6}
    with (run / "results.jsonl").open("a") as f:
        f.write(json.dumps(old) + "\n")
    site = tmp_path / "site"
    assert report(str(run), "--html", str(site)) == 0
    page = (site / "r1" / "t" / "killed_4.html").read_text()
    listed = (site / "r1" / "tasks.html").read_text()
    assert '<td class="answer muted">no answer (killed)</td>' in page and "Apply filters" not in page
    assert "no answer (killed)" in listed and "Apply filters" not in listed
