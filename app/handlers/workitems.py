"""workitems: work items, questions that need a generated answer. The handlers of the tree in
app/commands/workitems.py."""
from __future__ import annotations

from r2k.core.services.answering import workitems

from ..bulk import run_each
from ..output import Table


def list_cmd(cli, args):
    cli.actor
    return Table(workitems.list_items(cli.ctx, args.state, limit=args.limit),
                 ["id", "state", "question", "reason", "escalation_reason", "source_count", "attempts", "version"])


def show(cli, args):
    cli.actor
    return workitems.show(cli.ctx, args.id)


def create(cli, args):
    return workitems.create(cli.ctx, cli.actor, args.question, horn_type=args.horn_type,
                            idempotency_key=args.idempotency_key)


def generate(cli, args):
    return workitems.generate(cli.ctx, cli.actor, args.id)


def rework(cli, args):
    return workitems.rework(cli.ctx, cli.actor, args.id, args.reason, **cli.opts())


def close(cli, args):
    return run_each(cli, args, "work item", lambda item_id, **opts: workitems.close(
        cli.ctx, cli.actor, item_id, reason=args.reason, **opts))
