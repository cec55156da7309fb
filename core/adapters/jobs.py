"""RQ, r2k's job queues: `raw_to_knowledge_generation` and `raw_to_knowledge_graph`.

`TASKS` is the one registry of r2k's RQ tasks: core enqueues by these names (an unknown name is an
error at once, not a job that fails later) and workers run no function outside it. Jobs name their
task by dotted path, so enqueuing never imports the worker code. Job data, results and meta are
JSON: RQ's default serializer, pickle, would run whatever code a writer to Redis put there.

Every job may be retried (RQ's Retry, also applied by RQ to the jobs of a worker that died mid-job);
the database state of the entity, not the job, decides what a retry redoes.
"""
from __future__ import annotations

from .redis_queues import GENERATION_QUEUE, GRAPH_QUEUE

QUEUES = {"generation": GENERATION_QUEUE, "graph": GRAPH_QUEUE}
JOB_TIMEOUT = {"generation": 300, "graph": 120}

# Every RQ task of r2k, by name, and the function its jobs name (workers/tasks.py).
TASKS = {
    "generate_answer_task": "r2k.workers.tasks.generate_answer_task",
    "sync_graph_task": "r2k.workers.tasks.sync_graph_task",
    "detect_contradictions_task": "r2k.workers.tasks.detect_contradictions_task",
    "process_grey_task": "r2k.workers.tasks.process_grey_task",
    "analyze_task_task": "r2k.workers.tasks.analyze_task_task",  # a durable task's AI analysis gate
    "deliver_webhook_task": "r2k.workers.tasks.deliver_webhook_task",  # one attempt at a webhook delivery
    "refine_candidates_task": "r2k.workers.tasks.refine_candidates_task",  # an LLM's proposals for a document's candidates
    "sweep_task": "r2k.workers.tasks.sweep_task",  # enqueued by the workers' own scheduler
}
TASK_PATHS = frozenset(TASKS.values())

# RQ's JSONSerializer, named by path so that importing this module does not import RQ.
SERIALIZER = "rq.serializers.JSONSerializer"


def task(name: str) -> str:
    """The dotted path of r2k's task `name`."""
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}: expected one of {', '.join(TASKS)}") from None


def queue(redis, kind: str):
    from rq import Queue

    if kind not in QUEUES:
        raise ValueError(f"unknown queue {kind!r}: expected one of {', '.join(QUEUES)}")
    return Queue(QUEUES[kind], connection=redis, serializer=SERIALIZER)


def enqueue(redis, kind: str, task_name: str, *args, job_id: str | None = None, at_front: bool = False):
    from rq import Retry

    func = task(task_name)
    return queue(redis, kind).enqueue(func, *args, job_id=job_id, retry=Retry(max=3, interval=[2, 10, 60]),
                                      job_timeout=JOB_TIMEOUT[kind], result_ttl=3600, failure_ttl=7 * 86400,
                                      at_front=at_front)


def enqueue_in(redis, kind: str, task_name: str, seconds: float, *args, job_id: str | None = None):
    """`enqueue`, run no sooner than `seconds` from now (RQ's scheduler, which `r2k worker` runs, puts it
    in its queue when due): a retry after its backoff."""
    from datetime import timedelta

    from rq import Retry

    func = task(task_name)
    return queue(redis, kind).enqueue_in(timedelta(seconds=seconds), func, *args, job_id=job_id,
                                         retry=Retry(max=3, interval=[2, 10, 60]), job_timeout=JOB_TIMEOUT[kind],
                                         result_ttl=3600, failure_ttl=7 * 86400)


def enqueue_all(redis, kind: str, task_name: str, calls: list[tuple[tuple, str | None]]) -> None:
    """`enqueue` for many jobs of one task ((args, job id) each), in one Redis pipeline."""
    enqueue_many(redis, kind, [(task_name, args, job_id) for args, job_id in calls])


def enqueue_many(redis, kind: str, calls: list[tuple[str, tuple, str | None]]) -> None:
    """`enqueue` for many jobs of one queue, each of its own task ((task name, args, job id) each), in
    one Redis pipeline (MULTI … EXEC): every job is queued, or, when Redis fails, none is. An unknown
    task name raises ValueError before anything is sent."""
    from rq import Retry

    if not calls:
        return
    funcs = [task(task_name) for task_name, _, _ in calls]
    q = queue(redis, kind)
    q.enqueue_many([q.prepare_data(func, args, job_id=job_id, retry=Retry(max=3, interval=[2, 10, 60]),
                                   timeout=JOB_TIMEOUT[kind], result_ttl=3600, failure_ttl=7 * 86400)
                    for func, (_, args, job_id) in zip(funcs, calls)])


def job(redis, job_id: str):
    """The job with this id, read as JSON (RQ's NoSuchJobError when there is none)."""
    from rq.job import Job

    return Job.fetch(job_id, connection=redis, serializer=SERIALIZER)


def waiting(redis, kind: str, job_id: str) -> bool:
    """Whether the job's id sits in its queue's list now, so a worker will take it (its job hash
    alone may say `queued` for a job a dying worker popped and never ran: rq issue #1716)."""
    return redis.lpos(queue(redis, kind).key, job_id) is not None


def workers(redis) -> list[dict]:
    """The workers RQ's registry lists on r2k's queues (their key not lapsed), as each last recorded
    itself: name, host, pid, the r2k queues it serves, its last heartbeat."""
    from rq import Worker

    ours = set(QUEUES.values())
    found = []
    for worker in Worker.all(connection=redis, serializer=SERIALIZER):
        queues = [name for name in worker.queue_names() if name in ours]
        if queues:
            found.append({"name": worker.name, "host": worker.hostname, "pid": worker.pid, "queues": queues,
                          "last_heartbeat": worker.last_heartbeat})
    return found


def depth(redis) -> dict:
    return {kind: queue(redis, kind).count for kind in QUEUES}
