"""Live notices: what open workstations hear when something changed (Redis pub/sub).

One shape, built in one place from the engine's event: `entity` (the machine, i.e. the aggregate
type), `id`, `action`, `state` (its state or status after the move), `version`, and the `actor`.
A screen that needs more reads it from the core; a notice carries no stored text.
"""
from __future__ import annotations

import json

CHANNEL = "raw_to_knowledge:events"


def of(event) -> str:
    """The notice of an engine event (core.engine.Event)."""
    return shaped(event.machine, event.aggregate_id, event.action, event.to_state, event.version, event.actor.name)


def shaped(entity: str, id=None, action: str | None = None, state: str | None = None,  # noqa: A002 - the shape's name
           version: int | None = None, actor: str | None = None) -> str:
    """A notice of that shape for a change that is no one entity's move (a queue rebuilt, say)."""
    return json.dumps({"entity": entity, "id": id, "action": action, "state": state, "version": version,
                       "actor": actor})
