"""Domain words (DESIGN §4): Horn types, roles, the acting user."""
from __future__ import annotations

from dataclasses import dataclass, field

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
    from .errors import InvalidInput

    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{'an' if what[0] in 'aeiou' else 'a'} {what} id is a number, got {value!r}") from None


def parse_horn_type(value: str) -> str:
    from .errors import InvalidInput

    normal = (value or "").strip().upper().replace("-", "_").replace(" ", "_")
    if normal not in HORN_TYPES:
        raise InvalidInput(f"unknown Horn type {value!r}: expected one of {', '.join(HORN_TYPES)}")
    return normal
