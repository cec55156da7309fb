"""Claim throughput and latency on the path users pay (issue 31, point 3).

With 100,000 pending FACT candidates, N claimer processes (1, 4, 16) call the real
`claims.claim_next` for a fixed time each, **with an idempotency key on every claim** (a new
one each time, as the workstation's `new_idempotency_key()` and the API's `Idempotency-Key` send): the bench
prints claims per second and the p50/p99 latency of one claim. Ours goes through everything a
user's claim goes through: the key's row, the pop (the id moves in flight in the same Lua step,
its read-ahead entry with it), the conditional claim with its signed event (SHA-256 hash, Ed25519
signature, the chain checked), the stored response, the commit, the settle after it and the
audit checkpoint every 5,000 events.

In the same run it measures the floor: the same durable work with bare drivers (psycopg and
redis-py) and nothing of ours around it, in one transaction per claim:
  BEGIN; INSERT the key row (ON CONFLICT DO NOTHING RETURNING); one Redis LPOP;
  one statement (as ours) that does UPDATE candidates … WHERE id = … AND state = 'PENDING'
  RETURNING * (the row, for the response) and INSERTs the event (SHA-256 over its JSON, signed
  with Ed25519 via cryptography, as ours are) from it;
  UPDATE the key row SET response = the row as JSON; COMMIT.
Five PostgreSQL round trips and one Redis one. With a key, a second floor runs in the same
rounds, **floor-1**: the same work folded as ours now is (one LPOP; one statement, committing by
itself, that updates the row, inserts the signed event and inserts the key row holding the row
as JSON), the least any keyed claim can do with these drivers. The floor keeps no in-flight set (a crash between
its pop and its commit loses the id), reads no chain head (its chain's head is kept in the
process) and checks no authority: what ours does beyond it is what the promises cost.
Targets: p99 < 10 ms at 16 claimers; throughput at least 90% of the floor (issue 31).
`--keyless` measures the one-statement path a claim without a key takes, against the old floor
(LPOP, UPDATE, event INSERT, COMMIT; no key, no signature), for comparison with earlier figures.

Each row also shows the CPU time one claim costs: in the claimer process itself (client), in
PostgreSQL's and in Redis's server processes (read from /proc over the measured seconds), which
says where the gap to the floor is. Where the claimers outnumber the cores, the bench also prints
the bound that CPU puts on throughput and on mean latency (Little's law), for ours and the floor.
The Redis column counts the commands Redis served per claim (INFO commandstats), those a script
runs included, and in brackets the EVALSHA calls: the round trips of ours are those scripts.
`--profile SECONDS` instead runs one claimer of each side under cProfile for that long and prints
the top entries by own time and by cumulative time (where the claimer's CPU goes).

The floor writes its event into a table of the events table's shape (columns, indexes, unique
chain position, key reference), not into the log itself: the log is audited, and the checkpoint
that anchors every 5,000 events would otherwise land in our rounds for the floor's events too, more
than doubling what a claim pays for it. Our own events stay in the log across rounds, so our rounds
pay their checkpoints at the rate a user's claims do. Both write their keys into the real
`idempotency_keys` table (each claim a new key).

The 100,000 candidates are written with one INSERT … SELECT (setup speed; they carry no creation
event, so their chains start at the claim), and the Horn queue is rebuilt by `queue reconcile`,
which leaves the claims' read-ahead to fill itself as in use.

On a shared virtual machine the speed of the cores drifts by a fifth within a minute, so ours and
the floor take turns: `--rounds` rounds of `--seconds` each, alternating, and each row pools its
rounds (claims over the summed seconds, percentiles over every claim) and gives every round's
claims/s; the share of the floor is the median of the rounds' ratios (each round of ours over
the floor's round that follows it), beside the pooled ratio.

    python bench/claim.py [--seconds 3] [--rounds 5] [--pending 100000] [--claimers 1,4,16] [--keyless]
    python bench/claim.py --profile 5
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time

from _common import bench_env, median, percentile, vacuum, verdict

HORN = "FACT"
FLOOR_EVENTS = "bench_floor_events"


def setup(pending: int) -> None:
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.people import users
    from r2k.core.services.queue import queue_index

    ctx = bootstrap()
    with ctx.db.read() as tx:
        if not tx.one("SELECT 1 FROM users WHERE name = 'bench'"):
            users.add(ctx, "bench", "validator", [HORN])
    with ctx.db.begin() as tx:
        # Whatever earlier runs claimed goes back to the pool; top up to `pending`.
        tx.execute("UPDATE candidates SET state = 'PENDING', claimed_by = NULL, lease_expires_at = NULL "
                   "WHERE horn_type = %s AND state = 'IN_REVIEW' AND created_by = 'bench'", (HORN,))
        have = tx.scalar("SELECT count(*) FROM candidates WHERE horn_type = %s AND state = 'PENDING'", (HORN,))
        if have < pending:
            tx.execute(
                "INSERT INTO candidates (question, text, horn_type, state, origin, source_refs, created_by, "
                "created_at, updated_at, version, queue_rank) SELECT 'Bench question ' || g || '?', "
                "'Bench statement ' || g || '.', %s, 'PENDING', 'manual', '[]', 'bench', now(), now(), 1, g "
                "FROM generate_series(1, %s) AS g", (HORN, pending - have))
    queue_index.reconcile(ctx)
    vacuum("candidates")
    ctx.close()


def floor_events_table() -> None:
    """The floor's event table, shaped as the events table (created once, as the database owner:
    the application role creates no tables)."""
    import psycopg

    from r2k.core.config import Settings
    from r2k.core.embedded import owner_url

    with psycopg.connect(owner_url(Settings()), autocommit=True) as conn:
        if conn.execute("SELECT to_regclass(%s)", (FLOOR_EVENTS,)).fetchone()[0] is None:
            with conn.transaction():
                conn.execute(f"CREATE TABLE {FLOOR_EVENTS} (LIKE events INCLUDING ALL EXCLUDING DEFAULTS)")
                conn.execute(f"CREATE SEQUENCE {FLOOR_EVENTS}_id_seq OWNED BY {FLOOR_EVENTS}.id")
                conn.execute(f"ALTER TABLE {FLOOR_EVENTS} ALTER id SET DEFAULT nextval('{FLOOR_EVENTS}_id_seq')")
                conn.execute(f"ALTER TABLE {FLOOR_EVENTS} ADD FOREIGN KEY (key_id) REFERENCES signing_keys (key_id)")


KEYED = True  # --keyless sets it False (before the claimers fork)


def claimer(seconds: float, start, out, measured) -> None:
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.people import users

    ctx = bootstrap()
    actor = users.resolve(ctx, "bench")
    one_claim = _our_claim(ctx, actor)
    one_claim()  # warm: connections, key, scripts
    out.put(timed(seconds, start, one_claim))
    measured.wait(60)  # keep the connections (and their server processes' CPU) until it is read
    ctx.close()


def _our_claim(ctx, actor):
    from r2k.core.services.queue import claims

    if not KEYED:
        return lambda: claims.claim_next(ctx, actor, HORN)
    prefix = f"bench:{os.getpid()}:{os.urandom(4).hex()}:"
    count = iter(range(1 << 62))
    # A new key each claim, as the workstation's new_idempotency_key() makes one per key press.
    return lambda: claims.claim_next(ctx, actor, HORN, idempotency_key=f"{prefix}{next(count)}")


def timed(seconds: float, start, one_claim) -> tuple[list[float], float]:
    """Say this process is ready (warm), wait for the start every process of the round is given,
    then claim for `seconds`: each claim's latency, and the CPU this process spent. (A start set
    in advance is missed on a loaded machine: sixteen processes importing and connecting can take
    longer than any lead, and a round then measured seconds of start-up, not claims.)"""
    ready, go, at = start
    ready.put(os.getpid())
    go.wait(120)
    latencies = []
    while time.time() < at.value:
        time.sleep(0.001)
    end = at.value + seconds
    cpu = time.process_time()
    while time.time() < end:
        t0 = time.perf_counter()
        one_claim()
        latencies.append(time.perf_counter() - t0)
    return latencies, time.process_time() - cpu


def floor_worker(seconds: float, start, out, measured) -> None:
    """The floor: what any claim must at least do, with nothing of ours around it."""
    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap()
    one_claim, close = _floor_claim(ctx)
    one_claim()  # warm, as ours is
    out.put(timed(seconds, start, one_claim))
    measured.wait(60)
    close()


def _floor_claim(ctx, one: bool = False):
    """One floor claim as a function (see the module's docstring for what it does), and a close."""
    import hashlib
    import json

    import psycopg
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from psycopg.types.json import Jsonb

    redis, url = ctx.redis, ctx.database_url
    conn = psycopg.connect(url, autocommit=False)
    key = f"raw_to_knowledge:val_queue:{HORN}"
    signer = Ed25519PrivateKey.generate()
    key_id = conn.execute("SELECT key_id FROM signing_keys LIMIT 1").fetchone()[0]
    conn.commit()
    # One chain per floor process and round, linked as it goes (its head is known here, so it costs
    # the floor no read), as a claim links its candidate's chain.
    chain = f"{os.getpid()}-{os.urandom(4).hex()}"
    head = {"seq": 0, "hash": ""}
    prefix = f"floor:{chain}:"
    count = iter(range(1 << 62))
    names: list[str] = []

    def event_of(idem: str) -> tuple[float, dict, int, str]:
        """The next claim event of this floor's chain, hashed as ours are: (time, payload, seq, hash)."""
        at = time.time()
        payload = {"from": "PENDING", "to": "IN_REVIEW", "fields": {}, "set": {"claimed_by": "bench", "state": "IN_REVIEW"}}
        seq = head["seq"] + 1
        digest = hashlib.sha256(json.dumps(
            {"aggregate_type": "floor", "aggregate_id": chain, "seq": seq, "type": "claim", "actor": "bench",
             "payload": payload, "created_at": at, "idempotency_key": idem, "prev_hash": head["hash"]},
            sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        return at, payload, seq, digest

    def keyless() -> None:
        cid = int(redis.lpop(key))
        row = conn.execute("UPDATE candidates SET state = 'IN_REVIEW', claimed_by = 'bench', version = version + 1 "
                           "WHERE id = %s AND state = 'PENDING' RETURNING version", (cid,)).fetchone()
        if row:
            digest = hashlib.sha256(f"{cid}:{row[0]}".encode()).hexdigest()
            conn.execute(f"INSERT INTO {FLOOR_EVENTS} (aggregate_type, aggregate_id, seq, type, actor, payload, created_at, "
                         "prev_hash, hash, signature, key_id) VALUES ('floor', %s, %s, 'claim', 'bench', %s, now(), "
                         "%s, %s, %s, (SELECT key_id FROM signing_keys LIMIT 1))",
                         (chain, head["seq"] + 1, Jsonb({"to": "IN_REVIEW"}), head["hash"], digest, b"x"))
            head.update(seq=head["seq"] + 1, hash=digest)
        conn.commit()

    def keyed() -> None:
        idem = f"{prefix}{next(count)}"
        with conn.transaction():  # BEGIN … COMMIT
            if conn.execute("INSERT INTO idempotency_keys (key, actor, request_hash, response, created_at) "
                            "VALUES (%s, 'bench', %s, NULL, now()) ON CONFLICT (actor, key) DO NOTHING RETURNING key",
                            (idem, hashlib.sha256(idem.encode()).hexdigest())).fetchone() is None:
                raise AssertionError("a floor key used twice")
            cid = int(redis.lpop(key))
            at, payload, seq, digest = event_of(idem)
            # The claim and its event in one statement, as ours writes them.
            cur = conn.execute(
                "WITH moved AS (UPDATE candidates SET state = 'IN_REVIEW', claimed_by = 'bench', version = version + 1, "
                "lease_expires_at = now() + interval '30 minutes', updated_at = now() "
                "WHERE id = %s AND state = 'PENDING' RETURNING *), "
                f"logged AS (INSERT INTO {FLOOR_EVENTS} (aggregate_type, aggregate_id, seq, type, actor, payload, "
                "created_at, idempotency_key, prev_hash, hash, signature, key_id) SELECT 'floor', %s, %s, "
                "'claim', 'bench', %s, to_timestamp(%s), %s, %s, %s, %s, %s FROM moved) SELECT * FROM moved",
                (cid, chain, seq, Jsonb(payload), at, idem, head["hash"], digest, signer.sign(digest.encode()), key_id))
            row = cur.fetchone()
            if row is None:
                return
            head.update(seq=seq, hash=digest)
            if not names:
                names.extend(c.name for c in cur.description)
            claimed = {n: v for n, v in zip(names, row) if n != "search"}
            conn.execute("UPDATE idempotency_keys SET response = %s::jsonb WHERE actor = 'bench' AND key = %s",
                         (json.dumps(claimed, default=str), idem))

    def one_statement() -> None:
        idem = f"{prefix}{next(count)}"
        cid = int(redis.lpop(key))
        at, payload, seq, digest = event_of(idem)
        # The key row, the claim, its event and the stored response in one statement that commits
        # by itself, as ours now writes them.
        row = conn.execute(
            "WITH moved AS (UPDATE candidates SET state = 'IN_REVIEW', claimed_by = 'bench', version = version + 1, "
            "lease_expires_at = now() + interval '30 minutes', updated_at = now() "
            "WHERE id = %s AND state = 'PENDING' RETURNING *), "
            f"logged AS (INSERT INTO {FLOOR_EVENTS} (aggregate_type, aggregate_id, seq, type, actor, payload, "
            "created_at, idempotency_key, prev_hash, hash, signature, key_id) SELECT 'floor', %s, %s, "
            "'claim', 'bench', %s, to_timestamp(%s), %s, %s, %s, %s, %s FROM moved), "
            "kept AS (INSERT INTO idempotency_keys (key, actor, request_hash, response, created_at) "
            "SELECT %s, 'bench', %s, to_jsonb(moved) - 'search', now() FROM moved RETURNING response) "
            "SELECT moved.*, kept.response FROM moved, kept",
            (cid, chain, seq, Jsonb(payload), at, idem, head["hash"], digest, signer.sign(digest.encode()), key_id,
             idem, hashlib.sha256(idem.encode()).hexdigest())).fetchone()
        if row is not None:
            head.update(seq=seq, hash=digest)

    if one:
        conn.autocommit = True
        return one_statement, conn.close
    return (keyed if KEYED else keyless), conn.close


def floor1_worker(seconds: float, start, out, measured) -> None:
    """The one-statement floor (with a key): the same work as `floor_worker`'s, folded as ours is."""
    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap()
    one_claim, close = _floor_claim(ctx, one=True)
    one_claim()
    out.put(timed(seconds, start, one_claim))
    measured.wait(60)
    close()


def server_cpu() -> dict[str, dict[int, float]]:
    """CPU seconds used so far by each PostgreSQL and Redis server process on this machine (Linux)."""
    used: dict[str, dict[int, float]] = {"postgres": {}, "redis-server": {}}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if name in used:
            used[name][int(pid)] = (int(fields[11]) + int(fields[12])) / tick
    return used


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two readings, process by process: a server process that ended in
    between (the last run's connections) must not count against this run."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


_REDIS = []


def redis_calls() -> dict[str, int]:
    """Redis's count of the calls it served so far, by command (INFO commandstats); the bench's own
    INFO calls count too, two a round."""
    if not _REDIS:
        from r2k.core.bootstrap import bootstrap

        _REDIS.append(bootstrap().redis)
    return {name.removeprefix("cmdstat_"): stat["calls"] for name, stat in _REDIS[0].info("commandstats").items()}


def run(target, n: int, seconds: float) -> dict:
    """One round: n processes running `target` for `seconds`; what they did and what it cost."""
    ctx = mp.get_context("fork")
    out, measured = ctx.Queue(), ctx.Event()
    start = (ctx.Queue(), ctx.Event(), ctx.Value("d", 0.0))
    procs = [ctx.Process(target=target, args=(seconds, start, out, measured)) for _ in range(n)]
    for p in procs:
        p.start()
    for _ in procs:  # every process warm and waiting
        start[0].get(timeout=300)
    start[2].value = start_at = time.time() + 0.2
    start[1].set()
    time.sleep(max(0.0, start_at - time.time()))
    before, calls = server_cpu(), redis_calls()
    time.sleep(max(0.0, start_at + seconds - time.time()))
    after, calls = server_cpu(), {k: v - calls.get(k, 0) for k, v in redis_calls().items()}
    measured.set()  # now the claimers may close their connections, ending their server processes
    results = [out.get(timeout=seconds + 120) for _ in procs]
    for p in procs:
        p.join()
    return {"seconds": seconds, "latencies": [v for lat, _ in results for v in lat],
            "client": sum(cpu for _, cpu in results),
            "postgres": cpu_between(before["postgres"], after["postgres"]),
            "redis": cpu_between(before["redis-server"], after["redis-server"]), "redis_calls": calls}


def pooled(n: int, rounds: list[dict]) -> dict:
    """A row of figures from rounds of the same kind: claims over the summed seconds, percentiles
    over every claim, CPU over every claim."""
    latencies = [v for r in rounds for v in r["latencies"]]
    per_claim = 1e6 / max(len(latencies), 1)  # CPU µs per claim
    return {"claimers": n, "claims": len(latencies), "per_second": len(latencies) / sum(r["seconds"] for r in rounds),
            "p50_ms": percentile(latencies, 50) * 1000, "p99_ms": percentile(latencies, 99) * 1000,
            "client_us": sum(r["client"] for r in rounds) * per_claim,
            "postgres_us": sum(r["postgres"] for r in rounds) * per_claim,
            "redis_us": sum(r["redis"] for r in rounds) * per_claim,
            "redis_calls": sum(sum(v for k, v in r["redis_calls"].items() if k != "info") for r in rounds) / max(len(latencies), 1),
            "evalsha": sum(r["redis_calls"].get("evalsha", 0) for r in rounds) / max(len(latencies), 1),
            "rounds_per_second": [round(len(r["latencies"]) / r["seconds"]) for r in rounds]}


def profile(seconds: float, pending: int, top: int = 25) -> None:
    """One claimer of each side under cProfile for `seconds`: the top entries by own and by
    cumulative time, and the claims made (their CPU per claim beside)."""
    import cProfile
    import io
    import pstats

    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.people import users

    for label in ("claim", "floor"):
        setup(pending)
        ctx = bootstrap()
        if label == "claim":
            one_claim, close = _our_claim(ctx, users.resolve(ctx, "bench")), ctx.close
        else:
            one_claim, close = _floor_claim(ctx)
        one_claim()
        profiler = cProfile.Profile()
        count, cpu, end = 0, time.process_time(), time.time() + seconds
        profiler.enable()
        while time.time() < end:
            one_claim()
            count += 1
        profiler.disable()
        cpu = time.process_time() - cpu
        close()
        print(f"--- {label}: {count} claims in {seconds:.0f} s under cProfile, "
              f"{cpu * 1e6 / max(count, 1):.0f} µs of the claimer's CPU per claim (profiler included)")
        for order in ("tottime", "cumulative"):
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).strip_dirs().sort_stats(order).print_stats(top)
            body = text.getvalue()
            print(f"by {order}:")
            print(body[body.index("   ncalls"):].rstrip())
        print()


def main() -> None:
    global KEYED
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--claimers", default="1,4,16")
    parser.add_argument("--keyless", action="store_true", help="claims without a key, against the old floor")
    parser.add_argument("--profile", type=float, default=0, metavar="SECONDS",
                        help="profile one claimer of each side for SECONDS instead")
    args = parser.parse_args()
    KEYED = not args.keyless
    bench_env("claim")
    floor_events_table()
    if args.profile:
        profile(args.profile, args.pending)
        return
    counts = [int(c) for c in args.claimers.split(",")]

    # Claimers, PostgreSQL and Redis share these cores: past them, latency is mostly waiting for one.
    print(f"this machine: {len(os.sched_getaffinity(0))} CPU cores for the claimers and both servers; "
          f"{args.pending} pending at the start of each round; "
          f"{'an idempotency key on every claim' if KEYED else 'no idempotency key (--keyless)'}; "
          f"load average at the start {os.getloadavg()[0]:.2f}")
    print(f"{'what':<8} {'claimers':>8} {'claims/s':>10} {'p50 ms':>8} {'p99 ms':>8}   "
          f"CPU µs per claim: {'client':>6} {'postgres':>8} {'redis':>6}   Redis cmds per claim (EVALSHA)   "
          f"claims/s by round")
    rows = []
    for n in counts:
        ours_rounds, floor_rounds, floor1_rounds = [], [], []
        for _ in range(args.rounds):
            setup(args.pending)
            ours_rounds.append(run(claimer, n, args.seconds))
            setup(args.pending)
            floor_rounds.append(run(floor_worker, n, args.seconds))
            if KEYED:
                setup(args.pending)
                floor1_rounds.append(run(floor1_worker, n, args.seconds))
        ours, floor = pooled(n, ours_rounds), pooled(n, floor_rounds)
        floor1 = pooled(n, floor1_rounds) if floor1_rounds else None
        rows.append((ours, floor, floor1))
        for label, r in (("claim", ours), ("floor", floor), ("floor-1", floor1)):
            if r is None:
                continue
            print(f"{label:<8} {r['claimers']:>8} {r['per_second']:>10.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}   "
                  f"{'':>17} {r['client_us']:>6.0f} {r['postgres_us']:>8.0f} {r['redis_us']:>6.0f}   "
                  f"{r['redis_calls']:>21.2f} ({r['evalsha']:.2f})   {' '.join(map(str, r['rounds_per_second']))}")
        print(f"   load average after {n} claimers: {os.getloadavg()[0]:.2f}")
    print()
    cores = len(os.sched_getaffinity(0))
    for ours, floor, floor1 in rows:
        if floor1 is not None:
            pairs1 = [o / f for o, f in zip(ours["rounds_per_second"], floor1["rounds_per_second"]) if f]
            print(f"{ours['claimers']:>2} claimers: against the one-statement floor (floor-1), "
                  f"{median(pairs1):.0%} (rounds {' '.join(f'{p:.0%}' for p in pairs1)}; pooled "
                  f"{ours['per_second'] / floor1['per_second']:.0%})")
        # Each round of ours against the floor's round right after it (the cores' speed drifts
        # between rounds far more than within a pair): the median of those ratios.
        pairs = [o / f for o, f in zip(ours["rounds_per_second"], floor["rounds_per_second"]) if f]
        share = median(pairs) if pairs else 0.0
        print(f"{ours['claimers']:>2} claimers: claim throughput is {share:.0%} of the floor "
              f"(median of the rounds' ratios {' '.join(f'{p:.0%}' for p in pairs)}; pooled "
              f"{ours['per_second'] / floor['per_second']:.0%}; target >= 90%: "
              f"{verdict(share, 0.90, lower_is_better=False)})"
              + (f"; p99 {ours['p99_ms']:.2f} ms (target < 10 ms: {verdict(ours['p99_ms'], 10)}; "
                 f"the floor's own p99 here: {floor['p99_ms']:.2f} ms)" if ours["claimers"] == 16 else ""))
        if ours["claimers"] > cores:
            # Past the cores, every claimer waits for one: by Little's law the mean latency is at
            # least claimers × CPU per claim / cores, whatever the code does with its share.
            for label, r in (("claim", ours), ("floor", floor)):
                cpu = r["client_us"] + r["postgres_us"] + r["redis_us"]
                print(f"   {label}: {cpu:.0f} µs of CPU per claim on {cores} cores bounds throughput to "
                      f"{cores * 1e6 / cpu:.0f}/s and the mean latency of {r['claimers']} claimers to at least "
                      f"{r['claimers'] * cpu / cores / 1000:.1f} ms")
    print(json.dumps([{"claim": o, "floor": f, "floor-1": f1} for o, f, f1 in rows]))


if __name__ == "__main__":
    main()
