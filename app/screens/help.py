"""`?`: every key of the screen it was opened on, built from that screen's bindings."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static

from r2k.app.keymap import declared_order, key_of
from r2k.app.textual_private import action_state, binding_chain


def binding_rows(screen: Screen) -> list[tuple[str, str, str, str]]:
    """(keys, what it does, where, id) for every binding of `screen` with a description, the keys in
    force (a keymap file's included): the screen's own in the order it declares them (the footer's),
    then those every screen has (Textual's tab, …), then the keys for everywhere in the app's order.
    A move the highlighted item cannot take now (its state, your authority) is listed too, marked
    "not now": the footer hides it."""
    app = screen.app
    rows: dict[tuple, list] = {}
    places: dict[tuple, tuple] = {}
    for node, bindings in binding_chain(screen):  # keymap applied; the focused widget's own keys too
        if node is not screen and node is not app:
            continue
        declared = declared_order(node)
        for key, binding in bindings:
            if not binding.description:
                continue
            where = "everywhere" if node is app else "this screen"
            group = (binding.id or binding.action, binding.description)
            if group in rows:
                if rows[group][2].startswith(where) and app.get_key_display(binding) not in rows[group][0].split():
                    rows[group][0] += " " + app.get_key_display(binding)
                continue
            if action_state(app, binding.action, node) is False:
                where += " · not now"
            rows[group] = [app.get_key_display(binding), binding.description, where, binding.id or ""]
            places[group] = (node is app, declared.get(binding.id or binding.action, len(declared)))
    return [tuple(rows[group]) for group in sorted(rows, key=lambda group: places[group])]


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help", id="close_help")]

    def __init__(self, for_screen: Screen):
        super().__init__()
        self.for_screen = for_screen

    def compose(self) -> ComposeResult:
        app = self.app
        title = getattr(self.for_screen, "TITLE", None) or self.for_screen.__class__.__name__
        palette = app.get_key_display(Binding(app.COMMAND_PALETTE_BINDING, "command_palette"))
        with Vertical(id="help"):
            yield Static(f"Keys on {title}", id="help-title")
            yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            yield Static(f"{palette} opens the command palette: every screen and action by name. "
                         f"{key_of(app, app, 'help_anywhere')} opens this help even from a text box. A keymap "
                         f"file maps the ids to keys of your own (README, Keys). {key_of(app, self, 'close_help')} "
                         "closes this help.", id="help-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("Key", "Action", "Where", "Id (keymap)")
        for row in binding_rows(self.for_screen):
            table.add_row(*row)
        table.focus()

    def action_dismiss(self) -> None:
        self.dismiss()
