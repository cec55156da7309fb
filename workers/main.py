"""`r2k worker`: RQ workers on the generation and graph queues, and the scheduled sweep.

Several processes run as RQ's WorkerPool (which respawns a worker that dies). Unless `--burst`,
a CronScheduler process enqueues the sweep every R2K_SWEEP_INTERVAL seconds (default 15).

Workers run r2k's tasks and nothing else. Whoever can write to Redis can push a job, and RQ would
import and call any function or callback it names (or unpickle its data, with RQ's default
serializer). So jobs are JSON, and a job naming anything outside `core.adapters.jobs.TASKS` is
refused before anything it names is imported: one warning line, then RQ's own failure handling
(the queue's failed job registry, no retry).
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import signal

from redis.exceptions import RedisError
from rq import Queue, SimpleWorker
from rq.cron import CronJob, CronScheduler
from rq.exceptions import DeserializationError
from rq.job import Job
from rq.utils import now
from rq.worker_pool import WorkerPool

from core.adapters.jobs import QUEUES, SERIALIZER, TASK_PATHS
from core.context import Context

MAINTENANCE_INTERVAL = 30  # how often workers look for jobs abandoned by dead workers (RQ default: 10 min)


class ForeignJob(Exception):
    """A job naming a function or callback that is not one of r2k's tasks."""


def _registered(name) -> bool:
    return isinstance(name, str) and name in TASK_PATHS


def refusal(job: Job) -> str | None:
    """Why a worker will not run `job`, naming what it would have run; None for one of r2k's tasks.
    Read from the job's data and hash alone: nothing they name is imported."""
    try:
        func_name, instance = job.func_name, job.instance
    except DeserializationError:
        return "its data is not a JSON job, so its function is unknown"
    if not _registered(func_name):
        return f"function {func_name!r} is not one of r2k's tasks"
    if instance is not None:
        return f"it calls {func_name!r} on an instance"
    # RQ holds a callback by name in these until it imports it, when the callback is due.
    for hook, name in (("on_success", job._success_callback_name), ("on_failure", job._failure_callback_name),
                       ("on_stopped", job._stopped_callback_name)):
        if name and not _registered(name):
            return f"{func_name!r} carries an {hook} callback {name!r} that is not one of r2k's tasks"
    if job.webhooks:  # r2k sets none; a worker would send each one wherever it points
        return f"{func_name!r} carries webhooks"
    return None


class R2KJob(Job):
    """RQ's Job, except that it imports no function or callback outside r2k's tasks, whichever part
    of RQ asks. The worker refuses such jobs before running them; this also covers RQ's own
    housekeeping, which runs the failure callback of a job it finds abandoned in a registry."""

    @property
    def func(self):
        if self.instance is not None or not _registered(self.func_name):
            raise ForeignJob(f"job {self.id}: function {self.func_name!r} is not one of r2k's tasks")
        return super().func

    def _callback_named(self, hook: str, name: str | None) -> None:
        if name and not _registered(name):
            raise ForeignJob(f"job {self.id}: {hook} callback {name!r} is not one of r2k's tasks")

    @property
    def success_callback(self):
        self._callback_named("on_success", self._success_callback_name)
        return super().success_callback

    @property
    def failure_callback(self):
        self._callback_named("on_failure", self._failure_callback_name)
        return super().failure_callback

    @property
    def stopped_callback(self):
        self._callback_named("on_stopped", self._stopped_callback_name)
        return super().stopped_callback


class R2KWorker(SimpleWorker):
    """Jobs run in the worker process itself, so its connections (PostgreSQL pool, Redis, the LLM's
    HTTP client) live across jobs instead of being opened by a fresh work horse for every job.
    A worker that dies mid-job is respawned by the pool; its job is retried by RQ's abandoned-job
    handling or re-enqueued by the sweep, and the work item's state decides what is redone.

    Only r2k's tasks run: see `refusal`."""

    def __init__(self, queues, *args, **kwargs):
        kwargs.setdefault("maintenance_interval", MAINTENANCE_INTERVAL)
        # JSON and R2KJob, whatever the caller passes (WorkerPool passes RQ's defaults: pickle, Job).
        kwargs["serializer"] = SERIALIZER
        kwargs["job_class"] = R2KJob
        # A job's description is text its writer chose: the dequeue line names the job id only.
        kwargs["log_job_description"] = False
        # WorkerPool hands its workers Queue objects built with RQ's defaults; by name, RQ builds
        # them with this worker's serializer and job class (its registry cleanup reads jobs through them).
        if isinstance(queues, (str, Queue)):
            queues = [queues]
        queues = [q.name if isinstance(q, Queue) else q for q in queues]
        super().__init__(queues, *args, **kwargs)

    def execute_job(self, job: Job, queue: Queue):
        why = refusal(job)
        if why is None:
            return super().execute_job(job, queue)
        self.log.warning("Worker %s: refused job %s: %s", self.name, job.id, why)
        job.origin = queue.name  # failed in the queue it was taken from, whatever its hash says
        job.retries_left = 0     # refused once, refused for good
        job.webhooks = []
        job.ended_at = now()
        # RQ takes a job out of the intermediate queue when it starts it; this one never starts.
        queue.intermediate_queue.remove(job.id)
        self.handle_job_failure(job, queue, exc_string=f"Refused by r2k's worker: {why}")

    def dequeue_job_and_maintain_ttl(self, timeout, max_idle_time=None):
        # RQ stops a worker when a job's hash cannot even be read (an id or a field it does not
        # accept): such a job is refused like any other foreign job, but cannot be recorded as failed.
        while True:
            try:
                return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
            except RedisError:
                raise
            except Exception as exc:
                job_id, queue = getattr(exc, "job_id", None), getattr(exc, "queue", None)
                if job_id is None or queue is None:
                    raise
                self.log.warning("Worker %s: refused job %r: its hash is not an RQ job's (%s)", self.name, job_id,
                                 exc)
                queue.intermediate_queue.remove(job_id)


class _JSONCronJob(CronJob):
    """RQ 3.0's CronJob enqueues through a Queue with RQ's default serializer (pickle); this is
    its `enqueue` through a queue with r2k's."""

    def enqueue(self, connection):
        from rq import cron_job_registry
        from rq.defaults import DEFAULT_CRON_JOB_HISTORY_LIMIT, DEFAULT_CRON_JOB_HISTORY_TTL

        queue = Queue(self.queue_name, connection=connection, serializer=SERIALIZER)
        with connection.pipeline() as pipeline:
            job = queue.enqueue(self.func, args=self.args, kwargs=self.kwargs, **self.job_options, pipeline=pipeline)
            pipeline.zadd(self.job_history_key, {job.id: job.enqueued_at.timestamp()})
            pipeline.zremrangebyrank(self.job_history_key, 0, -(DEFAULT_CRON_JOB_HISTORY_LIMIT + 1))
            pipeline.expire(self.job_history_key, DEFAULT_CRON_JOB_HISTORY_TTL)
            cron_job_registry.add(self.name, pipeline, enqueue_timestamp=job.enqueued_at.timestamp())
            pipeline.execute()
        return job


class R2KCronScheduler(CronScheduler):
    """RQ's CronScheduler, its jobs enqueued as JSON."""

    def register(self, func, queue_name: str, **options) -> CronJob:
        cron_job = _JSONCronJob(queue_name=queue_name, func=func, **options)
        self._cron_jobs.append(cron_job)
        return cron_job


def _preload() -> None:
    # Imported once before the pool forks its workers, so each starts warm.
    import core.services.generation  # noqa: F401
    import core.services.graph_sync  # noqa: F401
    import core.services.grey  # noqa: F401
    import core.services.validation  # noqa: F401
    import workers.tasks  # noqa: F401


def _run_cron(redis_url: str, interval: int) -> None:
    from redis import Redis

    from workers.tasks import sweep_task

    scheduler = R2KCronScheduler(connection=Redis.from_url(redis_url), logging_level="WARNING")
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
            pool = WorkerPool(names, connection=redis, num_workers=processes, worker_class=R2KWorker,
                              serializer=SERIALIZER, job_class=R2KJob)
            pool.start(burst=burst, logging_level=logging_level)
    finally:
        if cron is not None and cron.is_alive():
            os.kill(cron.pid, signal.SIGTERM)
            cron.join(5)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run(list(QUEUES))
