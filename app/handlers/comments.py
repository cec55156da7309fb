"""comments: notes on candidates, answers, grey entries, work items and article tasks
(core/services/validation/comments.py). Never edited nor deleted: a correction is a new comment. The handlers of the tree in app/commands/comments.py."""
from __future__ import annotations

from r2k.core.services.validation import comments

from ..output import Table

COLUMNS = ["id", "entity_type", "entity_id", "author", "created_at", "mentions", "body"]


def add(cli, args):
    return comments.add(cli.ctx, cli.actor, args.kind, args.id, args.text, idempotency_key=cli.opts()["idempotency_key"])


def list_cmd(cli, args):
    cli.actor
    rows = comments.list_comments(cli.ctx, args.kind, args.id, mentioning=args.mentions, limit=args.limit,
                                  offset=args.offset)
    return Table(rows, COLUMNS)
