"""What a task came to, as a type: `Outcome` (`success`, `failure`, `not_executable`; None where a task has none
yet). Below the report's values (`summary.py`), the failure classes (`failure.py`) and the rules that decide it
(`outcomes.py`), which all name it: none of them imports another for it."""

from __future__ import annotations

from typing import Literal

Outcome = Literal["success", "failure", "not_executable"]
