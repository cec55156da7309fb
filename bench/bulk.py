"""Bulk actions against the same moves one at a time (docs/architecture.md, "Bulk actions").

Rows, in one run, taking turns (the machine's speed drifts within a minute):
1. one at a time: `grey.transition(…, "dismiss")` called for each of N Pending grey entries, as a
   script or N CLI calls in one process would, each its own unit of work;
2. bulk: `bulk.each` over another N entries, what `r2k grey dismiss ID… / --from-file` runs: the
   same move for each, each its own unit of work, event and idempotency key (`KEY:ID`), with the
   per-item report and progress.
The entries are made in batches (`grey.create_entries`, as ingest makes them), their processing jobs
not queued (no worker runs here). Target: bulk at no less than half the rate of one at a time.

    python bench/bulk.py [--entries 10000] [--rounds 2]
"""
from __future__ import annotations

import argparse
import time
import uuid

from _common import bench_env, verdict


def make_entries(ctx, actor, n: int) -> list[int]:
    from r2k.core.services.grey_entries import grey

    ids = []
    for start in range(0, n, 1000):
        with ctx.db.begin() as tx:
            rows = grey.create_entries(tx, actor, [{"subject": f"Which bay takes pallet class {uuid.uuid4().hex[:8]}?",
                                                    "detail": ""} for _ in range(min(1000, n - start))],
                                       origin="manual")
        ids += [r["id"] for r in rows]
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=10_000, help="grey entries per row and round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    bench_env("bulk")
    import os

    os.environ["R2K_START_WORKER"] = "0"
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services import bulk
    from r2k.core.services.grey_entries import grey
    from r2k.core.services.people import users

    ctx = bootstrap(pool_size=2)
    with ctx.db.read() as tx:
        if not tx.one("SELECT 1 FROM users WHERE name = 'bench-specialist'"):
            users.add(ctx, "bench-specialist", "specialist")
    actor = users.resolve(ctx, "bench-specialist")
    single = bulked = 0.0
    n = 0
    for _ in range(args.rounds):
        ids = make_entries(ctx, actor, args.entries)
        t = time.perf_counter()
        for entry_id in ids:
            grey.transition(ctx, actor, entry_id, "dismiss")
        single += time.perf_counter() - t
        ids = make_entries(ctx, actor, args.entries)
        key = uuid.uuid4().hex
        t = time.perf_counter()
        report = bulk.each(ids, lambda entry_id, k: grey.transition(ctx, actor, entry_id, "dismiss",
                                                                    idempotency_key=k), idempotency_key=key)
        bulked += time.perf_counter() - t
        assert report["failed"] == 0, report["items"][:3]
        n += len(ids)
    one_rate, bulk_rate = n / single, n / bulked
    print(f"one at a time: {one_rate:8.0f} dismissals/s ({n:,} entries over {args.rounds} rounds)")
    print(f"bulk:          {bulk_rate:8.0f} dismissals/s (each its own move, event and idempotency key)")
    ratio = bulk_rate / one_rate
    print(f"bulk / one at a time: {ratio:.2f} (target >= 0.50: {verdict(ratio, 0.5, lower_is_better=False)}); "
          f"the bulk rows pay an idempotency key each, the single ones none")
    ctx.close()


if __name__ == "__main__":
    main()
