"""Marks for a bulk move on a list screen (docs/architecture.md, "Bulk actions"): `space` marks the
highlighted row, `*` every row shown; a move's key with marks asks once, naming the count, then
makes the move on each marked row through core/services/bulk.py (each its own unit of work, event
and idempotency key, with the version shown), and the message line names the items that failed.
"""
from __future__ import annotations

from textual import on

from r2k.app.widgets.format import plural

from .base import ListDetailScreen, Listed, Reply, plain_words

MARK = "●"  # before a marked row's id
SAID_FAILURES = 5  # failed items named in the message line; the rest counted


class BulkDone(Reply):
    """A move made on every marked row: the per-item report of bulk.each."""

    def __init__(self, action: str, report: dict):
        super().__init__()
        self.action = action
        self.report = report


def id_cell(row_id: int, marked: set[int]) -> str:
    return f"{MARK}{row_id}" if row_id in marked else str(row_id)


def bulk_said(action: str, report: dict, noun: str) -> tuple[str, bool]:
    """The message line after a bulk move, and whether an item failed."""
    said = f"{action.capitalize()}: {report['done']} done, {report['failed']} failed"
    failures = [item for item in report["items"] if not item["ok"]]
    if not failures:
        return f"{said}.", False
    named = "; ".join(f"{noun} {item['id']}: {plain_words(item['error']['message'], item['error']['status'])}"
                      for item in failures[:SAID_FAILURES])
    more = f"; and {len(failures) - SAID_FAILURES} more" if len(failures) > SAID_FAILURES else ""
    return f"{said}. {named}{more}.", True


def show_bulk_done(screen, message: BulkDone, noun: str) -> None:
    """What a screen does when its bulk action ends: the marks go, the report is shown (as an error
    when an item failed), the footer and the list are read again."""
    screen.marked = set()
    said, failed = bulk_said(message.action, message.report, noun)
    if failed:
        screen.show_error(said)
    else:
        screen.show_info(said)
    screen.refresh_bindings()


class MarkingListScreen(ListDetailScreen):
    """A list screen whose rows take marks: `space` marks the highlighted row, `*` every row shown
    (again: none). A mark stays only on a row still listed, since a bulk move acts on what is shown.
    The screen says what its marks do (`marks_said`) and makes its own bulk moves."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.marked: set[int] = set()

    def marks_said(self, n: int) -> str:
        return (f"{plural(n, *self.NOUN)} marked: a move's key makes it on each, {self.key('mark')} unmarks one."
                if n else f"No {self.NOUN[0]} marked.")

    def id_cell(self, row_id: int) -> str:
        return id_cell(row_id, self.marked)

    def redraw_marks(self) -> None:
        table = self.table
        for row_id in self.rows:
            if str(row_id) in table.rows:
                table.update_cell(str(row_id), "id", self.id_cell(row_id))
        self.show_info(self.marks_said(len(self.marked)))
        self.refresh_bindings()

    def action_mark(self) -> None:
        row_id = self.current_id()
        if row_id is None:
            self.show_error(self.none_selected())
            return
        self.marked ^= {row_id}
        self.redraw_marks()

    def action_mark_all(self) -> None:
        """Mark every row shown; with all of them marked already, unmark them."""
        shown = set(self.rows)
        self.marked = set() if shown and shown <= self.marked else shown
        self.redraw_marks()

    @on(Listed)
    def _keep_marks_shown(self, message: Listed) -> None:
        if not message.superseded and self.marked:
            self.marked &= {row["id"] for row in message.rows}

    def marked_versions(self) -> dict[int, int]:
        """Each marked row's id and the version shown: each move is made against what was seen."""
        return {row_id: row["version"] for row_id, row in self.rows.items() if row_id in self.marked}
