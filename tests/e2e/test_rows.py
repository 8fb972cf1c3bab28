"""--record-rows with --hint-field: every model call recorded as a training row, the hint shown to the model
while acting and stripped from everything recorded; images are files, not data URLs."""

from __future__ import annotations

import json

import pytest

from om2w_tui.offline import TASKS_TEMPLATE, OfflineSuite, OracleServer

from .helpers import check_task_folder, cli, records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
HINTS = {"offline_booking_rates_11": "PRIVILEGED: the rates table lists the Deluxe room second, at 189 a night.",
         "offline_longpage_footer_15": "PRIVILEGED: the answer is in the colophon at the very bottom."}


def test_rows_keep_no_hint_and_hold_images_as_files(tmp_path):
    tasks = [dict(t, hint=HINTS[t["task_id"]]) for t in json.loads(TASKS_TEMPLATE.read_text())
             if t["task_id"] in HINTS]
    hinted = tmp_path / "hinted.json"
    hinted.write_text(json.dumps(tasks))
    out = tmp_path / "rows"
    # an oracle in this process keeps what the model was shown: the hint must be there while acting
    with OfflineSuite() as suite, OracleServer(suite.tasks(), keep=True) as oracle:
        r = cli("run", "--no-ui", "--bench", "offline", "--tasks", str(hinted), "--model", "oracle",
                "--vllm", oracle.url, "--record-rows", "--hint-field", "hint", "--workers", "2",
                "--pace-cooldown", "0", "--out", str(out))
        shown = b"".join(oracle.bodies).decode()
        sent = [json.loads(b) for b in oracle.bodies]
    assert r.returncode == 0, r.stderr[-3000:]
    assert sent and not any("seed" in b or "top_p" in b for b in sent)   # neither is sent unless given
    for hint in HINTS.values():
        assert json.dumps(hint)[1:-1] in shown        # the model saw each hint while it acted...
    recs = {x["task_id"]: x for x in records(out)}
    assert set(recs) == set(HINTS)
    for tid, hint in HINTS.items():
        rec = recs[tid]
        assert rec["correct"] and rec["rows"] >= 1 and rec["hint_left"] is False
        rows_dir = out / tid / "rows"
        rows = [json.loads(x) for x in (rows_dir / "rows.jsonl").read_text().splitlines()]
        assert len(rows) == rec["rows"] == rec["steps"]
        text = (rows_dir / "rows.jsonl").read_text()
        assert hint[:30] not in text and "PRIVILEGED" not in text   # ...and no row keeps it
        assert "data:image" not in text
        images = sorted(p.name for p in rows_dir.glob("*.png"))
        assert images and all(name in text for name in images)
        assert all(p.read_bytes()[:4] == b"\x89PNG" for p in rows_dir.glob("*.png"))
        first = rows[0]
        assert first["task_id"] == tid and first["step"] == 0 and first["segment"] == 0
        assert first["family"] in ("Navigation", "Text entry", "Discrete selection", "Reasoning base")
        assert json.loads(first["target"])["action"]
        task_text = next(t["confirmed_task"] for t in tasks if t["task_id"] == tid)
        assert task_text in json.dumps(first["messages"], ensure_ascii=False)    # the task stays, the hint goes
        episode = json.loads((rows_dir / "episode.json").read_text())
        assert episode["task_id"] == tid and episode["steps"] == len(rows) and episode["hint_left"] is False
        assert "PRIVILEGED" not in episode["instruction"]
        check_task_folder(out / tid)
