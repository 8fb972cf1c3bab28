"""The wiki: a tree of guide pages with a side menu, and full-text search."""

from __future__ import annotations

from html import escape
from typing import Any

from om2w_tui.offline.sites.common import SiteHandler, load_data


def _inline_code(text: str) -> str:
    """Escape text and turn `backticks` into <code> spans."""
    parts = escape(text).split("`")
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def _wiki_pages() -> dict[str, dict[str, Any]]:
    """Every wiki page keyed by its path ('getting-started/installation/ports'), each with its parent path."""
    pages: dict[str, dict[str, Any]] = {}

    def visit(node: dict[str, Any], parent: str) -> None:
        path = f'{parent}/{node["slug"]}' if parent else node["slug"]
        pages[path] = {**node, "path": path, "parent": parent}
        for child in node.get("children", []):
            visit(child, path)

    for section in load_data("wiki.json")["sections"]:
        visit(section, "")
    return pages


def _wiki_text(page: dict[str, Any]) -> str:
    rows = " ".join(" ".join(row) for row in page.get("table", []))
    return f'{page["title"]} {" ".join(page["body"])} {rows}'.replace("`", "")


def wiki_search(query: str) -> list[dict[str, Any]]:
    words = query.lower().split()
    if not words:
        return []
    return [page for page in _wiki_pages().values() if all(word in _wiki_text(page).lower() for word in words)]


def _dom_id(path: str) -> str:
    return path.replace("/", "--")


class WikiHandler(SiteHandler):
    NAME = "wiki"
    ROUTES = [
        ("GET", r"/", "route_home"),
        ("GET", r"/guide/?", "route_guide"),
        ("GET", r"/guide/([a-z0-9/-]+?)/?", "route_page"),
        ("GET", r"/search", "route_search"),
    ]

    def header(self) -> str:
        return (
            '<header class="site">'
            '<a id="home-link" class="brand" href="/">Harbor DB Docs</a>'
            '<a id="guide-link" href="/guide/">Guide</a>'
            '<form id="search-form" action="/search" method="get" role="search">'
            f'<input id="search-input" name="q" type="text" placeholder="Search the docs" aria-label="Search the docs" value="{escape(self.query.get("q", ""))}">'
            '<button id="search-button" type="submit">Search</button></form></header>'
        )

    def footer(self) -> str:
        return '<footer class="site">Harbor DB documentation, version 3.2. Licensed CC BY 4.0.</footer>'

    def sidebar(self, current: str) -> str:
        """Top-level sections always; below them, only the branch that leads to the current page."""
        pages = _wiki_pages()

        def branch(node: dict[str, Any], parent: str) -> str:
            path = f'{parent}/{node["slug"]}' if parent else node["slug"]
            css = ' class="current"' if path == current else ""
            item = f'<li><a id="side-{_dom_id(path)}" href="/guide/{path}/"{css}>{escape(node["title"])}</a>'
            expanded = current == path or current.startswith(path + "/")
            if expanded and node.get("children"):
                item += "<ul>" + "".join(branch(child, path) for child in node["children"]) + "</ul>"
            return item + "</li>"

        sections = "".join(branch(pages[s["slug"]], "") for s in load_data("wiki.json")["sections"])
        return f'<aside class="sidebar" aria-label="Documentation navigation"><ul>{sections}</ul></aside>'

    def route_home(self) -> None:
        self.html(
            "Harbor DB Docs",
            "<h1>Harbor DB documentation</h1><p>Harbor DB is a distributed SQL database for small operations teams.</p>"
            '<p><a id="open-guide" href="/guide/">Read the guide</a> or use the search box above.</p>',
        )

    def route_guide(self) -> None:
        sections = "".join(
            f'<li><a id="nav-{s["slug"]}" href="/guide/{s["slug"]}/">{escape(s["title"])}</a> - {_inline_code(s["body"][0])}</li>'
            for s in load_data("wiki.json")["sections"]
        )
        self.html(
            "Guide - Harbor DB Docs",
            f'<div class="layout">{self.sidebar("")}<article><h1>Guide</h1><ul id="sections">{sections}</ul></article></div>',
        )

    def route_page(self, path: str) -> None:
        path = path.strip("/")
        page = _wiki_pages().get(path)
        if page is None:
            self.not_found()
            return
        pages = _wiki_pages()
        crumbs: list[str] = []
        walk = page["parent"]
        while walk:
            crumbs.insert(0, f'<a href="/guide/{walk}/">{escape(pages[walk]["title"])}</a>')
            walk = pages[walk]["parent"]
        crumbs.insert(0, '<a href="/guide/">Guide</a>')
        body = "".join(f"<p>{_inline_code(paragraph)}</p>" for paragraph in page["body"])
        if table := page.get("table"):
            head = "".join(f"<th>{escape(cell)}</th>" for cell in table[0])
            rows = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in table[1:])
            body += f'<table id="facts"><tr>{head}</tr>{rows}</table>'
        if children := page.get("children"):
            links = "".join(
                f'<li><a id="child-{child["slug"]}" href="/guide/{path}/{child["slug"]}/">{escape(child["title"])}</a></li>'
                for child in children
            )
            body += f'<h2>In this section</h2><ul id="children">{links}</ul>'
        self.html(
            f'{page["title"]} - Harbor DB Docs',
            f'<div class="layout">{self.sidebar(path)}<article>'
            f'<nav class="breadcrumbs" aria-label="Breadcrumbs">{" / ".join(crumbs)}</nav>'
            f'<h1 id="page-title">{escape(page["title"])}</h1>{body}</article></div>',
        )

    def route_search(self) -> None:
        query = self.query.get("q", "").strip()
        results = wiki_search(query)
        items = "".join(
            f'<li><a id="result-{_dom_id(p["path"])}" href="/guide/{p["path"]}/">{escape(p["title"])}</a> - {_inline_code(p["body"][0])}</li>'
            for p in results
        )
        listing = f'<ul class="results" id="results">{items}</ul>' if results else '<p id="no-results">No pages match your search.</p>'
        self.html(
            f"Search: {query} - Harbor DB Docs",
            f'<h1>Search results</h1><p id="result-summary">{len(results)} pages match "{escape(query)}".</p>{listing}',
        )
