"""The cost of one audit checkpoint at 100k, 1M and more chains, and of `audit verify`.

With C chains in the database (one signed event each, loaded straight into the events table with
COPY, not through the service layer, for setup speed; kept in a data dir per C, so a second run
loads nothing), the bench appends K new signed events to K chains drawn at random (K = 1000 and
5000: the default checkpoint interval is 5000 events or 60 s) and times `audit.write_checkpoint`:
the exact watermark, the events since the last checkpoint, the stored tree nodes on the moved
chains' paths checked against the previous signed root, the moved heads, the signed record in
PostgreSQL and in the data dir's file. A checkpoint must cost O(K · log chains), not O(C).

In the same round it times the floor, the work any checkpoint of those K events must do: a bare
`SELECT` of the K events by id range, one bare indexed read of the K moved chains' stored heads,
and hashing K leaves. Every round is printed with the machine's load average. When this run built the
whole tree, the checkpoint right after it (K = the first of --events) is a row of its own, `first`,
outside the medians, with the writer's phases (`Outcome.phases`) and what pg_stat_user_tables and
pg_class hold for the tree's tables before and after it (--phases prints every round's phases).

Then `audit verify` (every hash and Ed25519 signature, the checkpoints folded, every chain compared
with the newest) as events per second, beside a bare scan of the events table in the order verify
reads it, through the same kind of server-side cursor. And the part of verify the tree's format
changes, alone: the same checkpoints' deltas folded (heads rebuilt, each root computed) in format 1's
bucket tree and in format 2's prefix tree, in turns, every round.

    python bench/audit.py [--chains 100000] [--events 1000,5000] [--rounds 5] [--verify-rounds 1] [--phases]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import time

from _common import bench_env, median, vacuum

AGGREGATE = "bench_chain"
LOAD_BATCH = 20000


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


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
    """At least `chains` bench chains, loaded with COPY; their heads as the database has them."""
    with ctx.db.begin() as tx:
        ctx.signer.register(tx)
        heads = {r["aggregate_id"]: (r["seq"], r["hash"]) for r in tx.all(
            "SELECT DISTINCT ON (aggregate_id) aggregate_id, seq, hash FROM events WHERE aggregate_type = %s "
            "ORDER BY aggregate_id, seq DESC", (AGGREGATE,))}
    missing = [f"{i:08d}" for i in range(chains) if f"{i:08d}" not in heads]
    for start in range(0, len(missing), LOAD_BATCH):
        copy_in(ctx, signed_rows(ctx, heads, missing[start:start + LOAD_BATCH]))
    if missing:
        vacuum("events")
    return heads


def floor(ctx, low: int, high: int, moved: list[str], heads: dict[str, tuple[int, str]]) -> float:
    """The K events read by id, the K stored heads read by key, K leaves hashed."""
    from r2k.core.audit import leaf_hash

    keys = json.dumps([[AGGREGATE, i] for i in moved])
    t0 = time.perf_counter()
    with ctx.db.read() as tx:
        rows = tx.all("SELECT aggregate_type, aggregate_id, seq, prev_hash, hash FROM events "
                      "WHERE id > %s AND id <= %s ORDER BY id", (low, high))
        stored = tx.all("SELECT h.seq, h.hash FROM audit_heads h JOIN jsonb_array_elements(%s::jsonb) k "
                        "ON h.aggregate_type = k->>0 AND h.aggregate_id = k->>1", (keys,))
    for agg_id in moved:
        leaf_hash(AGGREGATE, agg_id, *heads[agg_id])
    spent = time.perf_counter() - t0
    assert len(rows) == len(moved) and len(stored) == len(moved)
    return spent


def checkpoint_round(ctx, heads: dict[str, tuple[int, str]], moved: list[str],
                     phases: dict | None = None) -> tuple[float, float]:
    """One new signed event on each chain of `moved`, then one checkpoint timed, and its floor
    (`floor`) over the same events: (seconds, floor seconds). bench/scale.py times its row with it.
    `phases`: filled with the writer's seconds per phase."""
    from r2k.core import audit

    with ctx.db.read() as tx:
        low = tx.scalar("SELECT coalesce(max(id), 0) FROM events")
    copy_in(ctx, signed_rows(ctx, heads, moved))
    t0 = time.perf_counter()
    outcome = audit.write_checkpoint(ctx, force=True)
    spent = time.perf_counter() - t0
    if not outcome.written:
        raise SystemExit(f"no checkpoint written: {outcome.refused or outcome.skipped}")
    if phases is not None:
        phases.update(outcome.phases)
    return spent, floor(ctx, low, outcome.written["watermark"], moved, heads)


def show_phases(phases: dict) -> str:
    return ", ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in phases.items()) + " (ms)"


def table_stats(ctx) -> str:
    """What the planner and autovacuum know of the tree's tables."""
    with ctx.db.read() as tx:
        rows = tx.all("SELECT s.relname, s.n_live_tup, s.n_dead_tup, s.n_mod_since_analyze, "
                      "s.last_analyze IS NOT NULL OR s.last_autoanalyze IS NOT NULL AS analyzed, c.reltuples "
                      "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
                      "WHERE s.relname IN ('audit_heads', 'audit_nodes') ORDER BY s.relname")
    return "; ".join(f"{r['relname']}: live {r['n_live_tup']} dead {r['n_dead_tup']} modified since analyze "
                     f"{r['n_mod_since_analyze']} analyzed {r['analyzed']} reltuples {r['reltuples']:.0f}"
                     for r in rows)


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
    parser.add_argument("--events", default="1000,5000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--verify-rounds", type=int, default=1)
    parser.add_argument("--phases", action="store_true", help="print the writer's phases every round")
    args = parser.parse_args()
    os.environ.setdefault("R2K_DATA_DIR", f"/tmp/r2k-bench-audit-{args.chains}")
    bench_env("audit")
    from r2k.core import audit
    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap()
    print(f"data dir {os.environ['R2K_DATA_DIR']}; {load()}")
    t0 = time.perf_counter()
    heads = setup(ctx, args.chains)
    with ctx.db.read() as tx:
        total = tx.scalar("SELECT count(*) FROM events")
        chain_count = tx.scalar("SELECT count(*) FROM (SELECT DISTINCT aggregate_type, aggregate_id FROM events) c")
    print(f"{chain_count} chains, {total} events in the database (COPY load and count {time.perf_counter() - t0:.1f} s)")

    t0 = time.perf_counter()
    # The writer steps by itself, audit.STEP_EVENTS events a record: one record's delta must stay
    # under jsonb's 256 MB (a log filled by the service layer is checkpointed every 5,000 events; this
    # one was loaded in bulk).
    first = audit.write_checkpoint(ctx, force=True)
    if first.written:
        print(f"checkpoints of every chain not yet anchored (the first, or the first of format 2: "
              f"O(chains), once; {first.steps} step(s)): {time.perf_counter() - t0:.2f} s   {load()}")
        print(f"  its last step's phases: {show_phases(first.phases)}")
    elif first.refused:
        raise SystemExit(f"the bench database no longer matches its checkpoints: {first.refused}")

    rng = random.Random(7)
    ids = sorted(heads)
    sizes = [int(x) for x in args.events.split(",")]
    print(f"{'chains':>9} {'K':>5} {'round':>5} {'checkpoint ms':>14} {'floor ms':>9} {'ratio':>6}")
    if first.written:  # the checkpoint right after a whole tree was built: its own row, not in the medians
        print(f"  before it: {table_stats(ctx)}")
        phases = {}
        spent, floor_spent = checkpoint_round(ctx, heads, rng.sample(ids, min(sizes[0], len(ids))), phases)
        print(f"{chain_count:>9} {sizes[0]:>5} {'first':>5} {spent * 1000:>14.1f} {floor_spent * 1000:>9.1f} "
              f"{spent / floor_spent:>6.1f}   {load()}   (the first after the whole tree was built)")
        print(f"  its phases: {show_phases(phases)}")
        print(f"  after it: {table_stats(ctx)}")
    for k in sizes:
        ours, floors = [], []
        for n in range(1, args.rounds + 1):
            phases = {}
            spent, floor_spent = checkpoint_round(ctx, heads, rng.sample(ids, min(k, len(ids))), phases)
            ours.append(spent)
            floors.append(floor_spent)
            print(f"{chain_count:>9} {k:>5} {n:>5} {ours[-1] * 1000:>14.1f} {floors[-1] * 1000:>9.1f} "
                  f"{ours[-1] / floors[-1]:>6.1f}   {load()}")
            if args.phases:
                print(f"  its phases: {show_phases(phases)}")
        o, f = median(ours) * 1000, median(floors) * 1000
        print(f"{chain_count:>9} {k:>5} {'med':>5} {o:>14.1f} {f:>9.1f} {o / f:>6.1f}   "
              f"(median of {args.rounds}; the interval is 5000 events or 60 s)")
    with ctx.db.read() as tx:
        nodes = tx.scalar("SELECT count(*) FROM audit_nodes")
        size = tx.scalar("SELECT pg_total_relation_size('audit_nodes') + pg_total_relation_size('audit_heads')")
    print(f"stored tree: {nodes} nodes; audit_nodes and audit_heads {size / 2**20:.0f} MiB")

    with ctx.db.read() as tx:
        deltas = [r["delta"] for r in tx.all("SELECT delta FROM audit_checkpoints ORDER BY number")]
    entries = sum(len(d) for d in deltas)
    for n in range(1, args.rounds + 1):
        spent = {}
        for fmt in (1, audit.FORMAT):
            record = {"format": fmt, "buckets": audit.BUCKETS}
            t0 = time.perf_counter()
            fold = audit.Fold()
            for delta in deltas:
                assert fold.apply(record, delta) is None
                fold.root  # noqa: B018 - each checkpoint's root, as verify checks it
            spent[fmt] = time.perf_counter() - t0
        print(f"round {n} fold of {len(deltas)} checkpoints' deltas ({entries} heads): format 1 "
              f"{entries / spent[1]:>8.0f} heads/s, format {audit.FORMAT} {entries / spent[audit.FORMAT]:>8.0f} "
              f"heads/s   {load()}")

    for n in range(1, args.verify_rounds + 1):
        scanned, scan_s = floor_scan(ctx)
        t0 = time.perf_counter()
        report = audit.verify(ctx.db, settings=ctx.settings)
        verify_s = time.perf_counter() - t0
        if not report["ok"]:
            raise SystemExit(f"audit verify found damage in the bench database: {report['broken'][:3]} "
                             f"{report['damaged_chains'][:3]} {report['checkpoints']['problems'][:3]}")
        print(f"round {n} audit verify: {report['events'] / verify_s:>9.0f} events/s ({report['events']} events, "
              f"{report['checkpoints']['checked']} checkpoints, {verify_s:.1f} s)   {load()}")
        print(f"round {n} bare scan:    {scanned / scan_s:>9.0f} events/s ({scanned} events, {scan_s:.1f} s)")
    ctx.close()


if __name__ == "__main__":
    main()
