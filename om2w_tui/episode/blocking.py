"""Bot checks and CAPTCHAs: what a page that blocks the agent looks like. The site's pacing widens when it is
seen (the scheduler's job); this module only tells a block page from a page."""

from __future__ import annotations

import json
import re
from typing import Any

# run in the page: the main document's HTTP status, its title, its frames and the start of its markup
PROBE_JS = """() => JSON.stringify({
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


async def page_block(session: Any) -> str | None:
    """The block the session's current page shows, if any; None when the page cannot be read."""
    try:
        page = await session.get_current_page()
        if page is None:
            return None
        raw = await page.evaluate(PROBE_JS)
        return detect_block(json.loads(raw))
    except Exception:
        return None
