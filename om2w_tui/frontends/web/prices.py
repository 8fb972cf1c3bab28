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
    return {str(model): _price(path, str(model), entry) for model, entry in table.items()}


def _price(path: Path, model: str, entry: Any) -> Price:
    """One model's entry: exactly `input` and `output`, each a number >= 0; else PricesError naming the key."""
    if not isinstance(entry, dict):
        raise PricesError(f"--prices {path}: {model!r} must be a table with `input` and `output` (dollars per "
                          f"million tokens)")
    extra = sorted(map(str, set(entry) - {"input", "output"}))
    if extra:
        raise PricesError(f"--prices {path}: {model!r} has `{extra[0]}`, which is not a price: give only `input` "
                          f"and `output` (dollars per million tokens)")
    for key in ("input", "output"):
        if key not in entry:
            raise PricesError(f"--prices {path}: {model!r} has no `{key}` (dollars per million tokens)")
        value = entry[key]
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and value >= 0):
            raise PricesError(f"--prices {path}: [{model!r}] {key} = {value!r}: it must be a number >= 0 "
                              f"(dollars per million tokens)")
    return Price(float(entry["input"]), float(entry["output"]))
