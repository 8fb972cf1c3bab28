"""Pacing shared across runs on one node (`--pace-dir DIR`), in files the seed runner's `Pacer` reads the same way.

A site is held by `<DIR>/<name>.lock`, with flock(LOCK_EX), for as long as an episode runs on it; its cooldown is
counted from the mtime of `<DIR>/<name>.last`, touched when an episode ends (before the lock is dropped, as the seed
does). `<name>` is the seed's name for the site (`seed_domain`: the URL without scheme and `www.`, up to the first
`/`, lower case, the port kept), so a seed runner and om2w-tui lock the same file. Where om2w-tui's own site key
(`benchmarks.site_keys.site_key`) differs from it (an explicit :443, an upper-case `WWW.`), both files are locked, so
two om2w-tui runs always meet on the site key and each meets the seed on the seed's name. The offline suite's sites are
`127.0.0.1:PORT` under both names: runs meet there only when they use the same servers (one `om2w-tui oracle`, or a
task file pointing at the same ports); each run's own built-in suite is a different set of sites, rightly unshared.

The in-process `SitePacer` stays the authority inside one run; the directory only adds: a site may start when its
locks can be taken now (never blocking) and its `.last` is older than the site's cooldown. Another run's cooldown
becomes this pacer's `ready_at` (an ordinary timer); a site held by another run is tried again every `RETRY_S`
through `next_ready`, and only while the scheduler has a free slot for it (one timer, not a busy loop).

A cooldown widened after a bot wall is shared too, in `<DIR>/<name>.cooldown` (its seconds, as text, written
atomically): a block seen by one run means the site is wary of this IP, whichever run comes next. A run adopts the
file's value when it is above its own cooldown for the site, as it takes the site's locks (so before counting the
`.last` stamp's cooldown); widening and relaxing rewrite the file, and a cooldown relaxed back to the run's default
removes it. The seed runner does not read it (it has no widening).

The directory is shared, so nothing in it is trusted: every file is opened without following a symlink and only as
a regular file (`files.open_own`; a planted symlink is never written through), lock and stamp files are created
0644 (another user's run opens them read-only, which holds a flock as well), and a `.cooldown` is written through a
temporary file of an unpredictable name, owner-only until it is complete. `check_pace_files` refuses before a run
what cannot be used there, and `ready_pace_dir` makes the directory before anything is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from om2w_tui.engine.pacing import CLOCK_SLACK_S, SitePacer
from om2w_tui.files import holds_no_files, open_own, unsafe_entry, write_atomic
from om2w_tui.json_input import InputError, read_bytes

RETRY_S = 0.5   # how soon a site held by another run is tried again (while a slot waits for it)
_UNSAFE = re.compile(r"[/\x00]")


def seed_domain(url: str) -> str:
    """The seed runner's name for a task's site (its `_domain`), character for character."""
    return re.sub(r"^https?://(www\.)?", "", url).split("/")[0].lower()


def lock_names(site: str, urls: Iterable[str]) -> tuple[str, ...]:
    """The file names (without suffix) that stand for `site` in a pace dir: the site key and the seed's name of
    each of its tasks' URLs. Credentials in a URL never name a file (the part before `@` is dropped)."""
    names = {site, *(seed_domain(u) for u in urls)}
    safe = {n.rsplit("@", 1)[-1] for n in names}
    return tuple(sorted(n for n in safe if n and not _UNSAFE.search(n) and n not in (".", "..")))


def check_pace_dir(path: Path) -> str:
    """'' when `path` is (or can be made) a folder this process can write lock files in; else what is wrong."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"--pace-dir {path}: is a file, not a folder"
    probe = path if path.exists() else next((p for p in path.parents if p.exists()), Path("."))
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        return f"--pace-dir {path}: {probe} is not a folder you can write to"
    if holds_no_files(probe):
        return f"--pace-dir {path}: {probe} is on a filesystem that holds no files (like /proc or /sys)"
    return ""


SUFFIXES = (".lock", ".last", ".cooldown")


def check_pace_files(path: Path, names: Iterable[str]) -> str:
    """'' when none of the pace dir's files for the sites `names` is a symlink, a folder or a device."""
    for name in names:
        for suffix in SUFFIXES:
            if problem := unsafe_entry(Path(path) / f"{name}{suffix}"):
                return f"--pace-dir {path}: {problem}"
    return ""


def ready_pace_dir(path: Path) -> str:
    """Make the pace dir and write a file in it (at once removed), before a run writes anything: '' when it can,
    else why not (`--pace-dir /proc/x`)."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        probe = Path(path) / f".om2w-probe.{secrets.token_hex(8)}"
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        probe.unlink()
    except OSError as e:
        return f"--pace-dir {path}: cannot be written ({e.strerror or e}); give a folder you can write to"
    return ""


def _try_flock(path: Path) -> int | None:
    """An fd holding an exclusive flock on `path` (created if need be, never through a symlink), or None when
    another holds it; raises UnsafeFile for a lock file that is a symlink, a folder or a device."""
    try:
        fd = open_own(path, os.O_RDWR | os.O_CREAT, 0o644)
    except PermissionError:   # another user's lock file: a read-only fd can hold a flock just as well
        fd = open_own(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_cooldown(path: Path) -> float:
    """The seconds in a `.cooldown` file; 0 when there is none or it does not hold a number >= 0 (never read through
    a symlink)."""
    try:
        value = float(read_bytes(path, 64, follow_symlinks=False).strip())
    except (InputError, ValueError):
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0


def _stamp(path: Path) -> int:
    """Touch `path` (created 0644 if need be, never through a symlink); -> its mtime in ns. Raises OSError (another
    user's stamp cannot be touched)."""
    fd = open_own(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.utime(fd)
        return os.fstat(fd).st_mtime_ns
    finally:
        os.close(fd)


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


class SharedSitePacer(SitePacer):
    """A SitePacer that also honours every other run pacing through the same directory. The locks of a site are
    held while this run has an episode there (several share them where `per_site` allows), and for a moment
    while a dispatch round considers the site: `end_round()` drops those the round did not use."""

    knows_all = False   # another run may take or free a site at any time: only its lock file says

    def __init__(self, pace_dir: Path, cooldown: float, per_site: int = 1,
                 names: Mapping[str, Iterable[str]] | None = None, note: Callable[[str], None] | None = None,
                 wall: Callable[[], float] = time.time):
        super().__init__(cooldown, per_site)
        self.dir = Path(pace_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._names = {site: tuple(n) for site, n in (names or {}).items()}
        self._note = note
        self._wall = wall
        self._held: dict[str, list[int]] = {}   # site -> fds holding its locks
        self._tentative: set[str] = set()       # taken by can_start, not yet by acquire
        self._elsewhere: set[str] = set()       # found held by another run at the last try
        self._said: set[str] = set()
        self._stamped: dict[str, int] = {}      # name -> mtime (ns) of the `.last` this run wrote last
        self._adopted: dict[str, float] = {}    # site -> the shared cooldown last adopted (said once per value)

    def names(self, site: str) -> tuple[str, ...]:
        return self._names.get(site) or lock_names(site, ())

    def held_elsewhere(self, site: str) -> bool:
        return site in self._elsewhere and not self.state(site).running

    def can_start(self, site: str, now: float) -> bool:
        if not super().can_start(site, now):
            return False
        return site in self._held or self._take(site, now)

    def _take(self, site: str, now: float) -> bool:
        fds: list[int] = []
        for name in self.names(site):
            fd = self._lock(site, name)
            if fd is None:
                for f in fds:
                    _unlock(f)
                self._elsewhere.add(site)
                self._say(site, f"{site}: held by another run ({self.dir / name}.lock); its tasks wait for it")
                return False
            fds.append(fd)
        self._elsewhere.discard(site)
        st = self.state(site)
        self._adopt_shared_cooldown(site)
        wait = max(self._cooling_left(name, st.cooldown) for name in self.names(site))
        if wait > CLOCK_SLACK_S:   # another run ended an episode here lately: its cooldown is ours too
            for f in fds:
                _unlock(f)
            st.ready_at = max(st.ready_at, now + wait)
            return False
        self._held[site] = fds
        self._tentative.add(site)
        return True

    def _lock(self, site: str, name: str) -> int | None:
        try:
            return _try_flock(self.dir / f"{name}.lock")
        except OSError as e:   # planted since the preflight (a symlink): never used; the site waits as if held
            self._say(site, f"{site}: its pace lock cannot be used ({e}); its tasks wait")
            return None

    def _say(self, site: str, message: str) -> None:
        """Tell the run once per site why it waits."""
        if site not in self._said and self._note is not None:
            self._said.add(site)
            self._note(message)

    def _cooling_left(self, name: str, cooldown: float) -> float:
        try:
            stat = (self.dir / f"{name}.last").stat()
        except FileNotFoundError:
            return 0.0
        if stat.st_mtime_ns == self._stamped.get(name):   # our own episode's end: our pacer counts that cooldown
            return 0.0
        mtime = stat.st_mtime
        # a stamp from the future (a clock set back) waits one cooldown at most
        return min(cooldown, mtime + cooldown - self._wall())

    def _adopt_shared_cooldown(self, site: str) -> None:
        """Another run widened the site's cooldown after a bot wall: ours is at least that (read under the lock)."""
        st = self.state(site)
        shared = max((_read_cooldown(self.dir / f"{name}.cooldown") for name in self.names(site)), default=0.0)
        if shared > st.cooldown:
            st.cooldown = min(self.cap, shared)
            if self._note is not None and self._adopted.get(site) != st.cooldown:
                self._adopted[site] = st.cooldown
                self._note(f"{site}: another run widened its cooldown; it is now {st.cooldown:g} s here too")

    def widen(self, site: str) -> float:
        cooldown = super().widen(site)
        self._share_cooldown(site)
        return cooldown

    def relax(self, site: str) -> float:
        before = self.state(site).cooldown
        cooldown = super().relax(site)
        if cooldown != before:   # a clean episode at the default changes nothing: no file touched
            self._share_cooldown(site)
        return cooldown

    def _share_cooldown(self, site: str) -> None:
        cooldown = self.state(site).cooldown
        for name in self.names(site):
            path = self.dir / f"{name}.cooldown"
            with contextlib.suppress(OSError):   # sharing is a courtesy: a full or read-only dir must not stop a run
                if cooldown <= self.cooldown:
                    path.unlink(missing_ok=True)
                else:   # owner-only while written, then readable by every run on the node
                    write_atomic(path, f"{cooldown:g}\n", mode=0o600, final_mode=0o644)

    def acquire(self, site: str, now: float) -> None:
        super().acquire(site, now)   # through can_start: the site's locks are held from here
        self._tentative.discard(site)

    def release(self, site: str, now: float) -> None:
        super().release(site, now)
        for name in self.names(site):   # the stamp first, then the lock: no one starts before it is seen
            with contextlib.suppress(OSError):
                self._stamped[name] = _stamp(self.dir / f"{name}.last")
        self._drop_if_idle(site)

    def release_without_cooldown(self, site: str) -> None:
        super().release_without_cooldown(site)
        self._drop_if_idle(site)

    def _drop_if_idle(self, site: str) -> None:
        if self.state(site).running == 0 and site not in self._tentative:
            for fd in self._held.pop(site, []):
                _unlock(fd)

    def end_round(self) -> None:
        tentative, self._tentative = self._tentative, set()
        for site in tentative:
            self._drop_if_idle(site)

    def next_ready(self, sites: Iterable[str], now: float) -> float | None:
        sites = list(sites)
        nxt = super().next_ready(sites, now)
        if any(self.held_elsewhere(s) for s in sites):
            nxt = min(nxt, now + RETRY_S) if nxt is not None else now + RETRY_S
        return nxt

    def close(self) -> None:
        """Drop every lock (the process's end drops them too)."""
        self._tentative.clear()
        for fds in self._held.values():
            for fd in fds:
                _unlock(fd)
        self._held.clear()


def site_names(tasks: Iterable[Any]) -> dict[str, tuple[str, ...]]:
    """site -> the names its files have in a pace dir; `tasks` have `.site` and `.website`."""
    urls: dict[str, set[str]] = {}
    for t in tasks:
        urls.setdefault(t.site, set()).add(t.website)
    return {s: lock_names(s, u) for s, u in urls.items()}


def pace_names(tasks: Iterable[Any]) -> list[str]:
    """Every name the sites of `tasks` have in a pace dir (for the preflight's check of their files)."""
    return sorted({n for names in site_names(tasks).values() for n in names})


def make_pacer(pace_dir: Path | None, cooldown: float, per_site: int, tasks: Iterable[Any],
               note: Callable[[str], None] | None = None) -> SitePacer:
    """The run's pacer: in-process only, or shared through `pace_dir`; `tasks` have `.site` and `.website`."""
    if pace_dir is None:
        return SitePacer(cooldown, per_site)
    return SharedSitePacer(pace_dir, cooldown, per_site, site_names(tasks), note)
