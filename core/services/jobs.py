"""Enqueue RQ work from services, after commit."""
from __future__ import annotations

from ..adapters import jobs as rq_jobs
from ..context import Context


def enqueue(ctx: Context, kind: str, func: str, *args, job_id: str | None = None):
    return rq_jobs.enqueue(ctx.redis, kind, func, *args, job_id=job_id)
