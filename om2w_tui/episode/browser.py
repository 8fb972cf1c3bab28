"""The browser side of an episode: finding Chromium, browser-use's environment, and a fresh session.

`find_chromium` and `browser_use_env` import nothing heavy, so the console can call them for its preflight."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path
from typing import Any

CHROMIUM_ENV = ("OM2W_CHROMIUM", "CHROME_PATH")
_SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


class BrowserNotFound(RuntimeError):
    pass


def _playwright_browsers() -> list[str]:
    roots = [os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or "", str(Path.home() / ".cache" / "ms-playwright")]
    found: list[str] = []
    for root in filter(None, roots):
        for pattern in ("chromium-*/chrome-linux*/chrome", "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
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
        path = shutil.which(name)
        if path:
            return path
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


def make_session(executable: str, downloads: Path, user_data_dir: Path) -> Any:
    from browser_use import BrowserProfile, BrowserSession

    profile = BrowserProfile(
        executable_path=executable,
        headless=True,
        chromium_sandbox=os.geteuid() != 0,   # Chromium's sandbox cannot run as root
        enable_default_extensions=False,
        keep_alive=True,
        user_data_dir=str(user_data_dir),
        downloads_path=str(downloads),
        args=["--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--no-first-run", "--disable-quic"],
    )
    return BrowserSession(browser_profile=profile)
