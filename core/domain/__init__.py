"""Domain words: Horn types, roles, the acting user."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from ..errors import InvalidInput
from .limits import ID, said

HORN_TYPES = ("FACT", "RULE", "CONSTRAINT", "PROCEDURE", "OPEN_ISSUE")
ROLES = ("validator", "specialist", "admin")

HORN_MEANING = {
    "FACT": "holds unconditionally",
    "RULE": "holds when its conditions hold (if … then …)",
    "CONSTRAINT": "a combination that must never hold",
    "PROCEDURE": "an ordered sequence of steps that reaches a goal",
    "OPEN_ISSUE": "a question the sources raise but do not settle; never approvable, only escalated",
}


@dataclass(frozen=True)
class Actor:
    """Who acts: a known user, or the system (workers, sweepers, conflict detection)."""

    name: str
    role: str
    horn_types: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_system(self) -> bool:
        return self.role == "system"

    def holds(self, horn_type: str | None) -> bool:
        """Authority over a Horn type: a validator holding it, or an admin."""
        if self.role == "admin":
            return True
        return self.role == "validator" and horn_type in self.horn_types


SYSTEM = Actor("system", "system")


def parse_id(value, what: str) -> int:
    """An entity id from user input; a 400 that names the entity when it is not a number."""
    article = "an" if what[0] in "aeiou" else "a"
    try:
        number = int(value)
    except (TypeError, ValueError):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
        raise InvalidInput(f"{article} {what} id is a number, got {shown}") from None
    if not ID[0] <= number <= ID[1]:  # ids are bigserial: a larger number is no id, not a database error
        digits = str(number)
        shown = digits if len(digits) <= 40 else digits[:20] + "…"
        raise InvalidInput(f"{article} {what} id is {said(ID)}, got {shown}")
    return number


def parse_horn_type(value: str) -> str:
    if value in HORN_TYPES:  # as the queues and the read-ahead spell it (every claim)
        return value

    normal = (value or "").strip().upper().replace("-", "_").replace(" ", "_")
    if normal not in HORN_TYPES:
        raise InvalidInput(f"unknown Horn type {value!r}: expected one of {', '.join(HORN_TYPES)}")
    return normal


_PLAIN = (str, int, float, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN)


def jsonable(value: Any) -> Any:
    """A value as it appears in JSON output and in event payloads (timestamps ISO 8601, bytes hex)."""
    kind = type(value)  # the exact types first: this runs on every value of every event and row
    if kind in _PLAIN_TYPES:
        return value
    if kind is dict:
        return {k: jsonable(v) for k, v in value.items()}
    if kind is datetime:
        return value.isoformat()
    if kind is list:
        return [jsonable(v) for v in value]
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
