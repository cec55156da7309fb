"""What every workflow's service shares: the unit of work with idempotency keys, reading a row by id
or 404, an entity's history from its signed events.
"""
from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Callable

from psycopg.types.json import Jsonb

from ..adapters.postgres import Tx, jsonable
from ..domain import Actor, parse_id  # noqa: F401 - re-exported for the services
from ..errors import Conflict, InvalidInput, NotFound
from ..events import canonical, now

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

IDEMPOTENCY_WINDOW = timedelta(hours=24)


def mutate(ctx: Context, actor: Actor, op: str, args: dict, work: Callable[[Tx], dict], *,
           idempotency_key: str | None = None) -> dict:
    """Run `work` in one transaction; with a key, at most once per (key, request) within 24 h.

    A repeat of the same request returns the first result and changes nothing; the same key with
    a different request is a 409. A failed request stores nothing, so it may be retried. Keys are
    each user's own (docs/architecture.md, "Idempotency keys"): the same key chosen by two users is
    two keys, so one's never makes the other's request a 409 nor hands them its result.
    """
    if idempotency_key is None:
        with ctx.db.begin() as tx:
            return work(tx)
    if not idempotency_key.strip() or len(idempotency_key) > 200:
        raise InvalidInput("an idempotency key is 1–200 characters")
    from ..domain.limits import text

    text(idempotency_key, "an idempotency key")
    request_hash = hashlib.sha256(canonical({"op": op, "actor": actor.name, "args": jsonable(args)})).hexdigest()
    while True:
        with ctx.db.begin() as tx:
            inserted = tx.one(
                "INSERT INTO idempotency_keys (key, actor, request_hash, response, created_at) "
                "VALUES (%s, %s, %s, NULL, %s) ON CONFLICT (actor, key) DO NOTHING RETURNING key",
                (idempotency_key, actor.name, request_hash, now()))
            if not inserted:
                # This user used the key first; FOR UPDATE waits for that request if it is still at it.
                prior = tx.one("SELECT * FROM idempotency_keys WHERE actor = %s AND key = %s FOR UPDATE",
                               (actor.name, idempotency_key))
                if prior is None:
                    continue  # that request failed and left nothing: try to take the key again
                if now() - prior["created_at"] < IDEMPOTENCY_WINDOW and prior["response"] is not None:
                    if prior["request_hash"] != request_hash:
                        raise Conflict(f"idempotency key {idempotency_key!r} was used for a different request")
                    return prior["response"]
                # Expired: the key starts a new window.
                tx.execute("UPDATE idempotency_keys SET request_hash = %s, created_at = %s "
                           "WHERE actor = %s AND key = %s", (request_hash, now(), actor.name, idempotency_key))
            result = work(tx)
            tx.execute("UPDATE idempotency_keys SET response = %s WHERE actor = %s AND key = %s",
                       (Jsonb(jsonable(result)), actor.name, idempotency_key))
            return result


# ----------------------------------------------------------------------------- reading

def fetch(tx: Tx, table: str, what: str, entity_id) -> dict:
    """One row by id, or the 404 that names it."""
    row = tx.one(f"SELECT * FROM {table} WHERE id = %s", (parse_id(entity_id, what),))
    if row is None:
        raise NotFound(f"no {what} {entity_id}")
    return row


def event_history(tx: Tx, aggregate: str, entity_id: int) -> list[dict]:
    """An entity's transitions read from its signed events: who, when, from, to, and why."""
    rows = tx.all("SELECT seq, type, actor, created_at, payload FROM events WHERE aggregate_type = %s "
                  "AND aggregate_id = %s ORDER BY seq", (aggregate, str(entity_id)))
    out = []
    for r in rows:
        fields = r["payload"].get("fields") or {}
        out.append({"seq": r["seq"], "action": r["type"], "actor": r["actor"], "at": r["created_at"].isoformat(),
                    "from": r["payload"].get("from"), "to": r["payload"].get("to"), "reason": fields.get("reason"),
                    "revised_text": fields.get("revised_text")})
    return out


def refusal(machine, action: str, row: dict, actor: Actor):
    """Why `actor` may not make `action` on `row` as the row reads now: the R2KError the engine
    would raise (authority 403, state 422, the move's rule of who, a guard on the row itself), not
    raised; None when the move is open to them. The workstation hides the keys of refused moves and says this when one is
    pressed (docs/architecture.md, "Keys"): the engine still decides, on the row as it is."""
    from ..engine import check_standing, check_who
    from ..errors import R2KError, ValidationStateError

    try:
        check_standing(machine, action, actor, row)
        move = machine.find(action, row[machine.column], row.get("id"))
        check_who(machine, move, actor, row)
        if move.guard is not None:
            try:
                why_not = move.guard(row, {})
            except Exception as exc:  # noqa: BLE001 - a guard that reads the fields: only the engine can tell
                log.debug("the guard of %s %s cannot be judged without the request's fields: %r",
                          machine.name, action, exc)
                why_not = None
            if why_not:
                raise ValidationStateError(machine.name, row.get("id"), row[machine.column], action, why_not)
    except R2KError as exc:
        return exc
    return None


def one_state(given: str, known, words: str) -> str:
    """A list's state filter: the state of `known` it names, whatever its case and underscores
    ("in review", "under_review"); a 400 naming `words` ("grey state") and the states otherwise."""
    key = given.strip().lower().replace("_", "").replace(" ", "")
    match = {s.lower().replace("_", ""): s for s in known}.get(key)
    if match is None:
        raise InvalidInput(f"unknown {words} {given!r}: expected one of {', '.join(known)}")
    return match


def status_filter(given, known, default: str, words: str) -> list[str]:
    """A list's status filter ("APPROVED,DISPUTED", a list, or ALL) checked against `known`; `default`
    when none is given, a 400 naming `words` ("answer status") for one it does not know."""
    from ..errors import InvalidInput

    if not given:
        return [default]
    values = given if isinstance(given, list) else [s for s in given.split(",") if s.strip()]
    out = []
    for value in values:
        value = value.strip().upper()
        if value == "ALL":
            return list(known)
        if value not in known:
            raise InvalidInput(f"unknown {words} {value!r}: expected {', '.join(known)} or ALL")
        out.append(value)
    return out
