"""Who serves the jobs: the RQ workers live on the generation and graph queues, in words
(docs/architecture.md, "Jobs without asking").

A worker is live when RQ's registry lists it on one of r2k's queues with its key not lapsed (RQ
renews the key at every heartbeat). A worker killed with `kill -9` stays listed until its key
lapses (RQ: 7 minutes), so one on this host also needs its process to exist. A workstation starts
its own worker when none is live (app/worker_child.py); `start_claim` keeps two workstations opened
at once from both starting one.
"""
from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from ...adapters import jobs as rq_jobs

if TYPE_CHECKING:
    from ...context import Context

START_KEY = "raw_to_knowledge:worker_start"  # a workstation starting a worker now (pid), for a few seconds


def _running(pid) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another account's process: it exists
        return True
    return True


def serving(ctx: Context, own_pids=()) -> dict:
    """The live workers on r2k's queues (`own`: one of `own_pids`, the workstation's own children)."""
    here = socket.gethostname()
    own = {int(p) for p in own_pids if p}
    live = []
    for worker in rq_jobs.workers(ctx.redis):
        local = worker["host"] == here
        if local and not _running(worker["pid"]):
            continue  # killed without a word: RQ's registry has not noticed yet
        live.append({**worker, "local": local, "own": local and worker["pid"] in own})
    return {"workers": live, "count": len(live), "host": here}


def start_claim(ctx: Context, holder: str, seconds: int = 20) -> bool:
    """Whether `holder` (a workstation's supervisor) may start a worker now: no other workstation is
    starting one. The claim is the holder's for `seconds`; claimed again by its holder (a start
    again after its child ended, or while its child is starting: a slow start is not taken for
    none), it runs for `seconds` more."""
    seconds = max(1, int(seconds))
    if ctx.redis.set(START_KEY, holder, nx=True, ex=seconds):
        return True
    if ctx.redis.get(START_KEY) == holder.encode():
        ctx.redis.expire(START_KEY, seconds)
        return True
    return False


def _count(n: int, what: str = "worker") -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def said(served: dict, child: dict | None = None) -> str:
    """Who serves the jobs, in words: "Jobs: served by 1 worker started by this workstation (pid 7)",
    "Jobs: served by 2 workers on host build-3", or "Jobs: no worker: escalations wait …".
    `child`: the workstation's own worker as its supervisor reports it (None: it starts none)."""
    live = served["workers"]
    own = [w for w in live if w["own"]]
    hosts: dict[str, int] = {}
    for w in live:
        if not w["own"]:
            hosts[w["host"]] = hosts.get(w["host"], 0) + 1
    if live:
        parts = []
        if own:
            pids = ", ".join(str(w["pid"]) for w in own)
            parts.append(f"{_count(len(own))} started by this workstation (pid {pids})")
        for i, (host, n) in enumerate(sorted(hosts.items())):
            where = "this host" if host == served.get("host") else f"host {host}"
            parts.append(f"{_count(n)} on {where}" if i == 0 and not own else f"{n} on {where}")
        return "Jobs: served by " + " and ".join(parts)
    state = (child or {}).get("state")
    if state == "running":  # its child runs, not yet listed by RQ
        return f"Jobs: starting a worker for this workstation (pid {child['pid']})…"
    if state == "waiting":
        ended = f"exit {child['exit']}" if child.get("exit") is not None else "it ended"
        return (f"Jobs: no worker: escalations wait (this workstation's worker stopped, {ended}; next try in "
                f"{child['retry_in']} s; its log: {child['log']})")
    if state == "off":
        return ("Jobs: no worker: escalations wait until one runs (`r2k worker`; this workstation starts "
                "none: R2K_START_WORKER=0)")
    return "Jobs: no worker: escalations wait until one runs (`r2k worker`)"
