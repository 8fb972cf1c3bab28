"""`--prices FILE`: what a model's tokens cost, per million input (prompt) and output (completion) tokens, read
from TOML or JSON:

    ["gpt-4o-mini"]                 {"gpt-4o-mini": {"input": 0.15, "output": 0.60},
    input = 0.15                     "o4-mini": {"input": 1.10, "output": 4.40}}
    output = 0.60

A file that cannot be read as that raises PricesError naming the file and the entry."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om2w_tui.json_input import InputError, decode, read_bytes, text_of

PRICES_LIMIT = 1 << 20   # bytes of a prices file read (a few hundred models are a few KiB)


class PricesError(ValueError):
    """A prices file that cannot be used; the message names it and what is wrong."""


@dataclass(frozen=True)
class Price:
    """Dollars per million input and output tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


def read_prices(path: Path) -> dict[str, Price]:
    """model -> Price from a TOML or JSON file (JSON when it starts with `{`)."""
    try:
        data = read_bytes(path, PRICES_LIMIT)
    except InputError as e:
        raise PricesError(f"--prices {path}: {e}") from None
    try:
        if data.lstrip().startswith(b"{"):
            table: Any = decode(data, str(path))
        else:
            table = tomllib.loads(text_of(data, str(path)))
    except (InputError, tomllib.TOMLDecodeError) as e:
        raise PricesError(f"--prices {path}: not TOML or JSON ({e})") from None
    if not isinstance(table, dict) or not table:
        raise PricesError(f"--prices {path}: give a table of models, each with input and output dollars per "
                          f"million tokens")
    prices: dict[str, Price] = {}
    for model, entry in table.items():
        if not isinstance(entry, dict) or set(entry) - {"input", "output"} or not {"input", "output"} <= set(entry):
            raise PricesError(f"--prices {path}: {model!r} must have exactly `input` and `output` (dollars per "
                              f"million tokens)")
        values = [entry["input"], entry["output"]]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                   for v in values):
            raise PricesError(f"--prices {path}: {model!r}'s input and output must be numbers >= 0")
        prices[str(model)] = Price(float(values[0]), float(values[1]))
    return prices
