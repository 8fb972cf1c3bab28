"""The official Online-Mind2Web evaluator, run for real on what om2w-tui writes, against a stub judge.

Skipped unless `OM2W_OFFICIAL_EVAL` names a checkout of OSU-NLP-Group/Online-Mind2Web (its `src/run.py`); the tests
never fetch it. `OM2W_OFFICIAL_PYTHON` names an interpreter with its requirements (openai, Pillow, backoff), this
one by default. The judge model is `judge_stub.StubJudge` on 127.0.0.1, so the official method and `om2w-tui judge`
get the same replies to the same screenshots.

Runs of the offline suite in every shape an episode leaves (v1, v2, timed out, browser failed before any
screenshot) are judged by the official evaluator through `om2w-tui judge --official`: every task must be judged,
with one image per state of the episode and none twice; `check` must pass them; and `om2w-tui judge` must give the
same score to every screenshot and the same verdict to every task. A folder the official evaluator crashes on
(a v2 step with a null screenshot) must be what `check` fails and what the official evaluator leaves unjudged."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from om2w_tui.benchmarks.conformance import check_run, read_run

from .helpers import cli
from .judge_stub import StubJudge

OFFICIAL = os.environ.get("OM2W_OFFICIAL_EVAL")
PYTHON = os.environ.get("OM2W_OFFICIAL_PYTHON") or sys.executable

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not OFFICIAL or not (Path(OFFICIAL) / "src" / "run.py").is_file(),
                       reason="set OM2W_OFFICIAL_EVAL to a checkout of OSU-NLP-Group/Online-Mind2Web (and "
                              "OM2W_OFFICIAL_PYTHON to an interpreter with its requirements) to run the official "
                              "evaluator"),
]


def offline(out: Path, *args: str) -> None:
    r = cli("run", "--no-ui", "--bench", "offline", "--pace-cooldown", "0", "--workers", "2", "--out", str(out),
            *args, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


def judged(path: Path) -> dict[str, dict]:
    return {r["task_id"]: r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip())}


def judge(out: Path, stub: StubJudge, *extra: str) -> tuple[int, str]:
    r = cli("judge", str(out), "--judge-model", "stub-judge", "--judge-url", stub.url, "--workers", "8", *extra,
            env={"OM2W_OFFICIAL_PYTHON": PYTHON}, timeout=600)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("official")
    bad_chromium = base / "chromium-that-fails"
    bad_chromium.write_text("#!/bin/sh\necho 'cannot start' >&2\nexit 1\n")
    bad_chromium.chmod(0o755)
    runs = {k: base / k for k in ("v1", "v2", "timeout_v1", "timeout_v2", "browser_failed_v1", "browser_failed_v2")}
    offline(runs["v1"], "--model", "oracle", "--limit", "4")
    offline(runs["v2"], "--model", "oracle", "--limit", "4", "--trajectory-schema", "v2")
    for schema in ("v1", "v2"):
        offline(runs[f"timeout_{schema}"], "--model", "oracle-slow-3", "--timeout", "8", "--limit", "2",
                "--trajectory-schema", schema)
        offline(runs[f"browser_failed_{schema}"], "--model", "oracle", "--chromium", str(bad_chromium), "--limit",
                "2", "--trajectory-schema", schema)
    return runs


@pytest.mark.timeout(1500)
def test_the_official_evaluator_reads_every_run_right_and_our_judge_agrees(runs):
    with StubJudge() as stub:
        for kind, out in runs.items():
            assert check_run(out) == [], kind
            episodes = read_run(out).episodes
            before = len(stub.requests)
            code, text = judge(out, stub, "--official", OFFICIAL)
            assert code == 0, (kind, text[-3000:])
            official = judged(next(out.glob("official_WebJudge_Online_Mind2Web_eval_stub-judge_*")))
            assert sorted(official) == sorted(episodes), kind                      # every task judged
            sent = defaultdict(list)
            for r in stub.requests[before:]:
                if r["kind"] == "score":
                    sent[r["task"]].append(r["shot"])
            for tid, ep in episodes.items():
                record = official[tid]["image_judge_record"]
                assert len(record) == len(ep.screenshots) >= 1, (kind, tid)        # one image per state
                shots = sent[ep.task]
                assert len(shots) == len(ep.screenshots) and len(set(shots)) == len(shots), (kind, tid, shots)
                result = json.loads((ep.folder / "result.json").read_text())
                if kind.startswith(("timeout", "browser_failed")):
                    assert result["cut_short"] in ("timeout", "error"), (kind, tid)
                if kind.startswith("browser_failed"):
                    assert len(ep.screenshots) == 1 and "blank" in result["blank_screenshot"]
            if kind == "v2":   # the same episodes as v1, as many images each
                v1 = {t: len(e.screenshots) for t, e in read_run(runs["v1"]).episodes.items()}
                assert {t: len(e.screenshots) for t, e in episodes.items()} == v1

            code, text = judge(out, stub)
            assert code == 0, (kind, text[-3000:])
            ours = judged(next(out.glob("om2w-tui_WebJudge_Online_Mind2Web_eval_stub-judge_*")))
            for tid in episodes:
                assert [x["Score"] for x in ours[tid]["image_judge_record"]] == \
                    [x["Score"] for x in official[tid]["image_judge_record"]], (kind, tid)
                assert ours[tid]["predicted_label"] == official[tid]["predicted_label"], (kind, tid)
            verdicts = Counter(r["predicted_label"] for r in official.values())
            print(f"{kind}: {len(official)} tasks, images {[len(r['image_judge_record']) for r in official.values()]}, "
                  f"official {dict(verdicts)}, ours the same")
        requests = [r for r in stub.requests if r["kind"] == "score"]
        assert all(r["detail"] == "high" and r["jpeg"] and r["temperature"] == 0 and r["max_tokens"] == 512
                   for r in requests)


@pytest.mark.timeout(600)
def test_what_check_fails_the_official_evaluator_leaves_unjudged(runs, tmp_path):
    out = tmp_path / "mixed"
    shutil.copytree(runs["v2"], out, ignore=shutil.ignore_patterns("*auto_eval_results.json"))
    victim = sorted(d for d in os.listdir(out) if (out / d).is_dir())[0]
    res = json.loads((out / victim / "result.json").read_text())
    res["action_history"][0]["screenshot"] = None
    (out / victim / "result.json").write_text(json.dumps(res))
    problems = check_run(out)
    assert len(problems) == 1 and problems[0].startswith(f"{victim}: step 0's screenshot is not a file name")
    with StubJudge() as stub:
        code, text = judge(out, stub, "--official", OFFICIAL, "--workers", "2")
    assert code == 1, text[-3000:]
    official = judged(next(out.glob("official_*")))
    # its worker crashed on the victim and skipped the rest of its share, though the evaluator said it completed
    assert victim not in official and len(official) == 2
    assert "not judged" in text and victim in text


@pytest.mark.timeout(600)
def test_after_our_judge_the_official_evaluator_in_the_same_folder_still_judges_every_task(runs, tmp_path):
    """Our file must not take the official one's name: its run.py resumes from `<output_path>/<its name>`, so a file
    of ours under that name in the run's folder made it skip every task and print 'The success rate is 0.0'."""
    import subprocess

    out = tmp_path / "same-folder"
    shutil.copytree(runs["v1"], out, ignore=shutil.ignore_patterns("*auto_eval_results.json"))
    tasks = sorted(read_run(out).episodes)
    with StubJudge() as stub:
        code, text = judge(out, stub)
        assert code == 0, text[-3000:]
        r = subprocess.run([PYTHON, str(Path(OFFICIAL) / "src" / "run.py"), "--mode", "WebJudge_Online_Mind2Web_eval",
                            "--model", "stub-judge", "--trajectories_dir", str(out), "--api_key", "EMPTY",
                            "--output_path", str(out), "--score_threshold", "3", "--num_worker", "1"],
                           cwd=Path(OFFICIAL) / "src", capture_output=True, text=True, timeout=500,
                           env={**os.environ, "OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "EMPTY"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "The number of already done tasks: 0" in r.stdout
    official = judged(out / "WebJudge_Online_Mind2Web_eval_stub-judge_score_threshold_3_auto_eval_results.json")
    ours = judged(next(out.glob("om2w-tui_WebJudge_Online_Mind2Web_eval_stub-judge_*")))
    assert sorted(official) == sorted(ours) == tasks
    rate = 100 * sum(x["predicted_label"] for x in official.values()) / len(tasks)
    assert f"The success rate is {rate}" in r.stdout
    assert {t: x["predicted_label"] for t, x in official.items()} == {t: x["predicted_label"] for t, x in ours.items()}
