"""What every offline site shares: its data files, the page frame and stylesheet, and `SiteHandler`, which routes
requests to `route_*` methods.

Every site also answers `GET /hang` by never replying (the request blocks until the server stops), for
fault tests of page-load timeouts.
"""

from __future__ import annotations

import re
from functools import cache
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from om2w_tui.json_input import load, read_bytes, text_of
from om2w_tui.offline.serving import QuietHandler

DATA_DIR = Path(str(resources.files("om2w_tui.offline").joinpath("data")))


@cache
def load_data(name: str) -> Any:
    return load(DATA_DIR / name)


@cache
def _stylesheet() -> str:
    return text_of(read_bytes(DATA_DIR / "site.css"), "site.css")


def money(amount: float) -> str:
    return f"${amount:,.2f}"


def render_page(title: str, body: str, *, header: str = "", footer: str = "") -> bytes:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{_stylesheet()}</style>\n</head>\n"
        f'<body>\n{header}\n<main id="content">\n{body}\n</main>\n{footer}\n</body>\n</html>\n'
    ).encode()


def options(choices: list[tuple[str, str]], selected: str) -> str:
    return "".join(
        f'<option value="{escape(value)}"{" selected" if value == selected else ""}>{escape(label)}</option>'
        for value, label in choices
    )


class SiteHandler(QuietHandler):
    """Routes requests to `route_*` methods declared in ROUTES as (method, path regex, method name)."""

    ROUTES: list[tuple[str, str, str]] = []
    NAME = "site"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        self.query = {key: values[-1] for key, values in parse_qs(split.query, keep_blank_values=True).items()}
        self.form: dict[str, str] = {}
        if method == "POST":
            body = self.read_body().decode("utf-8", "replace")
            self.form = {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}
        if method == "GET" and split.path == "/hang":
            self.wait_until_stopped()
            return
        if method == "GET" and split.path == "/favicon.ico":
            self.send_body(204, b"", "image/x-icon")
            return
        for route_method, pattern, handler_name in self.ROUTES:
            match = re.fullmatch(pattern, split.path)
            if route_method == method and match:
                getattr(self, handler_name)(*match.groups())
                return
        self.not_found()

    def html(self, title: str, body: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        page = render_page(title, body, header=self.header(), footer=self.footer())
        self.send_body(status, page, "text/html; charset=utf-8", headers)

    def redirect(self, location: str, headers: dict[str, str] | None = None) -> None:
        self.send_body(303, b"", "text/plain", {"Location": location, **(headers or {})})

    def not_found(self) -> None:
        self.html("Page not found", '<h1>Page not found</h1><p>This page does not exist. <a id="not-found-home" href="/">Go to the home page</a>.</p>', 404)

    def header(self) -> str:
        return ""

    def footer(self) -> str:
        return ""
