"""worker: RQ workers on the generation and graph queues. The command tree; the handlers are
app/handlers/worker.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int


def register(commands) -> None:
    w = commands.command("worker", "run RQ workers on the generation and graph queues", "worker:worker")
    w.add_argument("--queues", default="generation,graph", help="comma-separated: generation, graph")
    w.add_argument("--processes", type=bounded_int("--processes", limits.PROCESSES), default=1,
                   help=f"worker processes (RQ WorkerPool; {limits.said(limits.PROCESSES)})")
    w.add_argument("--burst", action="store_true", help="stop when the queues are empty")
    w.add_argument("--parent", metavar="PID", type=bounded_int("--parent", (1, 2**22)),
                   help="end when process PID is gone (how a workstation starts its own worker)")
