"""Task files: `tasks fetch` against a local server on 127.0.0.1, and `tasks refresh-dates` on every date form,
then on the real WebVoyager file (data/ ships it)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import re
import socket
import threading
import time
from pathlib import Path

import pytest

from om2w_tui.benchmarks import fetch as fetch_module
from om2w_tui.benchmarks.dates import add_years, find_dates, refresh, refresh_file, shift_text
from om2w_tui.benchmarks.fetch import PINS
from om2w_tui.benchmarks.tasks import load_tasks
from om2w_tui.cli.main import main as cli_main
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.launch import preflight, write_manifest
from tests.fakes import Reply, Request, StubServer
from tests.stand_ins import STAND_IN_CHROMIUM

DATA = Path(__file__).resolve().parents[2] / "data"    # the task files the project ships
WV = DATA / "WebVoyager_data.jsonl"
OM2W = DATA / "Online_Mind2Web.json"
TODAY = dt.date(2026, 7, 15)
MONTHS = {m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july", "august",
                                      "september", "october", "november", "december"], 1)}

# ============================================================================================== refresh-dates


@pytest.mark.parametrize("text, expected", [
    ("from Jan 1 to Jan 4, 2024.", "from Jan 1 to Jan 4, 2027."),
    ("for 20/12/2023 - 21/12/2023.", "for 20/12/2026 - 21/12/2026."),
    ("week, February 14-21, 2024, that", "week, February 14-21, 2027, that"),
    ("starting on January 5th, 2024.", "starting on January 5th, 2027."),
    ("between February 14th, 2024, and February 21st, 2024,", "between February 14th, 2027, and February 21st, 2027,"),
    ("on 8 March 2024, offering", "on 8 March 2027, offering"),
    ("select date (6 March to 8 March 2024)", "select date (6 March to 8 March 2027)"),
    ("stay from March 15 to March 22, 2024, for", "stay from March 15 to March 22, 2027, for"),
    ("leaving on December 25, 2023, and returning on January 5, 2024,",
     "leaving on December 25, 2026, and returning on January 5, 2027,"),
    ("on Jan. 1, 2024", "on Jan. 1, 2027"),
    ("created after 2023-12-29.", "created after 2026-12-29."),
    ("from 6-8 March 2024", "from 6-8 March 2027"),
    ("in October 2023", "in October 2026"),
    ("December 30 to January 2, 2024", "December 30 to January 2, 2027"),     # starts in 2023
])
def test_each_form_moves_by_whole_years(text, expected):
    new, years, pieces, notes = shift_text(text, TODAY)
    assert new == expected and years == 3 and pieces and not notes


@pytest.mark.parametrize("text", ["Find a Mexico hotel with deals for December 25-26.",
                                  "from Dec 25th - Dec 26th", "on Jan. 22.", "a 5-night stay under $1000"])
def test_dates_without_a_year_are_left_alone(text):
    assert shift_text(text, TODAY) == (text, 0, [], [])


def test_a_task_already_in_the_future_is_unchanged_and_the_smallest_shift_is_taken():
    assert shift_text("on March 3, 2027", TODAY)[:2] == ("on March 3, 2027", 0)
    assert shift_text("on July 15, 2025", TODAY)[:2] == ("on July 15, 2026", 1)      # today itself is fine
    assert shift_text("on July 14, 2025", TODAY)[:2] == ("on July 14, 2027", 2)


def test_every_date_of_a_task_moves_by_the_same_years_so_ranges_keep_their_length():
    new, years, _, _ = shift_text("leave on December 27, 2023 and return on January 10, 2024", dt.date(2026, 12, 28))
    assert (new, years) == ("leave on December 27, 2027 and return on January 10, 2028", 4)


def test_29_february_becomes_28_february_and_a_range_across_it_keeps_its_nights():
    assert add_years(dt.date(2024, 2, 29), 3) == dt.date(2027, 2, 28)
    assert add_years(dt.date(2024, 2, 29), 4) == dt.date(2028, 2, 29)
    new, _, _, notes = shift_text("a three-night stay from February 28 to March 2, 2024", TODAY)
    assert new == "a three-night stay from February 28 to March 3, 2027" and "29 February" in notes[0]
    new, _, _, _ = shift_text("a week from February 22 to February 29, 2024", TODAY)
    assert new == "a week from February 22 to March 1, 2027"
    new, _, _, _ = shift_text("on Feb 29, 2024", TODAY)
    assert new == "on Feb 28, 2027"
    new, _, _, _ = shift_text("February 25-29, 2024", TODAY)
    assert new == "February 25-March 1, 2027"


def test_bare_years_are_left_and_noted():
    new, _, _, notes = shift_text("papers announced in December 2023 accepted for AAAI 2024", TODAY)
    assert new == "papers announced in December 2026 accepted for AAAI 2024"
    assert notes == ["bare year(s) 2024 left as they are"]


def test_refresh_touches_booking_and_google_flights_unless_told_otherwise():
    rows = [{"web_name": "Booking", "id": "Booking--1", "ques": "stay on March 3, 2024", "web": "https://b.test/"},
            {"web_name": "ESPN", "id": "ESPN--1", "ques": "games on December 25, 2023", "web": "https://e.test/"},
            {"web_name": "Apple", "id": "Apple--9", "ques": "pickup on January 10, 2024", "web": "https://a.test/"},
            {"web_name": "Google Flights", "id": "Google Flights--0", "ques": "on December 28th", "web": "x"}]
    new, changes = refresh(rows, TODAY)
    assert [c["task_id"] for c in changes] == ["Booking--1"]
    assert new[0] == {"web_name": "Booking", "id": "Booking--1", "ques": "stay on March 3, 2027", "web": "https://b.test/"}
    assert list(new[0]) == list(rows[0]) and new[1] is rows[1] and new[3] is rows[3]
    assert rows[0]["ques"] == "stay on March 3, 2024"       # the input is not changed
    _, changes = refresh(rows, TODAY, sites=["ESPN"], task_ids=["Apple--9"])
    assert [c["task_id"] for c in changes] == ["ESPN--1", "Apple--9"]
    assert changes[1]["fragments"] == [("January 10, 2024", "January 10, 2027")]


def test_refresh_file_refuses_to_overwrite_its_input_and_keeps_other_lines(tmp_path, capsys):
    src = tmp_path / "wv.jsonl"
    lines = [json.dumps({"web_name": "Booking", "id": "Booking--1", "ques": "on March 3, 2024 caf\u00e9",
                         "web": "https://b.test/"}),
             json.dumps({"web_name": "ESPN", "id": "ESPN--1", "ques": "on  December 25, 2023",
                         "web": "https://e.test/"}, separators=(",", ":"))]
    src.write_text("\n".join(lines) + "\n")
    assert cli_main(["tasks", "refresh-dates", str(src), "--out", str(src), "--today", "2026-07-15"]) == 2
    assert "is the input file" in capsys.readouterr().err
    dst = tmp_path / "out.jsonl"
    assert cli_main(["tasks", "refresh-dates", str(src), "--out", str(dst), "--today", "2026-07-15"]) == 0
    out = capsys.readouterr().out
    assert "Booking--1: +3 years: 'March 3, 2024' -> 'March 3, 2027'" in out and "1 task(s) changed" in out
    got = dst.read_bytes().split(b"\n")
    assert got[0] == lines[0].replace("2024", "2027").encode() and got[1] == lines[1].encode() and got[2] == b""
    assert cli_main(["tasks", "refresh-dates", str(src), "--out", str(dst), "--task-ids", "nope"]) == 2
    assert "not in" in capsys.readouterr().err


def _full_dates(text: str) -> list[dt.date]:
    """Every fully written date, read independently of the code under test."""
    dates = []
    for m in re.finditer(r"\b([A-Z][a-z]+)\.? (\d{1,2})(?:st|nd|rd|th)?,? ((?:19|20)\d\d)\b", text):
        if m[1].lower() in MONTHS:
            dates.append(dt.date(int(m[3]), MONTHS[m[1].lower()], int(m[2])))
    for m in re.finditer(r"\b(\d{1,2}) ([A-Z][a-z]+),? ((?:19|20)\d\d)\b", text):
        if m[2].lower() in MONTHS:
            dates.append(dt.date(int(m[3]), MONTHS[m[2].lower()], int(m[1])))
    for m in re.finditer(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d\d)\b", text):
        dates.append(dt.date(int(m[3]), int(m[2]), int(m[1])))
    return dates


@pytest.mark.parametrize("today", [dt.date(2026, 7, 15), dt.date(2025, 3, 1), dt.date(2031, 12, 31)])
def test_the_real_webvoyager_file(tmp_path, today):
    dst = tmp_path / "WebVoyager_data.refreshed.jsonl"
    changes = refresh_file(WV, dst, today)
    old_lines, new_lines = WV.read_bytes().split(b"\n"), dst.read_bytes().split(b"\n")
    assert len(old_lines) == len(new_lines)
    changed_ids = {c["task_id"] for c in changes if c["fragments"]}
    assert len(changed_ids) >= 60
    for old_line, new_line in zip(old_lines, new_lines):
        if not old_line.strip():
            assert new_line == old_line
            continue
        old, new = json.loads(old_line), json.loads(new_line)
        assert list(new) == list(old)
        if old["web_name"] not in ("Booking", "Google Flights"):
            assert new_line == old_line                           # every other task: byte-identical
            continue
        assert {k: v for k, v in new.items() if k != "ques"} == {k: v for k, v in old.items() if k != "ques"}
        assert (new["ques"] != old["ques"]) == (old["id"] in changed_ids)
        years = [int(y) for y in re.findall(r"\b(?:19|20)\d\d\b", new["ques"])]
        assert all(y >= today.year for y in years), new["ques"]
        assert all(d >= today for d in _full_dates(new["ques"])), new["ques"]
        # a range stays a range of the same length: every distance between the task's dates is kept
        before, after = [d for p in find_dates(old["ques"]) for d in p.dates], \
            [d for p in find_dates(new["ques"]) for d in p.dates]
        assert len(before) == len(after)
        assert [(b - before[0]).days for b in before] == [(a - after[0]).days for a in after], new["ques"]
        # the words around the dates are the same
        assert re.sub(r"\d+", "#", old["ques"]).split() == re.sub(r"\d+", "#", new["ques"]).split() \
            or "29 February" in json.dumps([c for c in changes if c["task_id"] == old["id"]])
    assert len(load_tasks(dst)) == 643


def test_the_known_forms_of_the_real_file_are_all_read():
    """Every year written in a Booking or Google Flights task belongs to a date the refresh understands."""
    for line in WV.read_text().splitlines():
        row = json.loads(line)
        if row["web_name"] not in ("Booking", "Google Flights"):
            continue
        covered = [(p.start, p.end) for p in find_dates(row["ques"])]
        for m in re.finditer(r"\b(?:19|20)\d\d\b", row["ques"]):
            assert any(s <= m.start() < e for s, e in covered), row["ques"]


# ============================================================================================== fetch


@pytest.fixture
def mirror():
    """A dataset host: `routes[path] = (status, body, token)`; a route with a token wants it as a bearer."""
    routes: dict[str, tuple[int, bytes, str | None]] = {}

    def serve(req: Request) -> Reply:
        status, body, token = routes.get(req.path, (404, b"Entry not found", None))
        if token is not None and req.header("Authorization") != f"Bearer {token}":
            status, body = 401, b"Access to dataset is restricted. You must be authenticated."
        return Reply(status, body)

    with StubServer(default=serve) as server:
        yield server.url, routes


OM2W_PATH = "/datasets/osunlp/Online-Mind2Web/resolve/{rev}/Online_Mind2Web.json"
WV_PATH = "/MinorJerry/WebVoyager/{rev}/data/WebVoyager_data.jsonl"
SMALL = json.dumps([{"task_id": "a1", "confirmed_task": "Find a thing", "website": "https://x.test/",
                     "reference_length": 3, "level": "easy"}]).encode()


def fetch(base: str, *args: str, capsys) -> tuple[int, str, str]:
    code = cli_main(["tasks", "fetch", *args, "--base-url", base])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_fetch_webvoyager_at_the_pinned_commit(tmp_path, mirror, capsys):
    base, routes = mirror
    routes[WV_PATH.format(rev="5a78967")] = (200, WV.read_bytes(), None)
    code, out, err = fetch(base, "webvoyager", "--to", str(tmp_path), capsys=capsys)
    assert code == 0, err
    assert "643 tasks" in out and "checksum ok (pinned)" in out
    assert (tmp_path / "WebVoyager_data.jsonl").read_bytes() == WV.read_bytes()
    code, out, _ = fetch(base, "webvoyager", "--to", str(tmp_path), capsys=capsys)
    assert code == 0 and "already up to date" in out


def test_fetch_online_mind2web_from_main_and_pinned(tmp_path, mirror, capsys, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    base, routes = mirror
    routes[OM2W_PATH.format(rev="main")] = (200, OM2W.read_bytes(), None)
    code, out, err = fetch(base, "om2w", "--to", str(tmp_path / "a"), capsys=capsys)
    assert code == 0, err
    assert "300 tasks" in out and "not pinned; this is the known Online-Mind2Web, March 2026 revision" in out
    code, out, err = fetch(base, "om2w", "--revision", "2026-03", "--to", str(tmp_path / "b"), capsys=capsys)
    assert code == 0 and "checksum ok (pinned)" in out
    assert hashlib.sha256((tmp_path / "b" / "Online_Mind2Web.json").read_bytes()).hexdigest() == \
        PINS[("om2w", "2026-03")].sha256


def test_a_checksum_mismatch_writes_nothing(tmp_path, mirror, capsys):
    base, routes = mirror
    routes[OM2W_PATH.format(rev="main")] = (200, SMALL, None)
    code, _, err = fetch(base, "om2w", "--revision", "2026-03", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "checksum mismatch" in err and "Nothing was written" in err and "--revision main" in err
    assert not any(tmp_path.iterdir())
    code, out, err = fetch(base, "om2w", "--sha256", hashlib.sha256(SMALL).hexdigest(), "--to", str(tmp_path),
                           capsys=capsys)
    assert code == 0 and "1 tasks" in out and "checksum ok" in out


def test_a_gated_dataset_needs_hf_token(tmp_path, mirror, capsys, monkeypatch):
    base, routes = mirror
    routes[OM2W_PATH.format(rev="main")] = (200, SMALL, "hf_secret")
    monkeypatch.setattr(fetch_module, "sends_token", lambda url: True)   # the local mirror stands in for Hugging Face
    monkeypatch.delenv("HF_TOKEN", raising=False)
    code, _, err = fetch(base, "om2w", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "may be gated" in err and "HF_TOKEN is not set" in err
    monkeypatch.setenv("HF_TOKEN", "wrong")
    code, _, err = fetch(base, "om2w", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "HF_TOKEN is set but was refused" in err and "wrong" not in err
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    code, out, err = fetch(base, "om2w", "--to", str(tmp_path), capsys=capsys)
    assert code == 0, err
    assert "not pinned and not a known revision" in out


def test_hf_token_goes_to_hugging_face_over_https_only(tmp_path, mirror, capsys, monkeypatch):
    """A mirror given with --base-url (or Hugging Face over plain http) never sees HF_TOKEN: it went to any host."""
    base, routes = mirror
    routes[OM2W_PATH.format(rev="main")] = (200, SMALL, "hf_secret")   # a mirror that would take the token
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    code, _, err = fetch(base, "om2w", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "HF_TOKEN goes to https://huggingface.co only" in err and "hf_secret" not in err
    assert not any(tmp_path.iterdir())
    assert fetch_module.sends_token("https://huggingface.co" + OM2W_PATH.format(rev="main"))
    for url in ("http://huggingface.co/x", "https://hf-mirror.example/x", "https://huggingface.co.evil.example/x",
                "https://evil.example/huggingface.co"):
        assert not fetch_module.sends_token(url), url


class TrickleOrFlood:
    """A dataset host that answers 200 and then sends its body one byte a second (`trickle`) or without end
    (`flood`): the fetch must stop at its deadline or its cap, holding nothing."""

    def __init__(self, mode: str):
        self.mode, self.server = mode, socket.create_server(("127.0.0.1", 0))
        self.url = f"http://user:s3cretpw@127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self.server.accept()
            with conn:
                conn.recv(65536)
                if self.mode == "trickle":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                    for _ in range(60):
                        conn.sendall(b"[")
                        time.sleep(1)
                else:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    chunk = b"x" * (1 << 20)
                    while True:
                        conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    def close(self) -> None:
        self.server.close()


@pytest.mark.parametrize("mode, says", [("trickle", "deadline"), ("flood", "bytes")])
def test_a_fetch_has_one_deadline_and_a_cap_and_never_shows_the_urls_password(tmp_path, monkeypatch, mode, says):
    """A host that trickles its body (each byte within httpx's read timeout) is cut at the one deadline; one that
    sends without end is cut at the cap (it grew the process by 270 MB a second); the URL's password is never said."""
    from om2w_tui.benchmarks.fetch import FetchError
    from om2w_tui.benchmarks.fetch import fetch as fetch_file

    monkeypatch.setattr(fetch_module, "TASK_FILE_LIMIT", 8 << 20)
    host = TrickleOrFlood(mode)
    began = time.monotonic()
    try:
        with pytest.raises(FetchError) as e:
            fetch_file("webvoyager", to=tmp_path, base_url=host.url, timeout=3.0)
    finally:
        host.close()
    assert says in str(e.value) and "nothing was written" in str(e.value) and time.monotonic() - began < 20
    assert "s3cretpw" not in str(e.value) and "***" in str(e.value) and not any(tmp_path.iterdir())


def test_no_url_password_in_any_message(tmp_path, mirror, capsys):
    base, _ = mirror
    with_password = base.replace("http://", "http://user:s3cretpw@")
    code, _, err = fetch(with_password, "webvoyager", "--revision", "deadbee", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "HTTP 404" in err and "s3cretpw" not in err and "***@" in err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://user:s3cretpw@127.0.0.1:{s.getsockname()[1]}"
    code, _, err = fetch(closed, "webvoyager", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "cannot reach" in err and "s3cretpw" not in err


def test_not_found_not_a_task_file_no_network_and_an_existing_file(tmp_path, mirror, capsys):
    base, routes = mirror
    code, _, err = fetch(base, "webvoyager", "--revision", "deadbee", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "HTTP 404" in err and "--revision 'deadbee'" in err
    routes[WV_PATH.format(rev="main")] = (200, b"<html>not json</html>", None)
    code, _, err = fetch(base, "webvoyager", "--revision", "main", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "not a usable task file" in err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    code, _, err = fetch(closed, "webvoyager", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "cannot reach 127.0.0.1" in err and "--tasks PATH" in err
    assert not any(tmp_path.iterdir())
    (tmp_path / "Online_Mind2Web.json").write_text("[]")
    routes[OM2W_PATH.format(rev="main")] = (200, SMALL, None)
    code, _, err = fetch(base, "om2w", "--to", str(tmp_path), capsys=capsys)
    assert code == 2 and "--force" in err
    code, out, err = fetch(base, "om2w", "--to", str(tmp_path), "--force", capsys=capsys)
    assert code == 0 and (tmp_path / "Online_Mind2Web.json").read_bytes() == SMALL


def test_a_run_on_a_refreshed_file_records_the_refresh_in_its_manifest(tmp_path):
    src = tmp_path / "wv.jsonl"
    src.write_text(json.dumps({"web_name": "Booking", "id": "Booking--1", "web": "https://www.booking.com/",
                                "ques": "Find a hotel in Paris for February 14-21, 2024."}) + "\n" +
                   json.dumps({"web_name": "ArXiv", "id": "ArXiv--1", "web": "https://arxiv.org/",
                                "ques": "Papers submitted in January 2024."}) + "\n")
    dst = tmp_path / "wv.refreshed.jsonl"
    changes = refresh_file(src, dst, dt.date(2026, 11, 30))
    assert changes and "2027" in dst.read_text() and "January 2024" in dst.read_text()
    cfg = RunConfig(out=tmp_path / "run", bench="webvoyager", tasks=dst, model="oracle", chromium=STAND_IN_CHROMIUM)
    pre = preflight(cfg)
    cfg.out.mkdir()
    write_manifest(pre)
    note = json.loads((cfg.out / "run.json").read_text())["task_refresh"]
    assert note["source"] == str(src.resolve()) and note["today"] == "2026-11-30" and note["changes"]
    dst.write_text(dst.read_text() + "\n")          # edited by hand since: the note no longer describes it
    write_manifest(preflight(cfg))
    assert json.loads((cfg.out / "run.json").read_text())["task_refresh"] is None
