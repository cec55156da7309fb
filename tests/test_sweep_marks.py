"""The queue sweep costs what changed (issue 31, point 1): its repair check looks only at the rows
queued since its watermark (`queue_index.REPAIR_MARK`), and nothing is lost for it: an expired
claim still goes back, a push lost after the mark is found, a sweep that dies midway leaves the
mark where it was so the next one looks again, and the mark's lapse brings a full comparison."""
from __future__ import annotations

import pytest

from r2k.core.adapters.redis_queues import ValidationQueue, queue_key
from r2k.core.services.operations import sweeps
from r2k.core.services.queue import claims, queue_index
from r2k.core.services.validation import candidates

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


# The queue picker's counts (migration 0028) and the full comparison in steps (issue 31).

def true_counts(ctx) -> dict:
    with ctx.db.read() as tx:
        return {(r["horn_type"], r["state"]): r["n"] for r in tx.all(
            "SELECT horn_type, state, count(*) AS n FROM candidates GROUP BY 1, 2")}


def picker(ctx) -> dict:
    from r2k.core.services.queue import candidate_views

    return {r["horn_type"]: (r["pending"], r["in_review"], r["disputed"]) for r in candidate_views.queue_stats(ctx)}


def test_the_pickers_counts_follow_every_move_in_its_own_transaction(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 4)
    add_many(ctx, people["root"], "RULE", 2)
    first = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.decide(ctx, people["alice"], first["id"], "approve")
    second = claims.claim_next(ctx, people["alice"], "FACT")
    claims.claim_next(ctx, people["bob"], "FACT")
    candidates.release(ctx, people["alice"], second["id"])
    assert picker(ctx)["FACT"] == (2, 1, 0) and picker(ctx)["RULE"] == (2, 0, 0)
    with ctx.db.read() as tx:
        assert queue_index.counts(tx) == {k: v for k, v in true_counts(ctx).items()}
    # A move that never commits (a crash before COMMIT) leaves its count where it was.
    with pytest.raises(RuntimeError), ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET state = 'IN_REVIEW' WHERE id = %s", (ids[3],))
        raise RuntimeError("the process died before COMMIT")
    assert picker(ctx)["FACT"] == (2, 1, 0)


def test_a_drift_in_the_counts_is_repaired_by_the_full_comparison(ctx, people, superuser):
    add_many(ctx, people["root"], "FACT", 3)
    # Rows changed with the triggers off (replica mode, as a restore runs): the counts drift.
    superuser("SET session_replication_role = replica; "
              "UPDATE candidates SET state = 'DISPUTED' WHERE id = 1")
    assert picker(ctx)["FACT"] == (3, 0, 0)  # off: one of them is DISPUTED now
    ctx.redis.delete(queue_index.REPAIR_MARK)  # as it lapses: the next sweeps compare everything
    sweeps.sweep_claims(ctx)
    while queue_index.FullRepair(ctx).running():  # a recount is a sweep's share of its own
        sweeps.sweep_claims(ctx)
    assert picker(ctx)["FACT"] == (2, 0, 1)
    assert queue_index.recount(ctx, "FACT", "DISPUTED") == 0  # nothing left to repair



def test_the_stripes_of_backends_that_ended_are_folded_into_one_by_a_recount(ctx, people):
    """A count has a stripe per backend that moved a candidate (migration 0028); backends come and go,
    so without folding, a count's rows would grow with every connection ever made."""
    add_many(ctx, people["root"], "FACT", 3)
    with ctx.db.read() as tx:
        live = {r["pid"] for r in tx.all("SELECT pid FROM pg_stat_activity")}
    ended = [pid for pid in range(4_000_000, 4_000_100) if pid not in live][:2]
    with ctx.db.begin() as tx:  # two backends that are gone: one queued a FACT candidate, one claimed it
        for pid, n in zip(ended, (1, -1)):
            tx.execute("INSERT INTO queue_counts (horn_type, state, stripe, n) VALUES ('FACT', 'PENDING', %s, %s)",
                       (pid, n))
    before = picker(ctx)["FACT"]
    assert queue_index.recount(ctx, "FACT", "PENDING") == 0  # folding is no drift: the sum is the same
    with ctx.db.read() as tx:
        stripes = [r["stripe"] for r in tx.all(
            "SELECT stripe FROM queue_counts WHERE horn_type = 'FACT' AND state = 'PENDING' ORDER BY stripe")]
    assert not set(ended) & set(stripes) and 0 in stripes
    assert picker(ctx)["FACT"] == before == (3, 0, 0)

def small_steps(monkeypatch) -> None:
    """Pages of 2 ids and buckets 3 ids wide: a handful of candidates take many steps."""
    monkeypatch.setattr(queue_index.FullRepair, "PAGE", 2)
    monkeypatch.setattr(queue_index.FullRepair, "BUCKET", 3)


def test_a_full_comparison_in_steps_across_sweeps_still_finds_a_lost_push(ctx, people, monkeypatch):
    small_steps(monkeypatch)
    ids = add_many(ctx, people["root"], "FACT", 9)
    with ctx.db.begin() as tx:  # queued long ago: only a full comparison looks at it
        tx.execute("UPDATE candidates SET updated_at = now() - interval '2 hours' WHERE id = %s", (ids[7],))
    lose_push(ctx, ids[7])
    assert mark(ctx) is None
    found, sweeps_taken = [], 0
    while True:
        found += queue_index.repair_queues(ctx, settle=0, budget=0)  # one step a sweep
        sweeps_taken += 1
        assert mark(ctx) is not None  # set when it starts: later sweeps check what changes meanwhile
        if not queue_index.FullRepair(ctx).running():
            break
    assert found == ["FACT"] and sweeps_taken > 5
    assert queue_index.queue(ctx).ids("FACT") == ids
    assert 0 < ctx.redis.ttl(queue_index.REPAIR_MARK) <= queue_index.REPAIR_FULL_SECONDS
    assert not list(ctx.redis.scan_iter(match="raw_to_knowledge:val_queue:*:repair*"))  # its copies gone


def test_a_full_comparison_that_dies_mid_step_goes_on_from_its_last_step(ctx, people, monkeypatch):
    small_steps(monkeypatch)
    ids = add_many(ctx, people["root"], "FACT", 9)
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET updated_at = now() - interval '2 hours' WHERE id = %s", (ids[8],))
    lose_push(ctx, ids[8])
    full = queue_index.FullRepair(ctx)
    assert queue_index.repair_queues(ctx, settle=0, budget=0) == []  # started, first page sorted
    while ctx.redis.hget(full.PASS, "phase") != b"compare":
        queue_index.repair_queues(ctx, settle=0, budget=0)
    queue_index.repair_queues(ctx, settle=0, budget=0)  # the first id range compared
    assert ctx.redis.hget(full.PASS, "bucket") == b"1"

    def died(*_args, **_kwargs):
        raise ConnectionError("the sweeper was killed mid-step")

    with monkeypatch.context() as patched:
        patched.setattr(queue_index, "reconcile", died)  # dies once it found the loss, before the rebuild
        with pytest.raises(ConnectionError):
            while True:
                queue_index.repair_queues(ctx, settle=0, budget=0)
    assert ctx.redis.hget(full.PASS, "bucket") == b"3"  # the range with the lost id is to do again
    # A push lost now, while the comparison runs, is the watermark's to find: it is found too.
    [late] = add_many(ctx, people["root"], "FACT", 1, prefix="L")
    lose_push(ctx, late)
    found = []
    while full.running():
        found += queue_index.repair_queues(ctx, settle=0, budget=0)
    assert found == ["FACT"]
    assert queue_index.queue(ctx).ids("FACT") == [*ids, late]


def test_two_sweeps_never_overlap_however_long_one_takes(ctx, people, monkeypatch):
    import threading
    import time

    from r2k.core.services.grey_entries import grey

    monkeypatch.setattr(sweeps, "SWEEP_LOCK_SECONDS", 0.6)
    real = grey.sweep
    inside = threading.Event()

    def slow(context):
        inside.set()
        time.sleep(1.8)  # three leases
        return real(context)

    monkeypatch.setattr(grey, "sweep", slow)
    first = {}
    runner = threading.Thread(target=lambda: first.update(sweeps.sweep_all(ctx)))
    runner.start()
    assert inside.wait(10)
    time.sleep(1.0)  # past the first lease
    assert sweeps.sweep_all(ctx) == {"skipped": "another sweep is running"}
    runner.join()
    assert "claims" in first
    monkeypatch.setattr(grey, "sweep", real)
    assert "claims" in sweeps.sweep_all(ctx)  # released at its end


def test_a_sweep_whose_lock_lapsed_leaves_the_next_ones_lock_alone(ctx, people, monkeypatch):
    from r2k.core.services.grey_entries import grey

    real = grey.sweep

    def lapsed(context):
        context.redis.set(sweeps.SWEEP_LOCK, "4242:another", px=5000)  # Redis lost it; another took it
        return real(context)

    monkeypatch.setattr(grey, "sweep", lapsed)
    assert "claims" in sweeps.sweep_all(ctx)
    assert ctx.redis.get(sweeps.SWEEP_LOCK) == b"4242:another"


def test_many_changed_ids_are_looked_for_near_the_ends_then_in_a_frozen_copy(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 40)
    q = queue_index.queue(ctx)
    assert q.not_held_near_ends("FACT", ids[:3] + ids[-3:], near=0, page=2) == set()
    assert q.not_held_near_ends("FACT", [ids[20]], near=0, page=2) == set()  # deep: the copy has it
    lose_push(ctx, ids[20])
    assert q.not_held_near_ends("FACT", [ids[20], ids[0]], near=0, page=2) == {ids[20]}
    assert q.not_in_copy("FACT", {ids[20], ids[5]}, page=3) == {ids[20]}
    assert not list(ctx.redis.scan_iter(match="raw_to_knowledge:val_queue:*:copy:*"))


def test_migration_0028_counts_the_candidates_a_database_made_before_holds_and_keeps_them_in_step(ctx, services):
    """A database at 0025 holding candidates gets their counts; a COPY, an update and a delete after
    keep them in step (the triggers), and a rolled back move leaves them as they were."""
    import os

    import psycopg

    from r2k.core import migrations

    from .conftest import scratch_databases

    def counted(conn) -> dict:
        return {(h, s): n for h, s, n in conn.execute(
            "SELECT horn_type, state, sum(n) FROM queue_counts GROUP BY 1, 2 HAVING sum(n) <> 0")}

    def truth(conn) -> dict:
        return {(h, s): n for h, s, n in conn.execute(
            "SELECT horn_type, state, count(*) FROM candidates GROUP BY 1, 2")}

    insert = ("INSERT INTO candidates (question, text, horn_type, state, origin, source_refs, created_by, "
              "created_at, updated_at, version, queue_rank) SELECT 'Q' || g, 'S' || g, %s, %s, 'manual', '[]', "
              "'root', now(), now(), 1, g FROM generate_series(1, %s) AS g")
    with scratch_databases(services, f"r2k_before_0028_{os.getpid()}") as (url,):
        migrations.upgrade(url, "0025")
        with psycopg.connect(url) as conn:
            conn.execute(insert, ("FACT", "PENDING", 3))
            conn.execute(insert, ("RULE", "IN_REVIEW", 2))
        migrations.upgrade(url, "head")
        with psycopg.connect(url, autocommit=True) as conn:
            assert counted(conn) == truth(conn) == {("FACT", "PENDING"): 3, ("RULE", "IN_REVIEW"): 2}
            with conn.cursor().copy("COPY candidates (question, text, horn_type, state, origin, source_refs, "
                                    "created_by, created_at, updated_at, version, queue_rank) FROM STDIN") as copy:
                for g in range(4):
                    copy.write_row((f"C{g}", "S", "FACT", "PENDING", "manual", "[]", "root", "2026-01-01",
                                    "2026-01-01", 1, 100 + g))
            conn.execute("UPDATE candidates SET state = 'APPROVED' WHERE horn_type = 'RULE'")
            conn.execute("DELETE FROM candidates WHERE id = (SELECT min(id) FROM candidates)")
            with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
                conn.execute("UPDATE candidates SET state = 'DISPUTED' WHERE horn_type = 'FACT'")
                conn.execute("SELECT 1 / 0")
            assert counted(conn) == truth(conn) == {("FACT", "PENDING"): 6, ("RULE", "APPROVED"): 2}
