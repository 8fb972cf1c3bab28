"""The browser side of an episode: finding Chromium, browser-use's environment, and a fresh session pinned to one
viewport, user agent, locale and timezone, with the clipboard open to pages.

`find_chromium`, `browser_use_env` and the settings' checks import nothing heavy, so the console can call them for
its preflight."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from om2w_tui.secret import bare_environment

if TYPE_CHECKING:   # browser-use ships its types; importing it at run time costs seconds, so only a worker does
    from browser_use import BrowserSession
    from cdp_use.cdp.browser.types import PermissionType

CHROMIUM_ENV = ("OM2W_CHROMIUM", "CHROME_PATH")
DEFAULT_VIEWPORT = "1280x800"      # a laptop's desktop Chrome window; the same on every host, with or without display
DEFAULT_LOCALE = "en-US"
DEFAULT_TIMEZONE = "America/New_York"
# what the seed grants at the start and at every step, so a site's "copy" button and a paste work
CLIPBOARD_PERMISSIONS: list[PermissionType] = ["clipboardReadWrite", "clipboardSanitizedWrite"]
_DESKTOP_UA = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 "
               "Safari/537.36")
_VIEWPORT = re.compile(r"(\d{3,5})x(\d{3,5})")
_LOCALE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*")
_SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


class BrowserNotFound(RuntimeError):
    pass


def _playwright_browsers() -> list[str]:
    roots = [os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or "", str(Path.home() / ".cache" / "ms-playwright")]
    found: list[str] = []
    for root in filter(None, roots):
        for pattern in ("chromium-*/chrome-linux*/chrome",
                        "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
                        "chromium_headless_shell-*/chrome-*/headless_shell"):
            found += sorted(glob.glob(os.path.join(root, pattern)), reverse=True)
    return found


def find_chromium(explicit: str | None = None) -> str:
    """--chromium, then $OM2W_CHROMIUM / $CHROME_PATH, then playwright's browsers, then the system's."""
    if explicit:
        path = shutil.which(explicit) or explicit
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise BrowserNotFound(f"--chromium {explicit}: not an executable file")
        return path
    for var in CHROMIUM_ENV:
        value = os.environ.get(var)
        if value:
            path = shutil.which(value) or value
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
            raise BrowserNotFound(f"${var}={value}: not an executable file")
    for path in _playwright_browsers():
        if os.access(path, os.X_OK):
            return path
    for name in _SYSTEM_NAMES:
        on_path = shutil.which(name)
        if on_path:
            return on_path
    raise BrowserNotFound(
        "no Chromium found. Install one with `playwright install chromium` (where downloads work), or your "
        "distribution's package (Debian/Ubuntu: `apt-get install chromium`), or pass --chromium PATH.")


def browser_use_env(config_dir: str | Path) -> dict[str, str]:
    """browser-use's settings for a harness: no telemetry, no cloud, no version check, no extension download,
    hands off the process's logging, and its leftovers in a folder we own."""
    return {
        "ANONYMIZED_TELEMETRY": "false",
        "BROWSER_USE_CLOUD_SYNC": "false",
        "BROWSER_USE_CLOUD_HINTS": "false",
        "BROWSER_USE_VERSION_CHECK": "false",
        "BROWSER_USE_DISABLE_EXTENSIONS": "1",
        "BROWSER_USE_SETUP_LOGGING": "false",
        "BROWSER_USE_LOGGING_LEVEL": "warning",
        "BROWSER_USE_CONFIG_DIR": str(config_dir),
    }


def parse_viewport(text: str) -> tuple[int, int]:
    """'1280x800' -> (1280, 800); raises ValueError naming the flag."""
    m = _VIEWPORT.fullmatch(str(text).strip().lower())
    if not m or not (320 <= int(m[1]) <= 7680 and 240 <= int(m[2]) <= 4320):
        raise ValueError(f"--viewport {text}: give WIDTHxHEIGHT in CSS pixels, e.g. {DEFAULT_VIEWPORT} "
                         f"(320x240 to 7680x4320)")
    return int(m[1]), int(m[2])


def check_browser_settings(settings: dict[str, Any]) -> str:
    """'' when viewport, locale and timezone are usable, else what is wrong, naming the flag."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only the checks need the time zone database

    try:
        parse_viewport(settings.get("viewport", DEFAULT_VIEWPORT))
    except ValueError as e:
        return str(e)
    locale = str(settings.get("locale", DEFAULT_LOCALE))
    if not _LOCALE.fullmatch(locale):
        return f"--locale {locale}: give a BCP 47 language tag such as en-US or de-DE"
    tz = str(settings.get("timezone", DEFAULT_TIMEZONE))
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return f"--timezone {tz}: not an IANA time zone (e.g. America/New_York, Europe/Berlin, UTC)"
    ua = str(settings.get("user_agent", "auto"))
    if not ua.strip() or "\n" in ua:
        return "--user-agent: give a user agent string on one line, or auto"
    return ""


def desktop_user_agent(executable: str) -> str:
    """The user agent a desktop Chrome of the same version sends: headless Chromium says `HeadlessChrome`, which
    bot walls look for first, and a version unlike the browser's own (its client hints) is a tell too."""
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=20,
                             env=bare_environment(os.environ)).stdout   # no key of the caller's reaches a browser
    except (OSError, subprocess.SubprocessError):
        out = ""
    m = re.search(r"(\d+)\.\d+\.\d+", out)
    return _DESKTOP_UA.format(major=m[1] if m else "131")


def resolve_browser(settings: dict[str, Any], executable: str) -> dict[str, Any]:
    """The settings with `user_agent: auto` replaced by the string the browser will send."""
    if settings.get("user_agent", "auto") == "auto":
        return {**settings, "user_agent": desktop_user_agent(executable)}
    return dict(settings)


def make_session(executable: str, downloads: Path, user_data_dir: Path,
                 settings: dict[str, Any] | None = None) -> BrowserSession:
    """A fresh browser-use session pinned to `settings` (viewport, user_agent, locale, timezone)."""
    from browser_use import BrowserProfile, BrowserSession  # browser-use (slow to import) only inside a worker
    from browser_use.browser.profile import ViewportSize  # as above

    settings = resolve_browser({"viewport": DEFAULT_VIEWPORT, "user_agent": "auto", "locale": DEFAULT_LOCALE,
                                "timezone": DEFAULT_TIMEZONE, **(settings or {})}, executable)
    width, height = parse_viewport(settings["viewport"])
    profile = BrowserProfile(
        executable_path=executable,
        headless=True,
        chromium_sandbox=os.geteuid() != 0,   # Chromium's sandbox cannot run as root
        enable_default_extensions=False,
        keep_alive=True,
        user_data_dir=str(user_data_dir),
        downloads_path=str(downloads),
        viewport=ViewportSize(width=width, height=height),
        screen=ViewportSize(width=width, height=height),
        window_size=ViewportSize(width=width, height=height),
        device_scale_factor=1.0,
        user_agent=settings["user_agent"],
        permissions=list[str](CLIPBOARD_PERMISSIONS),
        args=["--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--no-first-run", "--disable-quic", f"--lang={settings['locale']}",
              f"--accept-lang={settings['locale']},{settings['locale'].split('-')[0]}"],
    )
    return BrowserSession(browser_profile=profile)


async def start_session(session: BrowserSession, settings: dict[str, Any] | None = None) -> None:
    """Start the browser in the pinned time zone (Chromium takes it from TZ when it starts, and its renderers from
    it), then open the clipboard to pages."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = str((settings or {}).get("timezone") or DEFAULT_TIMEZONE)
    try:
        await session.start()
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
    await grant_clipboard(session)


async def grant_clipboard(session: BrowserSession, _agent: object = None) -> None:
    """Let pages read and write the clipboard (a site's "copy" button, a paste), as the seed does at the start and
    at every step's start; usable as an Agent's `on_step_start`. A failed grant must not fail the step."""
    try:
        await session.cdp_client.send.Browser.grantPermissions(params={"permissions": CLIPBOARD_PERMISSIONS})
    except Exception:
        pass
