"""`om2w-tui judge OUT`: its flags, and the run of a judge (ours, or `--official` PATH, the official evaluator) on
a finished run's folder; the judging itself is `judge.py`, the official evaluator's wrapper `official.py`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from om2w_tui import exits
from om2w_tui.cli.argtypes import count, endpoint, key_variable, number, positive_int, setting_type
from om2w_tui.engine.settings import BY_KEY
from om2w_tui.evaluation.campaign_report import one_run_problem
from om2w_tui.evaluation.judge import JudgeFatal, JudgeOutcome, judge_run, unknown_tasks
from om2w_tui.evaluation.judge_files import mixed_reading, output_path, read_judged
from om2w_tui.evaluation.judge_settings import MAX_TOKENS, MODES, PARSINGS, Settings
from om2w_tui.evaluation.official import OfficialUsage, run_official
from om2w_tui.evaluation.verdicts import Settled
from om2w_tui.files import UnsafeFile, unsafe_entry
from om2w_tui.json_input import InputError
from om2w_tui.run_folder import what_is

EXIT_USAGE = exits.USAGE


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("judge", help="judge a finished run with a model (WebJudge or WebVoyager-style)",
                       description="Judge every task folder of a run with an OpenAI-compatible model, as the "
                                   "official Online-Mind2Web evaluator does; resumable.")
    p.add_argument("out", type=Path, help="the run's folder (one subfolder per task)")
    p.add_argument("--judge-model", required=True, help="the judge model's served name (e.g. o4-mini)")
    p.add_argument("--judge-url", required=True, type=endpoint("--judge-url"),
                   help="the judge endpoint's OpenAI base URL (e.g. https://api.openai.com/v1)")
    p.add_argument("--mode", choices=MODES, default="webjudge", help="webjudge (the paper's method) | webvoyager")
    workers = BY_KEY["judge_workers"]   # a run's --judge-workers: the one declaration of its bounds and default
    p.add_argument("--workers", type=setting_type(workers, "--workers"), default=workers.default,
                   help=f"model calls at once, {workers.kind.bounds_text()} ({workers.default})")
    p.add_argument("--score-threshold", type=int, default=3, choices=range(1, 6), metavar="1-5",
                   help="keep screenshots scoring at least this (3)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", type=key_variable("--api-key-env"),
                   help="the environment variable holding the judge's API key (OPENAI_API_KEY)")
    p.add_argument("--include-answer", action="store_true",
                   help="webjudge: also show the agent's final answer, as a claim (mode webjudge-answer)")
    p.add_argument("--last-screenshots", type=positive_int("--last-screenshots", 50), default=3,
                   help="webvoyager: how many last screenshots (3)")
    p.add_argument("--task-ids", default="", help="comma-separated: judge only these task folders")
    p.add_argument("--temperature", type=_temperature, default=0.0,
                   help="sampling temperature (0, as the official evaluator; `none`: not sent; an endpoint that "
                        "refuses it, like o4-mini's, gets none)")
    p.add_argument("--max-tokens", type=positive_int("--max-tokens"), default=MAX_TOKENS,
                   help=f"the longest reply of one call ({MAX_TOKENS}, as the official evaluator)")
    p.add_argument("--official", type=Path, default=None, metavar="PATH",
                   help="run your checkout of the official evaluator (PATH/src/run.py) on the run instead, with "
                        "this endpoint and model; its output is kept as OUT/official_<its file name>")
    p.add_argument("--official-python", default=None, metavar="PYTHON",
                   help="the interpreter with the official evaluator's requirements (default: "
                        "$OM2W_OFFICIAL_PYTHON, else this one)")
    p.add_argument("--parsing", choices=PARSINGS, default="official",
                   help="how replies are read: as the official evaluator reads them (official, the default: its "
                        "numbers), or leniently (also `**Status**: success`, `Score (1-5): 2`, headings); the "
                        "report counts the replies the two read differently")
    p.add_argument("--retries", type=count("--retries", 20), default=5,
                   help="retries of one call on 5xx/429/connection errors (5)")
    p.add_argument("--backoff", type=number("--backoff", float, 0, maximum=600), default=2.0, metavar="S",
                   help="seconds before the first retry, doubled for each next one up to 60, give or take 25%% (2)")
    p.add_argument("--request-timeout", type=number("--request-timeout", float, 0, above=True, maximum=3600),
                   default=300.0, metavar="S",
                   help="seconds one call may take in all, connect and the whole reply (300; the endpoint check "
                        "before any task takes at most 15)")


def _before_network(out: Path, s: Settings, task_ids: list[str]) -> tuple[str, Settled | None]:
    """What is wrong with judging `out` with `s` that its files already say ("" when nothing): the judge file no file
    of ours (a symlink, a FIFO), a --task-ids naming no task folder, a resume that would mix two readings; and the
    run's records as read for it (the judging reads them no second time)."""
    path = output_path(out, s)
    if problem := unsafe_entry(path) or unknown_tasks(out, task_ids):
        return problem, None
    try:
        settled = Settled.read(out)
        return mixed_reading(path, settled.current(read_judged(path)), s), settled
    except InputError as e:
        return str(e), None


def _temperature(text: str) -> float | None:
    """A sampling temperature 0-2 (the one number parser: no NaN, no inf), or `none` to send none."""
    if text.strip().lower() in ("none", "off", ""):
        return None
    return float(number("--temperature", float, 0, maximum=2)(text))


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    problem = one_run_problem(out, "judge") or what_is(out).problem()
    if problem:      # missing, empty, a campaign or a folder of runs (each run would be judged as a task)
        print(f"om2w-tui judge: {problem}", file=sys.stderr)
        return EXIT_USAGE
    s = Settings(model=args.judge_model, mode=args.mode, score_threshold=args.score_threshold,
                 include_answer=args.include_answer, last_screenshots=args.last_screenshots, workers=args.workers,
                 retries=max(0, args.retries), backoff=max(0.0, args.backoff), request_timeout=args.request_timeout,
                 temperature=args.temperature, max_tokens=args.max_tokens, parsing=args.parsing)
    task_ids = [t.strip() for t in args.task_ids.split(",") if t.strip()]
    key = os.environ.get(args.api_key_env, "") or "EMPTY"
    # the folder's own files before the network: a judge file that is a symlink, a FIFO or a device is refused at
    # once, as are a --task-ids naming no task folder and a resume that would mix two readings of the replies
    problem, settled = ("", None) if args.official is not None else _before_network(out, s, task_ids)
    if problem:
        print(f"om2w-tui judge: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from om2w_tui.endpoint import CHECK_DEADLINE_S, JUDGE_FLAGS, check_endpoint  # httpx only when a judge runs

    # asked once before any task: a dead URL, one without its /v1, or a model not served is refused in seconds
    problem = check_endpoint(args.judge_url, s.model, key, JUDGE_FLAGS, min(CHECK_DEADLINE_S, s.request_timeout))
    if problem:
        print(f"om2w-tui judge: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.official is not None:
        if args.parsing != "official":
            print("om2w-tui judge: --parsing lenient cannot be used with --official (the official evaluator reads "
                  "its replies its own way)", file=sys.stderr)
            return EXIT_USAGE
        return run_official_cli(out, args.official, args.official_python, s, args.judge_url.for_client(), key,
                                bool(task_ids))
    from om2w_tui.evaluation.judge import judge_client  # the openai client only when a judge runs

    async def go() -> JudgeOutcome:
        client = judge_client(args.judge_url.for_client(), key, s)
        try:
            return await judge_run(out, s, client, task_ids=task_ids, log=lambda m: print(m, flush=True),
                                   settled=settled)
        finally:
            await client.close()

    print(f"judge: {s.mode_name} with {s.model} at {args.judge_url}, threshold {s.score_threshold}, "
          f"{s.workers} workers -> {output_path(out, s).name}", flush=True)
    try:
        res = asyncio.run(go())
    except (JudgeFatal, InputError, UnsafeFile) as e:   # InputError, UnsafeFile: the output file is no file of ours
        print(f"om2w-tui judge: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("om2w-tui judge: interrupted; the tasks judged so far are kept, run again to resume", file=sys.stderr)
        return 130
    if res.tasks == 0:
        print(f"om2w-tui judge: {out}: no task folders", file=sys.stderr)
        return EXIT_USAGE
    rate = 100.0 * res.successes / res.tasks
    print(f"judged {res.judged} now, {res.skipped} before; {len(res.failed)} failed, {len(res.unreadable)} unreadable"
          + (f", {len(res.unsettled)} not settled yet (judged once the run settles them)" if res.unsettled else ""))
    print(f"success: {res.successes} of {res.tasks} task folders ({rate:.1f}%; {res.in_file} judged) -> {res.path}")
    if res.failed or res.unreadable:
        print("some tasks were not judged: run the same command again to resume "
              "(`om2w-tui check OUT` lists what the evaluator cannot read)", file=sys.stderr)
        return 1
    return 0


def run_official_cli(out: Path, checkout: Path, python: str | None, s: Settings, judge_url: str, key: str,
                     task_ids_given: bool) -> int:
    if task_ids_given:
        print("om2w-tui judge: --task-ids cannot be used with --official (the evaluator judges every task folder)",
              file=sys.stderr)
        return EXIT_USAGE
    python = python or os.environ.get("OM2W_OFFICIAL_PYTHON") or sys.executable
    try:
        res = run_official(out, checkout, python, s, judge_url, key, log=lambda m: print(m, flush=True))
    except OfficialUsage as e:
        print(f"om2w-tui judge: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("om2w-tui judge: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    rate = 100.0 * res.successes / res.tasks
    print(f"official evaluator: judged {res.judged} of {res.tasks} task folders, success {res.successes} "
          f"({rate:.1f}% of all) -> {res.path}")
    if res.missing:
        print(f"official evaluator: {len(res.missing)} task folder(s) not judged ({res.crashed} traceback(s) "
              f"printed, exit status {res.returncode}), e.g. {', '.join(res.missing[:5])}; `om2w-tui check "
              f"{out}` says what it cannot read", file=sys.stderr)
        return 1
    return 0 if res.returncode == 0 else 1
