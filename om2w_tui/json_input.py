"""JSON the package reads back, through one decoder with bounds: task files, `results*.jsonl`, an episode's
`result.json`, the run's lock and manifest, the launch form's last values, and every line on the control socket.

Any of them may be torn, hostile or simply wrong: a file of 200,000 `[`, a number of 5,000 digits, `NaN`, bytes that
are not UTF-8, `/dev/zero` or a FIFO given as a task file, a folder where a file should be. Python's `json` answers
those with RecursionError, a ValueError that is no JSONDecodeError, a MemoryError or a read that never returns;
here every one becomes an `InputError` whose message names the file (and line) and says what is wrong, which each
reader turns into its usual answer (a usage error and exit 2, a skipped line with a warning, a refused command).

    read_bytes(path, ...)   a regular file's bytes, at most `limit` (never a FIFO, a device, a folder; with
                            `follow_symlinks=False`, never through a symlink); `read_head`: its first bytes
    decode(data, where)     one JSON value: UTF-8 (a byte order mark read past unless `bom_ok=False`), nested at
                            most MAX_DEPTH deep, numbers finite and of sane size (floats finite, whole numbers
                            within 64 bits)
    load(path, ...)         both
    wrong_fields(obj, shape)  what in a decoded object is not of its declared shape (a reader names it and skips
                            or refuses the value, rather than meet the wrong type later as a traceback)
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_DEPTH = 64                 # deeper than anything the package or the benchmarks write (a record is 2 deep)
MiB = 1 << 20
LIMIT = 256 * MiB              # the largest file read whole unless the reader says otherwise
MAX_INT = (1 << 63) - 1        # a whole number past 64 bits is no count, id or time any writer meant (10**400)


class InputError(ValueError):
    """JSON (or a file holding it) that cannot be used; the message names where and what, ready to show. `reason`:
    the JSON parser's own words, where it was a syntax error ("Extra data", ...)."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (_INF, -_INF):   # 1e999: no number a writer meant
        raise ValueError(f"{text[:40]} is too large for a number")
    return value


def _sane_int(text: str) -> int:
    value = int(text)
    if not -MAX_INT <= value <= MAX_INT:
        raise ValueError(f"the number {text[:20]}... ({len(text)} digits) is beyond 64 bits")
    return value


_INF = float("inf")
# what a number must hold to overflow a float or pass 64 bits: an exponent of 3 digits, or 19 digits in a row
_EXPONENT = re.compile(r"[eE][+-]?[0-9]{3}|[0-9]{19}")
# made once: json.loads with any option builds a new decoder at every call (a third of a record's reading time)
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_CHECKING_FLOATS = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite, parse_int=_sane_int)
_WIDE_INTS = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)   # floats checked, ints any size


def _size(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def _open_regular(path: Path | str, name: str, follow_symlinks: bool) -> tuple[int, os.stat_result]:
    """A regular file open for reading, without blocking (a FIFO cannot hang it), and its stat; InputError for
    anything else (missing, a folder, a FIFO, a device, a symlink when not followed, unreadable)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except OSError as e:
        if not follow_symlinks and os.path.islink(path):
            raise InputError(f"{name}: is a symbolic link; the run reads only its own files there") from None
        raise InputError(f"{name}: cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{name}: is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{name}: is not a regular file (a FIFO, a device or a socket); give a file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_bytes(path: Path | str, limit: int = LIMIT, *, follow_symlinks: bool = True, what: str = "") -> bytes:
    """A regular file's bytes; raises InputError for anything else (missing, a folder, a FIFO, a device, a symlink
    when not followed, unreadable, larger than `limit`). Opened without blocking, so a FIFO cannot hang the read."""
    name = f"{what + ' ' if what else ''}{path}"
    fd, st = _open_regular(path, name, follow_symlinks)
    try:
        if st.st_size > limit:
            raise InputError(f"{name}: is {_size(st.st_size)}, more than the {_size(limit)} it may be")
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 24, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:   # it grew while read
            raise InputError(f"{name}: more than the {_size(limit)} it may be")
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"{name}: cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)


def read_head(path: Path | str, n: int, *, follow_symlinks: bool = True, what: str = "") -> bytes:
    """The first `n` bytes of a regular file (its magic number), whatever its size; InputError as `read_bytes`."""
    name = f"{what + ' ' if what else ''}{path}"
    fd, _ = _open_regular(path, name, follow_symlinks)
    try:
        return os.read(fd, n)
    except OSError as e:
        raise InputError(f"{name}: cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)


BOM = "\ufeff"   # a UTF-8 byte order mark (EF BB BF), as some Windows editors begin a file


def not_utf8(where: str, e: UnicodeDecodeError, line: int | None = None) -> InputError:
    """The one wording of bytes that are not UTF-8, in a file or (`line`) in one line of a JSON lines file."""
    within = "" if line is None else " of the line"
    return InputError(f"{_place(where, line)}: not UTF-8 text ({e.reason} at byte {e.start}{within})")


def text_of(data: bytes | str, where: str) -> str:
    """UTF-8 text without a byte order mark; InputError names the first byte that is not UTF-8."""
    if isinstance(data, str):
        return data.removeprefix(BOM)
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as e:
        raise not_utf8(where, e) from None


def _depth(value: Any) -> int:
    """How deep `value` nests (an iterative walk: a deep value must not exhaust the stack here either)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


# every digit read as 0 and every E as e: the marks of a number out of range are then plain substrings, found at
# memchr speed (a regular expression over a 4 GiB results file costs seconds)
_MARKS = bytes.maketrans(b"0123456789E", b"0000000000e")
_SIGNS = (b"0" * 19, b"e000", b"e+000", b"e-000")
_CHUNK = 1 << 22


def may_overflow(data: bytes | str) -> bool:
    """Whether `data` may hold a number out of range: an exponent of 3 digits (the only way a float overflows to
    infinity besides 309 digits in a row) or 19 digits in a row (a whole number past 64 bits): a reader of many
    lines asks once for the whole file, not once a line."""
    if isinstance(data, str):
        return _EXPONENT.search(data) is not None
    for i in range(0, len(data), _CHUNK):   # overlapping by a mark's length, so none is cut in two
        part = data[i:i + _CHUNK + 18].translate(_MARKS)
        if any(sign in part for sign in _SIGNS):
            return True
    return False


def decode(data: bytes | str, where: str, *, line: int | None = None, max_depth: int = MAX_DEPTH,
           check_floats: bool | None = None, bom_ok: bool = True, wide_ints: bool = False) -> Any:
    """One JSON value; InputError names `where` (a file, a socket) and, given, the `line` of a JSON lines file the
    value is, and what is wrong with it. `check_floats`: False when the caller knows no float can overflow here
    (`may_overflow` said so of the whole file); None: see for itself. `bom_ok`: a leading byte order mark is read
    past (False: refused, as Python's `json.load` refuses it, for a file read as a reader outside the package
    reads it). `wide_ints`: whole numbers past 64 bits are read as they are (another program's file, such as a
    browser-use history's unsigned 64-bit ids), Python's own limit on digits still holding."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        if text.startswith(BOM):
            if not bom_ok:
                raise InputError(f"{_place(where, line)}: begins with a UTF-8 byte order mark, which Python's "
                                 f"json.load refuses (JSONDecodeError: Unexpected UTF-8 BOM); save it as UTF-8 "
                                 f"without one")
            text = text[1:]
        # a number can only be out of range with an exponent of 3 digits or 19 digits: the (slower) check only there
        floats = may_overflow(text) if check_floats is None else check_floats
        value = (_DECODER if not floats else _WIDE_INTS if wide_ints else _CHECKING_FLOATS).decode(text)
    except InputError:
        raise
    except UnicodeDecodeError as e:
        raise not_utf8(where, e, line) from None
    except json.JSONDecodeError as e:
        at = f"{e.colno}" if line is not None else f"{e.lineno}:{e.colno}"
        raise InputError(f"{_place(where, line)}:{at}: invalid JSON: {e.msg}", e.msg) from None
    except RecursionError:
        raise InputError(f"{_place(where, line)}: nested deeper than JSON is read here ({max_depth} levels)") from None
    except ValueError as e:   # a number of thousands of digits, NaN, Infinity or 1e999
        raise InputError(f"{_place(where, line)}: not usable JSON ({str(e).split('; ')[0][:120]})") from None
    # a cheap bound first: a value cannot nest deeper than it has brackets
    if text.count("[") + text.count("{") > max_depth and _depth(value) > max_depth:
        raise InputError(f"{_place(where, line)}: nested deeper than JSON is read here ({max_depth} levels)")
    return value


_BLANK = re.compile(r"[ \t\n\r]*")      # JSON's whitespace


def element_lines(text: str, key: str | None = None) -> list[int] | None:
    """The line (from 1) each element of a JSON document's list starts on: the document's own list, or with `key`
    the list under that key of the document's object (the last such key, as `decode` keeps the last). For messages
    about one element of a file that `decode` has read; None where the text is no such document."""
    raw = _DECODER.raw_decode

    def after_blank(i: int) -> int:
        m = _BLANK.match(text, i)
        return m.end() if m else i

    def list_starts(i: int) -> tuple[list[int], int]:   # `i` at a '['
        starts: list[int] = []
        i = after_blank(i + 1)
        while text[i] != "]":
            starts.append(i)
            i = after_blank(raw(text, i)[1])
            if text[i] == ",":
                i = after_blank(i + 1)
        return starts, i + 1

    try:
        i = after_blank(1 if text.startswith(BOM) else 0)
        if key is None:
            starts = list_starts(i)[0] if text[i] == "[" else None
        else:
            if text[i] != "{":
                return None
            starts, i = None, after_blank(i + 1)
            while text[i] != "}":
                name, i = raw(text, i)
                i = after_blank(after_blank(i) + 1)          # past the ':'
                if name == key and text[i] == "[":
                    starts, i = list_starts(i)
                else:
                    i = raw(text, i)[1]
                i = after_blank(i)
                if text[i] == ",":
                    i = after_blank(i + 1)
    except (ValueError, IndexError):   # not the document `decode` read: the caller says less
        return None
    if starts is None:
        return None
    lines, line, pos = [], 1, 0
    for s in starts:
        line, pos = line + text.count("\n", pos, s), s
        lines.append(line)
    return lines


def _place(where: str, line: int | None) -> str:
    """Where a value was, as a message says it (built only when there is something to say)."""
    return where if line is None else f"{where}:{line}"


def load(path: Path | str, limit: int = LIMIT, *, follow_symlinks: bool = True, what: str = "") -> Any:
    """A JSON file's value: `read_bytes`, then `decode`; InputError for either."""
    return decode(read_bytes(path, limit, follow_symlinks=follow_symlinks, what=what), str(path))


_WORDS: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "true/false",
                           int: "a whole number", float: "a number", type(None): "null"}


def _kind_name(value: Any) -> str:
    return _WORDS.get(type(value), type(value).__name__)


class Shape:
    """What a decoded object may hold under each key: the types its value may have (`float` takes a whole number
    too, `int` never takes true/false); keys it does not name are not checked. Checked by the value's exact type
    (a decoded value is never a subclass): a record costs a set lookup a key."""

    def __init__(self, fields: Mapping[str, tuple[type, ...]]):
        self.fields = dict(fields)
        self._exact = {k: frozenset(kinds) | ({int} if float in kinds else set()) for k, kinds in fields.items()}

    def wrong(self, obj: Mapping[str, Any]) -> list[str]:
        exact = self._exact
        if all(type(v) in exact[k] for k, v in obj.items() if k in exact):
            return []
        return [f"{k}: {_kind_name(v)}, not {' or '.join(_WORDS.get(t, t.__name__) for t in self.fields[k])}"
                for k, v in obj.items() if k in exact and type(v) not in exact[k]]


def wrong_fields(obj: Mapping[str, Any], shape: Shape) -> list[str]:
    """What in `obj` is not of its declared `shape` -> `["status: a whole number, not a string", ...]`, empty when
    all is well (keys `obj` lacks are not checked)."""
    return shape.wrong(obj)
