"""Bot checks and CAPTCHAs: what a page that blocks the agent looks like. The site's pacing widens when it is
seen (the scheduler's job); this module only tells a block page from a page. The same probe of the page says which
page an episode ended on (`last_page`: its URL, title and main document's HTTP status, kept in `result.json`)."""

from __future__ import annotations

import json
import re
from typing import Any

from om2w_tui.benchmarks.episode_folder import LastPage

# run in the page: the main document's HTTP status (PerformanceNavigationTiming.responseStatus: 0 where the browser
# has none, as on its own error page), its URL, its title, its frames and the start of its markup
PROBE_JS = """() => JSON.stringify({
  url: location.href,
  status: ((performance.getEntriesByType('navigation') || [])[0] || {}).responseStatus || 0,
  title: document.title || '',
  frames: Array.from(document.querySelectorAll('iframe')).map(f => f.src || '').slice(0, 50),
  html: (document.documentElement ? document.documentElement.outerHTML : '').slice(0, 30000)
})"""

_SIGNS: list[tuple[str, re.Pattern[str]]] = [
    ("Cloudflare challenge", re.compile(r"challenges\.cloudflare\.com|cf-challenge|cf_chl_|cf-turnstile|"
                                        r"<title>\s*just a moment\.\.\.", re.I)),
    ("reCAPTCHA", re.compile(r"google\.com/recaptcha|recaptcha/api2|class=\"g-recaptcha\"", re.I)),
    ("hCaptcha", re.compile(r"hcaptcha\.com/|class=\"h-captcha\"", re.I)),
    ("bot check", re.compile(r"<title>\s*(access denied|attention required|are you a robot\??|"
                             r"pardon our interruption)", re.I)),
]


def detect_block(info: dict[str, Any]) -> str | None:
    """The kind of block `info` (what PROBE_JS returned) shows, or None for an ordinary page."""
    status = int(info.get("status") or 0)
    if status in (403, 429):
        return f"HTTP {status} on the main document"
    text = " ".join([f"<title>{info.get('title', '')}</title>", " ".join(info.get("frames") or []),
                     str(info.get("html") or "")])
    for name, pattern in _SIGNS:
        if pattern.search(text):
            return name
    return None


def last_page(info: dict[str, Any]) -> dict[str, Any]:
    """What `result.json` keeps of the page an episode ended on (`info`: what PROBE_JS returned): its URL, its title
    and its main document's HTTP status (left out where the browser has none)."""
    page = LastPage.of(info)
    return page.to_json() if page is not None else {}


async def probe_page(session: Any) -> dict[str, Any] | None:
    """What PROBE_JS reads of the session's current page; None when the page cannot be read."""
    try:
        page = await session.get_current_page()
        if page is None:
            return None
        info = json.loads(await page.evaluate(PROBE_JS))
        return info if isinstance(info, dict) else None
    except Exception:
        return None


async def page_block(session: Any) -> str | None:
    """The block the session's current page shows, if any; None when the page cannot be read."""
    info = await probe_page(session)
    return detect_block(info) if info is not None else None
