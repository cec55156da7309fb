"""The event log read as a stream (`r2k events tail`): the newest events, then each one committed
after a given id. Reads only; the payload is as written (the CLI escapes it for the terminal), except
that a reader who is neither a specialist nor an admin gets an overlap review's decision withheld
(`as_read_by`): reviews are blind (docs/architecture.md, "Overlap"). The signed row is unchanged;
`audit verify` reads the log itself."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...domain import jsonable
from ..common import BLIND

if TYPE_CHECKING:
    from ...context import Context
    from ...domain import Actor

_COLUMNS = "id, aggregate_type, aggregate_id, seq, type, actor, created_at, idempotency_key, payload, hash, key_id"
BATCH = 1000


def _shape(row: dict) -> dict:
    return {k: jsonable(v) for k, v in row.items()}


WITHHELD = "a review's decision, shown to specialists and admins only (reviews are blind)"


def as_read_by(event: dict, actor: Actor) -> dict:
    """The event as `actor` may read it: a candidate's `review` or `disagree` move, and every event
    of a review row, keep their ids, type and hash but not their payload, unless `actor` adjudicates."""
    if actor.role in ("specialist", "admin"):
        return event
    if (event["aggregate_type"] == "candidate" and event["type"] in BLIND) or event["aggregate_type"] == "candidate_review":
        return {**event, "payload": {"withheld": WITHHELD}}
    return event


def newest(ctx: Context, aggregate: str | None, n: int) -> list[dict]:
    """The newest `n` events (of one aggregate type, when given), oldest first."""
    where, params = ("WHERE aggregate_type = %s", [aggregate]) if aggregate else ("", [])
    with ctx.db.read() as tx:
        rows = tx.all(f"SELECT {_COLUMNS} FROM events {where} ORDER BY id DESC LIMIT %s", [*params, n])
    return [_shape(r) for r in reversed(rows)]


def high_water(ctx: Context) -> int:
    with ctx.db.read() as tx:
        return tx.scalar("SELECT coalesce(max(id), 0) FROM events")


LOOKBACK = 1000  # ids below the newest printed one that are read again, for events committed late


def after(ctx: Context, aggregate: str | None, last_id: int, seen: set[int]) -> list[dict]:
    """Events committed since the last look, oldest first, none of them in `seen` (which it updates).

    Ids come from a sequence, so a transaction that took its id before another committed after it:
    each look reads again the LOOKBACK ids below the newest one printed, and prints what it missed."""
    where, params = ("AND aggregate_type = %s", [aggregate]) if aggregate else ("", [])
    with ctx.db.read() as tx:
        rows = tx.all(f"SELECT {_COLUMNS} FROM events WHERE id > %s {where} ORDER BY id LIMIT %s",
                      [max(0, last_id - LOOKBACK), *params, BATCH + LOOKBACK])
    fresh = [_shape(r) for r in rows if r["id"] not in seen]
    seen.update(r["id"] for r in fresh)
    if len(seen) > 4 * LOOKBACK:
        floor = max(seen) - 2 * LOOKBACK
        seen.difference_update({i for i in seen if i < floor})
    return fresh
