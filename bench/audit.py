"""The cost of the audit trail's checkpoints and of `audit verify`.

With C chains in the database (default 100,000, one signed event each, written straight into the
events table with COPY for setup speed), the bench appends K new signed events to K chains drawn at
random (K = 100, 1000, 5000: the default checkpoint interval is 5000 events) and times
`audit.write_checkpoint` (the exact watermark, the delta, the checks against the previous
checkpoint, the touched buckets, the signed record in PostgreSQL and in the data dir's file). In
the same run it times the floor: a bare `SELECT` of those K events by id range, which any
checkpoint must at least read.

Then it times `audit verify` (every hash and Ed25519 signature, the checkpoints folded, every chain
compared with the newest) as events per second, next to a bare scan of the events table in the
order verify reads it, through the same kind of server-side cursor.

    python bench/audit.py [--chains 100000] [--events 100,1000,5000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import random
import time

from _common import bench_env, median, vacuum

AGGREGATE = "bench_chain"


def signed_rows(ctx, heads: dict[str, tuple[int, str]], ids: list[str]) -> list[tuple]:
    """One new event for each chain in `ids`, hashed and signed as the engine does; `heads` moves on."""
    from datetime import datetime, timezone

    from r2k.core import events

    signer = ctx.signer
    rows = []
    for agg_id in ids:
        seq, prev = heads.get(agg_id, (0, events.GENESIS))
        seq += 1
        at = datetime.now(timezone.utc)
        payload = {"set": {"n": seq}}
        digest = events.event_hash(events.hashed_fields(AGGREGATE, agg_id, seq, "tick", "bench", payload, at,
                                                        None, prev))
        rows.append((AGGREGATE, agg_id, seq, "tick", "bench", events.canonical(payload).decode(), at, None,
                     prev, digest, signer.sign(digest), signer.key_id))
        heads[agg_id] = (seq, digest)
    return rows


def copy_in(ctx, rows: list[tuple]) -> None:
    from r2k.core.events import EVENT_COLUMNS

    with ctx.db.connection() as conn:
        with conn.transaction():
            with conn.cursor().copy(f"COPY events ({EVENT_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)


def setup(ctx, chains: int) -> dict[str, tuple[int, str]]:
    """At least `chains` bench chains; their heads as the database has them."""
    with ctx.db.begin() as tx:
        ctx.signer.register(tx)
        heads = {r["aggregate_id"]: (r["seq"], r["hash"]) for r in tx.all(
            "SELECT DISTINCT ON (aggregate_id) aggregate_id, seq, hash FROM events WHERE aggregate_type = %s "
            "ORDER BY aggregate_id, seq DESC", (AGGREGATE,))}
    missing = [f"{i:07d}" for i in range(chains) if f"{i:07d}" not in heads]
    for start in range(0, len(missing), 20000):
        copy_in(ctx, signed_rows(ctx, heads, missing[start:start + 20000]))
    vacuum("events")
    return heads


def floor_select(ctx, low: int, high: int) -> float:
    t0 = time.perf_counter()
    with ctx.db.read() as tx:
        rows = tx.all("SELECT * FROM events WHERE id > %s AND id <= %s ORDER BY id", (low, high))
    assert rows
    return time.perf_counter() - t0


def floor_scan(ctx) -> tuple[int, float]:
    t0 = time.perf_counter()
    n = 0
    with ctx.db.connection() as conn:
        with conn.transaction():
            cursor = conn.cursor(name="bench_scan")
            cursor.itersize = 5000
            cursor.execute("SELECT * FROM events ORDER BY aggregate_type, aggregate_id, seq")
            for _ in cursor:
                n += 1
            cursor.close()
    return n, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chains", type=int, default=100_000)
    parser.add_argument("--events", default="100,1000,5000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bench_env("audit")
    from r2k.core import audit
    from r2k.core.context import Context

    ctx = Context()
    t0 = time.perf_counter()
    heads = setup(ctx, args.chains)
    with ctx.db.read() as tx:
        total = tx.scalar("SELECT count(*) FROM events")
        chain_count = tx.scalar("SELECT count(*) FROM (SELECT DISTINCT aggregate_type, aggregate_id FROM events) c")
    print(f"{chain_count} chains, {total} events in the database (setup {time.perf_counter() - t0:.1f} s)")

    t0 = time.perf_counter()
    first = audit.write_checkpoint(ctx, force=True)
    if first.written:
        print(f"first checkpoint, every chain new to it: {time.perf_counter() - t0:.2f} s")
    elif first.refused:
        raise SystemExit(f"the bench database no longer matches its checkpoints: {first.refused}")

    print(f"{'K new events':>12} {'checkpoint ms':>14} {'floor ms':>9} {'ratio':>6}   (median of {args.rounds} rounds)")
    rng = random.Random(7)
    ids = sorted(heads)
    for k in (int(x) for x in args.events.split(",")):
        ours, floor = [], []
        for _ in range(args.rounds):
            with ctx.db.read() as tx:
                low = tx.scalar("SELECT coalesce(max(id), 0) FROM events")
            copy_in(ctx, signed_rows(ctx, heads, rng.sample(ids, min(k, len(ids)))))
            t0 = time.perf_counter()
            outcome = audit.write_checkpoint(ctx, force=True)
            ours.append(time.perf_counter() - t0)
            if not outcome.written:
                raise SystemExit(f"no checkpoint written: {outcome.refused or outcome.skipped}")
            floor.append(floor_select(ctx, low, outcome.written["watermark"]))
        o, f = median(ours) * 1000, median(floor) * 1000
        print(f"{k:>12} {o:>14.1f} {f:>9.1f} {o / f:>6.1f}")

    scanned, scan_s = floor_scan(ctx)
    t0 = time.perf_counter()
    report = audit.verify(ctx.db, settings=ctx.settings)
    verify_s = time.perf_counter() - t0
    if not report["ok"]:
        raise SystemExit(f"audit verify found damage in the bench database: {report['broken'][:3]} "
                         f"{report['damaged_chains'][:3]} {report['checkpoints']['problems'][:3]}")
    print(f"audit verify: {report['events'] / verify_s:>9.0f} events/s ({report['events']} events, "
          f"{report['checkpoints']['checked']} checkpoints, {verify_s:.1f} s)")
    print(f"bare scan:    {scanned / scan_s:>9.0f} events/s ({scanned} events, {scan_s:.1f} s)")
    ctx.close()


if __name__ == "__main__":
    main()
