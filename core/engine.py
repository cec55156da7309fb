"""The one place a state column changes (docs/architecture.md, "State machines").

`apply` checks, in the caller's transaction: the actor's authority (403), the expected version
(409), the move is legal from the current state (422), the move's own rule of who (403), its
required fields (400) and its guard (422); then it updates the row (state, version, the move's
column changes) and appends one signed event. Any failure raises before anything is written, and
the transaction is rolled back by the unit of work, so nothing changes.

Every move returns the `Event` it appended, and hands it to the unit of work (`tx.react`), which
runs what the reactions table says follows it (core/reactions.py): further moves in the same
transaction, effects after the commit. The engine itself knows no workflow.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from .adapters.postgres import Tx, adapt
from .domain import Actor, parse_id
from .domain.limits import VERSION, optional_number
from .errors import Conflict, Forbidden, InvalidInput, NotFound, StaleVersion, ValidationStateError
from .events import EVENT_COLUMNS, GENESIS, HEAD_SQL, append, append_all, event_values, heads, now
from .machines import Machine, Move

_PREV_HASH = EVENT_COLUMNS.split(", ").index("prev_hash")  # where an event's parameters hold it


@dataclass(frozen=True)
class Event:
    """What one move appended: which machine (the aggregate type), which action on which entity, by
    whom, with which fields, reaching which version and state; the row as it now is; and, filled by
    the reactions it set off in the same transaction, what they made of it (`outcome`: a published
    answer, an opened work item …)."""

    machine: str
    action: str
    aggregate_id: int
    actor: Actor
    fields: dict
    version: int
    from_state: str | None
    to_state: str | None
    row: dict
    outcome: dict = field(default_factory=dict)


def _emitted(tx: Tx, machine: str, action: str, actor: Actor, fields: dict | None, row: dict,
             from_state: str | None, to_state: str | None) -> Event:
    event = Event(machine, action, row["id"], actor, dict(fields or {}), row["version"], from_state, to_state, row)
    tx.react(event)
    return event


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def check_needs(machine: Machine, m: Move, fields: dict) -> None:
    missing = [name for name in m.needs if _blank(fields.get(name))]
    if missing:
        raise InvalidInput(f"{machine.words} {m.action} requires {', '.join(missing)}")


def check_who(machine: Machine, m: Move, actor: Actor, row: dict) -> None:
    if not m.who(actor, row):
        refuse(machine, m, actor, row)


def refuse(machine: Machine, m: Move, actor: Actor, row: dict):
    label = f"{machine.words} {row['id']}" if row.get("id") is not None else f"a {machine.words}"
    raise Forbidden(f"{actor.name} ({actor.role}) may not {m.action} {label}: only {m.who.description} may")


# The head (last seq and hash) of each selected row `t`'s event chain, in the same snapshot as the
# row: its columns, and the join (one parameter: the aggregate type).
_HEAD_COLUMNS = "h.seq AS _head_seq, h.hash AS _head_hash"
_HEAD_JOIN = ("LEFT JOIN LATERAL (SELECT seq, hash FROM events e WHERE e.aggregate_type = %s "
              "AND e.aggregate_id = t.id::text ORDER BY seq DESC LIMIT 1) h ON true ")


def _head(row: dict) -> tuple[int, str]:
    seq, digest = row.pop("_head_seq"), row.pop("_head_hash")
    return (seq, digest) if seq is not None else (0, GENESIS)


def _select(tx: Tx, machine: Machine, entity_id: Any, *, for_update: bool, missing_ok: bool) -> dict | None:
    key = parse_id(entity_id, machine.words)
    # One round trip: the row (locked, if asked) and the head of its event chain.
    row = tx.one(f"SELECT t.*, {_HEAD_COLUMNS} FROM {machine.table} t {_HEAD_JOIN}"
                 f"WHERE t.id = %s{' FOR UPDATE OF t' if for_update else ''}", (machine.name, key))
    if row is None:
        if missing_ok:
            return None
        raise NotFound(f"no {machine.words} {entity_id}")
    head = _head(row)
    if for_update and head[0] != row["version"]:
        # A row's version counts its moves, as its chain does, so a head behind the version is one
        # read before a lock this statement waited for: read committed hands back the row as the
        # other transaction left it, but the rest of the statement from before. Now the lock is
        # held, the head cannot move: read it again (a row with other history, say a bulk insert
        # without events, costs this read each time and nothing else).
        again = tx.one(HEAD_SQL, (machine.name, str(row["id"])))
        head = (again["seq"], again["hash"]) if again else (0, GENESIS)
    tx.heads[(machine.name, str(row["id"]))] = head
    return row


def read_heads(tx: Tx, machine: Machine, ids: list[int], columns: str, where: str = "TRUE",
               params: tuple = ()) -> list[tuple[dict, tuple[int, str]]]:
    """Rows (the given `columns` of `t`) with the heads of their event chains, for `assume` later.
    Driven by the ids (a join on the key), whatever the table's statistics say: `t.id = ANY(ids)`
    let a table never analyzed yet (a bulk load a minute ago) be scanned by state instead, every
    row compared with every id (a claim's read-ahead cost twice its statement, bench/claim.py)."""
    rows = tx.all(f"SELECT {columns}, {_HEAD_COLUMNS} FROM unnest(%s::bigint[]) AS wanted(id) "
                  f"JOIN {machine.table} t ON t.id = wanted.id {_HEAD_JOIN}WHERE {where}",
                  (list(ids), machine.name, *params))
    return [(row, _head(row)) for row in rows]


def lock(tx: Tx, machine: Machine, entity_id: Any, *, missing_ok: bool = False) -> dict | None:
    """The entity's row, locked for this transaction (404 when it does not exist)."""
    return _select(tx, machine, entity_id, for_update=True, missing_ok=missing_ok)


def read(tx: Tx, machine: Machine, entity_id: Any, *, missing_ok: bool = False) -> dict | None:
    """The entity's row as it is now, not locked: for `apply_if_unchanged`."""
    return _select(tx, machine, entity_id, for_update=False, missing_ok=missing_ok)


def assume(tx: Tx, machine: Machine, row: dict, head: tuple[int, str]) -> dict:
    """A row known without reading it here (the claim's read-ahead cache), with the head of its
    event chain, for `apply_if_unchanged`: that writes only if the row is still at `row["version"]`
    and its chain still ends at `head`, so a stale row or head writes nothing."""
    tx.heads[(machine.name, str(row["id"]))] = head
    return row


def check_version(machine: Machine, row: dict, expected_version: int | None) -> None:
    if expected_version is None:  # most moves (every claim) name none
        return
    expected_version = optional_number(expected_version, "--expected-version", VERSION)
    if expected_version is not None and expected_version != row["version"]:
        # Who moved it since is in the event log: the unit of work says (services/unit_of_work.py).
        raise StaleVersion(machine.words, machine.name, row["id"], row["version"], expected_version)


def check_standing(machine: Machine, action: str, actor: Actor, row: dict) -> None:
    """Authority first: an actor whom no move of `action` could ever allow on this entity (role,
    Horn type) is refused before its version or state is looked at, so a 409 or 422 never tells
    them anything about it."""
    moves = machine.moves_of(action)
    if moves and not any(m.who.stands(actor, row) for m in moves):
        refuse(machine, moves[0], actor, row)


def plan(machine: Machine, row: dict, action: str, actor: Actor, fields: dict | None = None,
         expected_version: int | None = None) -> Move:
    """Every check of `apply`, without writing: the move that would be made. In this order:
    authority (403), version (409), state (422), the move's own rule of who (403), fields (400),
    guard (422)."""
    fields = fields or {}
    check_standing(machine, action, actor, row)
    check_version(machine, row, expected_version)
    m = machine.find(action, row[machine.column], row["id"])
    check_who(machine, m, actor, row)
    check_needs(machine, m, fields)
    if m.guard is not None:
        why_not = m.guard(row, fields)
        if why_not:
            raise ValidationStateError(machine.name, row["id"], row[machine.column], action, why_not)
    return m


def _move(tx: Tx, machine: Machine, row: dict, action: str, actor: Actor, fields: dict | None,
          changes: dict | None, expected_version: int | None, idempotency_key: str | None) -> tuple[dict, list]:
    """Check the move and prepare what it writes: the row's new values and its event's parameters."""
    fields = {k: v for k, v in (fields or {}).items() if v is not None}
    m = plan(machine, row, action, actor, fields, expected_version)
    at = now()
    values = {**(changes or {}), machine.column: m.to, "version": row["version"] + 1}
    if "updated_at" in row:
        values["updated_at"] = at
    event = event_values(tx, tx.signer, machine.name, row["id"], action, actor.name,
                         {"from": row[machine.column], "to": m.to, "fields": fields, "set": values},
                         idempotency_key=idempotency_key, at=at)
    return values, event


def apply(tx: Tx, machine: Machine, target: Any, action: str, actor: Actor, *, fields: dict | None = None,
          changes: dict | None = None, expected_version: int | None = None,
          idempotency_key: str | None = None) -> Event:
    """Make one move on an existing entity; returns its event (`.row`: the updated row).

    `target` is the entity's id, or its row already locked by the caller (`lock`).
    `fields` are the request's inputs (recorded in the event); `changes` are further columns the
    move writes (claimed_by, revised text …), recorded in the event's `set` for replay.
    """
    row = target if isinstance(target, dict) else lock(tx, machine, target)
    values, event = _move(tx, machine, row, action, actor, fields, changes, expected_version, idempotency_key)
    # One statement writes the event and the row together.
    moved = tx.update(machine.table, row["id"], values, with_sql=f"INSERT INTO events ({EVENT_COLUMNS}) VALUES "
                      f"({', '.join(['%s'] * len(event))})", with_params=event)
    return _emitted(tx, machine.name, action, actor, _given(fields), moved, row[machine.column],
                    moved[machine.column])


def _given(fields: dict | None) -> dict:
    return {k: v for k, v in (fields or {}).items() if v is not None}


def apply_if_unchanged(tx: Tx, machine: Machine, row: dict, action: str, actor: Actor, *,
                       fields: dict | None = None, changes: dict | None = None,
                       idempotency_key: str | None = None, kept=None) -> Event | None:
    """Make a move with one conditional statement, without a row lock: the row and its event are
    written only if the row is still at the version it was read at and its event chain still ends
    where it was read (`read`, or `assume`); otherwise nothing is written and None comes back
    (someone moved it first). Outside a transaction the statement commits by itself: one round
    trip for the whole move (the claim path, docs/architecture.md "Queues").

    With `kept` (a services.unit_of_work.KeyedRequest), the same statement also inserts the request's
    idempotency key row holding its response, the moved row as PostgreSQL renders it in JSON
    (without `search`), and the event's `outcome["response"]` is that response: a keyed move in
    one round trip, whose retry returns exactly what the first call returned (docs/architecture.md,
    "Idempotency keys"). A key row there already fails the whole statement (a unique violation on
    `idempotency_keys_pkey`), writing nothing."""
    values, event = _move(tx, machine, row, action, actor, fields, changes, None, idempotency_key)
    cols = tuple(values)
    prev_hash = event[_PREV_HASH]
    moved = tx.one_on_kept_cursor(_conditional_move_sql(machine.table, cols, len(event), kept is not None),
                       [*(adapt(c, values[c]) for c in cols), row["id"], row["version"],
                        machine.name, str(row["id"]), GENESIS, prev_hash, *event,
                        *(() if kept is None else (*kept, event[_CREATED_AT]))])
    if moved is None:
        return None
    response = moved.pop("_response", None)
    emitted = _emitted(tx, machine.name, action, actor, _given(fields), moved, row[machine.column],
                       moved[machine.column])
    if kept is not None:
        emitted.outcome["response"] = response  # the key row's, as stored
    return emitted


_CREATED_AT = EVENT_COLUMNS.split(", ").index("created_at")


@functools.lru_cache(maxsize=64)
def _conditional_move_sql(table: str, cols: tuple[str, ...], n_event: int, keyed: bool = False) -> str:
    """The statement of `apply_if_unchanged` (built once per shape: a claim runs it every time)."""
    key_row = ("kept AS (INSERT INTO idempotency_keys (key, actor, request_hash, response, created_at) "
               "SELECT %s, %s, %s, to_jsonb(moved) - 'search', %s FROM moved RETURNING response) ")
    return (f"WITH moved AS (UPDATE {table} SET {', '.join(f'{c} = %s' for c in cols)} "
            f"WHERE id = %s AND version = %s AND coalesce((SELECT e.hash FROM events e "
            f"WHERE e.aggregate_type = %s AND e.aggregate_id = %s ORDER BY e.seq DESC LIMIT 1), %s) = %s "
            f"RETURNING *), "
            f"logged AS (INSERT INTO events ({EVENT_COLUMNS}) SELECT {', '.join(['%s'] * n_event)} FROM moved)"
            + (f", {key_row}SELECT moved.*, kept.response AS _response FROM moved, kept" if keyed
               else " SELECT * FROM moved"))


def create(tx: Tx, machine: Machine, actor: Actor, values: dict, *, action: str = "create",
           fields: dict | None = None, idempotency_key: str | None = None) -> Event:
    """Create an entity through its machine's creation move; returns its event (`.row`: the new row)."""
    m = machine.creation(action)
    check_who(machine, m, actor, values)
    check_needs(machine, m, {**values, **(fields or {})})
    return record(tx, machine.name, machine.table, {**values, machine.column: m.to}, actor,
                  event_type=action, fields=fields, idempotency_key=idempotency_key)


def record(tx: Tx, aggregate: str, table: str, values: dict, actor: Actor, *, event_type: str = "created",
           fields: dict | None = None, idempotency_key: str | None = None) -> Event:
    """Insert a projection row (an entity or a history line) with its creation event; its event."""
    at = now()
    values = {**values, "version": 1, "created_at": at}
    row = tx.insert(table, {**values, **({"updated_at": at} if _has_updated_at(table) else {})})
    written = {k: row[k] for k in row if k != "search"}
    state = values.get("state") or values.get("status")
    append(tx, tx.signer, aggregate, row["id"], event_type, actor.name,
           {"to": state, "fields": fields or {}, "set": written}, idempotency_key=idempotency_key, at=at)
    return _emitted(tx, aggregate, event_type, actor, fields, row, None, state)


def create_all(tx: Tx, machine: Machine, actor: Actor, rows: list[dict], *, action: str = "create") -> list[Event]:
    """Create many entities of one machine through its creation move, as `create` does each: the
    rows in one statement, their events (each entity's own chain, hashed and signed as ever) in one
    COPY, and the events handed to the reactions together (core/reactions.py runs the effects that
    have a form for many at once, say one Redis pipeline for the queue pushes, once for all)."""
    m = machine.creation(action)
    for values in rows:
        check_who(machine, m, actor, values)
        check_needs(machine, m, values)
    return record_all(tx, machine.name, machine.table, [{**values, machine.column: m.to} for values in rows], actor,
                      event_type=action)


def record_all(tx: Tx, aggregate: str, table: str, rows: list[dict], actor: Actor, *,
               event_type: str = "created") -> list[Event]:
    """Insert many projection rows of one table, each with its creation event as `record` writes
    it, in two statements whatever their number; their events, in the rows' order."""
    if not rows:
        return []
    at = now()
    stamped = [{**values, "version": 1, "created_at": at, **({"updated_at": at} if _has_updated_at(table) else {})}
               for values in rows]
    inserted = tx.insert_all(table, stamped)
    heads(tx, aggregate, [row["id"] for row in inserted])
    events, logged = [], []
    for values, row in zip(stamped, inserted):
        state = values.get("state") or values.get("status")
        logged.append(event_values(tx, tx.signer, aggregate, row["id"], event_type, actor.name,
                                   {"to": state, "fields": {}, "set": {k: row[k] for k in row if k != "search"}},
                                   at=at))
        events.append(Event(aggregate, event_type, row["id"], actor, {}, row["version"], None, state, row))
    append_all(tx, logged)
    tx.react_all(events)
    return events


def update(tx: Tx, aggregate: str, table: str, target: Any, changes: dict, actor: Actor, *, event_type: str,
           expected_version: int | None = None, idempotency_key: str | None = None) -> Event:
    """Change columns of a row that is not governed by a state machine (a user's role, say); its event."""
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
    return _emitted(tx, aggregate, event_type, actor, None, updated, None, updated.get("state"))


_NO_UPDATED_AT = {"validation_records", "grey_transitions", "comments", "queue_guidelines", "queue_settings"}  # history rows: never updated


def _has_updated_at(table: str) -> bool:
    return table not in _NO_UPDATED_AT
