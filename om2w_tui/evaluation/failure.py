"""Why an episode failed: one failure class per task that did not succeed, by stated rules from its latest record
(`EpisodeRecord`) and its trajectory (read through `benchmarks/episode_folder.py`).

The classes, in their order of precedence (the first rule that holds names the class):

  1. stopped        status `killed`: its user ended it (and it was not run again), or its run's stop or requeue did
                    (then it is not its task's settling attempt: a report gives the task no class while it waits to
                    run again, `tasks health` lists the attempt); never a site's failure, whatever its page showed
  2. bot_wall       the record's status is `blocked` (a CAPTCHA or bot wall met the agent)
  3. harness_error  status `error` of kind infra, endpoint or storage (the harness or its services failed), but for
                    a network error of the site itself at its page load (Chromium's net::ERR_ codes of the site:
                    protocol/faults.py SITE_NET_ERRORS; the worker records it as infra so that it is retried): the
                    site's, rule 4
  4. site_error     the site failed: the record's error names an HTTP or network failure (net::ERR_..., HTTP 4xx/5xx,
                    connection refused or reset, name not resolved), the last page is the browser's error page
                    (chrome-error://), the site answered with an HTTP error page (`error_page`: the last page's
                    recorded HTTP status 4xx/5xx, its title, or the last step's thought reading one: 404 / 500 /
                    502 / 503 Not Found ...), or the episode never got a screenshot of a page and took no step
  5. model_error    status `error` of kind model, or a record with `model_fault` (the call kind it ended on is the
                    class's detail: schema, context, refusal ...)
  6. loop           the same action on the same page three or more steps in a row (a step's action lines and its
                    URL; a v1 trajectory keeps no URL: the action lines alone)
  7. timeout        status `timeout`
  8. out_of_steps   status `out_of_steps`, or `done` without the agent saying it was done after the step budget
                    (the record's own max_steps; a record written before records kept it: run.json's) was used up
  9. gave_up        it ended without an answer, with an answer that says it failed ("could not", "unable to",
                    "cannot" ...), or on an error of the agent's own
 10. answered_wrong it ended with an answer that the measure (the judge, the humans or the reference answers) calls a
                    failure

A loop goes before the timeout and the step budget because it is what used them up. A task that succeeded has no
class, nor one with no outcome yet (not judged, not labelled) whose status says it ended as an agent ends (`done`, its
step budget not used up), whatever its steps show (a loop, an error page): its measure may yet call it a success. A
status that says it failed (killed, blocked, error, timeout, out_of_steps) names a class before any verdict. A folder
with no record (another harness's, or an episode its run was killed under) is read as its folder says it ended: its
`cut_short` (`killed`, `timeout` ...) as the status, else `done`. Pure functions, but `max_steps_of` reads the run's
`run.json`; `report` and `tasks health` read the folders and call `classify`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.episode_folder import EpisodeFolder, StepOnDisk
from om2w_tui.engine.results import EpisodeRecord
from om2w_tui.evaluation.task_outcome import Outcome
from om2w_tui.json_input import InputError, load
from om2w_tui.protocol.faults import FaultKind, site_net_error
from om2w_tui.run_folder import RunFolder

CLASSES: tuple[str, ...] = ("stopped", "bot_wall", "harness_error", "site_error", "model_error", "loop", "timeout",
                            "out_of_steps", "gave_up", "answered_wrong")
WORDS: dict[str, str] = {
    "bot_wall": "bot wall", "harness_error": "harness error", "site_error": "site error", "model_error": "model error",
    "loop": "loop", "timeout": "timeout", "out_of_steps": "step budget used up", "stopped": "stopped by its user",
    "gave_up": "gave up", "answered_wrong": "answered wrong",
}
LOOP_REPEATS = 3

# an HTTP status the site answered with (a page that came back with an error), not a network failure
_HTTP = (r"\bHTTP(?: error| status)?[ :]*[45]\d\d\b|\b[45]\d\d (?:Not Found|Forbidden|Internal Server Error|"
         r"Bad Gateway|Service Unavailable|Gateway Time-?out)\b")
_NET = re.compile(r"net::ERR_|\bERR_(?:NAME_NOT_RESOLVED|CONNECTION_\w+|ADDRESS_UNREACHABLE|EMPTY_RESPONSE|"
                  r"TIMED_OUT|SSL_\w+|CERT_\w+)|\bconnection (?:refused|reset)|name (?:or service )?not "
                  r"(?:resolved|known)|" + _HTTP, re.IGNORECASE)
# words that say the site answered with an error page (an HTTP status), and words that say its page failed at all
_ERROR_PAGE = _HTTP + (r"|\b(?:404|500|502|503|504)\b[^.\n]{0,40}\b(?:not found|error|unavailable|bad gateway|"
                       r"gateway)|\berror page\b")
_READS_ERROR_PAGE = re.compile(_ERROR_PAGE, re.IGNORECASE)
_READS_PAGE_FAILED = re.compile(_ERROR_PAGE + r"|\bpage (?:did not|didn't|does not|won't) load\b|\bsite is down\b",
                                re.IGNORECASE)
_BROWSER_ERROR_URL = ("chrome-error://",)
_GAVE_UP = re.compile(r"\b(?:could ?n[o']t|can ?n[o']t|cannot|unable to|not able to|failed to|impossible|"
                      r"not possible|no (?:results?|information) (?:found|available)|TASK_INCOMPLETE)\b",
                      re.IGNORECASE)


@dataclass(frozen=True)
class Failure:
    """A failure class (one of CLASSES), its detail (a model error's call kind, the repeated action) and the rule
    that gave it, in words."""

    cls: str
    why: str
    detail: str = ""

    @property
    def words(self) -> str:
        return WORDS[self.cls] + (f" ({self.detail})" if self.detail else "")

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "detail": self.detail, "why": self.why}


def loop_of(episode: EpisodeFolder | None, repeats: int = LOOP_REPEATS) -> str:
    """The action repeated on the same page `repeats` or more steps in a row ('' when there is none)."""
    if episode is None:
        return ""
    run, last = 0, None
    for step in episode.steps:
        key = (step.actions, step.url) if step.actions else None
        run = run + 1 if key is not None and key == last else (1 if key is not None else 0)
        last = key
        if run >= repeats and key is not None:
            return " ; ".join(key[0])[:120]
    return ""


def _last_shown(episode: EpisodeFolder | None) -> StepOnDisk | None:
    """The last step with a URL or a thought."""
    shown = [s for s in episode.steps if s.url or s.thought] if episode is not None else []
    return shown[-1] if shown else None


def browser_error_page(episode: EpisodeFolder | None) -> str:
    """The URL of the browser's own error page (chrome-error://: the site did not answer) the episode ended on, as
    its worker recorded the last page, else as its last step's URL (v2 folders); "" when it did not end on one."""
    page, step = (episode.last_page if episode is not None else None), _last_shown(episode)
    url = page.url if page is not None else step.url if step is not None else ""
    return url if url.startswith(_BROWSER_ERROR_URL) else ""


def error_page(rec: EpisodeRecord | None, episode: EpisodeFolder | None) -> str:
    """Why the site is taken to have answered with an HTTP error page ("" when nothing says so), the first that holds
    of: the record's error names an HTTP 4xx/5xx; the last page's main document answered 4xx/5xx (its HTTP status,
    as the worker recorded it at the episode's end); the last page's title reads an error page ("503 Service
    Unavailable", "404 Not Found"); the last step's thought reads one (the weakest: the agent's words). The browser's
    own error page is none of these: the site did not answer."""
    if rec is not None and rec.error and _READS_ERROR_PAGE.search(rec.error):
        return f"the error names an HTTP failure: {rec.error[:120]}"
    if browser_error_page(episode):
        return ""
    page, step = (episode.last_page if episode is not None else None), _last_shown(episode)
    if page is not None and page.status >= 400:
        return f"the last page answered HTTP {page.status} ({page.url[:80]})"
    if page is not None and _READS_ERROR_PAGE.search(page.title):
        return f"the last page's title reads an error page: {page.title[:120]}"
    if step is not None and _READS_ERROR_PAGE.search(step.thought):
        return f"the last step's thought reads an error page: {step.thought[:120]}"
    return ""


def _site_error(rec: EpisodeRecord, episode: EpisodeFolder | None) -> str:
    if rec.error and _NET.search(rec.error):
        return f"the error names a network or HTTP failure: {rec.error[:120]}"
    if url := browser_error_page(episode):
        return f"the last page is the browser's error page ({url[:80]})"
    if why := error_page(rec, episode):
        return why
    if (step := _last_shown(episode)) is not None and _READS_PAGE_FAILED.search(step.thought):
        return f"the last step's thought reads a page that failed: {step.thought[:120]}"
    no_page = (rec.blank_screenshot or (episode is not None and episode.blank_screenshot)) and rec.steps == 0
    if no_page and rec.status != "error":
        return "the episode never got a page (no screenshot, no step)"
    return ""


def classify(record: EpisodeRecord | None, episode: EpisodeFolder | None, outcome: Outcome | None,
             max_steps: int | None = None) -> Failure | None:
    """The failure class of a task from its latest record, its episode folder (None: not read) and its outcome
    under the report's measure; None when it succeeded, or when it has no outcome yet and its status does not say it
    failed (a `done` episode waits for its measure, whatever its steps show). `max_steps`: the run's step budget
    (run.json's), for a record that does not carry the budget it ran under."""
    if outcome == "success":
        return None
    rec = record or EpisodeRecord(task_id=episode.task_id if episode else "",
                                  status=(episode.cut_short if episode else "") or "done",
                                  answer=episode.answer if episode else "",
                                  steps=episode.recorded_steps if episode else 0)
    status, kind = rec.status, rec.error_kind
    max_steps = rec.max_steps if rec.max_steps is not None else max_steps   # the task's own budget first
    budget_used = status == "out_of_steps" or (status == "done" and not rec.agent_done and max_steps is not None
                                               and rec.steps >= max_steps)
    if outcome is None and status in ("done", "") and not budget_used:
        return None   # no outcome yet and its status says it ended well: it may have succeeded, a loop or not
    if status == "killed":   # stopped before its end: what its page showed is not the site's doing
        return Failure("stopped", f"status killed: {rec.error or 'by its user'}")
    if status == "blocked":
        return Failure("bot_wall", "status blocked: a bot wall or CAPTCHA")
    if status == "error" and (code := site_net_error(rec.error)):   # before the harness: the site did not answer
        return Failure("site_error", f"the site did not answer its page load: {code}")
    if status == "error" and kind is not None and kind.harness:
        return Failure("harness_error", f"status error of kind {kind}: {(rec.error or '')[:120]}", str(kind))
    if why := _site_error(rec, episode):
        return Failure("site_error", why)
    if (status == "error" and kind is FaultKind.MODEL) or rec.model_fault:
        return Failure("model_error", f"ended on its model ({rec.model_fault or 'unknown'}): "
                                      f"{(rec.error or '')[:120]}", rec.model_fault or "unknown")
    if repeated := loop_of(episode):
        return Failure("loop", f"the same action on the same page {LOOP_REPEATS}+ times in a row", repeated)
    if status == "timeout":
        return Failure("timeout", "status timeout: the episode's time ran out")
    if budget_used:
        return Failure("out_of_steps", f"{rec.steps} steps of a budget of {max_steps or rec.steps}, no answer given")
    answer = rec.answer.strip() or (episode.answer.strip() if episode else "")
    if status == "error":
        return Failure("gave_up", f"an error of the agent's own: {(rec.error or '')[:120]}")
    if not answer:
        return Failure("gave_up", "it ended without an answer")
    if _GAVE_UP.search(answer):
        return Failure("gave_up", f"its answer says it failed: {answer[:120]}")
    return Failure("answered_wrong", "it answered, and the measure calls the answer a failure")


def max_steps_of(out: Path) -> int | None:
    """The run's step budget from its run.json (None: no manifest says): the budget of a record written before
    records carried their own (`EpisodeRecord.max_steps`)."""
    for path in RunFolder(Path(out)).manifests():
        try:
            manifest = load(path)
        except InputError:
            continue
        cfg = manifest.get("config") if isinstance(manifest, dict) else None
        value = cfg.get("max_steps") if isinstance(cfg, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def counted(failures: Mapping[str, Failure | None]) -> dict[str, int]:
    """How many tasks each class has, in CLASSES order (classes with none left out)."""
    n = Counter(f.cls for f in failures.values() if f is not None)
    return {c: n[c] for c in CLASSES if n[c]}


__all__ = ["CLASSES", "LOOP_REPEATS", "WORDS", "Failure", "classify", "counted", "loop_of",
           "max_steps_of"]
