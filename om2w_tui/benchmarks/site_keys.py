"""What a website is, for pacing: the host (and port) of a task's start URL, without `www.`."""

from __future__ import annotations

from urllib.parse import urlsplit


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
