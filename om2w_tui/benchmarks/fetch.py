"""Fetching the official task files (`om2w-tui tasks fetch`, its command line is `cli/tasks.py`):

  om2w        Hugging Face dataset osunlp/Online-Mind2Web, file Online_Mind2Web.json (may be gated: HF_TOKEN);
  webvoyager  GitHub MinorJerry/WebVoyager, data/WebVoyager_data.jsonl.
  A pinned revision (PINS) is checked against its known sha256; the file is validated as a task file and written
  atomically. Online-Mind2Web's revision `2026-03` is the March 2026 task list (300 tasks) pinned by its sha256
  only: it is fetched from `main` (its Hugging Face commit id is not recorded here), so once upstream changes the
  list the fetch stops with a checksum mismatch instead of handing over another task list under the same name.

Nothing here prints or exits: a fetch returns what it wrote (`Fetched`) or raises `FetchError` with what to do.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from om2w_tui.benchmarks.tasks import TASK_FILE_LIMIT, TaskFileError, parse_tasks
from om2w_tui.endpoint import EndpointReplyError, download
from om2w_tui.files import write_atomic
from om2w_tui.json_input import InputError, read_bytes
from om2w_tui.secret import EndpointURL, redact_text, redact_url


@dataclass(frozen=True)
class Source:
    name: str
    host: str                  # scheme://host, replaced by --base-url
    path: str                  # with {rev}
    filename: str
    default_rev: str
    page: str                  # where a person finds the file
    hugging_face: bool = False


SOURCES: dict[str, Source] = {
    "om2w": Source("Online-Mind2Web", "https://huggingface.co",
                   "/datasets/osunlp/Online-Mind2Web/resolve/{rev}/Online_Mind2Web.json", "Online_Mind2Web.json",
                   "main", "https://huggingface.co/datasets/osunlp/Online-Mind2Web", hugging_face=True),
    "webvoyager": Source("WebVoyager", "https://raw.githubusercontent.com",
                         "/MinorJerry/WebVoyager/{rev}/data/WebVoyager_data.jsonl", "WebVoyager_data.jsonl",
                         "5a78967", "https://github.com/MinorJerry/WebVoyager/tree/main/data"),
}


@dataclass(frozen=True)
class Pin:
    fetch_rev: str             # the revision in the URL
    sha256: str
    about: str


PINS: dict[tuple[str, str], Pin] = {
    ("om2w", "2026-03"): Pin("main", "50d330ee9f347c5ae136e52421516590033b146df305ab091c5a36b199b14aa4",
                             "Online-Mind2Web, March 2026 revision: 300 tasks (easy 80, medium 143, hard 77)"),
    ("webvoyager", "5a78967"): Pin("5a78967", "69b19fd86c23f1a500244a3724e039aa7ca6a1223d03e11eb10e308d4f11c488",
                                   "WebVoyager at commit 5a78967: 643 tasks on 15 sites"),
}
KNOWN = {pin.sha256: f"{pin.about} (revision {rev})" for (_, rev), pin in PINS.items()}


class FetchError(RuntimeError):
    """A fetch that did not give a usable task file; the message says what to do."""


@dataclass
class Fetched:
    path: Path
    url: str
    sha256: str
    tasks: int
    pinned: bool
    known: str | None
    unchanged: bool = False


def fetch_url(source: Source, rev: str, base_url: str | None = None) -> str:
    return (base_url or source.host).rstrip("/") + source.path.format(rev=rev)


def sends_token(url: str) -> bool:
    """Whether HF_TOKEN may go with a request to `url`: only to Hugging Face itself, over https (a mirror given with
    --base-url, or plain http, never sees it)."""
    parts = urlsplit(url)
    return parts.scheme == "https" and (parts.hostname or "") == "huggingface.co"


def fetch(bench: str, revision: str | None = None, to: Path = Path("data"), *, base_url: str | None = None,
          sha256: str | None = None, force: bool = False, timeout: float = 60.0) -> Fetched:
    """`timeout`: one deadline for the whole download (connect, redirects, the body however slowly it comes); the
    body is read up to TASK_FILE_LIMIT and no further."""
    import httpx  # slow to import: only when a file is fetched

    source = SOURCES[bench]
    rev = revision or source.default_rev
    pin = PINS.get((bench, rev))
    url = fetch_url(source, pin.fetch_rev if pin else rev, base_url)
    shown = redact_url(url) or ""   # every message says the URL without its user:password or credential query
    expected = (sha256 or (pin.sha256 if pin else None) or "").lower() or None
    headers = {"User-Agent": "om2w-tui"}
    token = os.environ.get("HF_TOKEN", "") if source.hugging_face and sends_token(url) else ""
    if token:
        headers["Authorization"] = f"Bearer {token}"   # httpx drops it on a redirect to another host (the CDN)
    host = urlsplit(shown).netloc
    try:
        r = download(EndpointURL(url), headers, timeout, TASK_FILE_LIMIT)
    except EndpointReplyError as e:
        raise FetchError(f"{host}: {redact_text(str(e))}; nothing was written. Try again, or download {shown} on a "
                         f"machine that reaches it and copy it to {to / source.filename}.") from None
    except (httpx.TransportError, httpx.InvalidURL) as e:
        raise FetchError(
            f"cannot reach {host} ({type(e).__name__}: {redact_text(str(e)) or 'no detail'}). Without network access "
            f"here, download {shown} on a machine that has it and copy it to {to / source.filename} (or run with "
            f"--tasks PATH).") from None
    if r.status in (401, 403):
        if source.hugging_face and not sends_token(url):
            raise FetchError(f"HTTP {r.status} from {host}: HF_TOKEN goes to https://huggingface.co only, never to "
                             f"a mirror or over http; give the mirror's own access, or fetch from Hugging Face.")
        if source.hugging_face:
            raise FetchError(
                f"HTTP {r.status} from {host}: the Online-Mind2Web dataset may be gated. Sign in at "
                f"{source.page}, accept its terms, create a read token at https://huggingface.co/settings/tokens "
                f"and set HF_TOKEN to it ({'HF_TOKEN is set but was refused' if token else 'HF_TOKEN is not set'}).")
        raise FetchError(f"HTTP {r.status} from {shown}: access denied.")
    if r.status == 404:
        raise FetchError(f"HTTP 404: {shown} does not exist. Check --revision {rev!r} (a branch, tag or commit of "
                         f"{source.page}); the file may also have moved upstream.")
    if r.status != 200:
        raise FetchError(f"HTTP {r.status} from {shown}; try again later.")
    body = r.body
    got = hashlib.sha256(body).hexdigest()
    if expected and got != expected:
        why = f"the pinned revision {rev!r} ({pin.about})" if pin and not sha256 else "--sha256"
        raise FetchError(
            f"checksum mismatch for {shown}: sha256 {got}, expected {expected} for {why}. Nothing was written. The "
            f"file upstream is not the one pinned (it changed, or something between changed it). Take the current "
            f"file with --revision main (its sha256 goes into each run's run.json), or pin it with --sha256.")
    target = Path(to) / source.filename
    try:
        text = body.decode("utf-8")
        tasks = parse_tasks(target, text)
    except UnicodeDecodeError as e:
        raise FetchError(f"{shown} is not UTF-8 text ({e.reason}); is this the task file?") from None
    except TaskFileError as e:
        raise FetchError(f"{shown} is not a usable task file: {e}") from None
    known = KNOWN.get(got)
    if target.exists():
        if target.is_dir():
            raise FetchError(f"{target} is a folder; choose another --to")
        try:
            old = hashlib.sha256(read_bytes(target, TASK_FILE_LIMIT, what="--to")).hexdigest()
        except InputError as e:
            raise FetchError(str(e)) from None
        if old == got:
            return Fetched(target, shown, got, len(tasks), expected is not None, known, unchanged=True)
        if not force:
            raise FetchError(f"{target} exists with other content (sha256 {old[:12]}...); runs that used it record "
                             f"that sha256. Pass --force to replace it, or choose another --to.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, body)
    except OSError as e:
        raise FetchError(f"cannot write {target}: {e}") from None
    return Fetched(target, shown, got, len(tasks), expected is not None, known)
