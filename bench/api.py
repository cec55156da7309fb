"""The claim → approve loop over HTTP beside the same loop in process (issue: the seeds' HTTP API).

One loop is what a validator's client does: claim the oldest FACT candidate
(`POST /v1/validation/queue/FACT/claim`), then approve it (`POST /v1/candidates/{id}/approve`); the
candidate is published. N clients (1, 4, 16 processes, each a validator of its own with its own
token and one keep-alive connection) run it for `--seconds` against `r2k serve api --workers W`
on 127.0.0.1; in the same run, N processes run the same two service calls in process
(`claims.claim_next`, `candidates.decide`), what every route calls. The bench prints loops per
second and the p50/p99 of one loop for both, the HTTP loop's share of the in-process one, and its
multiple of Label Studio's loop (docs/api-peers.md: 4.8, 7.3 and 6.4 loops/s at 1, 4 and 16
clients, Label Studio 1.23.2 on PostgreSQL with gunicorn ×4, `next` then `annotations`).
Targets: at 4 clients, at least 50% of the in-process loop; at every N, at least 10× Label Studio.

The pending candidates are written with one INSERT … SELECT and queued by `queue reconcile`. The
two modes take turns (`--rounds`), as the cores' speed drifts on a shared machine; each round is
printed as it ends, with the load then, and the table pools the rounds.

    python bench/api.py [--seconds 5] [--rounds 2] [--clients 1,4,16] [--workers 2] [--pending 50000]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time

from _common import ROOT, bench_env, percentile, vacuum, verdict

HORN = "FACT"
LABEL_STUDIO = {1: 4.8, 4: 7.3, 16: 6.4}  # loops/s, docs/api-peers.md


def setup(pending: int, validators: int) -> list[str]:
    """Validators bench-v0 … with FACT authority and a token each; `pending` FACT candidates queued."""
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.people import tokens, users
    from r2k.core.services.queue import queue_index

    ctx = bootstrap()
    made = []
    for i in range(validators):
        name = f"bench-v{i}"
        with ctx.db.read() as tx:
            known = tx.one("SELECT 1 FROM users WHERE name = %s", (name,))
        if not known:
            users.add(ctx, name, "validator", [HORN])
        made.append(tokens.create(ctx, users.resolve(ctx, name), name="bench")["token"])
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET state = 'PENDING', claimed_by = NULL, lease_expires_at = NULL "
                   "WHERE horn_type = %s AND state = 'IN_REVIEW' AND created_by = 'bench-api'", (HORN,))
        have = tx.scalar("SELECT count(*) FROM candidates WHERE horn_type = %s AND state = 'PENDING'", (HORN,))
        if have < pending:
            tx.execute(
                "INSERT INTO candidates (question, text, horn_type, state, origin, source_refs, created_by, "
                "created_at, updated_at, version, queue_rank) SELECT 'Bench question ' || g || '?', "
                "'Bench statement number ' || g || ' holds.', %s, 'PENDING', 'manual', '[]', 'bench-api', now(), "
                "now(), 1, g FROM generate_series(1, %s) AS g", (HORN, pending - have))
    queue_index.reconcile(ctx)
    vacuum("candidates")
    ctx.close()
    return made


def timed(seconds: float, ready, one_loop) -> list[float]:
    """Once every process is warm (`ready`, a barrier), the loop for `seconds`: each loop's latency."""
    latencies = []
    ready.wait(300)
    end = time.time() + seconds
    while time.time() < end:
        t0 = time.perf_counter()
        one_loop()
        latencies.append(time.perf_counter() - t0)
    return latencies


def http_client(index: int, tokens: list[str], port: int, seconds: float, ready, out) -> None:
    import httpx

    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {tokens[index]}"},
                          timeout=30)

    def loop() -> None:
        claimed = client.post(f"/v1/validation/queue/{HORN}/claim")
        claimed.raise_for_status()
        client.post(f"/v1/candidates/{claimed.json()['id']}/approve").raise_for_status()

    loop()  # warm: the connection, the server's pool
    out.put(timed(seconds, ready, loop))
    client.close()


def in_process(index: int, tokens: list[str], port: int, seconds: float, ready, out) -> None:
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.people import users
    from r2k.core.services.queue import claims
    from r2k.core.services.validation import candidates

    ctx = bootstrap()
    actor = users.resolve(ctx, f"bench-v{index}")

    def loop() -> None:
        claimed = claims.claim_next(ctx, actor, HORN)
        candidates.decide(ctx, actor, claimed["id"], "approve")

    loop()
    out.put(timed(seconds, ready, loop))
    ctx.close()


def run(target, n: int, tokens: list[str], port: int, seconds: float) -> list[float]:
    ctx = mp.get_context("fork")
    out, ready = ctx.Queue(), ctx.Barrier(n)
    procs = [ctx.Process(target=target, args=(i, tokens, port, seconds, ready, out)) for i in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 180) for _ in procs]
    for p in procs:
        p.join()
    return [v for r in results for v in r]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(env: dict, port: int, workers: int) -> subprocess.Popen:
    import httpx

    server = subprocess.Popen([sys.executable, "-m", "r2k.app", "serve", "api", "--port", str(port), "--workers",
                               str(workers)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2)
            return server
        except httpx.HTTPError:
            if server.poll() is not None:
                raise SystemExit(f"r2k serve api ended: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
    server.kill()
    raise SystemExit("r2k serve api did not answer within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--workers", type=int, default=2, help="r2k serve api --workers")
    parser.add_argument("--pending", type=int, default=50_000)
    args = parser.parse_args()
    env = bench_env("api")
    counts = [int(c) for c in args.clients.split(",")]
    tokens = setup(args.pending, max(counts))
    port = free_port()
    server = serve(env, port, args.workers)
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores; serve api --workers {args.workers}")
    rows = []
    try:
        for n in counts:
            pooled = {"http": [], "in-process": []}
            for r in range(args.rounds):
                for mode, target in (("in-process", in_process), ("http", http_client)):
                    lat = run(target, n, tokens, port, args.seconds)
                    pooled[mode] += lat
                    print(f"  round {r + 1}, {n:>2} clients, {mode:<10}: {len(lat) / args.seconds:7.1f} loops/s, "
                          f"p50 {percentile(lat, 50) * 1000:6.1f} ms, p99 {percentile(lat, 99) * 1000:6.1f} ms, "
                          f"load {os.getloadavg()[0]:.2f}", flush=True)
            seconds = args.seconds * args.rounds
            row = {"clients": n}
            for mode, lat in pooled.items():
                row[mode] = {"loops_per_second": len(lat) / seconds, "p50_ms": percentile(lat, 50) * 1000,
                             "p99_ms": percentile(lat, 99) * 1000}
            rows.append(row)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"{'clients':>7}  {'mode':<10} {'loops/s':>8} {'p50 ms':>7} {'p99 ms':>7}  {'of in-process':>13}  "
          f"{'× Label Studio':>14}")
    for row in rows:
        n = row["clients"]
        for mode in ("in-process", "http"):
            r = row[mode]
            share = r["loops_per_second"] / max(row["in-process"]["loops_per_second"], 1e-9)
            peer = r["loops_per_second"] / LABEL_STUDIO[n] if n in LABEL_STUDIO else float("nan")
            print(f"{n:>7}  {mode:<10} {r['loops_per_second']:>8.1f} {r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f}  "
                  f"{share:>12.0%}  {peer:>13.1f}×")
    for row in rows:
        n, http = row["clients"], row["http"]["loops_per_second"]
        if n == 4:
            share = http / max(row["in-process"]["loops_per_second"], 1e-9)
            print(f"4 clients: HTTP at {share:.0%} of in-process (target ≥ 50%): "
                  f"{verdict(share, 0.5, lower_is_better=False)}")
        if n in LABEL_STUDIO:
            print(f"{n} clients: {http / LABEL_STUDIO[n]:.1f}× Label Studio's {LABEL_STUDIO[n]} loops/s (target ≥ 10×): "
                  f"{verdict(http / LABEL_STUDIO[n], 10, lower_is_better=False)}")
    print(f"load after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
