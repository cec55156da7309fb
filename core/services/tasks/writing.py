"""Appending a task's typed event, checked against its schema, hashed, signed and verified, with its row."""
from __future__ import annotations

from typing import Callable

from psycopg.types.json import Jsonb

from ... import engine
from ...adapters.postgres import Tx
from ...config import get_settings
from ...domain import Actor, jsonable
from ...engine import Event
from ...errors import Conflict, ValidationStateError
from ...events import EVENT_COLUMNS, event_hash, event_values, hashed_fields, now, verify_signature
from ...machines.task import EVENT_OF, TASK
from ...tasks_schema import check_event
from .fold import AGGREGATE, TABLE, at_text, fold

_INSERT_EVENT = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES ({', '.join(['%s'] * 12)})"
# A test's hook between writing a transition's events and its row (tests/test_tasks.py kills the
# process there): the transaction is open, so nothing of it may survive.
between_event_and_row: Callable[[], None] | None = None


def verified(values: list) -> None:
    """The event about to be committed hashes to what it says and is signed by our key."""
    (aggregate_type, aggregate_id, seq, type_, actor, payload, at, key, prev_hash, digest, signature,
     _key_id) = values
    recomputed = event_hash(hashed_fields(aggregate_type, aggregate_id, seq, type_, actor, payload.obj, at, key,
                                          prev_hash))
    if recomputed != digest:
        raise Conflict(f"the {type_} event of task {aggregate_id} does not hash to its digest: not written")


def signed(tx: Tx, values: list) -> None:
    if not verify_signature(tx.signer.public_key, bytes(values[10]), values[9]):
        raise Conflict(f"the {values[3]} event of task {values[1]} fails its signature check: not written")


def append(tx: Tx, actor: Actor, task_id: int, type_: str, payload: dict, key: str | None, at) -> None:
    check_event(type_, payload)
    values = event_values(tx, tx.signer, AGGREGATE, task_id, type_, actor.name, payload, idempotency_key=key, at=at)
    verified(values)
    signed(tx, values)
    tx.execute(_INSERT_EVENT, values)


def snapshot_if_due(tx: Tx, row: dict) -> None:
    every = get_settings().task_snapshot_events
    if row["version"] % every == 0:
        tx.execute("INSERT INTO task_snapshots (task_id, seq, state, created_at) VALUES (%s, %s, %s, %s) "
                   "ON CONFLICT DO NOTHING", (row["id"], row["version"], Jsonb(projection(row)), now()))


def projection(row: dict) -> dict:
    """A task row as its fold gives it: JSON values, timestamps in UTC."""
    out = {}
    for k, v in row.items():
        if k == "search":
            continue
        out[k] = at_text(v) if hasattr(v, "astimezone") else jsonable(v)
    return out


def write(tx: Tx, actor: Actor, row: dict, action: str, data: dict, *, fields: dict | None = None,
           key: str | None = None, expected_version: int | None = None) -> dict:
    """One move of the task machine on a row locked in `tx`: the engine's checks, then its typed event
    (schema-checked, hashed, signed and verified) and the folded row, together; what follows it."""
    fields = {k: v for k, v in (fields if fields is not None else data).items() if v is not None}
    move = engine.plan(TASK, row, action, actor, fields, expected_version)
    type_ = EVENT_OF[action]
    at = now()
    changes = fold(projection(row), type_, data, actor.name, at_text(at))
    if changes.get("state", row["state"]) != move.to:
        raise ValidationStateError(AGGREGATE, row["id"], row["state"], action,
                                   f"its event would leave it {changes.get('state')}, not {move.to}")
    payload = {"from": row["state"], "to": move.to, "data": data, "set": jsonable(changes)}
    append(tx, actor, row["id"], type_, payload, key, at)
    if between_event_and_row is not None:
        between_event_and_row()
    moved = tx.update(TABLE, row["id"], changes)
    snapshot_if_due(tx, moved)
    event = Event(AGGREGATE, action, row["id"], actor, fields, moved["version"], row["state"], move.to, moved)
    tx.react(event)
    # The row as its reactions left it (an approval is published at once).
    return event.outcome.get("published_row") or moved


def row_for_update(tx: Tx, task_id, *, missing_ok: bool = False) -> dict | None:
    """The task's row locked for this transaction, with the head of its chain as it is now (a lock
    that waited for another transaction reads the head again: engine.lock)."""
    return engine.lock(tx, TASK, task_id, missing_ok=missing_ok)
