"""The queue picker: one row per Horn type with its pending work; enter opens the review screen.

Counts come from `candidate_views.queue_stats`: the counts kept with every move (`queue_counts`,
docs/architecture.md, "Queues"), never a count of the rows, so the picker opens as fast with ten
million candidates as with ten.
"""
from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import var
from textual.widgets import DataTable, Header, Static

from r2k.app.keymap import key_of
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import span
from r2k.app.widgets.text import plain
from r2k.core.domain import HORN_MEANING, HORN_TYPES
from r2k.core.services.queue import candidate_views

from .base import Reply, WorkstationScreen
from .review import ReviewScreen

# key, label, width: fixed, so a late value ("no authority") is never cut to the first one's width;
# all but the meaning fit in 80 columns. Disputed: answers disputed in the registry, back for re-review.
COLUMNS = (("horn", "Horn type", 10), ("pending", "Pending", 7), ("in_review", "In review", 9),
           ("disputed", "Disputed", 8), ("oldest", "Oldest pending", 14),
           ("authority", "Authority", 12), ("meaning", "Meaning", 48))


def short_meaning(horn: str) -> str:
    return HORN_MEANING[horn].split(";")[0]


class QueueStats(Reply):
    """Each partition's counts, from `candidate_views.queue_stats`."""

    def __init__(self, stats: list[dict]):
        super().__init__()
        self.stats = stats


class QueueTable(DataTable):
    """The partitions. Enter is the table's own key, so it acts on the row the keys before it
    reached: keys typed ahead (down, down, enter, arriving together over SSH) are handled in order
    by the table, whereas a priority binding on the screen ran before the table had moved and
    opened the queue the cursor had left."""

    BINDINGS = [Binding("enter", "select_cursor", "Open queue", id="open_queue")]


class QueuePickerScreen(WorkstationScreen):
    TITLE = "Validation queues"
    RELOAD_ON = ("candidate", "queue", "source_document", "answer", "actor")
    BINDINGS = [
        Binding("ctrl+r", "reload", "Refresh", id="refresh"),
        Binding("escape", "back", "Back", id="back"),
    ]

    # Horn type -> its counts as last read; drawn into the table by watch_stats.
    stats: var[dict[str, dict]] = var(dict, init=False, always_update=True)

    def __init__(self):
        super().__init__()
        self._cursor_placed = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="queues"):
            yield Static(f"Pick a Horn-type queue: {key_of(self.app, QueueTable, 'open_queue')} claims its next "
                         "candidate", classes="panel-title")
            yield QueueTable(id="queue-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="authority")
            yield Static("", id="message")
        yield Footer(show_command_palette=False)  # ctrl+p is listed in ? (80 columns: README, Keys)

    def on_mount(self) -> None:
        table = self.query_one("#queue-table", DataTable)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        for horn in HORN_TYPES:
            table.add_row(horn, "·", "·", "·", "·", "…", short_meaning(horn), key=horn)
        table.focus()
        # WorkstationScreen.on_mount (called after this one) loads the counts

    def load(self) -> None:
        self.fetch_stats()

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def fetch_stats(self) -> None:
        with self.reporting("stats"):
            self.reply(QueueStats(candidate_views.queue_stats(self.ctx)))

    @on(QueueStats)
    def show_stats(self, message: QueueStats) -> None:
        if not message.superseded:
            self.stats = {row["horn_type"]: row for row in message.stats}

    def action_reload(self) -> None:
        self.load()

    def holds(self, horn: str) -> bool | None:
        """Whether the acting user may review this partition; None while the user is not known yet."""
        if self.actor is None:
            return False if self.app.actor_error else None
        return self.actor.holds(horn)

    def watch_stats(self, stats: dict[str, dict]) -> None:
        table = self.query_one("#queue-table", DataTable)
        for horn in HORN_TYPES:
            row = stats.get(horn)
            if row is None:
                continue
            allowed = self.holds(horn)
            dim = "dim" if allowed is False else ""
            cells = {
                "horn": Text(horn, style="bold" if allowed else dim),
                "pending": Text(str(row["pending"]), style=dim, justify="right"),
                "in_review": Text(str(row["in_review"]), style=dim, justify="right"),
                "disputed": Text(str(row["disputed"]), style=dim, justify="right"),
                "oldest": Text(span(row["oldest_pending_age_seconds"]), style=dim, justify="right"),
                "authority": Text("yes" if allowed else "no authority" if allowed is False else "…",
                                  style="green" if allowed else dim),
                "meaning": Text(short_meaning(horn), style="dim"),
            }
            for column, value in cells.items():
                table.update_cell(horn, column, value)
        self.query_one("#authority", Static).update(plain(self.authority_line()))  # it names the user
        if not self._cursor_placed and self.actor is not None:
            # Start on the first queue this user may review, once; after that the cursor is theirs.
            self._cursor_placed = True
            held = [h for h in HORN_TYPES if self.actor.holds(h)]
            if held and table.cursor_row == 0:
                table.move_cursor(row=table.get_row_index(held[0]), animate=False)

    def authority_line(self) -> str:
        if self.app.actor_error:
            return self.app.actor_error
        if self.actor is None:
            return "Finding out who you are…"
        held = [h for h in HORN_TYPES if self.actor.holds(h)]
        if not held:
            return f"{self.actor.name} ({self.actor.role}) holds no Horn-type authority: every queue is read-only."
        return f"{self.actor.name} reviews {', '.join(held)}; the other queues are shown for information."

    def selected_horn(self) -> str | None:
        table = self.query_one("#queue-table", DataTable)
        if table.row_count == 0:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # enter, or a click on the row under the cursor
        self.action_open_queue()

    def action_open_queue(self) -> None:
        horn = self.selected_horn()
        if horn is None:
            return
        allowed = self.holds(horn)
        if allowed is None:
            self.show_info("Still finding out who you are; try again in a moment.")
            return
        if not allowed:
            if self.actor is None:  # an unknown user
                self.show_error(self.app.actor_error or "unknown user", 403)
                return
            self.show_error(f"{self.actor.name} holds no authority for {horn}: that queue is shown, but you "
                            f"cannot review it.", 403)
            return

        self.show_info("")
        self.app.push_screen(ReviewScreen(horn))
