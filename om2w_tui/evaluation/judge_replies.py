"""Reading a judge's reply, in every format a model writes it: the key points, a screenshot's score and its
reasoning, the verdict (WebJudge's `Status:`, WebVoyager's `Verdict:`). Two readings: the official evaluator's
(`official_score`, `official_status`, `official_webvoyager`; what our numbers use by default) and the lenient one
(`parse_score`, `parse_status`, `parse_webvoyager`: markdown, bullets and headings read, code blocks and quoted
text skipped); `read_score` and `read_status` pick one by `parsing`, and `compare_readings` counts the replies of a
file the two read differently."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from om2w_tui.evaluation.judge_files import line_parsing
from om2w_tui.evaluation.summary import Readings


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
        parsing = parsing or line_parsing(rec)
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
