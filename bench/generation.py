"""Generation throughput (issue: generation pipeline, item 8).

Runs `r2k worker` with 1 and 4 processes against a local chat-completions server that answers at
once, and prints jobs per second and the per-job overhead: worker-seconds per job minus RQ's own
worker-seconds per job for a no-op job (measured in the same run, same worker class) minus the
LLM call's own time. Target: overhead under 20 ms per job beyond RQ's own.

    python bench/generation.py [--jobs 200]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from _common import ROOT, bench_env, verdict
from noop_worker import NOOP

sys.path.insert(0, str(ROOT))
from tests.llm_server import ChatServer  # noqa: E402  (the same real HTTP server the tests use)

QUESTIONS = ["How long are nightly database backups kept?", "Who may drive a forklift?",
             "How quickly must a SEV1 page be acknowledged?", "How are customer refunds approved?"]


def start_workers(env: dict, processes: int) -> subprocess.Popen:
    """`r2k worker` with `processes` workers on the generation queue; they also take the bench's no-op
    jobs (bench/noop_worker.py)."""
    from rq import Worker

    from r2k.core.bootstrap import bootstrap

    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "noop_worker.py"), "worker", "--queues",
                             "generation", "--processes", str(processes)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ctx = bootstrap()
    deadline = time.time() + 60
    while Worker.count(connection=ctx.redis) < processes and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # let each worker reach its first blocking dequeue
    return proc


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def time_noop(env: dict, processes: int, jobs: int) -> float:
    from r2k.core.adapters import jobs as rq_jobs
    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap()
    queue = rq_jobs.queue(ctx.redis, "generation")
    proc = start_workers(env, processes)
    try:
        finished = queue.finished_job_registry
        before = finished.count
        start = time.perf_counter()
        for _ in range(jobs):
            queue.enqueue(NOOP, result_ttl=300)
        while finished.count - before < jobs:
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        stop(proc)


def time_generation(env: dict, processes: int, jobs: int) -> tuple[float, int]:
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.answering import workitems
    from r2k.core.services.people import users

    ctx = bootstrap()
    actor = users.resolve(ctx, "root")
    proc = start_workers(env, processes)
    try:
        start = time.perf_counter()
        ids = [workitems.create(ctx, actor, QUESTIONS[i % len(QUESTIONS)])["id"] for i in range(jobs)]
        while True:
            with ctx.db.read() as tx:
                left = tx.scalar("SELECT count(*) FROM work_items WHERE id = ANY(%s) AND state IN ('NEW', "
                                 "'GENERATING')", (ids,))
            if left == 0:
                break
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
        with ctx.db.read() as tx:
            done = tx.scalar("SELECT count(*) FROM work_items WHERE id = ANY(%s) AND state = 'READY_FOR_REVIEW'",
                             (ids,))
        return elapsed, done
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    env = bench_env("generation")
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.operations.demo import load

    ctx = bootstrap()
    from r2k.core.domain import SYSTEM

    load(ctx, by=SYSTEM)  # users and the demo corpus: sources for retrieval
    ctx.redis.delete("rq:queue:raw_to_knowledge_generation")

    with ChatServer() as llm:
        env = {**env, "R2K_LLM_URL": llm.url, "R2K_LLM_RETRIES": "0"}
        print(f"{'processes':>9} {'RQ no-op jobs/s':>16} {'generation jobs/s':>18} {'ms/job (worker)':>16} "
              f"{'RQ ms/job':>10} {'LLM ms':>7} {'overhead ms':>12}")
        for processes in (1, 4):
            noop = time_noop(env, processes, args.jobs)
            calls_before = llm.calls
            elapsed, done = time_generation(env, processes, args.jobs)
            calls = llm.calls - calls_before
            llm_ms = _llm_ms(llm.url)
            # Worker-seconds per job; a process can use at most one core, and there are only so many.
            busy = min(processes, os.cpu_count() or 1)
            per_job = elapsed * busy / args.jobs * 1000
            rq_per_job = noop * busy / args.jobs * 1000
            overhead = per_job - rq_per_job - llm_ms
            print(f"{processes:>9} {args.jobs / noop:>16.1f} {args.jobs / elapsed:>18.1f} {per_job:>16.1f} "
                  f"{rq_per_job:>10.1f} {llm_ms:>7.1f} {overhead:>12.1f}   "
                  f"({done}/{args.jobs} generated, {calls} LLM calls; target < 20 ms: {verdict(overhead, 20)})")


def _llm_ms(url: str, n: int = 50) -> float:
    """The LLM call alone, as a worker makes it: one kept-alive httpx client per process."""
    from r2k.core.adapters.llm import ChatClient

    client = ChatClient(url, "bench", None, 10, 0)
    client.complete("warm")
    start = time.perf_counter()
    for _ in range(n):
        client.complete("Question: x\n\nSources:\n[1] (t) A sentence here.\n")
    client.close()
    return (time.perf_counter() - start) / n * 1000


if __name__ == "__main__":
    main()
