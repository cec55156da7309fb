"""The RQ task functions. Each is a thin call into a core service with this process's Context.

Each is named in `core.adapters.jobs.TASKS`, the only functions workers run. Their arguments and
results travel as JSON (ids, flags, dicts of them).

Each worker process keeps one Context across its jobs; it is made after the fork (keyed by pid),
so no process ever shares a socket with another.

A job that meets an outage of PostgreSQL, Redis or the graph waits for the server to come back
(core/outage.py) within a budget short of its RQ timeout, instead of failing: what each service
call committed stays committed, and the entity's state decides what the retry redoes.
"""
from __future__ import annotations

import os

from r2k.core.adapters.jobs import JOB_TIMEOUT
from r2k.core.bootstrap import bootstrap
from r2k.core.context import Context
from r2k.core.outage import retry_across_outages
from r2k.core.services import tasks
from r2k.core.services.answering import generation, refine
from r2k.core.services.contradictions import conflicts, graph_sync
from r2k.core.services.grey_entries import grey
from r2k.core.services.operations import sweeps, webhooks

_ctx: Context | None = None
_pid: int | None = None


def context() -> Context:
    global _ctx, _pid
    if _ctx is None or _pid != os.getpid():
        _ctx, _pid = bootstrap(), os.getpid()
    return _ctx


def _riding_outages(kind: str, call):
    """`call(ctx)`, waiting out a server restart for up to 80% of the job's RQ timeout."""
    ctx = context()
    return retry_across_outages(ctx, lambda: call(ctx), within=JOB_TIMEOUT[kind] * 0.8)


def generate_answer_task(work_item_id: int) -> dict:
    return _riding_outages("generation", lambda ctx: generation.generate_answer(ctx, int(work_item_id)))


def sync_graph_task(answer_id: int) -> dict:
    return _riding_outages("graph", lambda ctx: graph_sync.sync_answer(ctx, int(answer_id)))


def detect_contradictions_task(answer_id: int) -> dict:
    return _riding_outages("graph", lambda ctx: conflicts.detect(ctx, int(answer_id)))


def process_grey_task(entry_id: int, force: bool = False) -> dict:
    return _riding_outages("generation", lambda ctx: grey.process(ctx, int(entry_id), force=force))


def analyze_task_task(task_id: int) -> dict:
    """A durable task's AI analysis (core.services.tasks.analyze), on the generation queue."""
    return _riding_outages("generation", lambda ctx: tasks.analyze(ctx, int(task_id)))


def deliver_webhook_task(delivery: int) -> dict:
    """One attempt at a webhook delivery (core.services.operations.webhooks.deliver), on the generation queue."""
    return _riding_outages("generation", lambda ctx: webhooks.deliver(ctx, int(delivery)))


def refine_candidates_task(document_id: int, after: int = 0) -> dict:
    """An LLM's proposals for a document's waiting candidates after the id `after` (core.services.answering.refine),
    on the generation queue."""
    return _riding_outages("generation", lambda ctx: refine.refine_document(ctx, int(document_id), int(after)))


def sweep_task() -> dict:
    """The scheduled sweep (core.services.operations.sweeps): one at a time across all schedulers."""
    return _riding_outages("graph", sweeps.sweep_all)
