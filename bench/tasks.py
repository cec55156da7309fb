"""Durable tasks: transitions per second, and replay speed (docs/architecture.md, "Durable tasks").

Transitions: `tasks.transition` with the whole contract (the request checked against its JSON Schema,
an idempotency key taken and its response stored, the row locked, the engine's checks, the typed
event schema-checked, hashed, signed and verified, the folded row written, a snapshot every N
events), alternating reject (a reviewer, PEER_REVIEW → RESOLUTION_REQUIRED) and resolve (the
author, back to PEER_REVIEW) over a few tasks, one process, each committed. Beside it, measured in
the same run and taking turns with it (the machine's speed drifts), the floor: the same row update
(state, version, updated_at) plus one event insert, in one committed transaction, with nothing
computed.

Replay: every bench task's projection rebuilt from its events (`tasks.rebuild`) from the first event,
and from its newest snapshot plus the events after it; events per second folded, and for the
snapshot the chain length it stands for. Target: ≥ 20,000 events per second from the start.

    python bench/tasks.py [--rounds 3] [--transitions 300] [--tasks 30]
"""
from __future__ import annotations

import argparse
import time
import uuid

from _common import bench_env, verdict

TARGET_REPLAY = 20_000


def setup(ctx, n_tasks: int) -> list[int]:
    from r2k.core.services import tasks
    from r2k.core.services.people import users

    with ctx.db.read() as tx:
        have = {r["name"] for r in tx.all("SELECT name FROM users")}
    for name, role in (("bench-root", "admin"), ("bench-author", "validator"), ("bench-r1", "validator"),
                       ("bench-r2", "validator")):
        if name not in have:
            users.add(ctx, name, role, [] if role == "admin" else ["FACT"])
    author = users.resolve(ctx, "bench-author")
    with ctx.db.read() as tx:
        ids = [r["id"] for r in tx.all("SELECT id FROM durable_tasks WHERE created_by = 'bench-author' "
                                       "AND state IN ('PEER_REVIEW', 'RESOLUTION_REQUIRED') ORDER BY id")]
    while len(ids) < n_tasks:
        from r2k.core.domain import SYSTEM

        task = tasks.create(ctx, author, "Bench article", "# Bench\n\nA bench article.\n")
        tasks.submit(ctx, author, task["id"])
        tasks.transition(ctx, SYSTEM, task["id"], {"new_state": "PEER_REVIEW", "idempotency_key": str(uuid.uuid4()),
                                                   "metadata": {"ai_confidence_score": 1.0, "flagged_claims": []}})
        tasks.assign(ctx, author, task["id"], ["bench-r1", "bench-r2"])
        ids.append(task["id"])
    return ids[:n_tasks]


def transitions(ctx, ids: list[int], n: int) -> float:
    """n transitions through the whole contract; the seconds they took."""
    from r2k.core.services import tasks
    from r2k.core.services.people import users

    author, reviewer = users.resolve(ctx, "bench-author"), users.resolve(ctx, "bench-r1")
    with ctx.db.read() as tx:
        states = {r["id"]: r["state"] for r in tx.all("SELECT id, state FROM durable_tasks WHERE id = ANY(%s)", (ids,))}
    start = time.perf_counter()
    for i in range(n):
        task_id = ids[i % len(ids)]
        if states[task_id] == "PEER_REVIEW":
            request = {"new_state": "RESOLUTION_REQUIRED", "metadata": {"reason": "bench"}}
            actor = reviewer
        else:
            request = {"new_state": "PEER_REVIEW", "metadata": {"note": "bench"}}
            actor = author
        request["idempotency_key"] = str(uuid.uuid4())
        states[task_id] = tasks.transition(ctx, actor, task_id, request)["state"]
    return time.perf_counter() - start


def floor(ctx, ids: list[int], n: int) -> float:
    """The same row update plus one event insert, committed, n times; the seconds they took.

    The row is written with the values it has (the projection stays its events' fold), and the event
    goes to a table shaped like `events` (its columns and indexes; made for the bench and dropped at
    its end, as the database owner: the app's role may create none), so the bench's log stays one
    that `audit verify` passes."""
    import psycopg
    from psycopg.types.json import Jsonb

    from r2k.core import embedded

    with psycopg.connect(embedded.superuser_url(ctx.settings), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor_events (LIKE events INCLUDING DEFAULTS INCLUDING INDEXES)")
        seq = conn.execute("SELECT coalesce(max(seq), 0) FROM bench_floor_events").fetchone()[0]
        start = time.perf_counter()
        for i in range(n):
            task_id = ids[i % len(ids)]
            seq += 1
            with conn.transaction():
                conn.execute("UPDATE durable_tasks SET state = state, version = version, updated_at = updated_at "
                             "WHERE id = %s", (task_id,))
                conn.execute("INSERT INTO bench_floor_events (aggregate_type, aggregate_id, seq, type, actor, payload, "
                             "created_at, idempotency_key, prev_hash, hash, signature, key_id) VALUES "
                             "('task', '1', %s, 'floor', 'bench', %s, now(), NULL, '', '', '', 'floor')",
                             (seq, Jsonb({"set": {"state": "PEER_REVIEW"}})))
        return time.perf_counter() - start


def drop_floor(ctx) -> None:
    import psycopg

    from r2k.core import embedded

    with psycopg.connect(embedded.superuser_url(ctx.settings), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_floor_events")


def replay(ctx, ids: list[int]) -> tuple[float, int, float, int, int]:
    """Every bench task rebuilt from the start and from its snapshot: (seconds, events) for each, and
    the chain length the snapshots stand for."""
    from r2k.core.services import tasks

    with ctx.db.read() as tx:
        start = time.perf_counter()
        full_events = 0
        full = {}
        for task_id in ids:
            full[task_id], info = tasks.rebuild(tx, task_id, from_snapshot=False)
            full_events += info["events"]
        full_seconds = time.perf_counter() - start
        start = time.perf_counter()
        snap_events = 0
        for task_id in ids:
            state, info = tasks.rebuild(tx, task_id)
            snap_events += info["events"]
            assert state == full[task_id], f"task {task_id}: the snapshot and the full replay differ"
        snap_seconds = time.perf_counter() - start
    chain = sum(s["version"] for s in full.values())
    return full_seconds, full_events, snap_seconds, snap_events, chain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transitions", type=int, default=300, help="transitions (and floor writes) per round")
    parser.add_argument("--tasks", type=int, default=30)
    args = parser.parse_args()
    bench_env("tasks")
    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap(pool_size=2)
    ids = setup(ctx, args.tasks)
    ours = base = 0.0
    for _ in range(args.rounds):  # taking turns: the machine's speed drifts within a minute
        ours += transitions(ctx, ids, args.transitions)
        base += floor(ctx, ids, args.transitions)
    n = args.rounds * args.transitions
    print(f"transitions: {n / ours:8.0f} per second ({ours / n * 1000:.2f} ms each; the whole contract, one process)")
    print(f"floor:       {n / base:8.0f} per second ({base / n * 1000:.2f} ms each; the same row update plus one "
          f"event insert, committed)")
    print(f"             transitions run at {base / ours:.0%} of the floor")
    drop_floor(ctx)
    full_s, full_n, snap_s, snap_n, chain = replay(ctx, ids)
    rate = full_n / full_s
    print(f"replay from the start:    {rate:8.0f} events per second ({full_n} events of {len(ids)} tasks in "
          f"{full_s * 1000:.1f} ms); target ≥ {TARGET_REPLAY:,}: {verdict(rate, TARGET_REPLAY, lower_is_better=False)}")
    print(f"replay from the snapshot: {snap_n / snap_s:8.0f} events per second ({snap_n} events after the snapshots, "
          f"{snap_s * 1000:.1f} ms), standing for {chain / snap_s:,.0f} events of chain per second")
    ctx.close()


if __name__ == "__main__":
    main()
