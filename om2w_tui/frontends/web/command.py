"""`report --html DIR [--link] [--prices FILE]`: its flags' checks and the one call `cli/report.py` makes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from om2w_tui.evaluation.summary import Comparison, RunReport

EXIT_USAGE = 2


def add_arguments(p: Any) -> None:
    p.add_argument("--html", type=Path, default=None, metavar="DIR",
                   help="write the runs as a static site to DIR (a new folder outside every run folder): numbers, "
                        "charts, every task's trajectory beside its screenshots, why each failure failed, cost")
    p.add_argument("--link", action="store_true",
                   help="with --html: link the full screenshots to the run folders instead of copying them")
    p.add_argument("--prices", type=Path, default=None, metavar="FILE",
                   help="with --html: dollars per million input and output tokens, per model (TOML or JSON)")


def problem(args: Any) -> str:
    """Why the flags do not go together ('' when they do), checked before anything is read."""
    html = getattr(args, "html", None)
    if html is None:
        if getattr(args, "link", False) or getattr(args, "prices", None) is not None:
            return "--link and --prices go with --html DIR"
        return ""
    if getattr(args, "ui", False):
        return "--html writes a site; --ui opens the console: give one"
    if getattr(args, "labels", None) is not None:
        return "--html shows run folders (their trajectories); --labels has none"
    from om2w_tui.frontends.web.site import SiteError, check_destination  # Jinja2 only when a site is asked for

    try:
        check_destination(html, list(args.outs))
    except SiteError as e:
        return str(e)
    return ""


def write_site(args: Any, summaries: list[RunReport], comparison: Comparison | None) -> int:
    """Build the site; exit 2 with the reason for bad prices or a refused folder."""
    from om2w_tui.frontends.web.prices import PricesError, read_prices  # Jinja2 and Pillow only for a site
    from om2w_tui.frontends.web.site import SiteError, build_site

    try:
        prices = read_prices(args.prices) if args.prices is not None else None
        dest = build_site(args.html, summaries, comparison, link=args.link, prices=prices)
    except (PricesError, SiteError) as e:
        print(f"om2w-tui report: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {dest / 'index.html'}")
    return 0
