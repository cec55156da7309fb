"""Typed errors carrying their status.

The CLI maps `status` to an exit code; the TUI shows `message`. Nobody catches them to hide them.
"""
from __future__ import annotations


class R2KError(Exception):
    status = 500
    error = "Error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def as_dict(self) -> dict:
        return {"error": self.error, "status": self.status, "message": self.message}


class InvalidInput(R2KError):
    status = 400
    error = "InvalidInput"


class Unauthorized(R2KError):
    """No credential, or one that is unknown or revoked (the HTTP API's bearer tokens): a 401."""

    status = 401
    error = "Unauthorized"


class Forbidden(R2KError):
    status = 403
    error = "Forbidden"


class NotFound(R2KError):
    status = 404
    error = "NotFound"


class Conflict(R2KError):
    status = 409
    error = "Conflict"


class StaleVersion(Conflict):
    """A move given a version the entity has moved on from: which entity (its aggregate type and id),
    the version it is at and the one expected, so a unit of work can say from the event log who moved
    it since (core/services/unit_of_work.py, `in_unit_of_work`)."""

    def __init__(self, words: str, aggregate: str, entity_id, version: int, expected: int, said: str | None = None):
        super().__init__(said or f"{words} {entity_id} is at version {version}, not {expected}: it changed since "
                                  f"it was read; reload and try again")
        self.words, self.aggregate, self.entity_id = words, aggregate, entity_id
        self.version, self.expected = version, expected


class ValidationStateError(R2KError):
    """An illegal transition: names the entity, its state and the attempted action."""

    status = 422
    error = "ValidationStateError"

    def __init__(self, entity: str, entity_id, state: str, action: str, detail: str | None = None):
        # In a user's words: "grey entry 6", never the aggregate's name "grey_entry 6".
        message = f"{entity.replace('_', ' ')} {entity_id} is {state}: '{action}' is not allowed"
        if detail:
            message += f" ({detail})"
        super().__init__(message)
        self.entity, self.entity_id, self.state, self.action = entity, entity_id, state, action


class ServiceUnavailable(R2KError):
    status = 503
    error = "ServiceUnavailable"

    def __init__(self, message: str, part: str | None = None):
        super().__init__(message)
        self.part = part  # "postgres", "redis" or "graph" when known: what to reconnect to


EXIT_CODES = {400: 6, 403: 7, 404: 3, 409: 4, 422: 5, 503: 8}


def exit_code(status: int) -> int:
    return EXIT_CODES.get(status, 1)
