"""The built-in offline suite: local websites, tasks with known solutions, and a scripted oracle model.

- `OfflineSuite` serves the shop, wiki, booking, longpage and studio sites (`sites/`), each on its own 127.0.0.1 port;
  `OfflineSuite.tasks()` gives the shipped tasks (Online-Mind2Web shape) pointed at those ports.
  Every site also has `GET /hang`, which never answers (until the server stops), for page-load fault tests.
- `judge_answer(task, answer)` is the reference judge: every `reference_answer` string must be in the answer.
- `OracleServer(tasks)` is an OpenAI-compatible model server that plays each task's solution through
  browser-use's real protocol; model names other than `oracle` inject faults (see `oracle.MODES`).
"""

from __future__ import annotations

from typing import Any

from om2w_tui.offline.suite import SITE_NAMES, TASKS_TEMPLATE, OfflineSuite, judge_answer

__all__ = ["ORACLE_MODES", "SITE_NAMES", "TASKS_TEMPLATE", "OfflineSuite", "OracleServer", "judge_answer"]


def __getattr__(name: str) -> Any:
    if name in ("OracleServer", "ORACLE_MODES"):
        # on first use, so that `python -m om2w_tui.offline.oracle` does not find its module already loaded
        from om2w_tui.offline import oracle  # on first use, see above

        return oracle.OracleServer if name == "OracleServer" else oracle.MODES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
