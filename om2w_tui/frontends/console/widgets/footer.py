"""The screens' footer: Textual's Footer without the leak of its rebuilds.

Textual's Footer (8.x) rebuilds its keys whenever the allowed commands change, and each new key binds its `compact`
to the footer's (`data_bind`), which adds a watcher to the footer. Textual drops the watchers of removed keys only
when `compact` itself changes, which it never does here, so every rebuild kept its removed keys (widgets with their
styles and caches) alive for good: on the dashboard, where the selected slot's commands change with its episodes,
that was most of the console's growth per finished episode (bench/scale.py). `LeanFooter` drops them after each
rebuild, by the rule Textual applies itself (a watcher whose node is closing is dropped)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer


class LeanFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()
        self.drop_closed_watchers()

    def drop_closed_watchers(self) -> None:
        """Forget the watchers of removed keys (Textual keeps them in the footer's "__watchers" attribute)."""
        watchers: dict[str, list[tuple[Any, Any]]] = getattr(self, "__watchers", {})
        for kept in watchers.values():
            kept[:] = [(node, callback) for node, callback in kept if not getattr(node, "_closing", False)]
