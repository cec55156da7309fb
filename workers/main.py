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
import threading
import time

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError, RedisError, TimeoutError as RedisTimeoutError
from rq import Queue, SimpleWorker, cron_job_registry
from rq.cron import CronJob, CronScheduler
from rq.defaults import (
    DEFAULT_CRON_JOB_HISTORY_LIMIT,
    DEFAULT_CRON_JOB_HISTORY_TTL,
    DEFAULT_LOGGING_DATE_FORMAT,
    DEFAULT_LOGGING_FORMAT,
)
from rq.exceptions import DeserializationError
from rq.job import Job
from rq.scheduler import RQScheduler
from rq.utils import now
from rq.worker import WorkerStatus
from rq.worker_pool import WorkerPool

from r2k.core import embedded
from r2k.core.adapters.jobs import QUEUES, SERIALIZER, TASK_PATHS
from r2k.core.bootstrap import bootstrap
from r2k.core.config import get_settings
from r2k.core.errors import InvalidInput
from r2k.core.outage import OUTAGES, delays, retry_across_outages

# The services its jobs run, imported before the pool forks its workers, so each starts warm.
from r2k.core.services.answering import generation  # noqa: F401
from r2k.core.services.contradictions import graph_sync  # noqa: F401
from r2k.core.services.grey_entries import grey  # noqa: F401
from r2k.core.services.queue import claims, queue_index  # noqa: F401
from r2k.core.services.validation import candidates  # noqa: F401
from r2k.workers.tasks import sweep_task

log = logging.getLogger("r2k.worker")

# A worker killed mid-job: its job's entry in the started registry lapses HEARTBEAT_TTL seconds after
# the last heartbeat, and the next maintenance of any worker (every MAINTENANCE_INTERVAL seconds,
# and at a worker's start) re-runs it, so it runs again within about half a minute. RQ's own values
# (the job's timeout plus a minute; maintenance every 10 minutes) left it for six.
HEARTBEAT_TTL = 20
HEARTBEAT_EVERY = 5
MAINTENANCE_INTERVAL = 10


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


ORPHAN_GRACE = 5.0  # seconds an orphan has to end by itself (RQ's scheduler releasing its locks)


def _watch_parent(pid: int) -> None:
    """End this process when `pid`, its parent, is gone."""
    def watch() -> None:
        while os.getppid() == pid:
            time.sleep(1)
        log.warning("r2k worker (pid %d) is gone: this process ends with it", pid)
        time.sleep(ORPHAN_GRACE)
        os._exit(1)

    threading.Thread(target=watch, name="r2k parent watch", daemon=True).start()


_FORKS_WATCHED = False


def _forks_end_with_their_parent() -> None:
    """Every process `r2k worker` forks (a pool's workers, RQ's scheduler, the sweep scheduler, and
    theirs) ends when the process that forked it is gone. A `kill -9` of `r2k worker` runs none of
    its cleanup, and an orphan went on sweeping and starting the embedded servers of a data dir
    nobody uses, for ever. A server started through subprocess runs no fork hook: it is not bound."""
    global _FORKS_WATCHED
    if not _FORKS_WATCHED:
        os.register_at_fork(after_in_child=lambda: _watch_parent(os.getppid()))
        _FORKS_WATCHED = True


class R2KScheduler(RQScheduler):
    """RQ's scheduler (it puts retried jobs back when their interval is up), in the process a worker
    forks for it. When that worker is gone (`kill -9`), it stops as RQ's own stop does, releasing
    its queues' locks: the next worker's scheduler takes over at its next maintenance (10 s), not
    once the dead one's lock lapses (61 s), so a dead worker's job is retried within a minute."""

    def work(self):
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent and not self._stop_requested:
                time.sleep(0.5)
            self._stop_requested = True

        threading.Thread(target=watch, name="r2k scheduler parent watch", daemon=True).start()
        try:
            super().work()
        except (RedisConnectionError, RedisTimeoutError) as exc:
            # Redis went away under it (killed, restarting): it ends in one line, not a traceback,
            # and the worker starts a scheduler again at its next maintenance once Redis answers
            # (RQ's worker starts one whenever its scheduler's process is gone).
            self.log.warning("the job scheduler stops: Redis does not answer (%s); the worker starts it again "
                             "once Redis is back", exc)


class R2KWorker(SimpleWorker):
    """Jobs run in the worker process itself, so its connections (PostgreSQL pool, Redis, the LLM's
    HTTP client) live across jobs instead of being opened by a fresh work horse for every job.
    A worker that dies mid-job is respawned by the pool; its job is retried by RQ's abandoned-job
    handling or re-enqueued by the sweep, and the work item's state decides what is redone.

    Only r2k's tasks run: see `refusal`.

    A Redis outage neither stops it nor fills its log: whatever it does against Redis between jobs
    waits with bounded backoff (one line when the outage starts, one when it ends), and an embedded
    Redis that died is started again (docs/architecture.md, "Embedded servers")."""

    max_connection_wait_time = 5.0  # RQ's own dequeue backoff, capped (RQ: 60 s)

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
        if not any(isinstance(f, _OneLinePerOutage) for f in self.log.filters):
            self.log.addFilter(_OneLinePerOutage())

    def _start_scheduler(self, burst: bool = False, logging_level: str | None = "INFO",
                         date_format: str = DEFAULT_LOGGING_DATE_FORMAT, log_format: str = DEFAULT_LOGGING_FORMAT):
        """RQ's own start of its scheduler, with R2KScheduler."""
        self.scheduler = R2KScheduler(self.queues, connection=self.connection,
                                      logging_level=logging_level if logging_level is not None else self.log.level,
                                      date_format=date_format, log_format=log_format, serializer=self.serializer)
        self.scheduler.acquire_locks()
        if self.scheduler.acquired_locks:
            if burst:
                try:
                    self.scheduler.register_birth()
                    self.scheduler.enqueue_scheduled_jobs()
                finally:
                    self.scheduler.release_locks()
                    self.scheduler.register_death()
            else:
                self.scheduler.start()

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        return HEARTBEAT_TTL

    def execute_job(self, job: Job, queue: Queue):
        why = refusal(job)
        if why is None:
            return self._run_with_heartbeats(job, queue)
        self.log.warning("Worker %s: refused job %s: %s", self.name, job.id, why)
        job.origin = queue.name  # failed in the queue it was taken from, whatever its hash says
        job.retries_left = 0     # refused once, refused for good
        job.webhooks = []
        job.ended_at = now()
        # RQ takes a job out of the intermediate queue when it starts it; this one never starts.
        queue.intermediate_queue.remove(job.id)
        self.handle_job_failure(job, queue, exc_string=f"Refused by r2k's worker: {why}")

    def _run_with_heartbeats(self, job: Job, queue: Queue) -> None:
        """SimpleWorker.execute_job, with the heartbeats RQ's forking worker sends while its horse
        runs: a thread beside the job keeps its started-registry entry alive every HEARTBEAT_EVERY s."""
        execution = self.prepare_execution(job)
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_EVERY):
                try:
                    self.maintain_heartbeats(job, execution)
                except RedisError as exc:  # Redis away: the job goes on; so does the next beat
                    log.debug("job %s: heartbeat not sent: %s", job.id, exc)

        beater = threading.Thread(target=beat, name=f"heartbeat {job.id}", daemon=True)
        beater.start()
        try:
            self.perform_job(job, queue, execution)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            # Redis went away while RQ recorded the job's end: the worker carries on; the job, still
            # STARTED, lapses from the started registry and runs again (its state decides what is redone).
            OUTAGES.down("redis", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        finally:
            stop.set()
            beater.join(HEARTBEAT_EVERY + 1)
        self._through_redis_outage(self.set_state, WorkerStatus.IDLE)

    # Between jobs RQ calls these against Redis outside its own reconnect loop; one failing would
    # end the worker ("found an unhandled exception, quitting").
    def _through_redis_outage(self, fn, *args, **kwargs):
        waits = delays()
        while True:
            try:
                result = fn(*args, **kwargs)
            except (RedisConnectionError, RedisTimeoutError) as exc:
                if self._stop_requested:
                    raise
                OUTAGES.down("redis", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                time.sleep(next(waits))
                _revive_redis()
                continue
            OUTAGES.up("redis")
            return result

    def check_for_suspension(self, burst: bool) -> None:
        return self._through_redis_outage(super().check_for_suspension, burst)

    def register_birth(self, *args, **kwargs):
        return self._through_redis_outage(super().register_birth, *args, **kwargs)

    def register_death(self, *args, **kwargs):
        try:
            return super().register_death(*args, **kwargs)
        except RedisError as exc:  # stopping while Redis is away: its entry lapses by itself
            log.debug("worker %s: death not registered, its entry lapses instead: %s", self.name, exc)

    def run_maintenance_tasks(self):
        return self._through_redis_outage(super().run_maintenance_tasks)

    def heartbeat(self, timeout: int | None = None, pipeline=None):
        if pipeline is not None:
            return super().heartbeat(timeout, pipeline=pipeline)
        return self._through_redis_outage(super().heartbeat, timeout)

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


_revived_at = 0.0


def _revive_redis() -> None:
    """An embedded Redis that died is started again, on its socket (at most every 2 s per process);
    one an operator stopped stays stopped; a configured one is its operator's."""
    global _revived_at
    if time.monotonic() - _revived_at < 2:
        return
    _revived_at = time.monotonic()
    try:
        embedded.ensure(get_settings(), "redis", start_stopped=False)
    except Exception as exc:  # noqa: BLE001 - still down: the outage line said so, the next try retries
        log.debug("reviving Redis: %s", exc)


class _OneLinePerOutage(logging.Filter):
    """RQ logs a line at every failed attempt to reach Redis: keep the first of each outage."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "could not connect to Redis" not in str(record.msg):
            return True
        if "redis" in OUTAGES.current():
            return False
        OUTAGES.down("redis", str(record.args[1]) if len(record.args or ()) > 1 else "connection refused")
        _revive_redis()
        return False


class _JSONCronJob(CronJob):
    """RQ 3.0's CronJob enqueues through a Queue with RQ's default serializer (pickle); this is
    its `enqueue` through a queue with r2k's."""

    def enqueue(self, connection):
        queue = Queue(self.queue_name, connection=connection, serializer=SERIALIZER)
        with connection.pipeline() as pipeline:
            # At the front: a sweep behind a backlog of thousands of jobs would release expired claims
            # and re-run lost jobs only once the backlog has drained.
            job = queue.enqueue(self.func, args=self.args, kwargs=self.kwargs, **self.job_options, pipeline=pipeline,
                                at_front=True)
            pipeline.zadd(self.job_history_key, {job.id: job.enqueued_at.timestamp()})
            pipeline.zremrangebyrank(self.job_history_key, 0, -(DEFAULT_CRON_JOB_HISTORY_LIMIT + 1))
            pipeline.expire(self.job_history_key, DEFAULT_CRON_JOB_HISTORY_TTL)
            cron_job_registry.add(self.name, pipeline, enqueue_timestamp=job.enqueued_at.timestamp())
            pipeline.execute()
        return job


class R2KCronScheduler(CronScheduler):
    """RQ's CronScheduler, its jobs enqueued as JSON. A Redis outage does not end it (RQ's would
    stop at the first failed call, and the sweeps with it): each call waits the outage out."""

    def _riding(self, fn, *args):
        waits = delays()
        while True:
            try:
                result = fn(*args)
            except (RedisConnectionError, RedisTimeoutError) as exc:
                OUTAGES.down("redis", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                time.sleep(next(waits))
                _revive_redis()
                continue
            OUTAGES.up("redis")
            return result

    def register_birth(self):
        return self._riding(super().register_birth)

    def enqueue_jobs(self):
        return self._riding(super().enqueue_jobs)

    def save(self, *args, **kwargs):
        return self._riding(lambda: super(R2KCronScheduler, self).save(*args, **kwargs))

    def heartbeat(self):
        return self._riding(super().heartbeat)

    def register_death(self):
        try:
            return super().register_death()
        except RedisError as exc:  # stopping while Redis is away: its entry lapses by itself
            log.debug("sweep scheduler %s: death not registered, its entry lapses instead: %s", self.name, exc)

    def register(self, func, queue_name: str, **options) -> CronJob:
        cron_job = _JSONCronJob(queue_name=queue_name, func=func, **options)
        self._cron_jobs.append(cron_job)
        return cron_job


def _run_cron(redis_url: str, interval: int) -> None:
    scheduler = R2KCronScheduler(connection=Redis.from_url(redis_url), logging_level="WARNING")
    # On the queue workers take first, and dropped if not started within a minute: the next is due.
    scheduler.register(sweep_task, queue_name=QUEUES["generation"], interval=max(1, interval), job_timeout=120,
                       result_ttl=60, ttl=60)
    scheduler.start()


def run(queues: list[str], processes: int = 1, burst: bool = False, logging_level: str = "INFO") -> int:
    _forks_end_with_their_parent()
    names = []
    for kind in queues:
        if kind not in QUEUES:
            raise InvalidInput(f"unknown queue {kind!r}: expected {', '.join(QUEUES)}")
        names.append(QUEUES[kind])
    ctx = bootstrap()
    # A server restarting just now (Redis reading its append-only file, say) is waited for a while;
    # one that stays away is the 503 that names it.
    retry_across_outages(ctx, lambda: (ctx.redis.ping(), ctx.db), within=30)
    redis = ctx.redis
    if not queue_index.reconcile_if_lost(ctx):  # a lost Redis: queues rebuilt, work items re-enqueued
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
            # RQ's worker ends on an error it does not expect; a long-lived `r2k worker` starts a
            # new one (RQ's pool does the same for several). Its scheduler puts retried jobs back.
            while True:
                worker = R2KWorker(names, connection=redis)
                try:
                    worker.work(burst=burst, with_scheduler=True, logging_level=logging_level)
                except (RedisConnectionError, RedisTimeoutError) as exc:
                    OUTAGES.down("redis", str(exc))
                if burst or worker._stop_requested or worker._shutdown_requested_date is not None:
                    break  # done, or asked to stop (SIGTERM, Ctrl-C)
                log.warning("the worker stopped; starting another in a second")
                time.sleep(1)
                _revive_redis()
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
