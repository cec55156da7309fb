"""`?`: every key of the screen it was opened on, built from that screen's bindings."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


def binding_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(key, what it does, where) for every active binding of `screen`, app-wide ones last."""
    rows = []
    seen = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if not binding.description or (binding.action, binding.description) in seen:
            continue
        seen.add((binding.action, binding.description))
        where = "everywhere" if active.node is screen.app else "this screen"
        rows.append((binding.key_display or screen.app.get_key_display(binding), binding.description, where))
    rows.sort(key=lambda r: (r[2] == "everywhere", r[1]))
    return rows


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help")]

    def __init__(self, for_screen: Screen):
        super().__init__()
        self.for_screen = for_screen

    def compose(self) -> ComposeResult:
        title = getattr(self.for_screen, "TITLE", None) or self.for_screen.__class__.__name__
        with Vertical(id="help"):
            yield Static(f"Keys on {title}", id="help-title")
            yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            yield Static("ctrl+p opens the command palette: every screen and action by name. "
                         "Escape closes this help.", id="help-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("Key", "Action", "Where")
        for row in binding_rows(self.for_screen):
            table.add_row(*row)
        table.focus()

    def action_dismiss(self) -> None:
        self.dismiss()
