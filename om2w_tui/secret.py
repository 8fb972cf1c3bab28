"""Endpoint URLs, which may carry credentials (`https://user:pass@host/v1`), kept out of every file and message by
construction. An endpoint takes no query or fragment (`check_endpoint_url`); one in any other URL (`?api_key=...`, in
an error message, a page) is redacted wherever a URL is shown.

`EndpointURL` holds such a URL. Everything that shows it (`str`, `repr`, an f-string, `json.dumps(default=str)`, a
log line, a dataclass's repr) gets the redacted form: user:password and credential-like query values replaced by
`***`. The URL with its credentials comes out only through `for_client()`, which only the code that opens the
connection calls (the HTTP client: the endpoint check and probe, the worker's model client, the judge's client).
`without_credentials()` is the form that may be remembered (the launch form's last values): it still reaches the
host, and the credentials are asked again.

`check_key_variable` checks the name of the environment variable a key is read from without ever showing what was
given (a key pasted in place of the name is the usual mistake).

`bare_environment` is the environment of a helper process that needs no secret (the preflight's headless
Chromium, a `chromium --version`): what a program needs to run, and nothing else, so no API key or token in the
caller's environment reaches a browser's `/proc/<pid>/environ`.

This module sits below the engine and the episode packages (both import it: the worker opens the URL too) and
imports nothing of the package."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
# a query (or fragment) key that may carry a credential: any key that holds one of these, whatever its case and
# separators (`api_key`, `apiKey`, `X-Amz-Security-Token`, `authorization`, `bearer`, `client_secret`, `sig`, ...).
# Too wide does no harm: a value is only hidden where the URL is shown, never changed where it is used.
_SECRET_WORDS = ("key", "token", "secret", "pass", "pwd", "auth", "bearer", "sig", "credential", "session",
                 "cookie", "jwt")


def is_secret_key(name: str) -> bool:
    """Whether a query key looks like it carries a credential."""
    flat = re.sub(r"[^a-z]", "", name.lower())
    return any(word in flat for word in _SECRET_WORDS)


def _redact_pairs(text: str, drop: bool) -> str:
    """A query (or a `k=v` fragment) with credential-like values masked (`drop`: removed)."""
    if not text or "=" not in text:
        return text
    pairs = parse_qsl(text, keep_blank_values=True)
    if not any(is_secret_key(k) for k, _ in pairs):
        return text
    if drop:
        return urlencode([(k, v) for k, v in pairs if not is_secret_key(k)])
    return urlencode([(k, MASK if is_secret_key(k) else v) for k, v in pairs], safe="*")


def _rewrite(url: str, drop: bool) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        host = netloc.rsplit("@", 1)[1]
        netloc = host if drop else f"{MASK}@{host}"
    query = _redact_pairs(parts.query, drop)
    fragment = _redact_pairs(parts.fragment, drop)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_url(url: str | None) -> str | None:
    """The URL with any user:password and credential query values replaced by `***`; other URLs unchanged; a URL
    that cannot be read at all becomes `***` (it cannot be told what in it is secret)."""
    if not url:
        return url
    try:
        return _rewrite(str(url), drop=False)
    except ValueError:
        return MASK


_URL_IN_TEXT = re.compile(r"\bhttps?://[^\s'\"<>]+", re.I)


def redact_text(text: str) -> str:
    """Free text (an error message, a log line) with every http(s) URL in it redacted."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)) or "", text)


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


# what a program (a browser started to answer a question) needs of its caller's environment
_BARE = re.compile(r"PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|LC_[A-Z]+|TZ|TMPDIR|DISPLAY|WAYLAND_DISPLAY|"
                   r"XDG_RUNTIME_DIR|FONTCONFIG_[A-Z]+|LD_LIBRARY_PATH")


def bare_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` with only the variables a helper process needs to run (no key, no token, whatever their names)."""
    return {k: v for k, v in base.items() if _BARE.fullmatch(k)}


# the name of the environment variable a key is read from (--api-key-env, --judge-api-key-env, a plan's api_key_env)
KEY_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


# a key that is also a variable's name by its letters: a token's prefix (Hugging Face, GitHub, AWS), or a long run of
# mixed-case letters and digits without a `_` (no variable is named so; a random key is)
_KEY_LIKE = re.compile(r"hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}"
                       r"|(?:AKIA|ASIA)[A-Z0-9]{16}|(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{20,}")
_GIVE_NAME = ("give the variable's NAME, e.g. OPENAI_API_KEY, and export the key in it (export OPENAI_API_KEY=...)")


def check_key_variable(name: str) -> str:
    """'' when `name` can name the environment variable holding a key, else what is wrong and what to do, never
    showing `name`: what is given in its place is often the key itself, which must not reach a terminal or a log
    (nor a file, as the variable's name would be, were a key taken for one)."""
    if not KEY_VARIABLE.fullmatch(name):
        return ("not an environment variable's name (letters, digits and _, not starting with a digit; what was "
                f"given is not shown, as it may be the key itself): {_GIVE_NAME}")
    if _KEY_LIKE.fullmatch(name):
        return f"looks like a key, not an environment variable's name (not shown): {_GIVE_NAME}"
    return ""


class URLError(ValueError):
    """A URL that cannot be an endpoint; the message says why (never the URL's credentials)."""


def check_http_url(url: str) -> str:
    """'' when `url` is an http(s) URL a client can open (a host, a port in 0-65535, no control characters or lone
    surrogates), else what is wrong with it (naming no credential)."""
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in url):
        return "holds a control character or a lone surrogate"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:   # `http://[abc/x`, `http://h:99999/`, `http://h:x/`
        return f"is not a URL ({str(e).split(':')[0]})"
    if parts.scheme not in ("http", "https"):
        return "is not an http(s) URL"
    if not parts.hostname:
        return "names no host"
    if port is not None and not 0 < port <= 65535:
        return "has a port outside 1-65535"
    return ""


def check_endpoint_url(url: str) -> str:
    """'' when `url` can be an endpoint's base URL, else what is wrong with it: `check_http_url`, and no query or
    fragment (the model and judge clients append `/chat/completions` to the URL as text: `/v1?x=1` would be asked
    as `/v1?x=1/chat/completions`, failing every call). The one check of every endpoint flag and field."""
    if problem := check_http_url(url):
        return problem
    parts = urlsplit(url)
    if parts.query or "?" in url:
        return ("has a query (?...): the client appends /chat/completions to the URL, so an endpoint carries none; "
                "give the key in the variable --api-key-env names, not in the URL")
    if parts.fragment or "#" in url:
        return "has a fragment (#...): the client appends /chat/completions to the URL, so an endpoint carries none"
    return ""


class EndpointURL:
    """An endpoint's URL that shows only its redacted form; `for_client()` gives the URL to open."""

    __slots__ = ("_url",)

    def __init__(self, url: str | EndpointURL):
        self._url = url.for_client() if isinstance(url, EndpointURL) else str(url)

    @classmethod
    def parse(cls, text: str) -> EndpointURL:
        """A checked endpoint URL; raises URLError saying what is wrong (the message shows the redacted URL)."""
        text = text.strip()
        problem = check_endpoint_url(text)
        if problem:
            raise URLError(f"{ascii(redact_url(text))[1:-1]}: {problem}")
        return cls(text)

    def for_client(self) -> str:
        """The URL with its credentials, for the HTTP client that opens it, and for nothing else."""
        return self._url

    def without_credentials(self) -> str:
        """The URL with its user:password and credential query parameters removed: what may be remembered."""
        try:
            return _rewrite(self._url, drop=True)
        except ValueError:
            return ""

    @property
    def shown(self) -> str:
        return redact_url(self._url) or ""

    @property
    def has_credentials(self) -> bool:
        return self.shown != self._url

    def rstrip(self, chars: str = "/") -> EndpointURL:
        return EndpointURL(self._url.rstrip(chars))

    def join(self, path: str) -> EndpointURL:
        """`<url>/<path>` (before a query the base URL carries, as `?api-version=`), still redacted where shown."""
        parts = urlsplit(self._url)
        joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
        return EndpointURL(urlunsplit((parts.scheme, parts.netloc, joined, parts.query, parts.fragment)))

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"EndpointURL({self.shown!r})"

    def __format__(self, spec: str) -> str:
        return format(self.shown, spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EndpointURL) and other._url == self._url

    def __hash__(self) -> int:
        return hash(("EndpointURL", self._url))

    def __reduce__(self) -> tuple[type[EndpointURL], tuple[str]]:
        # pickled whole where a run hands its settings to another process of its own (Ray, a worker)
        return EndpointURL, (self._url,)


def reveal(url: str | EndpointURL | None) -> str | None:
    """The URL to open, for a client that may be handed either a plain string or an EndpointURL."""
    return url.for_client() if isinstance(url, EndpointURL) else url
