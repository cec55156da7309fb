"""The unit of work: one transaction, with an idempotency key at most once per (key, request)
(docs/architecture.md, "Idempotency keys" and "Bootstrap and bus").

A service hands its work, a function of the transaction, to `in_unit_of_work`; the work's engine
moves hand their events to the transaction's bus, and what follows the commit runs once it has
committed (core/adapters/postgres.py `Database.begin`).
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

from psycopg.types.json import Jsonb

from ..adapters.postgres import Tx, jsonable
from ..domain import Actor, limits
from ..errors import Conflict, InvalidInput, StaleVersion
from ..events import canonical, now
from .common import stale_refusal

if TYPE_CHECKING:
    from ..context import Context

IDEMPOTENCY_WINDOW = timedelta(hours=24)


def in_unit_of_work(ctx: Context, actor: Actor, op: str, args: dict, work: Callable[[Tx], dict], *,
           idempotency_key: str | None = None) -> dict:
    """Run `work` in one transaction; with a key, at most once per (key, request) within 24 h.

    A repeat of the same request returns the first result and changes nothing; the same key with
    a different request is a 409. A failed request stores nothing, so it may be retried. Keys are
    each user's own (docs/architecture.md, "Idempotency keys"): the same key chosen by two users is
    two keys, so one's never makes the other's request a 409 nor hands them its result.
    """
    work = _saying_who(work, actor)
    if idempotency_key is None:
        with ctx.db.begin() as tx:
            return work(tx)
    request_hash = keyed_request(actor, op, args, idempotency_key).request_hash
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


class KeyedRequest(NamedTuple):
    """A request under an idempotency key, checked: what its key row holds (`in_unit_of_work`; a keyed claim
    writes the row in its own statement, claims.claim_next)."""

    key: str
    actor: str
    request_hash: str


def keyed_request(actor: Actor, op: str, args: dict, idempotency_key: str) -> KeyedRequest:
    """The key checked (1–200 characters of storable text, else a 400) and the request's hash: a
    repeat must be this op by this user with these arguments (docs/architecture.md, "Idempotency keys")."""
    if not idempotency_key.strip() or len(idempotency_key) > 200:
        raise InvalidInput("an idempotency key is 1–200 characters")
    limits.text(idempotency_key, "an idempotency key")
    request_hash = hashlib.sha256(canonical({"op": op, "actor": actor.name, "args": jsonable(args)})).hexdigest()
    return KeyedRequest(idempotency_key, actor.name, request_hash)


def _saying_who(work: Callable[[Tx], dict], actor: Actor) -> Callable[[Tx], dict]:
    def said(tx: Tx) -> dict:
        with saying_who(tx, actor):
            return work(tx)

    return said


@contextmanager
def saying_who(tx: Tx, actor: Actor) -> Iterator[None]:
    """Around checks in `tx`: a stale-version 409 they raise says who moved the entity since
    (`stale_refusal`), read in the same transaction before it ends. Every `in_unit_of_work` has it."""
    try:
        yield
    except StaleVersion as exc:
        raise stale_refusal(tx, exc, actor) from None
