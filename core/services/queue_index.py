"""The Redis index of the validation queues and its upkeep (docs/architecture.md, "Queues").

PostgreSQL is the truth and Redis the index: one FIFO list per Horn type of the candidates that sit
`PENDING` or `DISPUTED`, rebuilt from PostgreSQL whenever Redis lost data or missed a push
(`reconcile`, `reconcile_if_lost`, `repair_queues`), and the ids a dead claimer left in flight
returned to the head of their queue (`sweep_in_flight`).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..adapters.redis_queues import EPOCH_KEY, ValidationQueue
from ..domain import HORN_TYPES

if TYPE_CHECKING:
    from ..context import Context


QUEUED = ("PENDING", "DISPUTED")  # the states that sit in a Horn queue


IN_FLIGHT_GRACE = 60.0  # seconds an id may stay popped-but-uncommitted before a sweep returns it


def queue(ctx: Context) -> ValidationQueue:
    return ctx.validation_queue


def reconcile(ctx: Context, horn_types: tuple[str, ...] | list[str] = HORN_TYPES) -> list[dict]:
    """Rebuild every partition (or those named) from PostgreSQL's queued rows, in their original order."""
    q = queue(ctx)
    out = []
    for horn in horn_types:
        with ctx.db.read() as tx:
            ids = [r["id"] for r in tx.all(
                "SELECT id FROM candidates WHERE horn_type = %s AND state IN ('PENDING', 'DISPUTED') "
                "ORDER BY queue_rank, id", (horn,))]
        before = q.length(horn)
        q.rebuild(horn, ids)
        out.append({"horn_type": horn, "queued": len(ids), "was": before})
    ctx.redis.set(EPOCH_KEY, time.time())
    ctx.notify("queue", action="reconcile")
    return out


def push_tail(ctx: Context, event) -> None:
    """After commit (reactions): a candidate entered PENDING; it joins the tail of its queue."""
    queue(ctx).push_tail(event.row["horn_type"], event.aggregate_id)


def push_tail_all(ctx: Context, events: list) -> None:
    """`push_tail` for many candidates (one document's), in one round trip."""
    queue(ctx).push_tail_all([(event.row["horn_type"], event.aggregate_id) for event in events])


def pull(ctx: Context, event) -> None:
    """After commit (reactions): a queued candidate left its queue by a move no claim made (withdrawn);
    its id and read-ahead entry go (a claim would drop it anyway, as it drops every id no longer
    PENDING, but the queue's length would count it until then)."""
    queue(ctx).remove(event.row["horn_type"], event.aggregate_id)


def pull_all(ctx: Context, events: list) -> None:
    """`pull` for many candidates, in one round trip."""
    queue(ctx).remove_all([(event.row["horn_type"], event.aggregate_id) for event in events])


def move_horn(ctx: Context, event) -> None:
    """After commit (reactions): a waiting candidate was refined; when its Horn type changed, it leaves
    the old partition for the tail of the new one in one Redis step (the event's `before` says the old)."""
    before = (event.fields.get("before") or {}).get("horn_type")
    if before and before != event.row["horn_type"]:
        queue(ctx).move(before, event.row["horn_type"], event.aggregate_id)


def push_head(ctx: Context, event) -> None:
    """After commit (reactions): a candidate went back (released, disputed); it goes to the head."""
    queue(ctx).push_head(event.row["horn_type"], event.aggregate_id)


REBUILD_SECONDS = 60  # the longest one rebuild may hold the others back (1,000,000 ids take about 2 s)


def reconcile_if_lost(ctx: Context) -> bool:
    """At start-up, and when a claim finds the reconcile mark gone: when Redis has lost its data
    (or missed a push) since the last reconcile, rebuild the queues and re-enqueue the work items
    it held. One EXISTS when nothing was lost."""
    if ctx.redis.exists(EPOCH_KEY):
        return False
    from . import generation

    # Every workstation and worker notices a flush at once: one rebuilds, the others wait for it.
    with queue(ctx).rebuild_turn(REBUILD_SECONDS):
        if ctx.redis.exists(EPOCH_KEY):
            return False  # rebuilt while we waited
        reconcile(ctx)
        generation.recover(ctx)
    return True


def sweep_in_flight(ctx: Context, grace: float = IN_FLIGHT_GRACE) -> dict:
    """Ids popped more than `grace` seconds ago and never committed (their claimer died) go back
    to the head of their queue; a claim reads PostgreSQL, so a stale one is simply skipped later."""
    q = queue(ctx)
    rescued = {h: q.rescue(h, grace) for h in HORN_TYPES}
    return {h: ids for h, ids in rescued.items() if ids}


QUEUE_SETTLE = 5.0  # seconds a push may take to follow its commit before a missing id counts as lost


def misses_queued(tx, horn: str, held, settle: float | None = None) -> bool:
    """Does PostgreSQL hold a row queued in `horn` (given `settle`, queued more than that many seconds
    ago) whose id is not in `held`? An anti join against the ids as one array, hashed, so a million
    queued rows and as many held ids cost one scan, where `NOT (id = ANY(ids))` compared every row
    with every id (a sweep over 1,000,000 candidates ran for many minutes, each sweep starting
    another once its lock had lapsed; bench/review.py times it). Planned for its array every time: a
    plan made once without it (a prepared statement's) loops over the array for every row again."""
    settled = "" if settle is None else "AND c.updated_at < now() - make_interval(secs => %s) "
    return bool(tx.scalar(
        "SELECT EXISTS (SELECT 1 FROM candidates c WHERE c.horn_type = %s AND c.state IN ('PENDING', 'DISPUTED') "
        f"{settled}AND NOT EXISTS (SELECT 1 FROM unnest(%s::bigint[]) AS held(id) WHERE held.id = c.id))",
        (horn, *(() if settle is None else (settle,)), list(held)), prepare=False))


# The repair check's watermark (docs/architecture.md, "Queues"): the PostgreSQL time up to which every
# queued row is known to be held by its partition. Each sweep looks only at the rows queued since
# (REPAIR_OVERLAP earlier, for a commit that landed late) and moves it on when its check is done, so
# a sweep that dies midway leaves it where it was and the next one looks again. It lapses after
# REPAIR_FULL_SECONDS (and is gone when Redis lost its data): the next sweep then compares every id.
REPAIR_MARK = "raw_to_knowledge:queue_repair_mark"
REPAIR_OVERLAP = 60.0
REPAIR_FULL_SECONDS = 3600
LOOKUP_LIMIT = 256  # changed ids of a partition looked up near the ends of its list; more: its ids read once


def repair_queues(ctx: Context, settle: float = QUEUE_SETTLE) -> list[str]:
    """Rebuild the partitions that miss ids PostgreSQL has queued, and name them.

    A push that failed after its commit while Redis was unreachable leaves the reconcile mark in
    place (it could not be dropped either), so only a comparison finds it. It costs what changed
    since the last sweep (`REPAIR_MARK`): the rows queued (entered or moved in a queue) since then,
    by an index of the queued rows by `updated_at` (migration 0024), each looked up in Redis
    (`ValidationQueue.not_held`). Without the mark, every id is compared (`_repair_all`). An id
    Redis lacks counts as lost only if PostgreSQL, read again after Redis, still has it queued as
    it was (a claim in between takes it from both).
    """
    raw = ctx.redis.get(REPAIR_MARK)
    with ctx.db.read() as tx:
        upto = float(tx.scalar("SELECT extract(epoch FROM now()) - %s", (settle,)))
    if raw is None:
        lost = _repair_all(ctx, settle)
    else:
        lost = _repair_since(ctx, float(raw) - REPAIR_OVERLAP, upto)
    if lost:
        logging.getLogger(__name__).warning("the %s queue(s) missed queued candidates: rebuilt", ", ".join(lost))
        reconcile(ctx, lost)
    # Only once the check is done; the lapse counts from the last full comparison, not from now.
    if raw is None:
        ctx.redis.set(REPAIR_MARK, repr(upto), ex=REPAIR_FULL_SECONDS)
    else:
        ctx.redis.set(REPAIR_MARK, repr(upto), keepttl=True)
    return lost


def _repair_since(ctx: Context, since: float, upto: float) -> list[str]:
    q = queue(ctx)
    window = (since, upto)
    with ctx.db.read() as tx:
        rows = tx.all("SELECT horn_type, id FROM candidates WHERE state IN ('PENDING', 'DISPUTED') "
                      "AND updated_at > to_timestamp(%s) AND updated_at <= to_timestamp(%s)", window)
    changed: dict[str, list[int]] = {}
    for row in rows:
        changed.setdefault(row["horn_type"], []).append(row["id"])
    lost = []
    for horn, ids in changed.items():
        missing = q.not_held(horn, ids) if len(ids) <= LOOKUP_LIMIT else set(ids) - q.held_ids(horn)
        if missing:
            with ctx.db.read() as tx:  # still queued as it was, after Redis was read: lost indeed
                if tx.scalar("SELECT EXISTS (SELECT 1 FROM candidates WHERE id = ANY(%s) AND horn_type = %s AND "
                             "state IN ('PENDING', 'DISPUTED') AND updated_at <= to_timestamp(%s))",
                             (sorted(missing), horn, upto)):
                    lost.append(horn)
    return lost


def _repair_all(ctx: Context, settle: float) -> list[str]:
    """Every partition's ids (listed or in flight), read first, against the rows queued in
    PostgreSQL more than `settle` seconds ago, read second. By ids, not by counts: a stale id (a
    claim whose settle was lost) would otherwise make up for a missing one and hide it for good.
    Claims in between only make Redis look fuller, so a partition is rebuilt only when something
    is really missing."""
    q = queue(ctx)
    held = {h: q.held_ids(h) for h in HORN_TYPES}
    with ctx.db.read() as tx:
        return [horn for horn in HORN_TYPES if misses_queued(tx, horn, held[horn], settle)]
