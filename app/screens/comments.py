"""The comments pane of a detail screen (docs/architecture.md, "Comments"): the comments on the
item shown, oldest first, terminal-safe; a key shows or hides it, another adds one in a dialog
(escape adds nothing). It reads them again when the item shown changes and on each comment notice
while shown (a notice names the comment, not what it is on).

A mixin for a WorkstationScreen: its handlers go by Textual's naming (`on_comments_read`, …), so
they are found on the screen's class through the mixin.
"""
from __future__ import annotations

from datetime import datetime, timezone

from rich.text import Text
from textual import work
from textual.widget import Widget
from textual.widgets import Static

from r2k.app.safe import visible
from r2k.app.widgets.format import ago, new_idempotency_key, parse_time
from r2k.app.widgets.modals import ReasonModal
from r2k.core.services.validation import comments

from .base import Changed, Reply, notice_entity

CALLS = ("comments", "comment")  # the calls' names, as a Failed says them


def comments_text(rows: list[dict], now: datetime) -> Text:
    """Each comment: its author and when, then its text (stored text: controls shown as escapes)."""
    if not rows:
        return Text("No comments yet.", style="dim")
    out = Text()
    for i, row in enumerate(rows):
        if i:
            out.append("\n\n")
        at = parse_time(row.get("created_at"))
        out.append(visible(row.get("author"), multiline=False) or "someone", style="bold cyan")
        if at is not None:
            out.append(f"  {at.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC · {ago(row.get('created_at'), now)}",
                       style="dim")
        out.append("\n")
        out.append(visible(row.get("body")))
    return out


class CommentsRead(Reply):
    """One item's comments, oldest first."""

    def __init__(self, item_id: int, rows: list[dict]):
        super().__init__()
        self.item_id = item_id
        self.rows = rows


class Commented(Reply):
    """A comment was added (the core's row)."""

    def __init__(self, row: dict):
        super().__init__()
        self.row = row


class CommentsPane:
    """What a screen with a comments pane says: the kind of item (core/services/validation/comments.py's word),
    its noun in messages, the item shown now, and the widget whose border title counts them."""

    COMMENT_KIND = ""
    COMMENT_NOUN = ""

    def comment_target(self) -> int | None:
        """The id of the item shown (None: none is); each screen says its own."""
        return None

    def comments_box(self) -> Widget:
        return self.query_one("#comments", Static)

    def action_comments(self) -> None:
        """Show or hide the comments on the item shown; each show reads them again."""
        self.toggle_class("comments-open")
        if self.has_class("comments-open"):
            self.load_comments()

    def load_comments(self) -> None:
        item_id = self.comment_target()
        if item_id is None:
            self.comments_box().border_title = "Comments"
            self.query_one("#comments", Static).update(
                Text(f"No {self.COMMENT_NOUN} shown: its comments show here.", style="dim"))
            return
        self.read_comments(item_id)

    @work(thread=True, exclusive=True, group="comments", exit_on_error=False)
    def read_comments(self, item_id: int) -> None:
        with self.reporting("comments"):
            self.reply(CommentsRead(item_id, comments.list_comments(self.ctx, self.COMMENT_KIND, item_id)))

    def on_comments_read(self, message: CommentsRead) -> None:
        if message.superseded or self.comment_target() != message.item_id:
            return  # another item is shown now: its own read follows
        rows = message.rows
        self.comments_box().border_title = (f"Comments on {self.COMMENT_NOUN} {message.item_id} ({len(rows)}) · "
                                            f"{self.key('comment')} adds one")
        self.query_one("#comments", Static).update(comments_text(rows, datetime.now(timezone.utc)))

    def action_comment(self) -> None:
        """Add a comment on the item shown (`@name` tells that user); escape adds nothing."""
        item_id = self.comment_target()
        if item_id is None:
            self.show_info(f"No {self.COMMENT_NOUN} shown to comment on.")
            return
        if self.actor is None:
            self.show_error(self.app.actor_error or "Still finding out who you are; try again in a moment.", 403)
            return
        key = new_idempotency_key()  # one key press, one comment however often the dialog's answer is sent
        self.app.push_screen(ReasonModal(f"Comment on {self.COMMENT_NOUN} {item_id}", "Comment", "@name tells that user"),
                             lambda body: body is not None and self.send_comment(self.actor, item_id, body, key))

    @work(thread=True, group="comment", exit_on_error=False)
    def send_comment(self, actor, item_id: int, body: str, key: str) -> None:
        with self.reporting("comment"):
            self.reply(Commented(comments.add(self.ctx, actor, self.COMMENT_KIND, item_id, body, idempotency_key=key)))

    def on_commented(self, message: Commented) -> None:
        self.show_info(f"Comment added to {self.COMMENT_NOUN} {message.row['entity_id']}.")
        self.add_class("comments-open")
        self.load_comments()

    def on_changed(self, message: Changed) -> None:
        event = message.event
        if notice_entity(event) == "comment" and event.get("action") == "add" and self.has_class("comments-open"):
            self.load_comments()
