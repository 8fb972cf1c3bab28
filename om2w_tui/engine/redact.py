"""Secrets out of what a run writes: an endpoint URL may carry credentials (`https://user:pass@host/v1`,
`?api_key=...`), and such a URL is shown in messages and recorded in `run.json`. Only the redacted form is."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
# query parameters that carry a credential, by their usual names
_SECRET_PARAM = re.compile(r"(^|[_-])(key|apikey|token|secret|password|passwd|pwd|auth|sig|signature|credential)s?$|"
                           r"^(api[_-]?key|access[_-]?token|x-api-key)$", re.I)


def redact_url(url: str | None) -> str | None:
    """The URL with any user:password and credential query values replaced by `***`; other URLs unchanged."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_argv(argv: list[str]) -> list[str]:
    """A command line as recorded: every URL in it (`--vllm URL`, `--vllm=URL`) redacted."""
    out = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if not (arg.startswith("--") and eq):   # not --flag=value: the whole argument is the value
            flag, eq, value = "", "", arg
        if "://" in value:
            value = redact_url(value) or value
        out.append(flag + eq + value)
    return out
