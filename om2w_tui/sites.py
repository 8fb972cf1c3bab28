"""What a website is, for pacing: the host (and port) of a task's start URL, without `www.`."""

from __future__ import annotations

from urllib.parse import urlsplit


def site_key(url: str) -> str:
    netloc = urlsplit(url).netloc.lower().rsplit("@", 1)[-1]
    host, _, port = netloc.partition(":")
    if host.startswith("www."):
        host = host[4:]
    # a default port is the same site; another port (local test sites) is another site
    if port in ("", "80", "443"):
        return host
    return f"{host}:{port}"
