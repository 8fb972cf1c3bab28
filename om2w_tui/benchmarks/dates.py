"""Moving WebVoyager's booking dates into the future (`om2w-tui tasks refresh-dates`, its command line is
`cli/tasks.py`).

WebVoyager's Booking and Google Flights tasks ask for dates (2023-2024) that are now past. For each chosen task,
N = the smallest whole number of years that puts the task's earliest date on or after --today. The earliest date
moves by N years (29 February becomes 28 February in a year without one); every other date of the task keeps
its distance in days from the earliest, so a range keeps its length and a round trip its duration (a date whose
distance from the earliest spans a 29 February therefore moves by N years and a day). Forms understood:
"January 10, 2024", "Jan. 1, 2024", "January 5th, 2024", "8 March 2024", "20/12/2023", "2023-12-29",
"February 14-21, 2024", "Jan 1 to Jan 4, 2024", "February 28 to March 2, 2024", "6 March to 8 March 2024",
"6-8 March 2024" and "October 2023" (a month, moved by N years). Dates without a year ("December 25-26") are left
as they are, and so are bare years ("published in 2024"; they are listed as notes).

`refresh_file` leaves a note beside the file it writes (`refresh_note`), which a run records in its run.json.
Nothing here prints or exits: errors are `RefreshError`.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.tasks import TASK_FILE_LIMIT, TaskFileError, file_sha256, parse_tasks
from om2w_tui.files import write_atomic
from om2w_tui.json_input import InputError, decode, load, read_bytes

NOTE_LIMIT = 1 << 20   # bytes of a refresh note read back

DEFAULT_SITES = ("Booking", "Google Flights")
_MONTH_NAMES = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTH_NAMES.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTH_NAMES["sept"] = 9
_M = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|"
      r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b\.?")
_D = r"(?:[0-3]?\d)(?:st|nd|rd|th)?\b"
_Y = r"(?:19|20)\d\d\b"
_SEP = r"\s*(?:-|–|—|\bto\b|\buntil\b|\bthrough\b)\s*"

# each pattern names its pieces m1 d1 m2 d2 y (y1 y2 for numeric forms); order: the longer forms first
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("md-range", re.compile(rf"\b(?P<m1>{_M})\s+(?P<d1>{_D})(?P<sep>{_SEP})"
                            rf"(?:(?P<m2>{_M})\s+)?(?P<d2>{_D}),?\s+(?P<y>{_Y})")),
    ("dm-range", re.compile(rf"\b(?P<d1>{_D})(?:\s+(?P<m1>{_M}))?(?P<sep>{_SEP})"
                            rf"(?P<d2>{_D})\s+(?P<m2>{_M}),?\s+(?P<y>{_Y})")),
    ("md", re.compile(rf"\b(?P<m1>{_M})\s+(?P<d1>{_D}),?\s+(?P<y>{_Y})")),
    ("dm", re.compile(rf"\b(?P<d1>{_D})\s+(?:of\s+)?(?P<m1>{_M}),?\s+(?P<y>{_Y})")),
    ("iso", re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<mo>\d\d)-(?P<d1>\d\d)\b")),
    ("numeric", re.compile(r"\b(?P<a>\d{1,2})(?P<ns>[/.-])(?P<b>\d{1,2})(?P=ns)(?P<y>(?:19|20)\d\d)\b")),
    ("month", re.compile(rf"\b(?P<m1>{_M}),?\s+(?P<y>{_Y})")),
]
_BARE_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_DIGITS = re.compile(r"\d+")


def _month(token: str) -> int:
    return _MONTH_NAMES[token.rstrip(".").lower()]


def _digits(token: str) -> str:
    """The leading digits of a day token ("5th" -> "5"); the patterns only take tokens that start with them."""
    m = _DIGITS.match(token)
    if m is None:
        raise ValueError(f"no day in {token!r}")
    return m.group()


def _day(token: str) -> int:
    return int(_digits(token))


def _ordinal(n: int) -> str:
    if 11 <= n % 100 <= 13:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


_FULL_NAMES = {name.lower() for name in calendar.month_name if name}


def _fmt_month(old: str, month: int) -> str:
    """The month's name written as `old` was: in full or short ("Jan", "Jan.", "Sept"), upper case or not."""
    dot = old.endswith(".")
    bare = old.rstrip(".")
    if bare.lower() in _FULL_NAMES:                 # "May", "June" and "July" count as written in full
        name = calendar.month_name[month]
    elif bare.lower() == "sept" and month == 9:
        name = bare
    else:
        name = calendar.month_abbr[month]
    if bare.isupper() and len(bare) > 1:
        name = name.upper()
    if name.lower() in _FULL_NAMES:                 # "Jan." moved to May is "May", not "May."
        dot = False
    return name + ("." if dot else "")


def _fmt_day(old: str, day: int) -> str:
    digits = _digits(old)
    text = f"{day:0{len(digits)}d}" if digits.startswith("0") else str(day)
    return text + (_ordinal(day) if len(old) > len(digits) else "")


@dataclass
class _Phrase:
    kind: str
    start: int
    end: int
    match: re.Match[str]
    dates: list[dt.date]            # the dates it writes (implied years filled in)
    precision: str = "day"          # "day" | "month"
    order: str = ""                 # numeric: "dm" or "md"

    @property
    def text(self) -> str:
        return self.match.group(0)


def _valid(y: int, m: int, d: int) -> dt.date | None:
    try:
        return dt.date(y, m, d)
    except ValueError:
        return None


def _phrase(kind: str, m: re.Match[str]) -> _Phrase | None:
    g = m.groupdict()
    if kind in ("md-range", "dm-range"):
        y = int(g["y"])
        m2 = _month(g["m2"]) if g.get("m2") else None
        m1 = _month(g["m1"]) if g.get("m1") else m2
        if kind == "md-range" and m2 is None:
            m2 = m1
        if m1 is None or m2 is None:     # each range form names at least one month: not reached
            return None
        d1, d2 = _day(g["d1"]), _day(g["d2"])
        y1 = y - 1 if (m1, d1) > (m2, d2) else y    # "December 30 to January 2, 2024" starts in 2023
        a, b = _valid(y1, m1, d1), _valid(y, m2, d2)
        return _Phrase(kind, m.start(), m.end(), m, [a, b]) if a and b else None
    if kind in ("md", "dm"):
        a = _valid(int(g["y"]), _month(g["m1"]), _day(g["d1"]))
        return _Phrase(kind, m.start(), m.end(), m, [a]) if a else None
    if kind == "iso":
        a = _valid(int(g["y"]), int(g["mo"]), int(g["d1"]))
        return _Phrase(kind, m.start(), m.end(), m, [a]) if a else None
    if kind == "numeric":
        x, z, y = int(g["a"]), int(g["b"]), int(g["y"])
        order = "md" if z > 12 >= x else "dm"        # day first unless the second number cannot be a month
        a = _valid(y, z, x) if order == "dm" else _valid(y, x, z)
        return _Phrase(kind, m.start(), m.end(), m, [a], order=order) if a else None
    if kind == "month":
        return _Phrase(kind, m.start(), m.end(), m, [dt.date(int(g["y"]), _month(g["m1"]), 1)], precision="month")
    return None


def find_dates(text: str) -> list[_Phrase]:
    """The dated phrases of a text that carry a year, left to right, not overlapping (the longer form wins)."""
    found: list[_Phrase] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            p = _phrase(kind, m)
            if p is not None:
                found.append(p)
                taken.append((m.start(), m.end()))
    return sorted(found, key=lambda p: p.start)


def add_years(d: dt.date, n: int) -> dt.date:
    """`d` moved by n years; 29 February becomes 28 February in a year without one."""
    try:
        return d.replace(year=d.year + n)
    except ValueError:
        return d.replace(year=d.year + n, day=28)


def _render(p: _Phrase, new: list[dt.date]) -> str:
    g = p.match
    txt = p.text
    o = g.start()

    def put(pieces: list[tuple[str, str]]) -> str:
        """Replace the named groups of the match with new text, right to left."""
        out = txt
        spans = sorted(((g.start(name) - o, g.end(name) - o, value) for name, value in pieces
                        if g.group(name) is not None), reverse=True)
        for s, e, value in spans:
            out = out[:s] + value + out[e:]
        return out

    if p.kind in ("md", "dm"):
        (a,) = new
        return put([("m1", _fmt_month(g["m1"], a.month)), ("d1", _fmt_day(g["d1"], a.day)), ("y", str(a.year))])
    if p.kind == "iso":
        (a,) = new
        return put([("y", str(a.year)), ("mo", f"{a.month:02d}"), ("d1", f"{a.day:02d}")])
    if p.kind == "numeric":
        (a,) = new
        first, second = (a.day, a.month) if p.order == "dm" else (a.month, a.day)
        return put([("a", f"{first:0{len(g['a'])}d}"), ("b", f"{second:0{len(g['b'])}d}"), ("y", str(a.year))])
    if p.kind == "month":
        (a,) = new
        return put([("m1", _fmt_month(g["m1"], a.month)), ("y", str(a.year))])
    a, b = new
    month_style = g["m1"] or g["m2"]
    implied_ok = a.year == b.year or (a.year == b.year - 1 and (a.month, a.day) > (b.month, b.day))
    if p.kind == "md-range":
        if g["m2"] is None and a.month != b.month:   # "February 25-29, 2024" whose end moved into March
            return put([("m1", _fmt_month(g["m1"], a.month)), ("d1", _fmt_day(g["d1"], a.day)),
                        ("d2", f"{_fmt_month(month_style, b.month)} {_fmt_day(g['d2'], b.day)}"),
                        ("y", str(b.year))]) if implied_ok else \
                f"{_fmt_month(month_style, a.month)} {_fmt_day(g['d1'], a.day)}, {a.year}{g['sep']}" \
                f"{_fmt_month(month_style, b.month)} {_fmt_day(g['d2'], b.day)}, {b.year}"
        if implied_ok:
            pieces = [("m1", _fmt_month(g["m1"], a.month)), ("d1", _fmt_day(g["d1"], a.day)),
                      ("d2", _fmt_day(g["d2"], b.day)), ("y", str(b.year))]
            if g["m2"] is not None:
                pieces.append(("m2", _fmt_month(g["m2"], b.month)))
            return put(pieces)
        return (f"{_fmt_month(month_style, a.month)} {_fmt_day(g['d1'], a.day)}, {a.year}{g['sep']}"
                f"{_fmt_month(month_style, b.month)} {_fmt_day(g['d2'], b.day)}, {b.year}")
    # dm-range
    if g["m1"] is None and a.month != b.month:
        return put([("d1", f"{_fmt_day(g['d1'], a.day)} {_fmt_month(g['m2'], a.month)}"),
                    ("d2", _fmt_day(g["d2"], b.day)), ("m2", _fmt_month(g["m2"], b.month)), ("y", str(b.year))]) \
            if implied_ok else f"{_fmt_day(g['d1'], a.day)} {_fmt_month(g['m2'], a.month)} {a.year}{g['sep']}" \
                               f"{_fmt_day(g['d2'], b.day)} {_fmt_month(g['m2'], b.month)} {b.year}"
    if implied_ok:
        pieces = [("d1", _fmt_day(g["d1"], a.day)), ("d2", _fmt_day(g["d2"], b.day)),
                  ("m2", _fmt_month(g["m2"], b.month)), ("y", str(b.year))]
        if g["m1"] is not None:
            pieces.append(("m1", _fmt_month(g["m1"], a.month)))
        return put(pieces)
    return (f"{_fmt_day(g['d1'], a.day)} {_fmt_month(g['m2'], a.month)} {a.year}{g['sep']}"
            f"{_fmt_day(g['d2'], b.day)} {_fmt_month(g['m2'], b.month)} {b.year}")


def _month_end(d: dt.date) -> dt.date:
    return d.replace(day=calendar.monthrange(d.year, d.month)[1])


def shift_text(text: str, today: dt.date) -> tuple[str, int, list[tuple[str, str]], list[str]]:
    """(new text, years moved, [(old fragment, new fragment)], notes) for one task's text."""
    phrases = find_dates(text)
    notes: list[str] = []
    covered = [(p.start, p.end) for p in phrases]
    bare = [m.group() for m in _BARE_YEAR.finditer(text) if not any(s <= m.start() < e for s, e in covered)]
    if not phrases:
        return text, 0, [], ([f"bare year(s) {', '.join(bare)} left as they are"] if bare else [])
    day_dates = [d for p in phrases if p.precision == "day" for d in p.dates]
    month_dates = [d for p in phrases if p.precision == "month" for d in p.dates]

    def first_ok(n: int) -> bool:
        if day_dates:
            anchor = min(day_dates)
            return add_years(anchor, n) >= today and all(_month_end(add_years(d, n)) >= today for d in month_dates)
        return all(_month_end(add_years(d, n)) >= today for d in month_dates)

    n = 0
    while not first_ok(n):
        n += 1
    if n == 0:
        return text, 0, [], []
    anchor = min(day_dates) if day_dates else None
    new_anchor = add_years(anchor, n) if anchor else None
    pieces: list[tuple[str, str]] = []
    out, last = [], 0
    for p in phrases:
        if p.precision == "month":
            new = [add_years(d, n) for d in p.dates]
        else:
            assert anchor is not None and new_anchor is not None   # a phrase of days: day_dates holds its dates
            new = [new_anchor + (d - anchor) for d in p.dates]
            if any(x != add_years(d, n) for x, d in zip(new, p.dates)):
                notes.append(f"{p.text!r}: moved by {n} years and a day, keeping its distance from the earliest "
                             f"date across a 29 February")
        rendered = _render(p, new)
        pieces.append((p.text, rendered))
        out.append(text[last:p.start])
        out.append(rendered)
        last = p.end
    out.append(text[last:])
    if bare:
        notes.append(f"bare year(s) {', '.join(bare)} left as they are")
    return "".join(out), n, pieces, notes


def _text_field(row: dict[str, Any]) -> str:
    return "ques" if "ques" in row else "confirmed_task"


def _row_id(row: dict[str, Any]) -> str:
    return str(row.get("id", row.get("task_id", "")))


def _chosen(row: dict[str, Any], sites: Iterable[str], task_ids: Iterable[str]) -> bool:
    sites, task_ids = list(sites), set(task_ids)
    if _row_id(row) in task_ids:
        return True
    name = row.get("web_name")
    if name is not None:
        return str(name).lower() in {s.lower() for s in sites}
    website = str(row.get("website", row.get("web", ""))).lower()
    return any(s and s.lower() in website for s in sites)


def refresh(rows: list[dict[str, Any]], today: dt.date, sites: Iterable[str] = DEFAULT_SITES,
            task_ids: Iterable[str] = ()) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows with their dates moved, the changes). A row is chosen by its web_name in `sites` (for rows without
    one: a site that is part of its website) or its id in `task_ids`; rows not chosen or not changed are returned
    as they are (the same objects), changed ones as copies with the same field order."""
    sites, task_ids = list(sites), list(task_ids)
    new_rows: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for row in rows:
        if not isinstance(row, dict) or not _chosen(row, sites, task_ids):
            new_rows.append(row)
            continue
        key = _text_field(row)
        text = row.get(key)
        if not isinstance(text, str):
            new_rows.append(row)
            continue
        new_text, years, pieces, notes = shift_text(text, today)
        if new_text == text:
            new_rows.append(row)
            if notes:
                changes.append({"task_id": _row_id(row), "field": key, "years": 0, "fragments": [], "notes": notes})
            continue
        new_rows.append({k: (new_text if k == key else v) for k, v in row.items()})
        changes.append({"task_id": _row_id(row), "field": key, "years": years, "fragments": pieces, "notes": notes})
    return new_rows, changes


class RefreshError(RuntimeError):
    pass


def _replace_value(line: bytes, old: str, new: str) -> bytes:
    """The line with one JSON string value replaced, every other byte kept."""
    for ascii_only in (True, False):
        enc_old = json.dumps(old, ensure_ascii=ascii_only).encode()
        if line.count(enc_old) == 1:
            return line.replace(enc_old, json.dumps(new, ensure_ascii=ascii_only).encode())
    return b""


def refresh_file(src: Path, dst: Path, today: dt.date, sites: Iterable[str] = DEFAULT_SITES,
                 task_ids: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Write `src` (JSON lines) to `dst` with the chosen tasks' dates moved; -> the changes."""
    src, dst, sites = Path(src), Path(dst), list(sites)
    if not src.is_file():
        raise RefreshError(f"{src}: no such file")
    if dst.resolve() == src.resolve() or (dst.exists() and os.path.samefile(src, dst)):
        raise RefreshError(f"--out {dst} is the input file; write the refreshed copy to another path")
    if dst.is_dir():
        raise RefreshError(f"--out {dst} is a folder; give a file path")
    try:
        raw = read_bytes(src, TASK_FILE_LIMIT)   # a regular file, bounded: never a FIFO, never /dev/zero
    except InputError as e:
        raise RefreshError(str(e)) from None
    lines = raw.split(b"\n")
    rows: list[Any] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            rows.append(None)
            continue
        try:
            rows.append(decode(line, str(src), line=n))
        except InputError as e:
            hint = " (only JSON lines files, one task a line, are supported)" if n == 1 else ""
            raise RefreshError(f"{src}:{n}: not a JSON line: {e}{hint}") from None
    chosen_ids = list(task_ids)
    known = {_row_id(r) for r in rows if isinstance(r, dict)}
    unknown = [t for t in chosen_ids if t not in known]
    if unknown:
        raise RefreshError(f"--task-ids: not in {src}: {', '.join(unknown[:5])}")
    new_rows, changes = refresh([r if isinstance(r, dict) else {} for r in rows], today, sites, chosen_ids)
    out_lines = []
    for line, old, new in zip(lines, rows, new_rows):
        if old is None or new is old or not isinstance(old, dict):
            out_lines.append(line)
            continue
        key = _text_field(old)
        replaced = _replace_value(line, old[key], new[key])
        if not replaced:
            replaced = json.dumps(new, ensure_ascii=not any(b > 127 for b in line)).encode()
        out_lines.append(replaced)
    data = b"\n".join(out_lines)
    try:
        parse_tasks(dst, data.decode("utf-8"))
    except TaskFileError as e:
        raise RefreshError(f"the refreshed file would not load as a task file: {e}") from None
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dst, data)
    # beside the refreshed file: what it was made from, so a run that uses it records the refresh in run.json
    write_atomic(refresh_note_path(dst), json.dumps({
        "source": str(src.resolve()), "source_sha256": file_sha256(src), "today": today.isoformat(),
        "sites": sorted(sites), "task_ids": chosen_ids, "sha256": file_sha256(dst), "changes": changes},
        indent=1, ensure_ascii=False, default=str))
    return changes


def refresh_note_path(task_file: Path) -> Path:
    return Path(task_file).with_name(Path(task_file).name + ".refresh.json")


def refresh_note(task_file: Path) -> dict[str, Any] | None:
    """The note `refresh-dates` left beside a task file it wrote, if it still describes that file."""
    path = refresh_note_path(task_file)
    try:
        note = load(path, NOTE_LIMIT)
        return note if isinstance(note, dict) and note.get("sha256") == file_sha256(task_file) else None
    except InputError:
        return None
