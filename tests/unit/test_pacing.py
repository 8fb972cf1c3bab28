"""om2w_tui.engine.pacing.SitePacer (on a clock the test gives) and om2w_tui.benchmarks.site_keys.site_key."""

from __future__ import annotations

import pytest

from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.engine.pacing import SitePacer


def test_a_fresh_site_can_start():
    p = SitePacer(120)
    assert p.can_start("a.com", 0.0)
    assert p.cooling_until("a.com", 0.0) is None


def test_busy_site_cannot_start_until_released():
    p = SitePacer(0)
    p.acquire("a.com", 10.0)
    assert not p.can_start("a.com", 10.0)
    assert not p.can_start("a.com", 1e9)   # busy stays busy, however long
    assert p.can_start("b.com", 10.0)      # other sites are not held
    with pytest.raises(RuntimeError, match="a.com"):
        p.acquire("a.com", 11.0)
    p.release("a.com", 50.0)
    assert p.can_start("a.com", 50.0)      # no cooldown


def test_cooldown_is_measured_from_release():
    p = SitePacer(120)
    p.acquire("a.com", 0.0)
    p.release("a.com", 500.0)              # the episode ran 500 s: the cooldown starts at its end
    assert not p.can_start("a.com", 500.0)
    assert not p.can_start("a.com", 619.9)
    assert p.cooling_until("a.com", 600.0) == 620.0
    assert p.can_start("a.com", 620.0)
    assert p.cooling_until("a.com", 620.0) is None
    with pytest.raises(RuntimeError):
        p.acquire("a.com", 619.0)
    p.acquire("a.com", 620.0)
    assert p.cooling_until("a.com", 620.0) is None   # busy, not cooling


def test_cooldown_is_per_site():
    p = SitePacer(60)
    p.acquire("a.com", 0.0)
    p.release("a.com", 10.0)
    assert not p.can_start("a.com", 20.0)
    assert p.can_start("b.com", 20.0)
    p.acquire("b.com", 20.0)
    assert p.state("b.com").busy and not p.state("a.com").busy


def test_next_ready():
    p = SitePacer(100)
    for site, end in (("a", 10.0), ("b", 30.0), ("c", 5.0)):
        p.acquire(site, 0.0)
        p.release(site, end)
    p.acquire("c", 105.0)                                  # c is busy again: it is not "ready" at any time
    assert p.next_ready(["a", "b", "c"], 50.0) == 110.0
    assert p.next_ready(["b", "c"], 50.0) == 130.0
    assert p.next_ready(["c"], 50.0) is None               # busy
    assert p.next_ready(["a", "b"], 115.0) == 130.0        # a already ready: not cooling
    assert p.next_ready(["a", "b"], 200.0) is None
    assert p.next_ready(["never-seen"], 0.0) is None
    assert p.next_ready([], 0.0) is None


def test_release_without_cooldown():
    p = SitePacer(120)
    p.acquire("a.com", 0.0)
    p.release_without_cooldown("a.com")    # the worker never reached the site
    assert p.can_start("a.com", 0.0)
    assert p.next_ready(["a.com"], 0.0) is None


def test_release_without_cooldown_keeps_an_earlier_cooldown():
    p = SitePacer(100)
    p.acquire("a.com", 0.0)
    p.release("a.com", 10.0)
    p.acquire("a.com", 110.0)
    p.release_without_cooldown("a.com")
    assert p.can_start("a.com", 110.0)
    assert p.cooling_until("a.com", 110.0) is None


def test_zero_cooldown_frees_at_once():
    p = SitePacer(0)
    p.acquire("a", 1.0)
    p.release("a", 2.0)
    assert p.can_start("a", 2.0) and p.next_ready(["a"], 2.0) is None


# ── site_key ───────────────────────────────────────────────

@pytest.mark.parametrize("url,key", [
    ("https://www.example.com/", "example.com"),
    ("https://WWW.Example.COM/Path?q=1", "example.com"),
    ("http://example.com", "example.com"),
    ("https://sub.example.com/", "sub.example.com"),
    ("https://www2.example.com/", "www2.example.com"),
    ("https://wwwexample.com/", "wwwexample.com"),
    ("http://127.0.0.1:8765/shop", "127.0.0.1:8765"),
    ("http://localhost:8001/", "localhost:8001"),
    ("https://www.example.com:8443/", "example.com:8443"),
    ("http://example.com:80/", "example.com"),
    ("https://example.com:443/", "example.com"),
    ("http://www.example.com:443/", "example.com"),
    ("https://user:secret@www.example.com/", "example.com"),
    ("https://user@example.com:9000/", "example.com:9000"),
    ("https://user:p@ss:w@rd@example.com/", "example.com"),
    ("http://[::1]:8080/", "[::1]:8080"),
    ("http://[::1]:80/", "[::1]"),
    ("https://www.example.com.:443/", "example.com"),
])
def test_site_key(url, key):
    assert site_key(url) == key


def test_same_site_whatever_the_spelling():
    assert len({site_key(u) for u in ("https://www.amazon.com/", "http://amazon.com", "https://AMAZON.com:443/x",
                                      "https://u:p@www.amazon.com/s?k=1")}) == 1
    assert site_key("http://127.0.0.1:8001/") != site_key("http://127.0.0.1:8002/")
