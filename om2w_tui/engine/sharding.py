"""Splitting one run across nodes without a cluster scheduler (`--shard K/N`, or the seed's `--slot-range a:b`).

A node runs whole sites, so each site is paced by one process and pacing stays exact with no talk between nodes.
The assignment depends on the task file alone (computed on all its tasks, whatever --task-ids/--level/--site/--limit
say): the same file gives every node the same sites, even nodes given other filters. The filters choose from the
whole file as an unsharded run would, and each node runs its share of that choice, so the shards together run
exactly what one unsharded run with the same flags would (`--limit 50`: the file's first 50, split). Sites are taken
by task count, most first (then by name), each given to the least loaded shard (the lowest index on a tie): the
largest and the smallest shard differ by at most the largest site's task count.

Shards may write into one out folder (on a shared filesystem, as the seed's slot ranges did): each keeps its own
results file (`results.shard-K-of-N.jsonl`, read by every shard's resume and by `report` through the
`results*.jsonl` glob), its own manifest (`run.shard-K-of-N.json`) and its own lock (`.om2w-run.shard-K-of-N.lock`,
exclusive), every name from `run_folder.RunFolder`, and holds the folder's run lock shared, so the shards run side
by side while a second process on the same shard, or an unsharded run on the folder, is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from om2w_tui.engine.runlock import OutFolderBusy, RunLock, check_free, take_file
from om2w_tui.files import open_own
from om2w_tui.run_folder import LOCK_NAME, RunFolder, Shard
from om2w_tui.run_folder import parse_spec as parse_spec  # re-exported: the shard's spec read with its naming

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
_RANGE = re.compile(r"\s*(\d+)\s*:\s*(\d+)\s*")


def shard_from_flags(shard: str | None, slot_range: str | None, workers: int) -> tuple[str, int]:
    """--shard K/N or --slot-range a:b (with --workers W) -> (RunConfig.shard, workers on this node). Raises
    ValueError with a message naming the flag."""
    if shard and slot_range:
        raise ValueError(f"--shard {shard} and --slot-range {slot_range}: give one of them (--slot-range a:b is "
                         f"the seed's way to say shards a..b-1 of --workers)")
    if shard:
        m = _SHARD.fullmatch(shard)
        if not m:
            raise ValueError(f"--shard {shard}: expected K/N, this node's shard K of N (K counts from 0)")
        k, n = int(m[1]), int(m[2])
        if n < 1:
            raise ValueError(f"--shard {shard}: N must be at least 1")
        if k >= n:
            raise ValueError(f"--shard {shard}: K must be 0..{n - 1} (shards count from 0)")
        return Shard(k, k + 1, n).spec, workers
    if slot_range:
        m = _RANGE.fullmatch(slot_range)
        if not m:
            raise ValueError(f"--slot-range {slot_range}: expected a:b, slots a..b-1 of --workers")
        a, b = int(m[1]), int(m[2])
        if a >= b:
            raise ValueError(f"--slot-range {slot_range}: a must be less than b")
        if b > workers:
            raise ValueError(f"--slot-range {slot_range}: b must be at most --workers ({workers}), the run's "
                             f"slots on all nodes together")
        return Shard(a, b, workers).spec, b - a
    return "", workers


def assign_sites(sites: Iterable[str], n: int) -> dict[str, int]:
    """site -> its shard (0..n-1), one entry per task's site in `sites` (a site given once per task): balanced by
    task count, stable (the same multiset of sites gives the same answer, whatever its order)."""
    counts = Counter(sites)
    load = [0] * n
    out: dict[str, int] = {}
    for site, c in sorted(counts.items(), key=lambda sc: (-sc[1], sc[0])):
        k = min(range(n), key=lambda i: (load[i], i))
        out[site] = k
        load[k] += c
    return out


def select_shard(tasks: list[Any], spec: str, chosen: list[Any] | None = None) -> list[Any]:
    """Of `chosen` (default: all `tasks`), those on this node's shard(s), in order; all of them without a shard.
    Sites are assigned on `tasks`, the whole file. Tasks have `.site`."""
    chosen = tasks if chosen is None else chosen
    shard = parse_spec(spec)
    if shard is None:
        return chosen
    where = assign_sites((t.site for t in tasks), shard.n)
    return [t for t in chosen if where.get(t.site, -1) in shard]


def check_out_free(out: Path, spec: str) -> str:
    """'' when this run (or shard) could take `out`, else the message it would get."""
    shard = parse_spec(spec)
    if shard is None:
        # shards hold the folder's lock shared, which the probe of check_free does not see: their own locks say it
        held = [p for p in sorted(Path(out).glob(".om2w-run.shard-*.lock")) if check_free(out, p.name)]
        return check_free(out, held[0].name) if held else check_free(out)
    for lock in RunFolder(out, spec).shard_locks:
        if problem := check_free(out, lock.name):
            return problem
    main = Path(out) / LOCK_NAME
    if main.exists() and not _shared_free(main):
        return check_free(out)   # an unsharded run holds the folder: its message names it
    return ""


def _shared_free(path: Path) -> bool:
    try:
        fd = open_own(path, os.O_RDONLY)
    except OSError:   # a lock that cannot be opened is said by the preflight's check of the run's own files
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


class ShardLock:
    """A shard's hold on a shared out folder: the folder's run lock shared (an unsharded run is refused, and
    refuses), and each of its shards' locks exclusive (a second process on one shard is refused)."""

    def __init__(self, out: Path, shard: Shard, info: dict[str, Any] | None = None):
        self.out = Path(out)
        self.shard = shard
        self.info = dict(info or {})
        self._main: int | None = None
        self._locks: list[RunLock] = []

    def acquire(self) -> ShardLock:
        path = self.out / LOCK_NAME
        fd = take_file(self.out, path)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutFolderBusy(check_free(self.out) or f"--out {self.out}: another run is using this folder") \
                from None
        self._main = fd
        try:
            for lock in RunFolder(self.out, self.shard.spec).shard_locks:
                self._locks.append(RunLock(self.out, lock.name, self.info).acquire())
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        for lock in reversed(self._locks):
            lock.release()
        self._locks.clear()
        if self._main is not None:
            with contextlib.suppress(OSError):
                os.close(self._main)
            self._main = None

    def __enter__(self) -> ShardLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def run_lock(out: Path, spec: str, info: dict[str, Any] | None = None) -> RunLock | ShardLock:
    """The lock a run (or a shard of one) holds on its out folder for its life; `info` is written in it beside the
    holder's pid and host (the control socket's name)."""
    shard = parse_spec(spec)
    return ShardLock(out, shard, info) if shard is not None else RunLock(out, info=info)
