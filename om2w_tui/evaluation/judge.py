"""Judging a finished run with a model: the WebJudge method of the Online-Mind2Web paper, and a WebVoyager-style
single call. Prompts are our own words; the method and the output file follow the official evaluator.

WebJudge (`--mode webjudge`), per task, as the official method does it:
  1. key points: the model lists what the task requires (from the task text alone);
  2. key screenshots: the model scores every screenshot 1-5 for how much it shows about the key points (one vision
     call per screenshot, a JPEG data URL with `detail: high`); those scoring at least --score-threshold are kept,
     the first MAX_KEPT of them, with the reasoning the model gave for each;
  3. outcome: one call with the task, the key points, the action history, the kept screenshots' reasoning and the
     kept screenshots; the reply ends in `Status: success` or `Status: failure`.
  Every call is sent with temperature 0 and max_tokens 512, the official settings (an endpoint that refuses one of
  them gets the call again without it). Replies are read as the official evaluator reads them (`parsing="official"`,
  the default: `official_score`, `official_status`), so that our numbers are the official method's numbers; the
  lenient reading (`parsing="lenient"`: `parse_score`, `parse_status`) also reads the markdown, bullets and headings
  its prompts invite and it misreads (`**Status**: success` is 0 there, 1 here; `Score (1-5): 2` is 1 there, 2
  here). `compare_readings` counts the replies of a file the two read differently; the report shows it.
  As in the official method the agent's final answer is not shown to the judge (an agent's own claims give false
  positives); `--include-answer` shows it, marked as a claim that only the evidence can confirm (mode
  `webjudge-answer`, in a file of its own).
WebVoyager (`--mode webvoyager`): one call with the task, the agent's final answer and its last screenshots; the
  reply ends in `Verdict: SUCCESS` or `Verdict: NOT SUCCESS`.

Output: `<out>/om2w-tui_<Mode>_<model>_score_threshold_<t>_auto_eval_results.json`: the official evaluator's name
with `om2w-tui_` before it (its own name would make an official run in the same folder resume from our file and
judge nothing), shaped as its output (a file, never a folder, so the run's folder stays one subfolder per task):
one JSON object a line, the task's result.json with `key_points`, `image_judge_record` as
`[{Response, Score}]`, `input_text`, `system_msg`, `evaluation_details` and `predicted_label` added, and ours
beside them (`mode`, `judge_model`, `kept_screenshots`, `usage` ...). The tasks already in it are skipped, so the
same command resumes. The folder is read with `conformance.read_run`, exactly as the official evaluator reads it.

`--official PATH` runs the user's own checkout of the official evaluator (its `src/run.py`) on the run instead,
against the same endpoint, and keeps its output in the run's folder as `official_<its file name>`.

The command line (`om2w-tui judge`, its flags and its exit codes) is `cli/judge.py`.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om2w_tui import exits
from om2w_tui.benchmarks.conformance import EvaluatorView, read_run
from om2w_tui.evaluation.summary import Readings
from om2w_tui.files import SCREENSHOT_LIMIT, append_own, read_file
from om2w_tui.json_input import InputError, Shape, decode, may_overflow, wrong_fields

MODES = ("webjudge", "webvoyager")
PARSINGS = ("official", "lenient")
MAX_KEPT = 50
MAX_TOKENS = 512                  # the official evaluator's max_tokens for every call
EXIT_USAGE = exits.USAGE
RESULTS_SUFFIX = "_auto_eval_results.json"
OFFICIAL_PREFIX = "official_"     # the official evaluator's own output, kept in the run's folder under this prefix
OURS_PREFIX = "om2w-tui_"         # ours: never the official evaluator's own name (it resumes from that file)
# our mode -> the file name's mode, as the official evaluator names its modes
FILE_MODES = {"webjudge": "WebJudge_Online_Mind2Web_eval", "webjudge-answer": "WebJudge_Online_Mind2Web_eval_answer",
              "webvoyager": "WebVoyager_eval"}
OFFICIAL_MODES = ("WebJudge_Online_Mind2Web_eval_answer", "WebJudge_Online_Mind2Web_eval", "WebJudge_general_eval",
                  "WebVoyager_eval", "Autonomous_eval", "AgentTrek_eval")
_OUTPUT_NAME = re.compile(rf"(?:(?P<official>{OFFICIAL_PREFIX})|(?P<ours>{OURS_PREFIX}))?"
                          rf"(?P<mode>{'|'.join(OFFICIAL_MODES)}|webjudge-answer|"
                          rf"webjudge|webvoyager)_(?P<model>.+)_score_threshold_(?P<threshold>-?\d+){re.escape(RESULTS_SUFFIX)}")

# The reply formats the prompts ask for; the oracle's judge mode (offline/oracle.py) recognises a request by them.
KEY_POINTS_FORMAT = "Key points:\n1. <first key point>\n2. <second key point>\n..."
SCORE_FORMAT = "Reasoning: <one or two sentences>\nScore: <1-5>"
VERDICT_FORMAT = "Thoughts: <your reasoning, key point by key point>\nStatus: success  OR  Status: failure"
WEBVOYAGER_FORMAT = "Thoughts: <your reasoning>\nVerdict: SUCCESS  OR  Verdict: NOT SUCCESS"

KEY_POINTS_SYSTEM = f"""You help to evaluate web agents. You are given a task that a web agent was asked to carry \
out on a website. List its key points: the requirements an outcome must meet for the task to count as done. \
Include every explicit constraint of the task (the item or information wanted, quantities, filters, sort orders, \
dates, places, price limits, what has to be reported or submitted). Keep each key point short and in the task's \
own words, and add nothing the task does not ask for.

Reply in this form:
{KEY_POINTS_FORMAT}"""

SCORE_SYSTEM = f"""You help to evaluate web agents. You are shown one screenshot taken while a web agent worked on \
a task, together with the task and its key points. Rate how much this screenshot tells about the key points: \
progress toward them, whether they are met, or that they cannot be met (for example the right search or filters \
applied, a list of results, an item's details, a confirmation page, or the information the task asks for).
1: nothing relevant to the key points.
2: on topic, but no real evidence.
3: relevant, with some evidence for a key point.
4: strong evidence for one or more key points.
5: clear evidence that settles one or more key points.

Reply in this form:
{SCORE_FORMAT}"""

VERDICT_SYSTEM = f"""You decide whether a web agent completed a task. You are given the task, its key points, the \
actions the agent took (one a line, in order) and the screenshots judged relevant, in the order they were taken.
Rules:
- Judge by the evidence: the actions and the screenshots. A key point is met only when the evidence shows it.
- Every key point must be met. Filters, sort orders, dates, quantities, places and limits must be exactly the ones \
the task asks for; a near match is a failure.
- When the task asks for information, that information must be shown in the evidence.
- When the task cannot be done as asked (say the item does not exist), the agent succeeds only if the evidence \
shows it searched properly and found that it cannot be done.
- An agent's final answer, where one is given, is its own claim: it counts only as far as the evidence supports it.

Reply in this form:
{VERDICT_FORMAT}"""

WEBVOYAGER_SYSTEM = f"""You decide whether a web agent completed a task. You are given the task, the agent's \
final answer, and the last screenshots of its attempt. The screenshots are the evidence: where the answer and the \
screenshots disagree, trust the screenshots. Every part of the task must be done; an answer that the screenshots \
do not support is not a success.

Reply in this form:
{WEBVOYAGER_FORMAT}"""


class JudgeFatal(RuntimeError):
    """A failure that no retry or other task can fix (bad key, unknown model): the whole run stops."""


@dataclass
class Settings:
    model: str
    mode: str = "webjudge"
    score_threshold: int = 3
    include_answer: bool = False
    last_screenshots: int = 3
    workers: int = 4
    retries: int = 5
    backoff: float = 2.0
    request_timeout: float = 300.0
    temperature: float | None = 0.0    # the official setting; None: not sent
    max_tokens: int | None = MAX_TOKENS
    parsing: str = "official"          # how replies are read: as the official evaluator reads them, or leniently

    @property
    def mode_name(self) -> str:
        return "webjudge-answer" if self.mode == "webjudge" and self.include_answer else self.mode

    @property
    def file_mode(self) -> str:
        return FILE_MODES[self.mode_name]


def safe_model_name(model: str) -> str:
    """The model's name as it can stand in a file name (`org/model` -> `org-model`): never a path."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "-", model).strip("-.")
    return name or "model"


def output_path(out: Path, s: Settings) -> Path:
    """Our output file: the official evaluator's name with OURS_PREFIX before it. Never its own name: the official
    `run.py` resumes from the file of its name in its output folder, so our file under that name would make it
    skip every task we judged (and print a success rate of 0.0)."""
    return Path(out) / (OURS_PREFIX + official_file_name(s))


def official_file_name(s: Settings) -> str:
    """The name the official evaluator gives its output for these settings (our safe model name in it)."""
    return f"{s.file_mode}_{safe_model_name(s.model)}_score_threshold_{s.score_threshold}{RESULTS_SUFFIX}"


def adopt_legacy_output(out: Path, s: Settings, log: Callable[[str], None] = print) -> None:
    """Our output under the official evaluator's own name (as earlier versions wrote it) is renamed to ours, so that
    `judge` resumes from it and an official run in the folder no longer skips its tasks; the official evaluator's
    own file of that name (its lines have no `judge_model`) is left alone."""
    legacy, ours = Path(out) / official_file_name(s), output_path(out, s)
    if ours.exists() or not legacy.is_file():
        return
    try:
        first = next(iter(read_judged(legacy).values()), None)
    except InputError:   # not a file of ours to rename (a symlink, a FIFO): left where it is
        return
    if first is not None and "judge_model" in first:
        os.replace(legacy, ours)
        log(f"renamed {legacy.name} to {ours.name}: the official evaluator resumes from a file of its own name")


@dataclass
class OutputName:
    """What a judge output file's name says: the mode, the judge model, the threshold, and whose file it is."""
    mode: str
    model: str
    threshold: int
    official: bool
    ours: bool = False


def parse_output_name(name: str) -> OutputName | None:
    """`WebJudge_Online_Mind2Web_eval_o4-mini_score_threshold_3_auto_eval_results.json` -> its parts (the official
    evaluator's name, ours with `om2w-tui_` before it, an `official_` copy, or our older `webjudge_...` name); None
    for another name."""
    m = _OUTPUT_NAME.fullmatch(name)
    if m is None:
        return None
    return OutputName(m["mode"], m["model"], int(m["threshold"]), bool(m["official"]), bool(m["ours"]))


JUDGE_LIMIT = 1 << 30      # bytes of a judge output file read back (replies are capped: ~2 MiB a task at most)
# what a judge output line read back may hold under the keys its readers use
JUDGED_SHAPE = Shape({
    "task_id": (str, int), "predicted_label": (int, type(None)), "image_judge_record": (list, type(None)),
    "attempt": (int, type(None)), "judge_model": (str, type(None)), "mode": (str, type(None)),
    "evaluation_details": (dict, type(None)), "kept_screenshots": (list, type(None)),
})


def read_judged(path: Path, warn: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """task_id -> its line in a judge output file (the last one wins). A line that is torn (a crash mid-write), not
    JSON, holds NaN, or is of the wrong shape is skipped, and `warn` told so (the file and the line). The file is
    the run's own: one that is a symlink, a FIFO or a device raises InputError naming it (never read through)."""
    got: dict[str, dict[str, Any]] = {}
    if not os.path.lexists(path):
        return got
    data = read_file(path, JUDGE_LIMIT, own=True, what="the judge's file")
    floats = may_overflow(data)
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            rec = decode(line, str(path), line=n, check_floats=floats)   # the one decoder: NaN, too deep, torn
        except InputError as e:
            if warn is not None:
                warn(f"{e}; skipped that line")
            continue
        wrong = wrong_fields(rec, JUDGED_SHAPE) if isinstance(rec, dict) else ["not a JSON object"]
        if wrong or rec.get("task_id") is None:
            if warn is not None:
                warn(f"{path}:{n}: skipped a line of the wrong shape ({'; '.join(wrong) or 'no task_id'})")
            continue
        got[str(rec["task_id"])] = rec
    return got


def append_line(path: Path, record: dict[str, Any]) -> None:
    """One whole JSON line, appended in one write and synced (O_APPEND keeps it whole), after ending a torn last
    line; never through a symlink, never to a FIFO or a device (files.UnsafeFile); a lone
    surrogate in a reply goes as its JSON escape."""
    append_own(path, (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace"))


# ---------------------------------------------------------------------------------------------------- replies


def parse_key_points(text: str) -> str:
    m = re.search(r"key\s*points\s*[*_]*\s*:[*_]*", text, re.IGNORECASE)
    return (text[m.end():] if m else text).strip()


# A label at the start of a line, whatever the markdown before it: indentation, a quote, bullets, a list number,
# heading marks, emphasis ("- **Score**: 4", "2. Score: 4", "### Status", "> Status: success").
_LINE_START = r"^[ \t>]*(?:(?:[-+*•]|\d{1,2}[.)]|#{1,6})[ \t]+)?[*_ \t]*"
_SCORE_LABEL = re.compile(_LINE_START + r"score\b[*_ \t]*(?:\([^)\n]{0,20}\)[*_ \t]*)?(?:[:：=\-–—][*_ \t]*|\n\s*)"
                          r"[*_\[\( \t]*(?P<n>\d+(?:\.\d+)?)", re.IGNORECASE | re.MULTILINE)
_SCORE_INLINE = re.compile(r"\bscore\b[^0-9\n]{0,20}?(?P<n>\d+(?:\.\d+)?)", re.IGNORECASE)
_STATUS_LABEL = re.compile(_LINE_START + r"(?:final\s+)?status\b[*_ \t]*(?:[:：=\-–—][*_ \t]*|\n\s*)"
                           r"(?P<v>[^\n]*)", re.IGNORECASE | re.MULTILINE)
_STATUS_INLINE = re.compile(r"\bstatus\s*[*_]*\s*[:=][*_\s]*(?P<v>[^\n]*)", re.IGNORECASE)
_REASONING_LABEL = re.compile(_LINE_START + r"(?:reasoning|reason|thoughts?)\b[*_ \t]*[:：\-–—]?[*_ \t]*",
                              re.IGNORECASE | re.MULTILINE)


# What a reply shows rather than says (the lenient reading skips it): fenced code blocks and quoted lines, where a
# model copies the format it was asked for or the task's words; inline quotes too, for a label within a line.
_FENCED = re.compile(r"^[ \t]*(?P<fence>```|~~~)[^\n]*\n.*?(?:^[ \t]*(?P=fence)[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_QUOTED_LINE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_QUOTED_INLINE = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|“[^”\n]*”")


def _own_words(text: str) -> tuple[str, str]:
    """(the reply without its code blocks and quoted lines, that without its inline quotes too)."""
    lines = _QUOTED_LINE.sub("", _FENCED.sub("", text or ""))
    return lines, _QUOTED_INLINE.sub("", lines)


def _first_read(text: str, read: Callable[[str, str], int | None]) -> int:
    """`read(lines, inline)` on the reply's own words; on the whole reply only where they hold no reading (a model
    that put its whole reply in a code block); 0 with none."""
    found = read(*_own_words(text))
    if found is None:
        found = read(text or "", text or "")
    return found or 0


def parse_score(text: str) -> int:
    """A screenshot's score, 1-5, from the first `Score` label of a reply, as the official evaluator reads the first
    `Score` (so `Score: 5 ... Score: 2` is 5), but also in the forms it misreads: markdown (`**Score**: 4`,
    `- **Score:** 4`), a heading with the number below it, `Score (1-5): 4`, `4/5`; a score out of 1-5 (`10/10`)
    is not one. Without a label, the first number after the word `score` on its line. 0 when there is none (the
    screenshot is then not kept, as in the official method). Code blocks and quoted text are not the reply's own
    words: they are read only when the reply has no score outside them."""
    def read(lines: str, inline: str) -> int | None:
        for pattern, where in ((_SCORE_LABEL, lines), (_SCORE_INLINE, inline)):
            m = pattern.search(where)
            if m:
                value = m["n"]
                return int(value) if value.isdigit() and 1 <= int(value) <= 5 else 0
        return None

    return _first_read(text, read)


def _status_value(value: str) -> int | None:
    word = re.sub(r"^[\s\"'`“”‘’*_\[\(<]+", "", value).lower()
    if re.match(r"(partial(ly)?|not|un|in)\b|unsuccess|incomplete", word):
        return 0
    if word.startswith("success"):
        return 1
    if word.startswith(("fail", "failure")):
        return 0
    return None


def parse_status(text: str) -> int:
    """1 when the first `Status:` label of a reply says success, as the official evaluator reads the first
    `status:`; but by its first word only (`Status: "failure" (the agent never reached success)` is a failure,
    which the official evaluator reads as a success for the word further on), `partial success` is not a success,
    and markdown (`**Status**: success`, which it misses) is read. Code blocks and quoted text (an example of the
    format, the task's words) are not the verdict: read only when the reply has none outside them. No status counts
    as failure."""
    def read(lines: str, inline: str) -> int | None:
        for pattern, where in ((_STATUS_LABEL, lines), (_STATUS_INLINE, inline)):
            for m in pattern.finditer(where):
                value = _status_value(m["v"])
                if value is not None:
                    return value
        return None

    return _first_read(text, read)


def official_score(text: str) -> int:
    """A score as the official evaluator reads it: the first digit 1-5 after the first `Score` (that very
    capitalisation) and before the next one; 0 when there is none. So `Score (1-5): 2` is 1 and `score: 4` is 0."""
    parts = (text or "").split("Score")
    if len(parts) < 2:
        return 0
    digit = re.search(r"[1-5]", parts[1])
    return int(digit[0]) if digit else 0


def official_status(text: str) -> int:
    """A verdict as the official evaluator reads it: 1 when `success` appears anywhere between the first `status:`
    (any case) and the next; 0 without one. So `**Status**: success` is 0 and `Status: partial success` is 1."""
    parts = (text or "").lower().split("status:")
    return 1 if len(parts) > 1 and "success" in parts[1] else 0


def official_webvoyager(text: str) -> int:
    """The official WebVoyager reading (success unless the failure word appears), with our prompt's failure word
    `NOT SUCCESS` beside its `FAILURE`."""
    return 0 if "FAILURE" in (text or "") or "NOT SUCCESS" in (text or "") else 1


def read_score(text: str, parsing: str) -> int:
    return official_score(text) if parsing == "official" else parse_score(text)


def read_status(text: str, parsing: str, mode: str = "webjudge") -> int:
    if mode == "webvoyager":
        return official_webvoyager(text) if parsing == "official" else parse_webvoyager(text)
    return official_status(text) if parsing == "official" else parse_status(text)


def parse_reasoning(text: str) -> str:
    """The reasoning of a screenshot's score, on one line: what follows a `Reasoning` label up to the score, else
    the reply before its score (the official method passes each kept screenshot's reasoning to the verdict)."""
    text = text or ""
    m = _REASONING_LABEL.search(text)
    body = text[m.end():] if m else text
    score = _SCORE_LABEL.search(body)
    if score is not None:
        body = body[:score.start()]
    elif m is None:
        body = body.split("\n\n")[0]
    body = re.sub(r"[*_`#]+", "", body)
    return re.sub(r"\s+", " ", body).strip(" -:")[:600]


def parse_webvoyager(text: str) -> int:
    """The lenient WebVoyager reading: `NOT SUCCESS` fails, `SUCCESS` succeeds, in the reply's own words (code
    blocks and quoted text only where it has neither outside them)."""
    def read(_lines: str, inline: str) -> int | None:
        if re.search(r"NOT\s+SUCCESS", inline):
            return 0
        return 1 if re.search(r"\bSUCCESS\b", inline) else None

    return _first_read(text, read)


def compare_readings(records: Iterable[dict[str, Any]], threshold: int | None) -> Readings:
    """A judge file's replies read both ways (official and lenient): how many verdicts and scores differ, and how
    many scores fall on the other side of `threshold` (a screenshot kept by one reading and not the other)."""
    verdicts = differ = scores = scores_differ = cross = 0
    tasks: list[str] = []
    parsing: str | None = None
    limit = threshold if isinstance(threshold, int) else 3
    for rec in records:
        # our lines before the `parsing` key were read leniently; the official evaluator's lines carry no judge_model
        parsing = parsing or rec.get("parsing") or ("lenient" if "judge_model" in rec else "official")
        details = rec.get("evaluation_details")
        reply = rec.get("response") if isinstance(rec.get("response"), str) else (
            details.get("response") if isinstance(details, dict) else None)
        mode = "webvoyager" if str(rec.get("mode") or "").startswith("webvoyager") else "webjudge"
        if isinstance(reply, str):
            verdicts += 1
            if read_status(reply, "official", mode) != read_status(reply, "lenient", mode):
                differ += 1
                tasks.append(str(rec.get("task_id")))
        for entry in rec.get("image_judge_record") or []:
            text = entry.get("Response") if isinstance(entry, dict) else None
            if not isinstance(text, str):
                continue
            scores += 1
            a, b = official_score(text), parse_score(text)
            scores_differ += a != b
            cross += (a >= limit) != (b >= limit)
    return Readings(parsing, verdicts, differ, tuple(tasks), scores, scores_differ, cross)


# ---------------------------------------------------------------------------------------------------- prompts


def jpeg_data_url(path: Path) -> str:
    """The screenshot as the official method sends it: re-encoded as JPEG (RGB) in a data URL. A file Pillow cannot
    read goes as it is (`check` reports it: the official evaluator crashes on it)."""
    raw = read_file(path, SCREENSHOT_LIMIT, own=True, what="screenshot")   # a FIFO, /dev/zero: InputError, named
    try:
        from PIL import Image  # Pillow comes with browser-use; imported here to keep the CLI's start light

        with Image.open(io.BytesIO(raw)) as img:
            buf = io.BytesIO()
            # as the official encoder: RGB and greyscale as they are (the same bytes), the rest as RGB
            (img if img.mode in ("RGB", "L") else img.convert("RGB")).save(buf, format="JPEG")
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    except Exception:   # noqa: BLE001 - any unreadable image: send the bytes, let the model say what it sees
        return "data:image/png;base64," + base64.b64encode(raw).decode("ascii")


def image_part(path: Path, cache: dict[Path, str] | None = None) -> dict[str, Any]:
    url = cache.get(path) if cache is not None else None
    if url is None:
        url = jpeg_data_url(path)
        if cache is not None:
            cache[path] = url
    return {"type": "image_url", "image_url": {"url": url, "detail": "high"}}


def numbered(actions: list[str]) -> str:
    return "\n".join(f"{i}. {a}" for i, a in enumerate(actions, 1)) or "(no actions)"


def key_points_messages(task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": KEY_POINTS_SYSTEM}, {"role": "user", "content": f"Task: {task}"}]


def score_messages(task: str, key_points: str, shot: Path, index: int, total: int,
                   cache: dict[Path, str] | None = None) -> list[dict[str, Any]]:
    text = (f"Task: {task}\n\nKey points:\n{key_points}\n\n"
            f"This is screenshot {index} of {total} of the agent's trajectory.")
    return [{"role": "system", "content": SCORE_SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": text}, image_part(shot, cache)]}]


def verdict_messages(ep: EvaluatorView, key_points: str, kept: list[tuple[int, Path, str]], total: int,
                     include_answer: bool, cache: dict[Path, str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """The outcome call: `kept` holds (1-based index, screenshot, the reasoning its score came with)."""
    text = f"Task: {ep.task}\n\nKey points:\n{key_points}\n\nAction history:\n{numbered(ep.action_history)}"
    if include_answer:
        text += f"\n\nAgent's final answer (its own claim, not evidence):\n{ep.final_result_response or '(none)'}"
    if kept:
        which = ", ".join(str(i) for i, _, _ in kept)
        text += (f"\n\nThe {len(kept)} screenshots below were judged relevant (screenshots {which} of {total}); "
                 f"what each one shows, in the same order:\n"
                 + "\n".join(f"{n}. (screenshot {i}) {why or '(no reasoning given)'}"
                             for n, (i, _, why) in enumerate(kept, 1)))
    else:
        text += f"\n\nNo screenshot was judged relevant ({total} in the trajectory)."
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] + [image_part(p, cache) for _, p, _ in kept]
    return [{"role": "system", "content": VERDICT_SYSTEM}, {"role": "user", "content": parts}], text


def webvoyager_messages(ep: EvaluatorView, last: int,
                        cache: dict[Path, str] | None = None) -> tuple[list[dict[str, Any]], str]:
    shots = webvoyager_shots(ep, last)
    text = f"Task: {ep.task}\n\nAgent's final answer:\n{ep.final_result_response or '(none)'}"
    text += (f"\n\nThe last {len(shots)} screenshots (of {len(ep.screenshots)}) follow." if shots
             else "\n\nThe trajectory has no screenshots.")
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] + [image_part(p, cache) for p in shots]
    return [{"role": "system", "content": WEBVOYAGER_SYSTEM}, {"role": "user", "content": parts}], text


def webvoyager_shots(ep: EvaluatorView, last: int) -> list[Path]:
    return ep.screenshots[-last:] if last > 0 else []


def encode_images(paths: list[Path]) -> dict[Path, str]:
    """Every screenshot's data URL, encoded once (in a thread: decoding and re-encoding PNGs is the CPU-heavy part
    of judging, and must not hold the event loop a run's scheduler and console share)."""
    return {p: jpeg_data_url(p) for p in dict.fromkeys(paths)}


# ---------------------------------------------------------------------------------------------------- calls


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "calls": self.calls}


def judge_client(base_url: str, api_key: str, s: Settings) -> Any:
    """The judge's AsyncOpenAI client: each call within --request-timeout in all (connect and the whole reply) and
    a reply of at most endpoint.JUDGE_REPLY_BYTES; the retries are the Caller's own."""
    from om2w_tui.endpoint import JUDGE_REPLY_BYTES, openai_client  # httpx and openai only when a judge calls

    return openai_client(base_url, api_key, s.request_timeout, JUDGE_REPLY_BYTES, max_retries=0)


class Caller:
    """Chat calls with bounded concurrency and retries with backoff on 5xx, 429, timeouts and connection errors."""

    def __init__(self, client: Any, s: Settings, sleep: Callable[[float], Any] = asyncio.sleep,
                 log: Callable[[str], None] = print):
        self.client, self.s, self.sleep, self.log = client, s, sleep, log
        self.sem = asyncio.Semaphore(s.workers)
        self.retried = 0
        self.temperature = s.temperature
        self.token_limit = "max_tokens" if s.max_tokens else None

    def _settings(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        if self.token_limit:
            extra[self.token_limit] = self.s.max_tokens
        return extra

    def _refused_setting(self, e: Exception) -> bool:
        """An endpoint that refuses a sampling setting (reasoning models take no temperature but their default,
        and `max_completion_tokens` for `max_tokens`): drop or rename it for every later call; True if done."""
        text = _message(e).lower()
        if self.temperature is not None and "temperature" in text:
            self.log(f"the endpoint refuses temperature {self.temperature}: sending none from now on")
            self.temperature = None
            return True
        if self.token_limit == "max_tokens" and "max_tokens" in text:
            self.log("the endpoint refuses max_tokens: sending max_completion_tokens from now on")
            self.token_limit = "max_completion_tokens"
            return True
        return False

    async def __call__(self, messages: list[dict[str, Any]], usage: Usage) -> str:
        import openai  # only when a judge calls: `report` reads judge files without the client

        attempt = 0
        while True:
            try:
                async with self.sem:
                    r = await self.client.chat.completions.create(model=self.s.model, messages=messages,
                                                                  **self._settings())
            except openai.BadRequestError as e:
                if self._refused_setting(e):
                    continue
                raise RuntimeError(f"HTTP {e.status_code}: {_message(e)}") from None
            except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
                raise JudgeFatal(f"the endpoint refused the API key (HTTP {e.status_code}): set the variable named "
                                 f"by --api-key-env") from None
            except openai.NotFoundError as e:
                raise JudgeFatal(f"the endpoint does not serve --judge-model {self.s.model} (HTTP 404: "
                                 f"{_message(e)})") from None
            except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as e:
                attempt += 1
                if attempt > self.s.retries:
                    raise RuntimeError(f"gave up after {attempt} tries: {type(e).__name__}: {_message(e)}") from None
                self.retried += 1
                delay = min(60.0, self.s.backoff * 2 ** (attempt - 1)) * (0.75 + 0.5 * random.random())
                await self.sleep(delay)
                continue
            except openai.APIStatusError as e:
                raise RuntimeError(f"HTTP {e.status_code}: {_message(e)}") from None
            usage.calls += 1
            return _reply_text(r, usage)


def _reply_text(r: Any, usage: Usage) -> str:
    """A chat completion's text, its usage counted; an answer that is not one (a server's own JSON, a bare string)
    is the endpoint's failure, said as such."""
    choices = getattr(r, "choices", None)
    message = getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
    if message is None:
        seen = f"{r!s:.80}" if isinstance(r, str) else "JSON without choices"
        raise RuntimeError(f"the endpoint answered {seen}, not a chat completion (not the OpenAI API)")
    counts = getattr(r, "usage", None)
    usage.prompt_tokens += int(getattr(counts, "prompt_tokens", 0) or 0)
    usage.completion_tokens += int(getattr(counts, "completion_tokens", 0) or 0)
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def _message(e: Exception) -> str:
    from om2w_tui.endpoint import reply_error  # loaded already by the client that raised

    if (refused := reply_error(e)) is not None:   # the deadline, the reply cap, not the API: its own words
        return str(refused)[:300]
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(e)[:300]


def select_kept(scores: list[int], threshold: int, limit: int = MAX_KEPT) -> list[int]:
    """Indices (0-based) of the screenshots kept: score >= threshold, the first `limit` of them in trajectory order,
    as the official method keeps them."""
    return [i for i, sc in enumerate(scores) if sc >= threshold][:limit]


async def judge_episode(ep: EvaluatorView, s: Settings, call: Caller) -> dict[str, Any]:
    """One task's judgement, as the line of the output file."""
    usage = Usage()
    # the official line is the task's result.json with the judgement added; ours adds a few keys of its own
    rec: dict[str, Any] = dict(ep.result)
    rec.update({
        "task_id": ep.task_id, "task": ep.task, "mode": s.mode_name, "judge_model": s.model,
        "score_threshold": s.score_threshold, "parsing": s.parsing, "schema": ep.schema,
        "judged_actions": ep.action_history,
        "final_result_response": ep.final_result_response, "screenshots": len(ep.screenshots),
    })
    shots = webvoyager_shots(ep, s.last_screenshots) if s.mode == "webvoyager" else ep.screenshots
    cache = await asyncio.to_thread(encode_images, shots)
    if s.mode == "webvoyager":
        messages, text = webvoyager_messages(ep, s.last_screenshots, cache)
        response = await call(messages, usage)
        label = read_status(response, s.parsing, "webvoyager")
        system = WEBVOYAGER_SYSTEM
    else:
        key_points = parse_key_points(await call(key_points_messages(ep.task), usage))
        total = len(ep.screenshots)
        replies = await asyncio.gather(*(call(score_messages(ep.task, key_points, p, i + 1, total, cache), usage)
                                         for i, p in enumerate(ep.screenshots)))
        scores = [read_score(r, s.parsing) for r in replies]
        kept = select_kept(scores, s.score_threshold)
        rec["key_points"] = key_points
        rec["image_judge_record"] = [{"Response": r, "Score": sc} for sc, r in zip(scores, replies)]
        rec["image_judge_screenshots"] = [p.name for p in ep.screenshots]
        rec["kept_screenshots"] = [ep.screenshots[i].name for i in kept]
        messages, text = verdict_messages(ep, key_points,
                                          [(i + 1, ep.screenshots[i], parse_reasoning(replies[i])) for i in kept],
                                          total, s.include_answer, cache)
        response = await call(messages, usage)
        label = read_status(response, s.parsing)
        system = VERDICT_SYSTEM
    rec.update({"input_text": text, "system_msg": system, "response": response,
                "evaluation_details": {"response": response, "predicted_label": label},
                "predicted_label": label, "usage": usage.as_dict(), "judged_at": time.time()})
    return rec


@dataclass
class JudgeOutcome:
    path: Path
    tasks: int                     # task folders in the run
    judged: int = 0                # judged by this call
    skipped: int = 0               # already in the output file
    unreadable: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    successes: int = 0             # over every line of the output file
    in_file: int = 0


async def judge_run(out: Path, s: Settings, client: Any, *, task_ids: list[str] | None = None,
                    log: Callable[[str], None] = print, sleep: Callable[[float], Any] = asyncio.sleep) -> JudgeOutcome:
    out = Path(out)
    run = read_run(out)
    adopt_legacy_output(out, s, log)
    path = output_path(out, s)
    outcome = JudgeOutcome(path, len(run.task_dirs))
    done = read_judged(path, log)   # InputError for a file that is a symlink, a FIFO: `judge` exits 2 naming it
    names = run.task_dirs if not task_ids else [t for t in run.task_dirs if t in set(task_ids)]
    for t in sorted(set(task_ids or ()) - set(run.task_dirs)):
        log(f"--task-ids: no task folder {t} in {out}")
    unreadable = {d for d in names if d not in run.episodes}
    outcome.unreadable = sorted(unreadable)
    for p in run.problems:
        if any(p.startswith(f"{d}:") for d in unreadable):
            log(f"cannot judge: {p}")
    todo = [run.episodes[d] for d in names if d in run.episodes and d not in done]
    outcome.skipped = sum(1 for d in names if d in done)
    if outcome.skipped:
        log(f"resuming: {outcome.skipped} task(s) already judged in {path.name}")
    call = Caller(client, s, sleep, log)
    task_sem = asyncio.Semaphore(max(1, s.workers))
    n_total = len(todo)
    counter = 0

    async def one(ep: EvaluatorView) -> None:
        nonlocal counter
        async with task_sem:
            try:
                rec = await judge_episode(ep, s, call)
            except JudgeFatal:
                raise
            except Exception as e:   # noqa: BLE001 - one task's failure must not cost the others
                outcome.failed[ep.task_id] = f"{type(e).__name__}: {e}" if not isinstance(e, RuntimeError) else str(e)
                counter += 1
                log(f"[{counter}/{n_total}] {ep.task_id}  not judged: {outcome.failed[ep.task_id]}")
                return
            append_line(path, rec)
            outcome.judged += 1
            counter += 1
            kept = f"  kept {len(rec['kept_screenshots'])}/{rec['screenshots']} screenshots" \
                if "kept_screenshots" in rec else ""
            log(f"[{counter}/{n_total}] {ep.task_id}  {'success' if rec['predicted_label'] == 1 else 'failure'}{kept}")

    jobs = [asyncio.ensure_future(one(ep)) for ep in todo]
    try:
        await asyncio.gather(*jobs)
    finally:
        for j in jobs:
            j.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
    final = read_judged(path)
    in_run = {d: r for d, r in final.items() if d in set(run.task_dirs)}
    outcome.in_file = len(in_run)
    outcome.successes = sum(1 for r in in_run.values() if r.get("predicted_label") == 1)
    return outcome
