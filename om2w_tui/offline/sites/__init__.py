"""The five offline websites (shop, wiki, booking, longpage, studio), one module each: server-side rendered,
deterministic HTML. `SITE_HANDLERS` names each site's request handler; `common` holds what they share.
"""

from __future__ import annotations

from om2w_tui.offline.sites.booking import BookingHandler
from om2w_tui.offline.sites.common import SiteHandler
from om2w_tui.offline.sites.longpage import LongPageHandler
from om2w_tui.offline.sites.shop import ShopHandler
from om2w_tui.offline.sites.studio import StudioHandler
from om2w_tui.offline.sites.wiki import WikiHandler

__all__ = ["SITE_HANDLERS"]

SITE_HANDLERS: dict[str, type[SiteHandler]] = {
    "shop": ShopHandler,
    "wiki": WikiHandler,
    "booking": BookingHandler,
    "longpage": LongPageHandler,
    "studio": StudioHandler,
}
