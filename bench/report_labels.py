"""`om2w-tui report --labels` on a 300-task, 5-agent human_label.json: the wall time of the command as a user runs it.

    .venv/bin/python bench/report_labels.py [--repeat 5]

The file is the published one (tests/data/human_label.json: 300 tasks) with five of its six agent columns. Each
format (table, md, csv, json) is run `--repeat` times as its own process: every agent's counts under both rules,
per level and per site, and every agent against the first task by task (McNemar, paired intervals, per site); the
last case adds `--repeats` (mean and spread, solved always / sometimes / never). The baseline, in the same run, is
the command line's start alone (`om2w-tui report --help`): what any command pays before it reads a byte. Goal: under
a second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import verdict

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "tests" / "data" / "human_label.json"
GOAL_S = 1.0


def timed(args: list[str], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "om2w_tui", *args], cwd=REPO, capture_output=True, text=True)
        out.append(time.monotonic() - t0)
        if r.returncode != 0:
            raise SystemExit(f"om2w-tui {' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = json.loads(PUBLISHED.read_text())
    drop = "SeeAct_human_label"
    with tempfile.TemporaryDirectory(prefix="om2w-bench-report-") as tmp:
        path = Path(tmp) / "human_label.json"
        path.write_text(json.dumps([{k: v for k, v in r.items() if k != drop} for r in rows]))
        base = timed(["report", "--help"], args.repeat)
        cases = [(f"--format {f}", ["report", "--labels", str(path), "--format", f]) for f in ("table", "md", "csv",
                                                                                              "json")]
        cases.append(("--format md --repeats", ["report", "--labels", str(path), "--format", "md", "--repeats"]))
        print(f"{len(rows)} tasks, 5 agents; {args.repeat} runs each; the command line's start alone (report "
              f"--help): median {statistics.median(base):.2f} s")
        worst = 0.0
        for name, argv in cases:
            t = timed(argv, args.repeat)
            worst = max(worst, max(t))
            print(f"report --labels {name:<24} median {statistics.median(t):.2f} s  max {max(t):.2f} s  "
                  f"({statistics.median(t) / statistics.median(base):.2f}x the start alone)")
    print(f"goal: under {GOAL_S:.0f} s: {verdict(worst < GOAL_S)} (slowest run {worst:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
