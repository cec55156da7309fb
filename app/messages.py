"""What the workstation's background workers tell the app: each worker answers with a message,
so the event loop only draws and keys never wait on a service."""
from __future__ import annotations

from textual.message import Message


class ActorKnown(Message):
    """The acting user, resolved."""

    def __init__(self, actor):
        super().__init__()
        self.actor = actor


class ActorUnknown(Message):
    """The acting user is not known (the core's words)."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message


class Notice(Message):
    """A pub/sub notice from the core, to relay to the screens."""

    def __init__(self, event: dict):
        super().__init__()
        self.event = event


class ServiceDown(Message):
    """A service did not answer (the 503's words)."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message


class Reconnected(Message):
    """PostgreSQL and Redis answer again."""


class Escalated(Message):
    """A grey entry was escalated by someone else: `entry` as it now reads (None: it could not be read)."""

    def __init__(self, entry_id, actor: str | None, entry: dict | None):
        super().__init__()
        self.entry_id = entry_id
        self.actor = actor
        self.entry = entry


class Mentioned(Message):
    """A comment that mentions the workstation's user, by someone else, as the core reads it."""

    def __init__(self, comment: dict):
        super().__init__()
        self.comment = comment


class ClaimsHeld(Message):
    """Quitting: the claims the user holds now (none: nothing to ask)."""

    def __init__(self, rows: list[dict]):
        super().__init__()
        self.rows = rows


class WorkerChildChanged(Message):
    """The workstation's own worker started or ended (app/worker_child.py)."""


class LeftSafely(Message):
    """Quitting: the claims were given back (`released` ids), or could not be (`error`)."""

    def __init__(self, released: list[int], error: str | None = None):
        super().__init__()
        self.released = released
        self.error = error
