"""A worker's Chromium stays at the worker's low priority. Chromium sets its threads' nice values itself (0, and -8
for its display threads) wherever it may, as root in a container: above the console, whose loop then waits for a
core. `lower_priority` (what every worker runs first) takes that power away from everything it starts. A real
Chromium, started the way browser-use starts it (a child of the worker), its every thread read from /proc."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from om2w_tui.episode.browser import find_chromium
from om2w_tui.episode.worker import WORKER_NICE

PROBE = textwrap.dedent("""
    import json, os, subprocess, sys, tempfile, time
    import psutil
    from om2w_tui.episode.worker import lower_priority
    lower_priority()
    profile = tempfile.mkdtemp()
    chromium = subprocess.Popen([sys.argv[1], "--headless=new", "--no-sandbox", "--remote-debugging-port=0",
                                 "--user-data-dir=" + profile, "data:text/html,<h1>a page</h1>"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def threads():
        procs = [psutil.Process(chromium.pid), *psutil.Process(chromium.pid).children(recursive=True)]
        out = {}
        for p in procs:
            for t in os.listdir(f"/proc/{p.pid}/task"):
                try:
                    stat = open(f"/proc/{p.pid}/task/{t}/stat").read()
                except OSError:
                    continue
                out[f"{p.pid}/{t}"] = int(stat.rsplit(")", 1)[1].split()[16])   # field 19: nice
        return out
    deadline = time.monotonic() + 30
    seen = {}
    while time.monotonic() < deadline:   # its renderer and GPU processes, once the page is up
        seen = threads()
        if len({k.split("/")[0] for k in seen}) >= 4 and len(seen) >= 20:
            break
        time.sleep(0.2)
    time.sleep(1.0)                      # the threads set their priorities as they start their work
    seen.update(threads())
    chromium.terminate()
    chromium.wait(10)
    print(json.dumps(seen))
""")


def test_a_workers_chromium_never_runs_above_the_workers_priority():
    chromium = find_chromium(None)
    if chromium is None:
        pytest.skip("no Chromium")
    r = subprocess.run([sys.executable, "-c", PROBE, chromium], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr[-3000:]
    nice = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(nice) >= 20, nice                     # a real browser, its processes and threads seen
    above = {k: v for k, v in nice.items() if v < WORKER_NICE}
    assert not above, f"Chromium threads above the worker's nice {WORKER_NICE}: {above}"
