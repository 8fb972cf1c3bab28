"""What a website is, for pacing: the host (and port) of a task's start URL, without `www.`; and the name a person
reads for it (`site_name`), the same in the console's Sites panel and in the report."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

_TEMPLATE = re.compile(r"\{(\w+)\}.*")   # an offline suite task file's website: {shop}/...


def site_key(url: str) -> str:
    parts = urlsplit(url)
    # hostname: lower case, without userinfo or the brackets of an IPv6 address; a trailing dot is the same host
    host = (parts.hostname or "").rstrip(".")
    try:
        port = parts.port
    except ValueError:   # a port that is not a number: the host alone
        port = None
    if host.startswith("www."):
        host = host[4:]
    if ":" in host:      # IPv6: keep the brackets, so that the port stays apart
        host = f"[{host}]"
    # a default port is the same site; another port (local test sites) is another site
    if port in (None, 80, 443):
        return host
    return f"{host}:{port}"


def site_name(website: str, local: Mapping[str, str] | None = None) -> str:
    """A site as people read it: an offline task file's `{shop}/...` is `shop`; an address a run serves under a name
    (`local`: site key -> name, the offline suite's `127.0.0.1:PORT` -> `shop`) is that name; else its site key."""
    m = _TEMPLATE.fullmatch(website)
    if m:
        return m[1]
    key = site_key(website)
    return (local or {}).get(key, key)
