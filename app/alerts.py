"""What reaches a user wherever they are: a comment that mentions them (docs/architecture.md,
"Comments") and, for specialists, a grey entry someone escalated. A notice carries no text, so each
is read from the core in a worker before its toast is shown."""
from __future__ import annotations

from textual import work

from r2k.core.services.grey_entries import grey
from r2k.core.services.validation import comments

from .messages import Escalated, Mentioned
from .safe import visible
from .workstation_log import log_failure


class Alerts:
    """Mixed into the workstation's App, whose `_broadcast` hands these notices on."""

    def _commented(self, event: dict) -> None:
        """A comment was added: one by someone else may mention this user (a notice carries no text)."""
        if self.actor is None or event.get("actor") == self.actor.name:
            return
        self.read_mention(event.get("id"), self.actor.name)

    @work(thread=True, group="mentions", exit_on_error=False)
    def read_mention(self, comment_id, user: str) -> None:
        try:
            comment = comments.show(self.ctx, comment_id)
        except Exception as exc:  # noqa: BLE001 - gone, or a service down: nothing to tell
            log_failure(self.ctx, f"reading comment {comment_id}", exc)
            return
        if user in (comment.get("mentions") or []) and comment.get("author") != user:
            self.post_message(Mentioned(comment))

    def on_mentioned(self, message: Mentioned) -> None:
        comment = message.comment
        what = {aggregate: word for aggregate, _, word in comments.ENTITIES.values()}.get(comment["entity_type"],
                                                                                          comment["entity_type"])
        said = f"{comment['author']} mentioned you on {what} {comment['entity_id']}: {comment['body']}"
        if len(said) > 300:
            said = said[:299] + "…"
        # Stored text (the author's name, the comment): plain, not markup, controls made visible.
        self.notify(visible(said), title="Mention", timeout=10, markup=False)

    def _grey_escalated(self, event: dict) -> None:
        """Specialists hear about an escalation at once, wherever they are."""
        if self.actor is None or self.actor.role not in ("specialist", "admin") or event.get("actor") == self.actor.name:
            return
        self.grey_badge += 1  # counted now: the grey queue reads the count as the same notice reaches it
        self.read_escalation(event.get("id"), event.get("actor"))

    @work(thread=True, group="escalations", exit_on_error=False)
    def read_escalation(self, entry_id, actor: str | None) -> None:
        """The subject and reason of an escalated entry, read from the core (a notice carries no text)."""
        try:
            entry = grey.get(self.ctx, entry_id)
        except Exception as exc:  # noqa: BLE001 - gone, or a service down: the toast still says it happened
            log_failure(self.ctx, f"reading escalated grey entry {entry_id}", exc)
            entry = None
        self.post_message(Escalated(entry_id, actor, entry))

    def on_escalated(self, message: Escalated) -> None:
        entry = message.entry
        said = f"Grey entry {message.entry_id} escalated by {message.actor}"
        if entry is not None:
            # The subject and reason are stored text: plain, not markup, controls made visible.
            said += f": {entry['subject']}" + (f" — {entry['reason']}" if entry.get("reason") else "")
        self.notify(visible(said), title="Escalation", severity="warning", timeout=10, markup=False)
