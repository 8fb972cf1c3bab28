"""What this machine holds: how many more worker slots (a worker process and its Chromium, about half a gigabyte)
its available memory takes, read from /proc/meminfo (`slot_room`), and how many workers may be starting at once
(`starts_at_once`: its cores). The run's preflight refuses more `--workers` than fit; the console's `+`, `ctl
workers` and the control socket get at most what fits, with the reason (`Scheduler.set_workers`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from om2w_tui.files import read_file
from om2w_tui.json_input import InputError

SLOT_MEMORY_GIB = 0.5        # a worker (Python, browser-use) and its Chromium, measured on the offline suite
MEMINFO = Path("/proc/meminfo")
GIB = 1 << 30


@dataclass(frozen=True)
class Room:
    """How many more slots fit now, and why that many (the memory available and a slot's share)."""

    slots: int
    why: str


def available_bytes(meminfo: Path = MEMINFO) -> int | None:
    """The kernel's MemAvailable in bytes; None where the file does not say (not Linux, a sandbox)."""
    try:
        text = read_file(meminfo, 1 << 16, own=False).decode("ascii", errors="replace")
    except InputError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "MemAvailable":
            parts = value.split()
            if parts and parts[0].isdigit():
                return int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return None


def slot_room(slot_memory_gib: float, meminfo: Path = MEMINFO) -> Room | None:
    """How many more slots the available memory holds at `slot_memory_gib` each; None: no bound (0 GiB a slot:
    the user knows better; or the machine does not say what it has)."""
    available = available_bytes(meminfo)
    if slot_memory_gib <= 0 or available is None:
        return None
    per_slot = max(slot_memory_gib * GIB, 1.0)          # a byte at least: 1e-307 GiB would make the quotient inf
    slots = int(available // per_slot)
    return Room(slots, f"{available / GIB:.1f} GiB of memory available at {slot_memory_gib:g} GiB a slot, a worker "
                       f"with its Chromium (--slot-memory)")


def too_many_workers(workers: int, slot_memory_gib: float, meminfo: Path = MEMINFO) -> str:
    """'' when `workers` slots fit in the memory available, else why not and how many do (naming the flags)."""
    room = slot_room(slot_memory_gib, meminfo)
    if room is None or workers <= room.slots:
        return ""
    return (f"--workers {workers}: this machine holds {room.slots}: {room.why}; ask --workers {max(1, room.slots)} "
            f"or fewer, or give --slot-memory 0 if you know it holds more")


def starts_at_once() -> int:
    """Workers starting at once at most (importing browser-use, then a Chromium): one a core."""
    return max(1, os.cpu_count() or 1)
