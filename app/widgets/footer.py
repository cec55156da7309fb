"""The footer: the moves the item on screen allows you, then the screen's other keys as the width allows.

Which keys, in which order (docs/architecture.md, "Keys"; README, "Keys"):

- every move the highlighted item allows you (a binding whose action is in the screen's `MOVES`,
  not refused by `check_action`), whatever the width, hidden (`show=False`) or not;
- then `?` Help and `esc` Back, then the screen's other shown keys in the order declared, as long as
  they fit the terminal's width; `?` lists them all;
- drawn in the order the screen declares its bindings, then the app's: a key a keymap file moves
  keeps its place (Textual puts a rebound binding last in its map).

Redrawn only when what it shows changes: a screen refreshes its bindings whenever a reactive with
`bindings=True` moves (on the review screen, twice per decision, for the same keys), and mounting
and styling a dozen key widgets each time was most of a decision's redraw.
"""
from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import Footer as TextualFooter

from r2k.app.keymap import declared_order
from r2k.app.textual_private import FooterKey, footer_bindings_ready

# The keys that lead out and to the rest, kept ahead of the other non-moves.
WAYS_OUT = ("help", "back")
NARROWEST = 80  # the width footers are made to fit (a terminal not laid out yet counts as this)


def key_width(key_display: str, description: str, compact: bool) -> int:
    """The columns one key takes in the footer, margins included (Textual's Footer CSS)."""
    if compact:  # the description padded on its left, a column between keys
        return cell_len(key_display) + 1 + cell_len(description) + 1
    return 1 + cell_len(key_display) + 1 + cell_len(description) + 1  # the key padded both sides


def palette_key(screen, shown: bool):
    """The command palette's active binding, when the footer draws it on its right (None otherwise)."""
    app = screen.app
    if not (shown and app.ENABLE_COMMAND_PALETTE):
        return None
    return screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)


def footer_bindings(screen, width: int, compact: bool) -> list[tuple]:
    """(binding, enabled, tooltip) for each key a footer `width` columns wide shows on `screen`, in
    the order drawn (the rule above)."""
    app = screen.app
    moves = getattr(screen, "MOVES", {})
    nodes: dict[int, int] = {}  # id(node) -> its place in the binding chain (the focused widget's first)
    candidates = []
    seen_actions = set()
    for active in screen.active_bindings.values():
        node, binding = active.node, active.binding
        if not binding.description or (node, binding.action) in seen_actions:
            continue
        move = node is screen and binding.action in moves
        if not (move or binding.show):
            continue
        seen_actions.add((node, binding.action))
        place = nodes.setdefault(id(node), len(nodes))
        order = declared_order(node).get(binding.id or binding.action, 1_000)
        candidates.append(((place if node is not app else 10_000, order), move, binding, active))
    candidates.sort(key=lambda c: c[0])

    def width_of(candidate) -> int:
        return key_width(app.get_key_display(candidate[2]), candidate[2].description, compact)

    chosen = [c for c in candidates if c[1]]
    used = sum(width_of(c) for c in chosen)
    rest = sorted((c for c in candidates if not c[1]),
                  key=lambda c: (c[2].id not in WAYS_OUT, WAYS_OUT.index(c[2].id) if c[2].id in WAYS_OUT else 0))
    for candidate in rest:
        used += width_of(candidate)
        if used > width:
            break
        chosen.append(candidate)
    chosen.sort(key=lambda c: c[0])
    return [(c[2], c[3].enabled, c[3].tooltip) for c in chosen]


class Footer(TextualFooter):
    """Textual's footer, choosing its keys by the rule above; the command palette's key, when shown,
    on its right as Textual draws it (its columns taken from the width first). It draws no binding
    groups (no screen here has any)."""

    _shown: tuple | None = None

    def _width(self) -> int:
        width = self.app.size.width or NARROWEST
        palette = palette_key(self.screen, self.show_command_palette)
        if palette is not None:  # docked right, with a border and padding of its own
            width -= key_width(self.app.get_key_display(palette.binding), palette.binding.description, False) + 2
        return width

    def _choice(self, screen) -> tuple:
        return tuple((binding.key, binding.action, binding.description, self.app.get_key_display(binding), enabled)
                     for binding, enabled, _ in footer_bindings(screen, self._width(), self.compact))

    def compose(self):
        if not footer_bindings_ready(self):
            return
        for binding, enabled, tooltip in footer_bindings(self.screen, self._width(), self.compact):
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                            disabled=not enabled, tooltip=tooltip).data_bind(compact=TextualFooter.compact)
        palette = palette_key(self.screen, self.show_command_palette)
        if palette is not None:
            binding = palette.binding
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                            classes="-command-palette", disabled=not palette.enabled,
                            tooltip=binding.tooltip or binding.description)

    def bindings_changed(self, screen) -> None:
        if footer_bindings_ready(self) and screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = self._choice(screen)
            if shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)

    def on_resize(self) -> None:
        # A wider or narrower terminal may hold more or fewer of the keys that are not moves.
        if footer_bindings_ready(self) and self.is_attached:
            self.bindings_changed(self.screen)
