"""What reading JSON back through the one decoder costs (issue 22: depth, size, encoding and number bounds on every
file the run reads back): a run's resume reads every record of its `results*.jsonl`.

The same results file of N records (this package's own lines) is read by `engine/results.py:read_results` (a regular
file without following a symlink, then `json_input.decode` a line: UTF-8, no NaN, floats that cannot overflow,
nesting bounded) and by a bare reader that does what the reader did before (`open`, split, `json.loads` a line,
keep the objects with a task id), in alternating rounds; the best of each is printed, and their ratio.

    .venv/bin/python bench/json_input.py [--records 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:   # `python bench/x.py` runs with bench/ on the path, not the repository
    sys.path.insert(0, str(REPO))

from om2w_tui.engine.results import EpisodeRecord, read_results, record_line  # noqa: E402


def write_results(folder: Path, n: int) -> Path:
    path = folder / "results.jsonl"
    with open(path, "wb") as f:
        for i in range(n):
            f.write(record_line(EpisodeRecord(task_id=f"task-{i}", status="done", arm="base", model="qwen",
                                              website=f"https://site{i % 300}.example/", steps=12, actions=15,
                                              answer="The cheapest blue widget costs $12.99." * 3, duration_s=123.4,
                                              started_at=1.7e9 + i, finished_at=1.7e9 + i + 123.4, attempt=1)))
    return path


def bare_reader(out: Path) -> list[dict[str, Any]]:
    """What the reader did before the one decoder."""
    records = []
    for path in sorted(out.glob("results*.jsonl")):
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(rec, dict) and rec.get("task_id") is not None:
                records.append(rec)
    return records


def timed(read: Callable[[], object]) -> float:
    t = time.perf_counter()
    read()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        size = write_results(out, args.records).stat().st_size
        assert len(read_results(out).records) == len(bare_reader(out)) == args.records
        ours, bare = [], []
        for r in range(args.rounds):   # alternated, so that a change of load falls on both
            for name in (("ours", "bare") if r % 2 == 0 else ("bare", "ours")):
                (ours if name == "ours" else bare).append(
                    timed(lambda: read_results(out)) if name == "ours" else timed(lambda: bare_reader(out)))
    o, b = min(ours), min(bare)
    print(f"{args.records:,} records ({size / 2**20:.1f} MiB), best of {args.rounds} rounds each:")
    print(f"  read_results (the one decoder): {o:.3f} s, {o / args.records * 1e6:.2f} us a record")
    print(f"  bare json.loads reader:         {b:.3f} s, {b / args.records * 1e6:.2f} us a record")
    print(f"  ratio {o / b:.2f}; {(o - b) / args.records * 1e6:.2f} us a record more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
