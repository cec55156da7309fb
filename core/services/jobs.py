"""Enqueue RQ work from services, after commit."""
from __future__ import annotations

from ..adapters import jobs as rq_jobs
from ..context import Context


def enqueue(ctx: Context, kind: str, func: str, *args, job_id: str | None = None):
    return rq_jobs.enqueue(ctx.redis, kind, func, *args, job_id=job_id)


def waiting(ctx: Context, kind: str, job_id: str) -> bool:
    """Whether the job is in its queue now, waiting for a worker: a sweep need not queue it again."""
    return rq_jobs.waiting(ctx.redis, kind, job_id)
