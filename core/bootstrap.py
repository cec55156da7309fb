"""The composition root: the one place that wires policy (docs/architecture.md, "Bootstrap and bus").

`bootstrap()` makes a process's Context (its clients) and wires its database: the bus that runs
what follows every engine move (core/bus.py, over the table of core/reactions.py), and the hooks
after a commit (the audit checkpoint when one is due; the queues' reconcile mark dropped when a
step after a commit failed). The CLI, the workstation, the workers and the API server call it; so do
the tests and benches.
"""
from __future__ import annotations

import logging

from .audit import after_commit as checkpoint_after_commit
from .bus import Bus, ReactionTable
from .config import Settings
from .context import Context, Wiring

log = logging.getLogger(__name__)


def bootstrap(settings: Settings | None = None, *, pool_size: int | None = None,
              check_schema: bool = True) -> Context:
    """A Context on `settings` (the environment's by default), its database wired. `pool_size`: a
    connection pool of that size (the workstation, the API server, the benches), else one connection
    (a command, a worker); `check_schema=False` only for `db upgrade`, which brings the schema up."""
    ctx = Context(settings, pool_size=pool_size, check_schema=check_schema)
    ctx.wiring = Wiring(bus=Bus(ctx, reaction_table),
                        on_events_committed=lambda count: checkpoint_after_commit(ctx, count),
                        on_after_commit_error=lambda exc: queues_out_of_step(ctx, exc))
    return ctx


def reaction_table() -> ReactionTable:
    """The reactions table, loaded by the bus on the first move it dispatches."""
    # In-function: it imports every workflow, +0.28 s to each command's start (import alone, load 2.8)
    from .reactions import REACTIONS

    return REACTIONS


def queues_out_of_step(ctx: Context, exc: Exception) -> None:
    """A step after a commit failed (a queue push, a job, a notice), so Redis may now miss what
    PostgreSQL holds: drop the reconcile mark, and the next claim (or start-up) rebuilds the
    queues and re-enqueues the work items first."""
    try:
        ctx.redis.delete(ctx.redis_queues.EPOCH_KEY)
    except Exception as err:  # noqa: BLE001 - Redis unreachable: the scheduled sweep finds what it missed
        log.warning("the reconcile mark could not be dropped: %s", err)
