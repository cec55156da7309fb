"""Conflict flags: two approved answers that contradict each other (docs/architecture.md, "Conflicts").

Detection opens a flag; a person escalates it (both answers become DISPUTED and go to re-review)
or dismisses it with a reason; the system closes it once the dispute is settled (each answer
re-reviewed: superseded or retired) or an answer of an open flag is superseded or retired anyway.
"""
from . import NEW, WHO, Machine, Who, move


def _decides(actor, row: dict) -> bool:
    """A specialist or an admin, or a validator with authority for the Horn types of both answers
    (escalating disputes both; a validator may dispute only answers of their Horn types)."""
    if actor.is_system or actor.role in ("specialist", "admin"):
        return True
    horns = row.get("horn_types") or []
    return actor.role == "validator" and bool(horns) and all(actor.holds(h) for h in horns)


DECIDER = Who("a validator with authority for both answers' Horn types, a specialist or an admin", _decides)

CONFLICT = Machine("conflict_flag", "conflict_flags", "status", [
    # action       from                      to           who              needs
    move("detect",   NEW,                     "OPEN",      WHO.SYSTEM),
    move("escalate", "OPEN",                  "ESCALATED", DECIDER),
    move("dismiss",  "OPEN",                  "DISMISSED", DECIDER,         needs=("reason",)),
    move("close",    {"OPEN", "ESCALATED"},   "CLOSED",    WHO.SYSTEM,      needs=("reason",)),
], terminal=frozenset({"DISMISSED", "CLOSED"}))
