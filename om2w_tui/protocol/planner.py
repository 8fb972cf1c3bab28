"""What the `agent` arm's planner says to its model server, declared below both (the arm in `episode/arms/planner.py`,
the oracle that plays it in `offline/`): the specialists' families, each a model the server serves (a LoRA adapter
named after it), and the words the planner's system prompt opens with, by which a server knows a planner's turn."""

from __future__ import annotations

FAMILIES = ("drag", "io", "select", "rest", "reasoning")
PLANNER_MARKER = "You are the planner of an om2w-tui agent team."
