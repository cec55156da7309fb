"""Conflict flags: two approved answers that contradict each other, or one whose source statement
changed (docs/architecture.md, "Conflicts").

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


# A flag's kind is data: the rule that found two answers contradicting each other (core/knowledge/contradictions.py,
# or the LLM's "judged"), or this one, which names one answer whose source statement changed or
# vanished when its document was ingested again. Every move is the same for all kinds: escalating
# disputes the answers the flag names, one or two.
SOURCE_CHANGED = "source_changed"

DECIDER = Who("a validator with authority for both answers' Horn types, a specialist or an admin", _decides)

CONFLICT = Machine("conflict_flag", "conflict_flags", "status", [
    # action       from                      to           who              needs
    move("detect",   NEW,                     "OPEN",      WHO.SYSTEM),
    move("escalate", "OPEN",                  "ESCALATED", DECIDER),
    move("dismiss",  "OPEN",                  "DISMISSED", DECIDER,         needs=("reason",)),
    move("close",    {"OPEN", "ESCALATED"},   "CLOSED",    WHO.SYSTEM,      needs=("reason",)),
], terminal=frozenset({"DISMISSED", "CLOSED"}))
