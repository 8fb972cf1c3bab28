"""The API key is read from the environment and never written: not to run.json, results, histories, rows, logs."""

from __future__ import annotations

import pytest

from .helpers import cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
SECRET = "sk-test-om2w-never-written-4f1c9a"


def test_the_api_key_is_nowhere_on_disk_or_in_the_output(tmp_path):
    out = tmp_path / "secret"
    r = cli("run", "--no-ui", "--bench", "offline", "--model", "oracle", "--api-key-env", "OM2W_TEST_KEY",
            "--record-rows", "--task-ids", "offline_booking_rates_11", "--out", str(out),
            env={"OM2W_TEST_KEY": SECRET})
    assert r.returncode == 0, r.stderr[-3000:]
    assert records(out)[0]["correct"]
    assert SECRET not in r.stdout + r.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "rows.jsonl" for p in files) and any(p.name == "run.json" for p in files)
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert "OM2W_TEST_KEY" in (out / "run.json").read_text()       # the variable's name is recorded, not its value
