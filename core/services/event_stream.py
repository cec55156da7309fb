"""The event log read as a stream (`r2k events tail`): the newest events, then each one committed
after a given id. Reads only; the payload is as written (the CLI escapes it for the terminal)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain import jsonable

if TYPE_CHECKING:
    from ..context import Context

_COLUMNS = "id, aggregate_type, aggregate_id, seq, type, actor, created_at, idempotency_key, payload, hash, key_id"
BATCH = 1000


def _shape(row: dict) -> dict:
    return {k: jsonable(v) for k, v in row.items()}


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
