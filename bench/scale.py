"""The first figures at 10,000,000 candidates (issue 31, point 2).

For each size N (`--sizes`, default 1,000,000 and 10,000,000) the bench grows one data dir of its
own to N queued FACT candidates and measures the same rows at every size, side by side.

Setup speed, not the service layer: the candidates are written with **COPY straight into
PostgreSQL** (text rows streamed from Python; they carry no creation event, so their chains start
at their claim), then the Horn queues are rebuilt from them by `queue_index.reconcile` (what
`r2k queue reconcile` runs, as bench/claim.py does). The load time and the disk used
(`pg_database_size`, Redis `used_memory`) are printed. Sizes grow in the same data dir: the 10M
load adds the 9M missing.

Then, each the median of `--rounds` repetitions, with a floor measured in the same rounds where
the other benches have one (ours and the floor alternating):
- **claim**: `claims.claim_next` with a new idempotency key each time, 1 claimer, p50/p99 of
  `--seconds` of claims a round; floor: bench/claim.py's one-statement floor (floor-1);
- **approve -> next**: `claims.decide_and_next` (the decision, then the next claim and its read),
  as the review screen calls it; floor: the same claim floor (one claim's durable work);
- **registry search**: `registry.search` (what `r2k registry search` calls) for one word; the
  registry holds the answers approved here (the bench's candidates are not answers), so this row
  says whether the candidates' size reaches the search, not how search scales with answers;
- **queue picker**: `candidate_views.queue_stats`, what the queue picker screen reads: the counts
  kept with every move (`queue_counts`, migration 0028), each list's length, the oldest pending
  (bench/review.py `--draws-only` times the screen's first draw on this data dir, `--keep`); floor:
  the bare reads it needs (the count rows summed, five LLEN). **count(*) picker** times what it ran
  before (each Horn type's rows counted by state), for comparison;
- **sweep**: one whole `sweeps.sweep_all`; floor: bench/sweep.py's (the expired claims, one bare
  indexed query); target: under the sweep interval with a 10x margin;
- **repair 1,000 changed**: `queue_index.repair_queues` (the watermarked check) after 1,000 rows at
  the head of the queue changed (as released claims do): more than LOOKUP_LIMIT, so the ends of the
  list are read in pages; same floor and target;
- **full repair/sweep**: the full comparison a sweep starts when its mark is gone (hourly, and
  after Redis lost its data; `queue_index.FullRepair`), in steps of `REPAIR_BUDGET` a sweep: the
  longest sweep's share, with the sweeps it took and their sum (**full repair sweeps**, **total
  s**); same floor and target;
- **checkpoint**: `audit.write_checkpoint` after K new signed events on bench chains, as
  bench/audit.py makes them; floor: bench/audit.py's (the K events read, their stored heads by key, K leaves hashed); target: under the
  checkpoint interval (seconds) with a 10x margin;
- **audit verify**: `audit.verify` over the whole log in events/s, beside a bare scan. The COPY'd
  candidates have no events, so the log holds only what the bench's own actions wrote (claims,
  decisions, the audit chains): a full verify stays small and is run whole;
- **ingest**: `ingest.ingest` of one demo corpus file (made unique each round so it is not a
  duplicate); floor: bench/ingest.py's parse-only floor.
Per-action targets: the figure at the largest size within 1.5x of the smallest.

    python bench/scale.py [--sizes 1000000,10000000] [--rounds 3] [--seconds 2] [--keep]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from _common import bench_env, median, percentile, r2k, vacuum

HORN = "FACT"
BY = "scalebench"
BATCH = 500_000


def load(ctx, size: int) -> float:
    """Grow the bench's candidates to `size` with COPY (not the service layer); rebuild the queues.
    Returns the rows added and the seconds it took; prints progress."""
    from r2k.core.services.people import users
    from r2k.core.services.queue import queue_index

    t0 = time.perf_counter()
    with ctx.db.read() as tx:
        if not tx.one("SELECT 1 FROM users WHERE name = 'bench'"):
            users.add(ctx, "bench", "validator", [HORN])
    with ctx.db.begin() as tx:  # whatever earlier sizes claimed goes back to the pool
        tx.execute("UPDATE candidates SET state = 'PENDING', claimed_by = NULL, lease_expires_at = NULL "
                   "WHERE created_by = %s AND state = 'IN_REVIEW'", (BY,))
        have = tx.scalar("SELECT count(*) FROM candidates WHERE created_by = %s", (BY,))
    for start in range(have + 1, size + 1, BATCH):
        end = min(start + BATCH - 1, size)
        copy_candidates(ctx, HORN, BY, start, end)
        print(f"    loaded {end:,} of {size:,} ({time.perf_counter() - t0:.0f} s)", flush=True)
    vacuum("candidates")
    t1 = time.perf_counter()
    queue_index.reconcile(ctx)
    print(f"    queues rebuilt in {time.perf_counter() - t1:.1f} s", flush=True)
    return size - have, time.perf_counter() - t0


def copy_candidates(ctx, horn: str, by: str, start: int, end: int, rank: int = 0) -> None:
    """Candidates `start`..`end` of `by`, PENDING in `horn`, in one COPY (setup speed: no service
    layer, no creation event); queue rank `rank` + their number. bench/review.py loads its full
    queue with it too."""
    cols = "question, text, horn_type, state, origin, source_refs, created_by, created_at, updated_at, version, queue_rank"
    stamp = "2026-01-01 00:00:00+00"
    with ctx.db.connection() as conn:
        with conn.transaction():
            with conn.cursor().copy(f"COPY candidates ({cols}) FROM STDIN") as copy:
                lines = []
                for g in range(start, end + 1):
                    lines.append(f"Scale question {g}?\tScale statement {g} about item {g % 977}.\t{horn}\t"
                                 f"PENDING\tmanual\t[]\t{by}\t{stamp}\t{stamp}\t1\t{rank + g}\n")
                    if len(lines) == 10_000:
                        copy.write("".join(lines))
                        lines.clear()
                if lines:
                    copy.write("".join(lines))


def disk(ctx) -> tuple[float, float]:
    """PostgreSQL's database size and Redis's used memory, in MB."""
    with ctx.db.read() as tx:
        pg = tx.scalar("SELECT pg_database_size(current_database())")
    return pg / 1e6, ctx.redis.info("memory")["used_memory"] / 1e6


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def claims_for(seconds: float, one) -> list[float]:
    latencies, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        latencies.append(timed(one))
    return latencies


def measure(ctx, rounds: int, seconds: float, heads: dict, work: Path) -> dict[str, tuple[list, list]]:
    """Every row's rounds: {name: (ours, floor)} (floor None where none is measured)."""
    import random

    from audit import checkpoint_round, floor_scan
    from claim import _floor_claim, _our_claim
    from ingest import parse_only

    from r2k.core import audit
    from r2k.core.adapters.redis_queues import queue_key
    from r2k.core.domain import HORN_TYPES, SYSTEM
    from r2k.core.services.answers import registry
    from r2k.core.services.documents import ingest
    from r2k.core.services.operations import sweeps
    from r2k.core.services.people import users
    from r2k.core.services.queue import candidate_views, claims, queue_index

    actor = users.resolve(ctx, "bench")
    ours_claim = _our_claim(ctx, actor)
    floor_claim, close_floor = _floor_claim(ctx, one=True)
    ours_claim(), floor_claim()  # warm: connections, key, scripts
    rows: dict[str, tuple[list, list | None]] = {k: ([], []) for k in (
        "claim p50 ms", "claim p99 ms", "approve -> next ms", "queue picker ms", "sweep ms",
        "repair 1,000 changed ms", "full repair/sweep ms", "checkpoint ms", "ingest ms")}
    rows["full repair sweeps"] = ([], None)
    rows["full repair total s"] = ([], None)
    rows["count(*) picker ms"] = ([], None)
    rows["registry search ms"] = ([], None)
    corpus = sorted((Path(__file__).resolve().parent.parent / "core" / "demo" / "corpus").glob("*.md"))[0]
    rng = random.Random(7)
    chains = sorted(heads)

    def queued_counts():  # what the picker ran before migration 0028: every queued row counted
        with ctx.db.read() as tx:
            tx.all("SELECT h, (SELECT count(*) FROM candidates WHERE horn_type = h AND state = 'PENDING'), "
                   "(SELECT count(*) FROM candidates WHERE horn_type = h AND state = 'IN_REVIEW'), "
                   "(SELECT count(*) FROM candidates WHERE horn_type = h AND state = 'DISPUTED') "
                   "FROM unnest(%s::text[]) AS h", (list(HORN_TYPES),))

    def picker_floor():  # the bare reads the picker needs: the count rows summed, each list's length
        with ctx.db.read() as tx:
            tx.all("SELECT horn_type, state, sum(n) FROM queue_counts GROUP BY 1, 2")
        pipe = ctx.redis.pipeline(transaction=False)
        for horn in HORN_TYPES:
            pipe.llen(queue_key(horn))
        pipe.execute()

    def expired():  # bench/sweep.py's floor: the expired claims, one bare indexed query
        with ctx.db.read() as tx:
            tx.all("SELECT id FROM candidates WHERE state = 'IN_REVIEW' AND lease_expires_at < now()")

    prefix = f"scale:{os.getpid()}:{os.urandom(4).hex()}:"
    for r in range(rounds):
        ours, floor = claims_for(seconds, ours_claim), claims_for(seconds, floor_claim)
        for name, p in (("claim p50 ms", 50), ("claim p99 ms", 99)):
            rows[name][0].append(percentile(ours, p) * 1000)
            rows[name][1].append(percentile(floor, p) * 1000)
        # approve -> next: a candidate of ours claimed, then decided with the next claimed after it.
        current = claims.claim_next(ctx, actor, HORN, idempotency_key=f"{prefix}{r}:first")
        times = []
        for i in range(10):
            t0 = time.perf_counter()
            done = claims.decide_and_next(ctx, actor, current["id"], "approve", idempotency_key=f"{prefix}{r}:{i}")
            times.append(time.perf_counter() - t0)
            if done["error"] or done["next"] is None:
                raise SystemExit(f"approve -> next failed: {done['error']}")
            current = done["next"]
        rows["approve -> next ms"][0].append(median(times) * 1000)
        rows["approve -> next ms"][1].append(median([timed(floor_claim) for _ in range(10)]) * 1000)
        rows["registry search ms"][0].append(timed(lambda: registry.search(ctx, "statement")) * 1000)
        rows["queue picker ms"][0].append(timed(lambda: candidate_views.queue_stats(ctx)) * 1000)
        rows["queue picker ms"][1].append(timed(picker_floor) * 1000)
        rows["count(*) picker ms"][0].append(timed(queued_counts) * 1000)
        t0 = time.perf_counter()
        swept = sweeps.sweep_all(ctx)
        rows["sweep ms"][0].append((time.perf_counter() - t0) * 1000)
        if "skipped" in swept:
            raise SystemExit(f"the sweep did not run: {swept['skipped']}")
        rows["sweep ms"][1].append(timed(expired) * 1000)
        # The watermarked check after 1,000 rows of the queue changed: its head's, as claims released.
        with ctx.db.begin() as tx:
            tx.execute("UPDATE candidates SET updated_at = now() WHERE id IN (SELECT id FROM candidates "
                       "WHERE horn_type = %s AND state = 'PENDING' ORDER BY queue_rank, id LIMIT 1000)", (HORN,))
        rows["repair 1,000 changed ms"][0].append(timed(lambda: queue_index.repair_queues(ctx, settle=0)) * 1000)
        rows["repair 1,000 changed ms"][1].append(timed(expired) * 1000)
        # The full comparison a sweep starts once its watermark lapses (hourly, and the first after a
        # restart), in budgeted steps, one sweep's share each (`queue_index.FullRepair`): each share
        # timed, until it is done; the longest share is the row, beside the count of sweeps it took.
        ctx.redis.delete(queue_index.REPAIR_MARK)
        shares = []
        while True:
            shares.append(timed(lambda: queue_index.repair_queues(ctx)))
            if not queue_index.FullRepair(ctx).running():
                break
        rows["full repair/sweep ms"][0].append(max(shares) * 1000)
        rows["full repair/sweep ms"][1].append(timed(expired) * 1000)
        rows["full repair sweeps"][0].append(len(shares))
        rows["full repair total s"][0].append(sum(shares))
        # One checkpoint after K new signed events, as bench/audit.py times it.
        # Its floor: bench/audit.py's (the K events read, their K stored heads by key, K leaves hashed).
        spent, floor_spent = checkpoint_round(ctx, heads, rng.sample(chains, min(CHECK_K, len(chains))))
        rows["checkpoint ms"][0].append(spent * 1000)
        rows["checkpoint ms"][1].append(floor_spent * 1000)
        # Ingest one document, made unique so it is not a duplicate of the last round's.
        doc = work / f"scale-{os.getpid()}-{r}-{corpus.name}"
        doc.write_text(corpus.read_text(encoding="utf-8") + f"\n\nScale round {r} {os.urandom(4).hex()}.\n",
                       encoding="utf-8")
        t0 = time.perf_counter()
        summary = ingest.ingest(ctx, SYSTEM, [doc])
        rows["ingest ms"][0].append((time.perf_counter() - t0) * 1000)
        if summary["documents"] != 1:
            raise SystemExit(f"ingest did not store the document: {summary['skipped'][:3]}")
        rows["ingest ms"][1].append(parse_only([doc]) * 1000)
        print(f"    round {r + 1}/{rounds} done (load average {os.getloadavg()[0]:.2f})", flush=True)
    close_floor()
    scanned, scan_s = floor_scan(ctx)
    t0 = time.perf_counter()
    report = audit.verify(ctx.db, settings=ctx.settings)
    verify_s = time.perf_counter() - t0
    if not report["ok"]:
        raise SystemExit(f"audit verify found damage: {report['broken'][:3]} {report['damaged_chains'][:3]}")
    rows["verify events/s"] = ([report["events"] / verify_s], [scanned / scan_s])
    rows["verify events"] = ([report["events"]], None)
    return rows


CHECK_K = 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds of claims a round, each side")
    parser.add_argument("--chains", type=int, default=10_000, help="audit chains for the checkpoint rows")
    parser.add_argument("--keep", action="store_true", help="keep the data dir (and its servers) afterwards")
    args = parser.parse_args()
    env = bench_env("scale")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"data dir {env['R2K_DATA_DIR']}; {len(os.sched_getaffinity(0))} CPU cores; "
          f"free on /tmp {shutil.disk_usage(tempfile.gettempdir()).free / 1e9:.1f} GB; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)

    from audit import setup as audit_setup
    from claim import floor_events_table

    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap()
    floor_events_table()
    heads = audit_setup(ctx, args.chains)
    work = Path(tempfile.mkdtemp(prefix="r2k-scale-docs-"))
    results: dict[int, dict] = {}
    try:
        for size in sizes:
            print(f"{size:,} candidates:", flush=True)
            added, seconds = load(ctx, size)
            pg_mb, redis_mb = disk(ctx)
            print(f"    load {seconds:.1f} s for {added:,} rows added ({added / seconds:,.0f} rows/s, queues included); PostgreSQL {pg_mb:,.0f} MB, Redis used_memory {redis_mb:,.0f} MB", flush=True)
            rows = measure(ctx, args.rounds, args.seconds, heads, work)
            rows["load s"], rows["rows added"] = ([seconds], None), ([added], None)
            rows["PostgreSQL MB"], rows["Redis MB"] = ([pg_mb], None), ([redis_mb], None)
            results[size] = rows
            report(results, sizes[:len(results)], ctx.settings)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        ctx.close()
        if not args.keep:
            r2k(env, "services", "down", check=False)
            shutil.rmtree(env["R2K_DATA_DIR"], ignore_errors=True)


def report(results: dict[int, dict], sizes: list[int], settings) -> None:
    """Every row at each size (median, then floor), the last size over the first, and the targets."""
    first, last = sizes[0], sizes[-1]
    head = "".join(f" {f'{s:,}':>22}" for s in sizes)
    print(f"\n{'row (median; floor)':<22}{head} {'ratio':>7}  target; every round")
    periodic = {"sweep ms": settings.sweep_interval * 1000, "full repair/sweep ms": settings.sweep_interval * 1000,
                "repair 1,000 changed ms": settings.sweep_interval * 1000, "checkpoint ms": settings.checkpoint_seconds * 1000}
    for name in results[first]:
        cells, meds = [], []
        for s in sizes:
            ours, floor = results[s][name]
            m = median(ours)
            meds.append(m)
            cells.append(f"{m:,.1f}" + (f" ({median(floor):,.1f})" if floor else ""))
        ratio = meds[-1] / meds[0] if meds[0] else float("nan")
        if name in periodic:
            limit = periodic[name] / 10
            target = f"< {limit:,.0f} ms (interval/10): {'meets' if meds[-1] < limit else 'MISSES'}"
        elif name == "count(*) picker ms":
            target = "(the counting the picker no longer does)"
        elif name.endswith("ms"):
            target = f"<= 1.5x: {'meets' if ratio <= 1.5 else 'MISSES'}" if len(sizes) > 1 else ""
        elif name == "verify events/s":
            target = f">= 1/1.5x: {'meets' if ratio >= 1 / 1.5 else 'MISSES'}" if len(sizes) > 1 else ""
        else:
            target = ""
        rounds = " | ".join(" ".join(f"{v:,.1f}" for v in results[s][name][0]) for s in sizes)
        floors = " | ".join(" ".join(f"{v:,.1f}" for v in (results[s][name][1] or [])) for s in sizes)
        print(f"{name:<22}" + "".join(f" {c:>22}" for c in cells) + f" {ratio:>7.2f}  {target}; "
              f"ours {rounds}" + (f"; floor {floors}" if results[first][name][1] else ""))
    print(f"(ratio: {last:,} over {first:,}; load average {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
