"""The long page: one page of lighthouses, longer than the window, with the visitor centre in its footer."""

from __future__ import annotations

import re
from html import escape

from om2w_tui.offline.sites.common import SiteHandler, load_data, render_page

_LONGPAGE_NOTES = [
    "The keepers kept a daily log of passing ships, weather and the state of the lamp.",
    "A fog signal was added after a run of groundings in the winter storms.",
    "The lantern room still holds its original Fresnel lens, now lit by an electric lamp.",
    "Seabirds nest on the ledges below the tower from April to July.",
    "The keepers' cottages were sold and are now holiday lets.",
    "At low tide a causeway of shingle joins the rock to the mainland.",
]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class LongPageHandler(SiteHandler):
    NAME = "longpage"
    ROUTES = [("GET", r"/", "route_home")]

    def route_home(self) -> None:
        data = load_data("longpage.json")
        toc = "".join(
            f'<li><a id="toc-{_slug(h["name"])}" href="#{_slug(h["name"])}">{escape(h["name"])}</a></li>' for h in data["lighthouses"]
        )
        sections = ""
        for number, light in enumerate(data["lighthouses"], start=1):
            name = escape(light["name"])
            sections += (
                f'<section class="entry" id="{_slug(light["name"])}"><h2>{number}. {name}</h2>'
                f'<p>The {name} tower, first lit in {light["built"]}, stands {light["height_m"]} metres tall; '
                f'{light["steps"]} steps lead up to the lantern room.</p>'
                f'<p>{name} was automated in {light["automated"]}, when its last resident keeper left.</p>'
                f"<p>{escape(_LONGPAGE_NOTES[number % len(_LONGPAGE_NOTES)])} "
                f"{escape(_LONGPAGE_NOTES[(number * 5 + 2) % len(_LONGPAGE_NOTES)])}</p></section>"
            )
        centre = data["visitor_centre"]
        footer = (
            f'<footer class="site" id="visitor-centre"><h2>Visitor centre</h2><p>{escape(centre["name"])}, {escape(centre["address"])}.</p>'
            f'<p>Phone: {escape(centre["phone"])}. Opening hours: {escape(centre["hours"])}.</p>'
            '<p><a id="back-to-top" href="#top">Back to top</a></p></footer>'
        )
        page = render_page(
            data["title"],
            f'<h1 id="top">{escape(data["title"])}</h1><p>{escape(data["intro"])}</p>'
            f'<nav aria-label="Contents"><h2>Contents</h2><ol id="contents">{toc}</ol></nav>{sections}',
            footer=footer,
        )
        self.send_body(200, page, "text/html; charset=utf-8")
