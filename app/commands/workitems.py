"""workitems and worker: the generation pipeline."""
from __future__ import annotations

from r2k.core.domain import limits

from ..bulk import add_ids, run_each
from ..cli import bounded_int
from ..output import Table


def register(commands) -> None:
    wi = commands.group("workitems", "work items: questions that need a generated answer")
    p = wi.command("list", "list work items", list_cmd)
    p.add_argument("--state", help="only this state: NEW, GENERATING, PENDING_VALIDATION, IN_CLASSIFICATION, "
                                   "READY_FOR_REVIEW, VALIDATED, NEEDS_REWORK, ESCALATED or CLOSED")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.LIST_LIMIT)})")
    p = wi.command("show", "a work item with its sources, prompt and generated text", show)
    p.add_argument("id", help="the work item's id")
    p = wi.command("create", "a work item by hand", create, mutates=True)
    p.add_argument("--question", required=True,
                   help=f"the question an answer is needed for (at most {limits.QUESTION:,} characters)")
    p.add_argument("--horn-type", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE, if known")
    p = wi.command("generate", "enqueue generation for a NEW work item", generate)
    p.add_argument("id", help="the work item's id")
    p = wi.command("rework", "regenerate a NEEDS_REWORK item with the reason in the prompt", rework, mutates=True)
    p.add_argument("id", help="the work item's id")
    p.add_argument("--reason", required=True,
                   help=f"what was wrong with the generated answer (at most {limits.REASON:,} characters)")
    p = wi.command("close", "close a work item", close, mutates=True)
    add_ids(p, "work item")
    p.add_argument("--reason", help=f"why it is closed (at most {limits.REASON:,} characters)")

    w = commands.command("worker", "run RQ workers on the generation and graph queues", worker)
    w.add_argument("--queues", default="generation,graph", help="comma-separated: generation, graph")
    w.add_argument("--processes", type=bounded_int("--processes", limits.PROCESSES), default=1,
                   help=f"worker processes (RQ WorkerPool; {limits.said(limits.PROCESSES)})")
    w.add_argument("--burst", action="store_true", help="stop when the queues are empty")
    w.add_argument("--parent", metavar="PID", type=bounded_int("--parent", (1, 2**22)),
                   help="end when process PID is gone (how a workstation starts its own worker)")


def list_cmd(cli, args):
    from r2k.core.services import workitems

    cli.actor
    return Table(workitems.list_items(cli.ctx, args.state, limit=args.limit),
                 ["id", "state", "question", "reason", "escalation_reason", "source_count", "attempts", "version"])


def show(cli, args):
    from r2k.core.services import workitems

    cli.actor
    return workitems.show(cli.ctx, args.id)


def create(cli, args):
    from r2k.core.services import workitems

    return workitems.create(cli.ctx, cli.actor, args.question, horn_type=args.horn_type,
                            idempotency_key=args.idempotency_key)


def generate(cli, args):
    from r2k.core.services import workitems

    return workitems.generate(cli.ctx, cli.actor, args.id)


def rework(cli, args):
    from r2k.core.services import workitems

    return workitems.rework(cli.ctx, cli.actor, args.id, args.reason, **cli.opts())


def close(cli, args):
    from r2k.core.services import workitems

    return run_each(cli, args, "work item", lambda item_id, **opts: workitems.close(
        cli.ctx, cli.actor, item_id, reason=args.reason, **opts))


def worker(cli, args):
    from r2k.core.errors import InvalidInput
    from r2k.workers.main import run

    if args.processes < 1:
        raise InvalidInput("--processes is at least 1")
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    if args.parent is not None:
        from ..worker_child import watch_parent

        watch_parent(args.parent)
    return None, run(queues, processes=args.processes, burst=args.burst)
