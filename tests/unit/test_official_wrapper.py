"""`om2w-tui judge --official PATH`: how the user's checkout of the official evaluator is started and its output
kept, against a stand-in `src/run.py` that takes the same arguments and writes its file the same way (the real
evaluator is run by tests/e2e/test_official_evaluator.py when OM2W_OFFICIAL_EVAL names a checkout)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from om2w_tui.cli.main import main as cli_main

# Takes the evaluator's arguments; writes one line per task folder into
# <output_path>/<mode>_<model>_score_threshold_<t>_auto_eval_results.json, skipping the tasks already there, and
# stops at a task whose folder name starts with "crash" as a worker of the evaluator does when it raises.
STAND_IN = r'''
import argparse, json, os, sys
p = argparse.ArgumentParser()
for a in ("--mode", "--model", "--trajectories_dir", "--api_key", "--output_path"):
    p.add_argument(a, required=True)
p.add_argument("--score_threshold", type=int, default=3)
p.add_argument("--num_worker", type=int, default=60)
args = p.parse_args()
tasks = sorted(d for d in os.listdir(args.trajectories_dir) if os.path.isdir(os.path.join(args.trajectories_dir, d)))
if len(tasks) // args.num_worker == 0:
    raise ValueError("range() arg 3 must not be zero")
name = os.path.join(args.output_path,
                    f"{args.mode}_{args.model}_score_threshold_{args.score_threshold}_auto_eval_results.json")
done = set()
if os.path.exists(name):
    done = {json.loads(x)["task_id"] for x in open(name) if x.strip()}
with open(os.path.join(os.environ["STAND_IN_LOG"]), "a") as log:
    cmdline = open("/proc/self/cmdline", "rb").read().decode().split("\0")
    log.write(json.dumps({"argv": sys.argv[1:], "cmdline": cmdline, "base_url": os.environ.get("OPENAI_BASE_URL"),
                          "key": os.environ.get("OPENAI_API_KEY"), "already": sorted(done)}) + "\n")
os.makedirs(args.output_path, exist_ok=True)
for t in tasks:
    if t in done:
        continue
    if t.startswith("crash"):
        print("Traceback (most recent call last):\n  a worker raised", flush=True)
        break
    with open(name, "a+") as f:
        f.write(json.dumps({"task_id": t, "predicted_label": 1}) + "\n")
print("Evaluation complete.")
'''


@pytest.fixture
def checkout(tmp_path) -> Path:
    root = tmp_path / "Online-Mind2Web"
    (root / "src").mkdir(parents=True)
    (root / "src" / "run.py").write_text(STAND_IN)
    return root


def make_run(out: Path, *tids: str) -> Path:
    for t in tids:
        (out / t / "trajectory").mkdir(parents=True)
        (out / t / "result.json").write_text(json.dumps({"task_id": t, "task": "x", "action_history": [],
                                                         "thoughts": [], "final_result_response": ""}))
    return out


@pytest.fixture(scope="module")
def endpoint():
    """A judge endpoint that answers `judge`'s question before the work (the stand-in evaluator calls nothing)."""
    from tests.e2e.judge_stub import StubJudge

    with StubJudge() as stub:
        yield stub.url


URL: list[str] = []


@pytest.fixture(autouse=True)
def _the_endpoint(endpoint):
    URL[:] = [endpoint]


def official(out: Path, checkout: Path, *extra: str, model: str = "org/judge-model") -> int:
    return cli_main(["judge", str(out), "--judge-model", model, "--judge-url", URL[0],
                     "--official", str(checkout), "--official-python", sys.executable, *extra])


def test_it_runs_with_a_safe_worker_count_the_endpoint_and_keeps_its_file(tmp_path, checkout, monkeypatch, capsys):
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    out = make_run(tmp_path / "run", "a", "b", "c")
    assert official(out, checkout, "--workers", "8") == 0
    call = json.loads(log.read_text())
    argv = call["argv"]
    assert argv[argv.index("--num_worker") + 1] == "3"                 # never more workers than tasks
    assert argv[argv.index("--api_key") + 1] == "sk-secret-123"        # the script gets its key ...
    assert "sk-secret-123" not in " ".join(call["cmdline"])            # ... never on the command line others read
    assert argv[argv.index("--mode") + 1] == "WebJudge_Online_Mind2Web_eval"
    assert argv[argv.index("--model") + 1] == "org/judge-model"
    assert call["base_url"] == URL[0] and call["key"] == "sk-secret-123"
    kept = out / "official_WebJudge_Online_Mind2Web_eval_org-judge-model_score_threshold_3_auto_eval_results.json"
    assert [json.loads(x)["task_id"] for x in kept.read_text().splitlines()] == ["a", "b", "c"]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["a", "b", "c"]   # nothing beside the tasks
    printed = capsys.readouterr()
    assert "sk-secret-123" not in printed.out + printed.err
    assert "judged 3 of 3 task folders, success 3 (100.0% of all)" in printed.out


def test_it_resumes_from_the_kept_file_and_names_what_it_left_unjudged(tmp_path, checkout, monkeypatch, capsys):
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    out = make_run(tmp_path / "run", "a", "crash_b", "d")
    assert official(out, checkout) == 1                      # though the evaluator says it completed and exits 0
    err = capsys.readouterr().err
    assert "2 task folder(s) not judged (1 traceback(s) printed, exit status 0), e.g. crash_b, d" in err
    (out / "crash_b").rename(out / "b")
    assert official(out, checkout) == 0
    second = json.loads(log.read_text().splitlines()[-1])
    assert second["already"] == ["a"]                                    # the evaluator skipped what it had
    kept = next(out.glob("official_*"))
    assert sorted(json.loads(x)["task_id"] for x in kept.read_text().splitlines()) == ["a", "b", "d"]


@pytest.mark.parametrize("extra, message", [
    (("--include-answer",), "--include-answer has no mode in the official evaluator"),
    (("--task-ids", "a"), "--task-ids cannot be used with --official"),
])
def test_settings_the_official_evaluator_has_not(tmp_path, checkout, capsys, extra, message):
    out = make_run(tmp_path / "run", "a")
    assert official(out, checkout, *extra) == 2
    assert message in capsys.readouterr().err


def test_a_checkout_without_the_evaluator_is_a_usage_error(tmp_path, capsys):
    out = make_run(tmp_path / "run", "a")
    assert official(out, tmp_path / "nowhere") == 2
    err = capsys.readouterr().err
    assert f"--official {tmp_path / 'nowhere'}: no src/run.py there" in err
