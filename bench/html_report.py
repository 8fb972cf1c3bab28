"""`om2w-tui report RUN --html DIR` on a synthetic 300-task run with 10 screenshots a task: the site's build time,
its bytes against the run's screenshot bytes, and how soon its pages are interactive in headless Chromium.

    .venv/bin/python bench/html_report.py [--tasks 300] [--shots 10] [--pages 60] [--viewport 1280x1100]
                                          [--run DIR] [--no-link] [--by-kind]

The screenshots are made as a run's are: pages rendered and captured by headless Chromium (its text rendering, its
PNG encoder, as browser-use's CDP screenshots), at browser-use's 1280x1100 (this project's runs use 1280x800). The
pages mix what web agents meet: a shop's grid of product photos (2 in 5), an article under a wide photo (1 in 5),
text with a table and links (2 in 5); the photos are JPEGs of noise summed over octaves (a natural image's falloff
and texture, not the uniform noise that no encoder compresses). 210-750 KB a screenshot, 0.45 MB on average (the
offline suite's text pages are 35-170 KB at 1280x800). `--pages` of them rendered, then written to every task's
trajectory, each file in bytes of its own (a tEXt chunk) as a live site's screenshots are, so the build decodes and
encodes every one. Records: every status, a third of
the tasks solved (the reference answers), some looping. Goals (issue 29): the build <= 60 s on 2 cores, the site
<= 1/4 of the screenshots' bytes with --link off, the index interactive <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from _common import verdict

REPO = Path(__file__).resolve().parents[1]
GOAL_BUILD_S, GOAL_RATIO, GOAL_INTERACTIVE_S = 60.0, 0.25, 1.0
WORDS = ("price rating review cart checkout shipping order account search filter category battery headphones "
         "delivery return warranty compare size colour stock").split()


def photo(rnd: random.Random, w: int, h: int) -> str:
    """A photo-like JPEG (data: URI): noise summed over octaves (a natural image's 1/f falloff, its fine texture),
    coloured by a random three-colour ramp and saved as the web serves photos (JPEG, quality 82)."""
    import base64  # noqa: I001  (Pillow only where pictures are drawn: the script's --help needs none)
    import io

    from PIL import Image, ImageOps

    acc = None
    for k in range(7):
        layer = Image.effect_noise((2 ** (k + 1), 2 ** (k + 1) * h // w + 1), 80).resize((w, h),
                                                                                         Image.Resampling.BICUBIC)
        acc = layer if acc is None else Image.blend(acc, layer, 0.5 ** (k * 0.6 + 0.8))
    acc = ImageOps.autocontrast(Image.blend(acc, Image.effect_noise((w, h), 20), 0.08), cutoff=1)
    colour = [tuple(rnd.randint(0, 255) for _ in range(3)) for _ in range(3)]
    buf = io.BytesIO()
    ImageOps.colorize(acc, black=colour[0], white=colour[1], mid=colour[2]).save(buf, "JPEG", quality=82)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def page_html(seed: int) -> str:
    """One of three kinds of page, as a web agent meets them: a shop's grid of eight product photos with a filter
    column (2 in 5), an article under a wide photo (1 in 5), text with a table and links (2 in 5)."""
    rnd = random.Random(seed)

    def words(a: int, b: int) -> str:
        return " ".join(rnd.choices(WORDS, k=rnd.randint(a, b)))

    head = (f"<header>Northwind Market &nbsp; <input size=60 value='{words(2, 4)}'> <button>Search</button></header>"
            "<nav>" + "".join(f"<a href=#>{w}</a>" for w in rnd.sample(WORDS, 10)) + "</nav>")
    kind = ("shop", "shop", "article", "text", "text")[seed % 5]
    if kind == "shop":
        side = "".join(f"<div><input type=checkbox> {words(1, 3)} ({rnd.randint(1, 999)})</div>" for _ in range(24))
        cards = "".join(f"<div class=card><img src='{photo(rnd, 300, 240)}'><div>{words(5, 12)}</div><div class=price>"
                        f"${rnd.randint(5, 900)}.{rnd.randint(0, 99):02d}</div><div>★★★★☆ {rnd.randint(1, 9999)}"
                        "</div><button>Add to cart</button></div>" for _ in range(8))
        body = f"<aside>{side}</aside><div><h1>{words(2, 5)}</h1><div class=grid>{cards}</div></div>"
    elif kind == "article":
        body = (f"<h1>{words(4, 9)}</h1><img class=hero src='{photo(rnd, 1200, 340)}'>"
                + "".join(f"<p>{words(40, 90)}</p>" for _ in range(8)))
    else:
        rows = "".join("<tr>" + "".join(f"<td>{words(1, 4)}</td>" for _ in range(5)) + "</tr>" for _ in range(14))
        body = (f"<h1>{words(3, 7)}</h1>" + "".join(f"<p>{words(20, 70)} <a href=#>{words(1, 3)}</a> {words(5, 30)}"
                                                     "</p>" for _ in range(6)) + f"<table>{rows}</table>")
    return f"<!doctype html><html><head><style>{PAGE_CSS}</style></head><body>{head}<main>{body}</main></body></html>"


PAGE_CSS = ("body{margin:0;font:14px/1.45 sans-serif;color:#222;background:#fafafc}header{background:#1e2846;"
            "color:#fff;"
            "padding:14px 24px;font-size:20px}nav a{margin-right:14px;color:#1a4fc4}main{padding:16px 24px}"
            ".grid{display:grid;grid-template-columns:repeat(4,1fr);gap:18px}.card{background:#fff;border:1px solid "
            "#ddd;border-radius:6px;padding:10px}.card img{width:100%;height:190px;object-fit:cover}.price{color:"
            "#b12704;font-weight:bold;font-size:17px}button{background:#f7ca00;border:1px solid #c89f00;"
            "border-radius:14px;padding:5px 14px}aside{float:left;width:200px;margin-right:20px}.hero{width:100%;"
            "height:340px;object-fit:cover}table{border-collapse:collapse}td{border:1px solid #ccc;padding:4px 8px}")


def screenshots(n: int, viewport: tuple[int, int]) -> list[bytes]:
    """`n` pages rendered and captured by headless Chromium: its PNG encoder and text rendering, as browser-use's
    screenshots (CDP Page.captureScreenshot, format png) are."""
    from playwright.sync_api import sync_playwright  # only where pictures are made

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            shots = []
            for i in range(n):
                page.set_content(page_html(i))
                shots.append(page.screenshot(type="png"))
        finally:
            browser.close()
    return shots


def distinct(png: bytes, name: str) -> bytes:
    """The same picture in bytes of its own (a tEXt chunk naming its slot after the header): no two files of the run
    are equal, as a live site's screenshots are not, so the build cannot store one for several."""
    data = b"Comment\0" + name.encode()
    chunk = len(data).to_bytes(4, "big") + b"tEXt" + data + zlib.crc32(b"tEXt" + data).to_bytes(4, "big")
    return png[:33] + chunk + png[33:]


def make_run(out: Path, tasks: int, shots: int, pages: int, viewport: tuple[int, int]) -> int:
    """The run folder; -> its screenshots' bytes."""
    pictures = screenshots(pages, viewport)
    rnd = random.Random(7)
    total = 0
    out.mkdir(parents=True)
    with (out / "results.jsonl").open("w") as log:
        for t in range(tasks):
            tid = f"task_{t:04d}"
            traj = out / tid / "trajectory"
            traj.mkdir(parents=True)
            for i in range(shots):
                data = distinct(pictures[(t * shots + i) % pages], f"{t}/{i}")
                (traj / f"{i}_full_screenshot.png").write_bytes(data)
                total += len(data)
            loop = t % 11 == 0
            history = [(["<button id=\"more\"> More -> CLICK"] if loop else [f"<a id=\"l{i}\"> link {i} -> CLICK"])
                       for i in range(shots)]
            result = {"task_id": tid, "task": f"Find the {rnd.choice(WORDS)} of item {t}",
                      "final_result_response": "" if loop else f"It is {rnd.randint(1, 99)}.",
                      "action_history": [a for step in history for a in step],
                      "thoughts": [f"step {i}" for i in range(shots)]}
            (out / tid / "result.json").write_text(json.dumps(result))
            status = rnd.choice(["done"] * 8 + ["timeout", "error", "blocked"])
            log.write(json.dumps({"task_id": tid, "status": status, "website": "https://shop.example.com/",
                                  "level": rnd.choice(["easy", "medium", "hard"]), "model": "m", "arm": "base",
                                  "steps": shots, "answer": result["final_result_response"],
                                  "agent_done": not loop, "prompt_tokens": rnd.randint(10000, 90000),
                                  "completion_tokens": rnd.randint(300, 3000), "duration_s": rnd.uniform(20, 400),
                                  "error": "boom" if status == "error" else None,
                                  "error_kind": "agent" if status == "error" else None,
                                  "started_at": 1.7e9 + t, "finished_at": 1.7e9 + t + 60,
                                  "correct": t % 3 == 0 and not loop}) + "\n")
    (out / "run.json").write_text(json.dumps({"config": {"max_steps": 30, "model": "m", "arm": "base"}}))
    return total


def interactive_s(page_url: str) -> float:
    """Seconds from navigation to domInteractive and the page's script run (load), in headless Chromium."""
    from playwright.sync_api import sync_playwright  # only for the measurement

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(page_url, wait_until="load")
            ms = page.evaluate("(() => { const t = performance.getEntriesByType('navigation')[0];"
                               " return t.domContentLoadedEventEnd; })()")
        finally:
            browser.close()
    return float(ms) / 1000.0


def by_kind(run: Path, site: Path, pages: int) -> str:
    """The full images' bytes against the screenshots' by the kind of page shown (as `make_run` lays them out: the
    screenshot at step i of task t is page (t x shots + i) mod pages, of kind page mod 5)."""
    sums: dict[str, list[int]] = {}
    for shot in run.glob("*/trajectory/*_full_screenshot.png"):
        tid, step = shot.parent.parent.name, int(shot.name.split("_")[0])
        shots = len(list(shot.parent.glob("*_full_screenshot.png")))
        kind = ("shop", "shop", "article", "text", "text")[(int(tid.split("_")[1]) * shots + step) % pages % 5]
        made = [p for p in (site / "r1" / "s" / tid).glob(f"{step}.*") if ".t." not in p.name]
        acc = sums.setdefault(kind, [0, 0])
        acc[0] += sum(p.stat().st_size for p in made)
        acc[1] += shot.stat().st_size
    return ", ".join(f"{k} pages {a / b:.3f}" for k, (a, b) in sorted(sums.items()))


def size_of(folder: Path, *, thumbs_only: bool = False) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and (not thumbs_only or ".t." in p.name))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--pages", type=int, default=60, help="distinct pages rendered (each file still its own bytes)")
    ap.add_argument("--viewport", default="1280x1100", help="WIDTHxHEIGHT of the screenshots")
    ap.add_argument("--run", type=Path, help="keep the synthetic run here (made if missing, else reused as it is)")
    ap.add_argument("--no-link", action="store_true", help="skip the --link build and the pages' timing")
    ap.add_argument("--by-kind", action="store_true", help="the full images' ratio for each kind of page too")
    args = ap.parse_args()
    width, _, height = args.viewport.partition("x")
    tmp = Path(tempfile.mkdtemp(prefix="om2w-html-bench-"))
    try:
        run = args.run or tmp / "run"
        if not run.exists():
            make_run(run, args.tasks, args.shots, args.pages, (int(width), int(height)))
        shot_bytes = sum(p.stat().st_size for p in run.glob("*/trajectory/*.png"))
        for link in (False,) if args.no_link else (False, True):
            site = tmp / ("site-link" if link else "site")
            t0, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run([sys.executable, "-m", "om2w_tui", "report", str(run), "--html", str(site),
                                   *(["--link"] if link else [])], cwd=REPO, capture_output=True, text=True)
            took = time.monotonic() - t0
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime   # the build and its pool
            if done.returncode != 0:
                raise SystemExit(done.stderr[-2000:])
            size = size_of(site)
            ratio = size / shot_bytes
            print(f"--link {'on ' if link else 'off'}: built in {took:.1f} s ({verdict(took <= GOAL_BUILD_S)} "
                  f"<= {GOAL_BUILD_S:.0f} s; {cpu:.1f} CPU-s on {os.cpu_count()} cores, so {cpu / 2:.1f} s on 2 "
                  f"idle ones: {verdict(cpu / 2 <= GOAL_BUILD_S)}); site {size / 1e6:.1f} MB of which thumbnails "
                  f"{size_of(site, thumbs_only=True) / 1e6:.1f} MB; screenshots {shot_bytes / 1e6:.1f} MB: "
                  f"{ratio:.3f} ({verdict(ratio <= GOAL_RATIO) if not link else 'no goal'} <= {GOAL_RATIO})")
            if not link and args.by_kind:
                print(f"  full images by the page's kind, against its screenshots: {by_kind(run, site, args.pages)}")
        for page in () if args.no_link else ("index.html", "r1/tasks.html", "r1/t/task_0001.html"):
            s = interactive_s((tmp / "site" / page).as_uri())
            print(f"{page}: interactive in {s:.3f} s ({verdict(s <= GOAL_INTERACTIVE_S)} <= {GOAL_INTERACTIVE_S} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
