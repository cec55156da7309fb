"""What follows a task's moves (rows of core/reactions.py): publication, the superseded version's
deprecation, the AI analysis job, and recovery of an analysis a dead worker left."""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM
from ...engine import Event
from ...events import now
from .. import jobs
from .sources import render, statuses
from .writing import row_for_update, write

if TYPE_CHECKING:
    from ...context import Context


def publish_approved(tx: Tx, event: Event) -> dict:
    """APPROVED → PUBLISHED at once, in the same transaction: the article rendered with its sources."""
    row = event.row
    rendered = render(row, statuses(tx, row["sources"] or []))  # each APPROVED: the approval checked them
    published = write(tx, SYSTEM, row, "publish", {"rendered": rendered, "sources": row["sources"] or []})
    return {"published": public_row(published), "published_row": published}


def deprecate_superseded(tx: Tx, event: Event) -> dict | None:
    """A new version published: the version it supersedes is deprecated (when still PUBLISHED)."""
    old_id = event.row.get("supersedes_id")
    if old_id is None:
        return None
    old = row_for_update(tx, old_id, missing_ok=True)
    if old is None or old["state"] != "PUBLISHED":
        return None
    reason = f"superseded by task {event.aggregate_id}"
    deprecated = write(tx, SYSTEM, old, "deprecate", {"reason": reason, "superseded_by": event.aggregate_id},
                        fields={"reason": reason})
    return {"deprecated": public_row(deprecated)}


def analysis_job_id(task_id: int, version: int) -> str:
    return f"task-{task_id}-analysis-v{version}"


def analysis_job(ctx: Context, event: Event) -> None:
    """After commit: a submitted task's analysis runs on RQ (the generation queue)."""
    jobs.enqueue(ctx, "generation", "analyze_task_task", event.aggregate_id,
                 job_id=analysis_job_id(event.aggregate_id, event.version))


def recover(ctx: Context, *, stale_after_seconds: float = 600) -> dict:
    """The sweep's part: a task left in AI_ANALYSIS whose analysis job is not waiting (its enqueue
    lost with Redis, its worker dead, the job failed) has it queued again, or it would wait for ever:
    only the system moves it on. Untouched for `stale_after_seconds` (twice the job's timeout) first,
    so a run in progress is left alone; a duplicate run changes nothing (`analyze`)."""
    with ctx.db.read() as tx:
        rows = tx.all("SELECT id, version FROM durable_tasks WHERE state = 'AI_ANALYSIS' AND updated_at < %s "
                      "ORDER BY id", (now() - timedelta(seconds=stale_after_seconds),))
    requeued = []
    for row in rows:
        job_id = analysis_job_id(row["id"], row["version"])
        if jobs.waiting(ctx, "generation", job_id):
            continue
        jobs.enqueue(ctx, "generation", "analyze_task_task", row["id"], job_id=job_id)
        requeued.append(row["id"])
    return {"requeued": requeued}
