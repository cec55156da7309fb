"""The footer: Textual's, redrawn only when the keys it shows change.

Textual's Footer rebuilds every key widget on each bindings refresh, and a screen refreshes its
bindings whenever a reactive with `bindings=True` moves: on the review screen, twice per decision
(saving, then the next candidate), for the same keys. Mounting and styling a dozen key widgets each
time was most of a decision's redraw (docs/architecture.md, "Keys"); this footer keeps what it
shows when the keys, their descriptions and whether each is enabled are the same.
"""
from __future__ import annotations

from textual.widgets import Footer as TextualFooter


def shown_keys(screen) -> tuple:
    """What a footer on `screen` would show: each active key with its action, text and state."""
    return tuple((key, binding.action, binding.description, binding.show, enabled, tooltip, binding.group)
                 for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items()
                 if binding.show or key == screen.app.COMMAND_PALETTE_BINDING)


class Footer(TextualFooter):
    _shown: tuple | None = None

    def bindings_changed(self, screen) -> None:
        if self._bindings_ready and screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = shown_keys(screen)
            if shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)
