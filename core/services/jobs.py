"""Enqueue RQ work from services, after commit."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapters import jobs as rq_jobs

if TYPE_CHECKING:
    from ..context import Context


def enqueue(ctx: Context, kind: str, task: str, *args, job_id: str | None = None, at_front: bool = False):
    """Queue r2k's task named `task` (a name of `core.adapters.jobs.TASKS`; any other raises ValueError);
    `at_front` for a job that already waited its turn once (its worker died)."""
    return rq_jobs.enqueue(ctx.redis, kind, task, *args, job_id=job_id, at_front=at_front)


def enqueue_in(ctx: Context, kind: str, task: str, seconds: float, *args, job_id: str | None = None):
    """`enqueue`, due `seconds` from now (a retry after its backoff)."""
    return rq_jobs.enqueue_in(ctx.redis, kind, task, seconds, *args, job_id=job_id)


def enqueue_all(ctx: Context, kind: str, task: str, calls: list[tuple[tuple, str | None]]) -> None:
    """`enqueue` for many jobs of one task, (args, job id) each, in one round trip."""
    rq_jobs.enqueue_all(ctx.redis, kind, task, calls)


def enqueue_many(ctx: Context, kind: str, calls: list[tuple[str, tuple]]) -> None:
    """`enqueue` for jobs of several tasks on one queue, (task, args) each, in one round trip: all of
    them queued, or none when Redis fails."""
    rq_jobs.enqueue_many(ctx.redis, kind, [(task, args, None) for task, args in calls])


def waiting(ctx: Context, kind: str, job_id: str) -> bool:
    """Whether the job is in its queue now, waiting for a worker: a sweep need not queue it again."""
    return rq_jobs.waiting(ctx.redis, kind, job_id)

