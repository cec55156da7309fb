"""One queue sweep's cost at 100,000 and 1,000,000 queued candidates (issue 31, point 1).

The candidates are written with one INSERT … SELECT (setup speed, not the service layer: they
carry no creation event) with an `updated_at` two hours old, as a queue that has waited, and the
FACT queue is rebuilt from them (`queue_index.reconcile`). Before each round, 50 of them are
touched (`updated_at` ten seconds ago: queued since the last sweep) and the
watermark is put back where the last sweep left it, so every round sees the same 50 changes.

Each round times, alternating:
- **repair (ends)**: `queue_index.repair_queues`, the sweep's repair check as it runs now: the rows
  queued since its watermark, looked up in Redis (what changed), with the 50 changed rows at the
  ends of the list (25 at the head, 25 at the tail: where released and new candidates lie);
- **repair (middle)**: the same with 50 rows anywhere in the list (a refine that kept its Horn
  type stays where it was): its worst case, each lookup walking up to the middle of the list;
- **sweep (ends)**: `sweeps.sweep_claims`, the claims part of the sweep whole (expired leases, ids stuck
  in flight, the repair check);
- **full**: the full comparison a sweep starts once an hour, when the watermark lapses
  (`queue_index.FullRepair`), in steps of `queue_index.REPAIR_BUDGET` seconds a sweep: the longest
  sweep's share (the comparison's sweeps and its whole time are printed too);
- **floor**: one bare indexed query of the expired claims with psycopg
  (`SELECT id FROM candidates WHERE state = 'IN_REVIEW' AND lease_expires_at < now()`).
Each figure is the median of `--rounds` rounds; every round is printed, with the load average.

    python bench/sweep.py [--sizes 100000,1000000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import random
import time

from _common import bench_env, median, vacuum

from r2k.core.adapters.redis_queues import queue_key

HORN = "FACT"
CHANGED = 50


def load(ctx, size: int) -> None:
    """Exactly `size` queued FACT candidates of the bench's, the queue rebuilt from them."""
    from r2k.core.services.queue import queue_index

    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET state = 'PENDING', claimed_by = NULL, lease_expires_at = NULL "
                   "WHERE created_by = 'sweepbench' AND state <> 'PENDING'")
        have = tx.scalar("SELECT count(*) FROM candidates WHERE created_by = 'sweepbench'")
        if have < size:
            tx.execute(
                "INSERT INTO candidates (question, text, horn_type, state, origin, source_refs, created_by, "
                "created_at, updated_at, version, queue_rank) SELECT 'Sweep question ' || g || '?', "
                "'Sweep statement ' || g || '.', %s, 'PENDING', 'manual', '[]', 'sweepbench', "
                "now() - interval '2 hours', now() - interval '2 hours', 1, g FROM generate_series(%s::bigint, %s::bigint) AS g",
                (HORN, have + 1, size))
        elif have > size:
            tx.execute("DELETE FROM candidates WHERE id IN (SELECT id FROM candidates WHERE created_by = 'sweepbench' "
                       "ORDER BY id DESC LIMIT %s)", (have - size,))
        tx.execute("UPDATE candidates SET updated_at = now() - interval '2 hours' WHERE created_by = 'sweepbench' "
                   "AND updated_at > now() - interval '2 hours'")
    vacuum("candidates")
    queue_index.reconcile(ctx, [HORN])


def touch(ctx, where: str) -> None:
    """50 rows queued since the last sweep; the watermark where it left it. `ends`: 25 at the head
    of the list and 25 at its tail, where the sweep meets them in use (a release goes back to the
    head; a new or re-reviewed candidate to the tail); `middle`: 50 anywhere (a refine that kept
    its Horn type stays where it was), the repair check's worst case in Redis."""
    from r2k.core.services.queue import queue_index

    q = queue_index.queue(ctx)
    if where == "ends":
        ids = [int(i) for i in ctx.redis.lrange(queue_key(HORN), 0, CHANGED // 2 - 1)]
        ids += [int(i) for i in ctx.redis.lrange(queue_key(HORN), -(CHANGED - len(ids)), -1)]
    else:
        length = q.length(HORN)
        ids = [int(ctx.redis.lindex(queue_key(HORN), random.randrange(length))) for _ in range(CHANGED)]
    with ctx.db.begin() as tx:  # the last round's changes are old again: each round sees its 50 only
        tx.execute("UPDATE candidates SET updated_at = now() - interval '2 hours' WHERE state = 'PENDING' "
                   "AND updated_at > now() - interval '2 hours' AND created_by = 'sweepbench'")
        tx.execute("UPDATE candidates SET updated_at = now() - interval '10 seconds' WHERE id = ANY(%s)", (ids,))
        mark = tx.scalar("SELECT extract(epoch FROM now()) - 8")
    ctx.redis.set(queue_index.REPAIR_MARK, repr(float(mark)), ex=queue_index.REPAIR_FULL_SECONDS)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bench_env("sweep")

    import psycopg

    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.operations import sweeps
    from r2k.core.services.queue import queue_index

    ctx = bootstrap()
    conn = psycopg.connect(ctx.database_url, autocommit=True)

    def floor():
        conn.execute("SELECT id FROM candidates WHERE state = 'IN_REVIEW' AND lease_expires_at < now()").fetchall()

    parts = {"repair (ends)": ("ends", lambda: queue_index.repair_queues(ctx)),
             "repair (middle)": ("middle", lambda: queue_index.repair_queues(ctx)),
             "sweep (ends)": ("ends", lambda: sweeps.sweep_claims(ctx)),
             "full": ("ends", None),
             "floor": ("ends", floor)}
    print(f"{len(os.sched_getaffinity(0))} CPU cores; {CHANGED} rows changed since the last sweep in each round")
    for size in (int(s) for s in args.sizes.split(",")):
        t0 = time.perf_counter()
        load(ctx, size)
        print(f"{size:,} queued candidates loaded in {time.perf_counter() - t0:.1f} s "
              f"(load average {os.getloadavg()[0]:.2f})")
        rounds: dict[str, list[float]] = {name: [] for name in parts}
        passes = []
        for _ in range(args.rounds):
            for name, (where, fn) in parts.items():
                touch(ctx, where)
                if fn is None:  # the full comparison: every sweep's share until it is done
                    ctx.redis.delete(queue_index.REPAIR_MARK)
                    shares = [timed(lambda: queue_index.repair_queues(ctx))]
                    while queue_index.FullRepair(ctx).running():
                        shares.append(timed(lambda: queue_index.repair_queues(ctx)))
                    rounds[name].append(max(shares))
                    passes.append(f"{len(shares)} sweeps, {sum(shares):.1f} s")
                else:
                    rounds[name].append(timed(fn))
        print(f"  full comparisons: {'; '.join(passes)}")
        for name, times in rounds.items():
            print(f"  {name:<16} {median(times) * 1000:>9.1f} ms   rounds: "
                  f"{' '.join(f'{t * 1000:.1f}' for t in times)}")
        print(f"  repair (ends) / floor: {median(rounds['repair (ends)']) / median(rounds['floor']):.1f}×; "
              f"repair (middle) / floor: {median(rounds['repair (middle)']) / median(rounds['floor']):.1f}×; "
              f"full / floor: {median(rounds['full']) / median(rounds['floor']):.1f}× "
              f"(load average {os.getloadavg()[0]:.2f})")
    conn.close()
    ctx.close()


if __name__ == "__main__":
    main()
