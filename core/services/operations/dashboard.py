"""The dashboard's live counts: one round trip of grouped counts, plus the services' health."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import embedded
from ...adapters import jobs
from ...domain import HORN_TYPES
from ..answering import generation
from . import agreement, workers_live

if TYPE_CHECKING:
    from ...context import Context
    from ...domain import Actor


def counts(ctx: Context, actor: Actor | None = None) -> dict:
    """Everything in flight, counted by state; overlap's agreement per queue, and per pair of
    validators for an admin."""
    with ctx.db.read() as tx:
        rows = tx.all(
            # The candidates' counts are kept with every move (queue_counts, docs/architecture.md "Queues").
            "SELECT 'candidates' AS what, horn_type AS key, state, sum(n)::bigint AS n FROM queue_counts "
            "GROUP BY 2, 3 HAVING sum(n) <> 0 "
            "UNION ALL SELECT 'work_items', '', state, count(*) FROM work_items GROUP BY 3 "
            "UNION ALL SELECT 'grey', '', state, count(*) FROM grey_entries GROUP BY 3 "
            "UNION ALL SELECT 'tasks', '', state, count(*) FROM durable_tasks GROUP BY 3 "
            "UNION ALL SELECT 'answers', '', status, count(*) FROM approved_answers GROUP BY 3")
    out: dict = {"candidates": {h: {} for h in HORN_TYPES}, "work_items": {}, "grey": {}, "tasks": {}, "answers": {}}
    for r in rows:
        if r["what"] == "candidates":
            out["candidates"][r["key"]][r["state"]] = r["n"]
        else:
            out[r["what"]][r["state"]] = r["n"]
    with ctx.db.read() as tx:
        out["overlap"] = agreement.per_queue(tx, pairs=actor is not None and actor.role == "admin")
    return out


def health(ctx: Context, child: dict | None = None) -> dict:
    """Each service part, the LLM breaker, the live RQ workers and who serves the jobs, in words
    (`jobs`; `child`: the workstation's own worker as app/worker_child.py reports it); never raises."""
    parts = [p.as_dict() for p in embedded.status(ctx.settings)]
    extra: dict = {"breaker": None, "workers": None, "queues": None, "jobs": None}
    try:
        extra["breaker"] = generation.breaker_status(ctx)
        served = workers_live.serving(ctx, own_pids=[(child or {}).get("pid")])
        extra["workers"] = served["count"]
        extra["serving"] = served["workers"]
        extra["jobs"] = workers_live.said(served, child)
        extra["queues"] = jobs.depth(ctx.redis)
    except Exception as exc:
        extra["error"] = str(exc)
    return {"services": parts, **extra}
