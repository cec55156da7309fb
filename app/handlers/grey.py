"""grey: the queue of unknowns and its triage. The handlers of the tree in app/commands/grey.py."""
from __future__ import annotations

from r2k.core.services.grey_entries import grey

from ..bulk import run_each
from ..output import Table

GREY_COLUMNS = ["id", "state", "subject", "assignee", "attempts", "max_attempts", "version"]


def add(cli, args):
    actor = cli.actor
    return grey.add(cli.ctx, actor, args.subject, args.detail, ttl_seconds=args.ttl, max_attempts=args.max_attempts,
                    assignee=actor.name if args.assign_me else args.assignee, idempotency_key=args.idempotency_key)


def list_cmd(cli, args):
    cli.actor
    return Table(grey.list_entries(cli.ctx, args.state, args.assignee, args.text, limit=args.limit), GREY_COLUMNS)


def read(cli, args):
    cli.actor
    if args.grey_command == "history":
        return Table(grey.history(cli.ctx, args.id), ["id", "action", "from_state", "to_state", "actor", "reason",
                                                      "created_at"])
    return getattr(grey, args.grey_command)(cli.ctx, args.id)


def move(cli, args):
    fields = {k: getattr(args, k) for k in ("assignee", "notes", "reason", "resolution")
              if getattr(args, k, None) is not None}
    return run_each(cli, args, "grey entry", lambda entry_id, **opts: grey.transition(
        cli.ctx, cli.actor, entry_id, args.grey_command, **fields, **opts))
