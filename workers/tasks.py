"""The RQ task functions. Each is a thin call into a core service with this process's Context.

Each is named in `core.adapters.jobs.TASKS`, the only functions workers run. Their arguments and
results travel as JSON (ids, flags, dicts of them).

Each worker process keeps one Context across its jobs; it is made after the fork (keyed by pid),
so no process ever shares a socket with another.
"""
from __future__ import annotations

import os

from core.context import Context

_ctx: Context | None = None
_pid: int | None = None


def context() -> Context:
    global _ctx, _pid
    if _ctx is None or _pid != os.getpid():
        _ctx, _pid = Context(), os.getpid()
    return _ctx


def generate_answer_task(work_item_id: int) -> dict:
    from core.services import generation

    return generation.generate_answer(context(), int(work_item_id))


def sync_graph_task(answer_id: int) -> dict:
    from core.services import graph_sync

    return graph_sync.sync_answer(context(), int(answer_id))


def detect_contradictions_task(answer_id: int) -> dict:
    from core.services import graph_sync

    return graph_sync.detect_contradictions(context(), int(answer_id))


def process_grey_task(entry_id: int, force: bool = False) -> dict:
    from core.services import grey

    return grey.process(context(), int(entry_id), force=force)


def sweep_task() -> dict:
    """The scheduled sweep (core.services.sweeps): one at a time across all schedulers."""
    from core.services import sweeps

    return sweeps.sweep_all(context())


def noop_task() -> None:
    """For benches: RQ's own cost for a job that does nothing."""
    return None
