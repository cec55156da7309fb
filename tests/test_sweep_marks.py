"""The queue sweep costs what changed (issue 31, point 1): its repair check looks only at the rows
queued since its watermark (`queue_index.REPAIR_MARK`), and nothing is lost for it: an expired
claim still goes back, a push lost after the mark is found, a sweep that dies midway leaves the
mark where it was so the next one looks again, and the mark's lapse brings a full comparison."""
from __future__ import annotations

import pytest

from r2k.core.adapters.redis_queues import ValidationQueue, queue_key
from r2k.core.services import candidates, claims, queue_index, sweeps

from .test_validation import add_many


def mark(ctx) -> float | None:
    raw = ctx.redis.get(queue_index.REPAIR_MARK)
    return None if raw is None else float(raw)


def lose_push(ctx, candidate_id: int, horn: str = "FACT") -> None:
    """A push that never arrived (Redis away after the commit; the reconcile mark stayed)."""
    assert ctx.redis.lrem(queue_key(horn), 0, candidate_id) == 1


def test_the_first_sweep_compares_every_id_and_sets_the_mark_with_its_lapse(ctx, people):
    add_many(ctx, people["root"], "FACT", 2)
    assert mark(ctx) is None
    assert sweeps.sweep_claims(ctx)["rebuilt"] == []
    assert mark(ctx) is not None
    assert 0 < ctx.redis.ttl(queue_index.REPAIR_MARK) <= queue_index.REPAIR_FULL_SECONDS


def test_a_push_lost_after_the_mark_is_found_by_the_next_sweep(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    assert queue_index.repair_queues(ctx, settle=0) == []  # the mark is set
    ttl = ctx.redis.ttl(queue_index.REPAIR_MARK)
    [late] = add_many(ctx, people["root"], "FACT", 1, prefix="L")
    lose_push(ctx, late)
    assert queue_index.repair_queues(ctx, settle=0) == ["FACT"]
    assert queue_index.queue(ctx).ids("FACT") == [*ids, late]
    assert queue_index.repair_queues(ctx, settle=0) == []
    assert ctx.redis.ttl(queue_index.REPAIR_MARK) <= ttl  # moved on, its lapse kept


def test_many_changed_ids_are_compared_with_the_partition_read_once(ctx, people):
    assert queue_index.repair_queues(ctx, settle=0) == []
    ids = add_many(ctx, people["root"], "FACT", queue_index.LOOKUP_LIMIT + 6)
    lose_push(ctx, ids[10])
    assert queue_index.repair_queues(ctx, settle=0) == ["FACT"]
    assert queue_index.queue(ctx).ids("FACT") == ids


def test_a_sweep_that_dies_midway_leaves_the_mark_and_the_next_one_finds_the_lost_id(ctx, people, monkeypatch):
    ids = add_many(ctx, people["root"], "FACT", 3)
    assert queue_index.repair_queues(ctx, settle=0) == []
    before = mark(ctx)
    [late] = add_many(ctx, people["root"], "FACT", 1, prefix="L")
    lose_push(ctx, late)

    def away(*_args, **_kwargs):
        raise ConnectionError("Redis went away mid-sweep")

    with monkeypatch.context() as patched:
        patched.setattr(ValidationQueue, "not_held", away)
        with pytest.raises(ConnectionError):
            queue_index.repair_queues(ctx, settle=0)
    assert mark(ctx) == before  # not moved on: nothing was checked
    assert queue_index.queue(ctx).ids("FACT") == ids
    assert queue_index.repair_queues(ctx, settle=0) == ["FACT"]
    assert queue_index.queue(ctx).ids("FACT") == [*ids, late]


def test_a_claim_whose_lease_expires_is_swept_back_to_the_head(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    assert queue_index.repair_queues(ctx, settle=0) == []
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
                   (claimed["id"],))
    swept = sweeps.sweep_claims(ctx)
    assert swept["released"] == [ids[0]] and swept["rebuilt"] == []
    assert queue_index.queue(ctx).ids("FACT") == ids  # at the head again, nothing lost
    assert candidates.release_expired(ctx) == []


def test_a_loss_older_than_the_window_is_found_when_the_mark_lapses(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    with ctx.db.begin() as tx:  # queued two hours ago, well before the window the mark leaves open
        tx.execute("UPDATE candidates SET updated_at = now() - interval '2 hours' WHERE id = %s", (ids[1],))
    assert queue_index.repair_queues(ctx, settle=0) == []
    lose_push(ctx, ids[1])
    assert queue_index.repair_queues(ctx, settle=0) == []  # not looked at: it did not change
    ctx.redis.delete(queue_index.REPAIR_MARK)  # as it lapses after REPAIR_FULL_SECONDS
    assert queue_index.repair_queues(ctx, settle=0) == ["FACT"]
    assert queue_index.queue(ctx).ids("FACT") == ids


def test_an_id_claimed_during_the_check_is_not_called_lost(ctx, people, monkeypatch):
    """PostgreSQL is read before Redis: a claim in between takes the id from both, and the row is
    read again before the partition is called short."""
    ids = add_many(ctx, people["root"], "FACT", 2)
    assert queue_index.repair_queues(ctx, settle=0) == []
    real = ValidationQueue.not_held

    def claimed_first(self, horn, changed, **kwargs):
        claims.claim_next(ctx, people["alice"], "FACT")  # takes ids[0] between the two reads
        return real(self, horn, changed, **kwargs)

    with ctx.db.begin() as tx:  # both changed since the mark
        tx.execute("UPDATE candidates SET updated_at = now() WHERE id = ANY(%s)", (ids,))
    monkeypatch.setattr(ValidationQueue, "not_held", claimed_first)
    assert queue_index.repair_queues(ctx, settle=0) == []
    assert queue_index.queue(ctx).ids("FACT") == ids[1:]


def test_an_id_far_from_both_ends_is_looked_up_in_the_whole_partition(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 7)
    q = queue_index.queue(ctx)
    assert q.not_held("FACT", [ids[3]], near=2) == set()  # not near an end, but listed
    lose_push(ctx, ids[3])
    assert q.not_held("FACT", [ids[3], ids[0], ids[6]], near=2) == {ids[3]}
    assert q.pop("FACT").candidate_id == ids[0]
    assert q.not_held("FACT", [ids[0]], near=2) == set()  # in flight counts as held
