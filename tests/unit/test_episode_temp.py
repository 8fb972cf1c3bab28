"""An episode's Chromium needs a temp folder whose path leaves room for its socket (episode/runner.py:
episode_temp_base)."""

from __future__ import annotations

import tempfile


def test_an_episode_under_a_long_temp_folder_gives_its_chromium_one_in_tmp(monkeypatch):
    """Chromium's socket path (`$TMPDIR/.org.chromium.Chromium.XXXXXX/SingletonSocket`) holds 107 bytes: under a
    TMPDIR 15 characters long, nested in the worker's folder, every Chromium failed to start (e2e: the console killed
    outright in tests/e2e/test_faults.py runs its episodes under such a folder)."""
    from om2w_tui.episode.runner import episode_temp_base

    prefix = "om2w-episode-0123abcd-"
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/om2w-worker-abcdefgh")
    assert episode_temp_base(prefix) is None            # 103 bytes: room enough, nested as before
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/t-abcdefgh/om2w-worker-abcdefgh")
    assert episode_temp_base(prefix) == "/tmp"
