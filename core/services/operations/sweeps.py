"""The sweep: expired claim leases, ids stuck in flight, queues that miss ids, grey TTLs
and retries, work items a dead worker left GENERATING, and the graph's lag behind the registry.

Workers run it on a schedule (an RQ CronScheduler, `workers/main.py`). With no worker running, as
in `r2k demo`, an open workstation runs it instead, so claim leases still expire and lost queue ids
still come back: at most once per interval across all the workstations open.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

from redis.exceptions import LockError

from ... import audit
from ...errors import Forbidden
from ...outage import service_error
from .. import tasks
from ..answering import generation
from ..contradictions import graph_sync
from ..grey_entries import grey
from ..queue import queue_index
from ..validation import candidates
from . import webhooks, workers_live

if TYPE_CHECKING:
    from ...context import Context

SWEEP_LOCK = "raw_to_knowledge:sweep_lock"              # one sweep at a time, whoever runs it
SWEEP_LOCK_SECONDS = 10.0  # the lock's lease; the sweep holding it renews it every third of that
UNATTENDED_KEY = "raw_to_knowledge:sweep_unattended"    # the last workstation sweep, for an interval


def sweep_all(ctx: Context) -> dict:
    """One sweep of everything; skipped while another is running."""
    with sweep_turn(ctx) as mine:
        if not mine:
            return {"skipped": "another sweep is running"}
        swept = {"claims": sweep_claims(ctx), "grey": grey.sweep(ctx), "work_items": generation.recover(ctx),
                 "tasks": tasks.recover(ctx), "graph": sweep_graph(ctx),
                 "webhooks": webhooks.requeue_pending(ctx)}
        audit.checkpoint_if_due(ctx)  # the time-based checkpoint, when nothing commits; logs its own failure
        return swept


@contextlib.contextmanager
def sweep_turn(ctx: Context, seconds: float | None = None) -> Iterator[bool]:
    """The sweep lock, held for as long as the sweep runs: a thread renews its lease every third of
    `seconds` (SWEEP_LOCK_SECONDS), so a sweep slower than the lease (a slow graph, a large queue)
    never lets a second one start beside it, while a sweeper killed mid-sweep frees it within one
    lease. Released only if still ours (a token: the pid and a random part), never another's."""
    seconds = SWEEP_LOCK_SECONDS if seconds is None else seconds
    lock = ctx.redis.lock(SWEEP_LOCK, timeout=seconds, thread_local=False)
    if not lock.acquire(blocking=False, token=f"{os.getpid()}:{uuid.uuid4().hex[:8]}"):
        yield False
        return
    done = threading.Event()

    def renew() -> None:
        while not done.wait(seconds / 3):
            try:
                lock.reacquire()
            except LockError:  # lapsed (Redis away longer than the lease): another may sweep now
                logging.getLogger(__name__).warning("the sweep lost its lock before it ended")
                return
            except Exception as exc:  # noqa: BLE001 - Redis unreachable: tried again at the next third
                logging.getLogger(__name__).debug("could not renew the sweep lock: %s", exc)

    renewer = threading.Thread(target=renew, name="sweep-lock", daemon=True)
    renewer.start()
    try:
        yield True
    finally:
        done.set()
        renewer.join()
        with contextlib.suppress(LockError):
            lock.release()


def sweep_now(ctx: Context, actor) -> dict:
    """`r2k queue sweep`: the whole sweep, now. A specialist or an admin may: it releases other
    people's expired claims and expires grey entries, as the scheduled sweep does."""
    if not actor.is_system and actor.role not in ("specialist", "admin"):
        raise Forbidden(f"{actor.name} ({actor.role}) may not run the sweep: only a specialist or an admin may")
    return sweep_all(ctx)


def sweep_claims(ctx: Context) -> dict:
    """Release expired claims, return ids stuck in flight, rebuild partitions that miss ids."""
    return {"released": candidates.release_expired(ctx), "rescued": queue_index.sweep_in_flight(ctx),
            "rebuilt": queue_index.repair_queues(ctx)}


def sweep_graph(ctx: Context) -> dict:
    """Catch the graph up with the registry (core/services/contradictions/graph_sync.py). A graph that does not
    answer is followed once (an embedded one that died is started again, on its socket) and tried
    again; one that still does not answer is reported, and never fails the rest of the sweep."""
    for attempt in (1, 2):
        try:
            return graph_sync.catch_up(ctx)
        except Exception as exc:
            error = service_error(exc, ctx)
            if error is None or error.part != "graph":
                raise
            if attempt == 2:
                return {"unavailable": error.message}
            try:
                ctx.reconnect("graph")
            except Exception as follow_error:  # noqa: BLE001 - still down (or stopped): reported below
                error = service_error(follow_error, ctx) or error
                return {"unavailable": error.message}
    raise AssertionError("unreachable")


def sweep_if_unattended(ctx: Context, interval: float) -> dict | None:
    """A workstation's offer to sweep: taken only when no worker is running (they sweep on their own
    schedule) and no workstation has swept within `interval` seconds; None when not taken. A worker
    RQ still lists after a kill -9 serves nothing: live as workers_live counts them."""
    if workers_live.serving(ctx)["count"]:
        return None
    if not ctx.redis.set(UNATTENDED_KEY, os.getpid(), nx=True, px=max(100, int(interval * 1000))):
        return None
    return sweep_all(ctx)
