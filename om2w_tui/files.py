"""Files written whole or not at all: `write_atomic` and `write_json_atomic`, for every file that a reader (another
process, the official evaluator, a later run) may open while it is written or after a crash: an episode's
`result.json`, screenshots and histories, a run's manifest, the launch form's remembered values, task files fetched
or with their dates moved, the official evaluator's output kept.

The new content goes to a temporary file in the same folder (or in `tmp_dir`, on the same file system), is flushed
to disk, and replaces the old with one `os.replace`; a failure midway leaves the old content and no temporary file.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any


def write_atomic(path: Path, data: bytes | str, tmp_dir: Path | None = None) -> None:
    """Write a file so that a reader (or a crash) sees the old content or the new, never a part. `tmp_dir` (on the
    same file system) keeps the half-written file out of a folder whose every file is read, like `trajectory/`."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    # not tempfile.mkstemp: its 0600 would make result.json and the screenshots unreadable to others (the evaluator
    # run by another user); 0666 less the umask, as for any file written plainly
    tmp = Path(tmp_dir or path.parent) / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, default=str))
