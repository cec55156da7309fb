"""Marks for a bulk move on a list screen (docs/architecture.md, "Bulk actions"): `space` marks the
highlighted row, `*` every row shown; a move's key with marks asks once, naming the count, then
makes the move on each marked row through core/services/bulk.py (each its own unit of work, event
and idempotency key, with the version shown), and the message line names the items that failed.
"""
from __future__ import annotations

from .base import Reply, plain_words

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
