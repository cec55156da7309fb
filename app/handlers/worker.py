"""worker: RQ workers on the generation and graph queues. The handlers of the tree in
app/commands/worker.py."""
from __future__ import annotations

from r2k.core.errors import InvalidInput
from r2k.workers.main import run

from ..worker_child import watch_parent


def worker(cli, args):
    if args.processes < 1:
        raise InvalidInput("--processes is at least 1")
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    if args.parent is not None:
        watch_parent(args.parent)
    return None, run(queues, processes=args.processes, burst=args.burst)
