"""Shared test settings: browser-use's environment (no network, no logging takeover) for every test process."""

from __future__ import annotations

import os
import shutil

import pytest

from om2w_tui.episode.browser import browser_use_env

os.environ.update(browser_use_env(os.path.join(os.environ.get("TMPDIR", "/tmp"), "om2w-tests-browser-use")))


def pytest_collection_modifyitems(config, items):
    if shutil.which("chromium") or shutil.which("google-chrome") or os.environ.get("CHROME_PATH"):
        return
    skip = pytest.mark.skip(reason="no Chromium on this machine (apt-get install chromium)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)
