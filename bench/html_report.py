"""`om2w-tui report RUN --html DIR` on a synthetic 300-task run with 10 screenshots a task: the site's build time,
its bytes against the run's screenshot bytes, and how soon its pages are interactive in headless Chromium.

    .venv/bin/python bench/html_report.py [--tasks 300] [--shots 10] [--distinct 60]

The screenshots are PNGs of a real one's size (1280x1100, a page of text lines, links, blocks and a 300x220 patch of
noise for a photo, the worst case for every encoder: 265-316 KB; the offline suite's are 35-170 KB at 1280x800, live
sites' with photos more): `--distinct` of them drawn, then copied to every task's trajectory (each is still decoded
and encoded on its own by the build). Records: every status, a third of
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
from pathlib import Path

from _common import verdict

REPO = Path(__file__).resolve().parents[1]
GOAL_BUILD_S, GOAL_RATIO, GOAL_INTERACTIVE_S = 60.0, 0.25, 1.0
WORDS = ("price rating review cart checkout shipping order account search filter category battery headphones "
         "delivery return warranty compare size colour stock").split()


def screenshot(seed: int) -> bytes:
    """A page-like PNG: a header bar, lines of text, links, boxes and a noisy picture."""
    import io  # noqa: I001  (Pillow only where pictures are drawn: the script's --help needs none)

    from PIL import Image, ImageDraw

    rnd = random.Random(seed)
    im = Image.new("RGB", (1280, 1100), (250, 250, 252))
    d = ImageDraw.Draw(im)
    d.rectangle((0, 0, 1280, 60), fill=(30, 40, 70))
    d.text((20, 20), "Northwind Market " + " ".join(rnd.choices(WORDS, k=5)), fill=(255, 255, 255))
    y = 80
    while y < 1060:
        if rnd.random() < 0.08:
            d.rectangle((20, y, 20 + rnd.randint(200, 1200), y + 60), fill=tuple(rnd.randint(180, 240)
                                                                                    for _ in range(3)))
            y += 70
            continue
        line = " ".join(rnd.choices(WORDS, k=rnd.randint(6, 24)))
        d.text((20 + rnd.randint(0, 40), y), line, fill=(20, 60, 200) if rnd.random() < 0.2 else (30, 30, 30))
        y += 18
    patch = Image.effect_noise((300, 220), 40).convert("RGB")
    im.paste(patch, (950, 120))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def make_run(out: Path, tasks: int, shots: int, distinct: int) -> int:
    """The run folder; -> its screenshots' bytes."""
    pictures = [screenshot(i) for i in range(distinct)]
    rnd = random.Random(7)
    total = 0
    out.mkdir(parents=True)
    with (out / "results.jsonl").open("w") as log:
        for t in range(tasks):
            tid = f"task_{t:04d}"
            traj = out / tid / "trajectory"
            traj.mkdir(parents=True)
            for i in range(shots):
                data = pictures[(t * shots + i) % distinct]
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


def size_of(folder: Path, *, thumbs_only: bool = False) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and (not thumbs_only or ".t." in p.name))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--distinct", type=int, default=60)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="om2w-html-bench-"))
    try:
        run = tmp / "run"
        shot_bytes = make_run(run, args.tasks, args.shots, args.distinct)
        for link in (False, True):
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
                  f"idle ones); site {size / 1e6:.1f} MB of which thumbnails "
                  f"{size_of(site, thumbs_only=True) / 1e6:.1f} MB; screenshots {shot_bytes / 1e6:.1f} MB: "
                  f"{ratio:.3f} ({verdict(ratio <= GOAL_RATIO) if not link else 'no goal'} <= {GOAL_RATIO})")
        for page in ("index.html", "r1/tasks.html", "r1/t/task_0001.html"):
            s = interactive_s((tmp / "site" / page).as_uri())
            print(f"{page}: interactive in {s:.3f} s ({verdict(s <= GOAL_INTERACTIVE_S)} <= {GOAL_INTERACTIVE_S} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
