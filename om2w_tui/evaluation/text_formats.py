"""The number formats every report text shares (`evaluation/report_text.py`'s sections, `health_text.py`, the
console's report screen, the headless log, the web site): a rate with its counts and 95% interval, a difference in
percentage points, a p value, a share, a gap in time, a Markdown table; and `Section`, the (title, header, rows) shape
every format and the rich table are drawn from."""

from __future__ import annotations

from typing import Any

from om2w_tui.evaluation.outcomes import RULE_ALL, RULE_EXECUTABLE
from om2w_tui.evaluation.summary import Rate

# every table of rates names its counting rule
RULE_HEADERS = {RULE_ALL: "over all", RULE_EXECUTABLE: "executable only"}


def fmt_rate(v: Rate | None, interval: bool = True) -> str:
    """`40.0% (2/5) [11.8, 76.9]`: the rate, its counts and its 95% interval (in percent)."""
    if v is None or v.rate is None:
        return "-"
    text = f"{100 * v.rate:.1f}% ({v.successes}/{v.tasks})"
    if interval and v.interval is not None:
        low, high = v.interval
        text += f" [{100 * low:.1f}, {100 * high:.1f}]"
    return text


def signed(x: float, digits: int = 1) -> str:
    """`+3.1`, `-0.4`: a number with its sign; one that rounds to zero is `+0.0`, never a minus zero."""
    text = f"{x:+.{digits}f}"
    return "+" + text[1:] if float(text) == 0 else text


def fmt_pp(d: float | None, low: float | None = None, high: float | None = None) -> str:
    """A difference of rates in percentage points, with its interval when given: `+12.0 pp [+3.1, +20.4]`."""
    if d is None:
        return "-"
    text = f"{signed(100 * d)} pp"
    if low is not None and high is not None:
        text += f" [{signed(100 * low)}, {signed(100 * high)}]"
    return text


def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def fmt_kappa(k: float | None) -> str:
    return "-" if k is None else f"{k:.3f}"


def fmt_num(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.{digits}f}"
    return str(int(x))


def fmt_delta(d: float | None) -> str:
    return "" if d is None else f"{signed(d)} pp"


def short_rate(v: Rate) -> str:
    """`37.5% 3/8 [14-69]`: a rate for a narrow line, its interval in whole percents."""
    if v.rate is None or v.interval is None:
        return "-"
    return f"{100 * v.rate:.1f}% {v.successes}/{v.tasks} [{100 * v.interval[0]:.0f}-{100 * v.interval[1]:.0f}]"


Section = tuple[str, list[str], list[list[str]]]


def share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def whole_seconds(x: float) -> int:
    """A duration in whole seconds as every view shows one (`fmt_seconds`, the console's and the headless log's
    clock): rounded to the nearest (56.8 s is 57, never truncated to 56), never below 0."""
    return max(0, round(x))


def fmt_seconds(x: float | None) -> str:
    """`42 s`, `3.5 min`, `1.2 h`: a gap in time, in the unit that reads best (whole seconds by `whole_seconds`)."""
    if x is None:
        return "-"
    if x < 120:
        return f"{whole_seconds(x)} s"
    if x < 7200:
        return f"{x / 60:.1f} min"
    return f"{x / 3600:.1f} h"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table, its cells' `|` escaped."""
    esc = [[c.replace("|", "\\|") for c in r] for r in [header, *rows]]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    return "\n".join(lines)


def cell(x: Any) -> Any:
    return "" if x is None else x
