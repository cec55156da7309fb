"""The one place a state column changes (DESIGN §5).

`apply` checks, in the caller's transaction: the entity exists (404), the expected version (409),
the move is legal from the current state (422), the actor may make it (403), its required fields
are present (400) and its guard holds (422); then it updates the row (state, version, the move's
column changes) and appends one signed event. Any failure raises before anything is written, and
the transaction is rolled back by the unit of work, so nothing changes.
"""
from __future__ import annotations

from typing import Any

from .adapters.postgres import Tx
from .domain import Actor
from .errors import Conflict, Forbidden, InvalidInput, NotFound, ValidationStateError
from .events import GENESIS, append, event_insert, now
from .machines import Machine, Move


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def check_needs(machine: Machine, m: Move, fields: dict) -> None:
    missing = [name for name in m.needs if _blank(fields.get(name))]
    if missing:
        raise InvalidInput(f"{machine.name} {m.action} requires {', '.join(missing)}")


def check_who(machine: Machine, m: Move, actor: Actor, row: dict) -> None:
    if not m.who(actor, row):
        label = f"{machine.name} {row['id']}" if row.get("id") is not None else f"a {machine.name}"
        raise Forbidden(f"{actor.name} ({actor.role}) may not {m.action} {label}: only {m.who.description} may")


def lock(tx: Tx, machine: Machine, entity_id: Any, *, missing_ok: bool = False) -> dict | None:
    """The entity's row, locked for this transaction (404 when it does not exist)."""
    try:
        key = int(entity_id)
    except (TypeError, ValueError):
        raise InvalidInput(f"{machine.name} id must be a number, got {entity_id!r}") from None
    # One round trip: the row, locked, and the head of its event chain.
    row = tx.one(f"SELECT t.*, h.seq AS _head_seq, h.hash AS _head_hash FROM {machine.table} t "
                 "LEFT JOIN LATERAL (SELECT seq, hash FROM events e WHERE e.aggregate_type = %s "
                 "AND e.aggregate_id = t.id::text ORDER BY seq DESC LIMIT 1) h ON true "
                 "WHERE t.id = %s FOR UPDATE OF t", (machine.name, key))
    if row is None:
        if missing_ok:
            return None
        raise NotFound(f"no {machine.name} {entity_id}")
    seq, digest = row.pop("_head_seq"), row.pop("_head_hash")
    tx.heads[(machine.name, str(row["id"]))] = (seq, digest) if seq is not None else (0, GENESIS)
    return row



def check_version(machine: Machine, row: dict, expected_version: int | None) -> None:
    if expected_version is not None and int(expected_version) != row["version"]:
        raise Conflict(f"{machine.name} {row['id']} is at version {row['version']}, not {expected_version}: "
                       f"someone changed it first; reload and try again")


def plan(machine: Machine, row: dict, action: str, actor: Actor, fields: dict | None = None,
         expected_version: int | None = None) -> Move:
    """Every check of `apply`, without writing: the move that would be made."""
    fields = fields or {}
    check_version(machine, row, expected_version)
    m = machine.find(action, row[machine.column], row["id"])
    check_who(machine, m, actor, row)
    check_needs(machine, m, fields)
    if m.guard is not None:
        why_not = m.guard(row, fields)
        if why_not:
            raise ValidationStateError(machine.name, row["id"], row[machine.column], action, why_not)
    return m


def apply(tx: Tx, machine: Machine, target: Any, action: str, actor: Actor, *, fields: dict | None = None,
          changes: dict | None = None, expected_version: int | None = None,
          idempotency_key: str | None = None) -> dict:
    """Make one move on an existing entity; returns the updated row.

    `target` is the entity's id, or its row already locked by the caller (`lock`).
    `fields` are the request's inputs (recorded in the event); `changes` are further columns the
    move writes (claimed_by, revised text …), recorded in the event's `set` for replay.
    """
    row = target if isinstance(target, dict) else lock(tx, machine, target)
    fields = {k: v for k, v in (fields or {}).items() if v is not None}
    m = plan(machine, row, action, actor, fields, expected_version)
    at = now()
    values = {**(changes or {}), machine.column: m.to, "version": row["version"] + 1}
    if "updated_at" in row:
        values["updated_at"] = at
    # One statement writes the event and the row together.
    event_sql, event_params = event_insert(tx, tx.signer, machine.name, row["id"], action, actor.name,
                                           {"from": row[machine.column], "to": m.to, "fields": fields, "set": values},
                                           idempotency_key=idempotency_key, at=at)
    return tx.update(machine.table, row["id"], values, with_sql=event_sql, with_params=event_params)


def create(tx: Tx, machine: Machine, actor: Actor, values: dict, *, action: str = "create",
           fields: dict | None = None, idempotency_key: str | None = None) -> dict:
    """Create an entity through its machine's creation move; returns the new row."""
    m = machine.creation(action)
    check_who(machine, m, actor, values)
    check_needs(machine, m, {**values, **(fields or {})})
    return record(tx, machine.name, machine.table, {**values, machine.column: m.to}, actor,
                  event_type=action, fields=fields, idempotency_key=idempotency_key)


def record(tx: Tx, aggregate: str, table: str, values: dict, actor: Actor, *, event_type: str = "created",
           fields: dict | None = None, idempotency_key: str | None = None) -> dict:
    """Insert a projection row (an entity or a history line) with its creation event."""
    at = now()
    values = {**values, "version": 1, "created_at": at}
    row = tx.insert(table, {**values, **({"updated_at": at} if _has_updated_at(table) else {})})
    written = {k: row[k] for k in row if k != "search"}
    append(tx, tx.signer, aggregate, row["id"], event_type, actor.name,
           {"to": values.get("state") or values.get("status"), "fields": fields or {}, "set": written},
           idempotency_key=idempotency_key, at=at)
    return row


def update(tx: Tx, aggregate: str, table: str, target: Any, changes: dict, actor: Actor, *, event_type: str,
           expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """Change columns of a row that is not governed by a state machine (a user's role, say)."""
    row = target if isinstance(target, dict) else tx.one(f"SELECT * FROM {table} WHERE id = %s FOR UPDATE", (target,))
    if row is None:
        raise NotFound(f"no {aggregate} {target}")
    if expected_version is not None and int(expected_version) != row["version"]:
        raise Conflict(f"{aggregate} {row['id']} is at version {row['version']}, not {expected_version}")
    at = now()
    values = {**changes, "version": row["version"] + 1}
    if "updated_at" in row:
        values["updated_at"] = at
    updated = tx.update(table, row["id"], values)
    append(tx, tx.signer, aggregate, row["id"], event_type, actor.name, {"set": values},
           idempotency_key=idempotency_key, at=at)
    return updated


_NO_UPDATED_AT = {"validation_records", "grey_transitions"}


def _has_updated_at(table: str) -> bool:
    return table not in _NO_UPDATED_AT
