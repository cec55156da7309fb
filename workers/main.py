"""`r2k worker`: RQ workers on the generation and graph queues, and the scheduled sweep.

Several processes run as RQ's WorkerPool (which respawns a worker that dies). Unless `--burst`,
a CronScheduler process enqueues the sweep every R2K_SWEEP_INTERVAL seconds (default 15).
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import signal

from rq import SimpleWorker
from rq.worker_pool import WorkerPool

from core.adapters.jobs import QUEUES
from core.context import Context

MAINTENANCE_INTERVAL = 30  # how often workers look for jobs abandoned by dead workers (RQ default: 10 min)


class R2KWorker(SimpleWorker):
    """Jobs run in the worker process itself, so its connections (PostgreSQL pool, Redis, the LLM's
    HTTP client) live across jobs instead of being opened by a fresh work horse for every job.
    A worker that dies mid-job is respawned by the pool; its job is retried by RQ's abandoned-job
    handling or re-enqueued by the sweep, and the work item's state decides what is redone."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("maintenance_interval", MAINTENANCE_INTERVAL)
        super().__init__(*args, **kwargs)


def _preload() -> None:
    # Imported once before the pool forks its workers, so each starts warm.
    import core.services.generation  # noqa: F401
    import core.services.graph_sync  # noqa: F401
    import core.services.grey  # noqa: F401
    import core.services.validation  # noqa: F401
    import workers.tasks  # noqa: F401


def _run_cron(redis_url: str, interval: int) -> None:
    from redis import Redis
    from rq.cron import CronScheduler

    from workers.tasks import sweep_task

    scheduler = CronScheduler(connection=Redis.from_url(redis_url), logging_level="WARNING")
    scheduler.register(sweep_task, queue_name=QUEUES["graph"], interval=max(1, interval), job_timeout=120,
                       result_ttl=60)
    scheduler.start()


def run(queues: list[str], processes: int = 1, burst: bool = False, logging_level: str = "INFO") -> int:
    names = []
    for kind in queues:
        if kind not in QUEUES:
            from core.errors import InvalidInput

            raise InvalidInput(f"unknown queue {kind!r}: expected {', '.join(QUEUES)}")
        names.append(QUEUES[kind])
    ctx = Context()
    redis = ctx.redis
    ctx.db  # fail fast (503) when PostgreSQL does not answer, before any job is taken
    _preload()
    from core.services import generation, validation

    if not validation.reconcile_if_lost(ctx):  # a lost Redis: queues rebuilt, work items re-enqueued
        generation.recover(ctx)  # items a dead worker left behind
    ctx.close()
    cron = None
    if not burst:
        cron = multiprocessing.get_context("fork").Process(
            target=_run_cron, args=(ctx.redis_url, ctx.settings.sweep_interval), daemon=True,
            name="r2k sweep scheduler")
        cron.start()
    try:
        if processes <= 1:
            worker = R2KWorker(names, connection=redis)
            worker.work(burst=burst, logging_level=logging_level)
        else:
            pool = WorkerPool(names, connection=redis, num_workers=processes, worker_class=R2KWorker)
            pool.start(burst=burst, logging_level=logging_level)
    finally:
        if cron is not None and cron.is_alive():
            os.kill(cron.pid, signal.SIGTERM)
            cron.join(5)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run(list(QUEUES))
