"""Skip: a validator passes a claimed candidate by, for themselves alone (docs/architecture.md,
"Queues").

The candidate is released, so it goes back to the head of its queue for everyone else, and its id
joins the validator's skipped set in Redis (`raw_to_knowledge:skipped:{user}:{HORN}`, with a TTL).
The claim path's pop takes the oldest id not in that set, in the same Lua step that puts it in
flight, so a skip never loses a candidate nor lets two validators claim one; only when every listed
id is one the validator skipped does one come back to them: the one skipped longest ago.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import engine
from ...domain import Actor
from ...machines.candidate import CANDIDATE
from ..common import parse_id
from ..unit_of_work import saying_who
from ..validation import candidates
from . import claims, queue_index

if TYPE_CHECKING:
    from ...context import Context


def skip(ctx: Context, actor: Actor, candidate_id, *, then_next: bool = False, expected_version: int | None = None,
         idempotency_key: str | None = None) -> dict:
    """Skip a candidate the actor has claimed (`skipped`: it as released); with `then_next`, claim
    and read the next of its queue for them (`next`, or the `error` that kept it from being
    claimed; the skip stands). Refused, as its release would be, before anything changes."""
    cid = parse_id(candidate_id, "candidate")
    with ctx.db.read() as tx, saying_who(tx, actor):
        row = engine.read(tx, CANDIDATE, cid)
        engine.plan(CANDIDATE, row, "release", actor, expected_version=expected_version)
    q = queue_index.queue(ctx)
    q.skip(actor.name, row["horn_type"], cid, ctx.settings.skip_seconds)
    try:
        released = candidates.release(ctx, actor, cid, expected_version=expected_version,
                                      idempotency_key=idempotency_key)
    except BaseException:
        q.unskip(actor.name, row["horn_type"], cid)  # nothing was released: nothing is skipped either
        raise
    done = {"skipped": released}
    if not then_next:
        return done
    return claims.then_next(ctx, actor, row["horn_type"], idempotency_key, done)


def skipped(ctx: Context, actor: Actor, horn_type: str) -> list[int]:
    """The ids the actor passes by in a partition."""
    return sorted(queue_index.queue(ctx).skipped(actor.name, horn_type))
