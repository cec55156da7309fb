"""RQ, the job queues of DESIGN §7: `raw_to_knowledge_generation` and `raw_to_knowledge_graph`.

Jobs are enqueued by dotted path so enqueuing never imports the worker code. Every job may be
retried (RQ's Retry, also applied by RQ to the jobs of a worker that died mid-job); the database
state of the entity, not the job, decides what a retry redoes.
"""
from __future__ import annotations

from .redis_queues import GENERATION_QUEUE, GRAPH_QUEUE

QUEUES = {"generation": GENERATION_QUEUE, "graph": GRAPH_QUEUE}
JOB_TIMEOUT = {"generation": 300, "graph": 120}


def queue(redis, kind: str):
    from rq import Queue

    if kind not in QUEUES:
        raise ValueError(f"unknown queue {kind!r}: expected one of {', '.join(QUEUES)}")
    return Queue(QUEUES[kind], connection=redis)


def enqueue(redis, kind: str, func: str, *args, job_id: str | None = None, at_front: bool = False):
    from rq import Retry

    return queue(redis, kind).enqueue(func, *args, job_id=job_id, retry=Retry(max=3, interval=[2, 10, 60]),
                                      job_timeout=JOB_TIMEOUT[kind], result_ttl=3600, failure_ttl=7 * 86400,
                                      at_front=at_front)


def waiting(redis, kind: str, job_id: str) -> bool:
    """Whether the job's id sits in its queue's list now, so a worker will take it (its job hash
    alone may say `queued` for a job a dying worker popped and never ran: rq issue #1716)."""
    return redis.lpos(queue(redis, kind).key, job_id) is not None


def live_workers(redis) -> int:
    from rq import Worker

    return Worker.count(connection=redis)


def depth(redis) -> dict:
    return {kind: queue(redis, kind).count for kind in QUEUES}
