"""`?`: every key of the screen it was opened on, built from that screen's bindings."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


def binding_rows(screen: Screen) -> list[tuple[str, str, str, str]]:
    """(keys, what it does, where, id) for every binding of `screen` with a description, the keys
    in force (a keymap file's included) and app-wide ones last. A move the highlighted item cannot
    take now (its state, your authority) is listed too, marked "not now": the footer hides it."""
    app = screen.app
    rows: dict[tuple, list] = {}
    for node, bindings in screen._binding_chain:  # keymap applied; the focused widget's own keys too
        for key, binding in bindings:
            if not binding.description or (node is not screen and node is not app):
                continue
            where = "everywhere" if node is app else "this screen"
            group = (binding.id or binding.action, binding.description)
            if group in rows:
                if rows[group][2] == where and app.get_key_display(binding) not in rows[group][0]:
                    rows[group][0] += " " + app.get_key_display(binding)
                continue
            if app._check_action_state(binding.action, node) is False:
                where += " · not now"
            rows[group] = [app.get_key_display(binding), binding.description, where, binding.id or ""]
    out = [tuple(row) for row in rows.values()]
    out.sort(key=lambda r: (r[2].startswith("everywhere"), r[2].endswith("not now"), r[1]))
    return out


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help", id="close_help")]

    def __init__(self, for_screen: Screen):
        super().__init__()
        self.for_screen = for_screen

    def compose(self) -> ComposeResult:
        title = getattr(self.for_screen, "TITLE", None) or self.for_screen.__class__.__name__
        with Vertical(id="help"):
            yield Static(f"Keys on {title}", id="help-title")
            yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            yield Static("ctrl+p opens the command palette: every screen and action by name. f1 opens "
                         "this help even from a text box. A keymap file maps the ids to keys of your "
                         "own (README, Keys). Escape closes this help.", id="help-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("Key", "Action", "Where", "Id (keymap)")
        for row in binding_rows(self.for_screen):
            table.add_row(*row)
        table.focus()

    def action_dismiss(self) -> None:
        self.dismiss()
