"""Shared test settings: browser-use's environment (no network, no logging takeover) for every test process; the
fixtures tests of more than one folder use (an HTTP stub server, the oracle as a judge model)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import pytest

from om2w_tui.episode.browser import BrowserNotFound, browser_use_env, find_chromium
from om2w_tui.offline.oracle import OracleServer
from om2w_tui.offline.suite import load_task_templates
from tests.fakes import StubServer

os.environ.update(browser_use_env(os.path.join(os.environ.get("TMPDIR", "/tmp"), "om2w-tests-browser-use")))
# Ray (where a test imports it) keeps every node and driver on 127.0.0.1: it reads this once, when first imported,
# and a test process may import it before tests/e2e/test_ray.py's cluster starts (see docs/clusters.md)
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def pytest_collection_modifyitems(config, items):
    """Browser tests need a Chromium, found as the product finds it. Where none is, they are skipped, unless
    OM2W_REQUIRE_E2E=1 (CI): a green run with the browser tests skipped is not green, so they fail instead."""
    try:
        find_chromium()
        return
    except BrowserNotFound as e:
        why = str(e)
    required = os.environ.get("OM2W_REQUIRE_E2E") == "1"
    mark = pytest.mark.skip(reason=f"no Chromium on this machine: {why}")
    for item in items:
        if "e2e" in item.keywords:
            if required:
                item.add_marker(pytest.mark.usefixtures("_chromium_required"))
            else:
                item.add_marker(mark)


@pytest.fixture
def _chromium_required():
    pytest.fail("OM2W_REQUIRE_E2E=1 but no Chromium is found (install one: apt-get install chromium); the browser "
                "tests cannot be skipped here", pytrace=False)


@pytest.fixture
def stub_server() -> Iterator[Callable[..., StubServer]]:
    """`stub_server(routes, default=...)` starts a StubServer (tests/fakes.py) with those replies; each one started
    is stopped after the test."""
    with contextlib.ExitStack() as started:
        yield lambda *args, **kw: started.enter_context(StubServer(*args, **kw))


@pytest.fixture(scope="module")
def judge_server() -> Iterator[OracleServer]:
    """The oracle as a judge model (it answers WebJudge's prompts), one per test module."""
    with OracleServer(load_task_templates()) as server:
        yield server
