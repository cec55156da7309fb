"""registry: search, read and move published answers. The handlers of the tree in
app/commands/registry.py."""
from __future__ import annotations

from r2k.core.services.answers import registry

from ..bulk import run_each
from ..output import Table, Text
from ..wording import registry_move_said

ANSWER_COLUMNS = ["id", "status", "horn_type", "question", "text", "supersedes_id", "version"]


def search(cli, args):
    cli.actor
    explain = getattr(args, "explain", False)
    rows = registry.search(cli.ctx, args.query, args.status, limit=args.limit, offset=args.offset, explain=explain)
    if not explain:
        return Table(rows, ANSWER_COLUMNS)
    for row in rows:  # the ranks side by side in text; JSON keeps them under "explain"
        row.update({f"{k}": v for k, v in (row.get("explain") or {}).items()})
    return Table(rows, ["id", "status", "lexical_rank", "vector_rank", "similarity", "score", "question"])


def show(cli, args):
    cli.actor
    return registry.show(cli.ctx, args.id)


def chain(cli, args):
    cli.actor
    return Table(registry.chain(cli.ctx, args.id), ANSWER_COLUMNS)


def readout(cli, args):
    cli.actor
    rows = registry.readout(cli.ctx, args.query, limit=args.limit)
    for row in rows:
        row["flag"] = "DISPUTED" if row["disputed"] else ""
    return Table(rows, ["id", "flag", "horn_type", "question", "text"])


def supersede(cli, args):
    row = registry.supersede(cli.ctx, cli.actor, args.id, args.text, args.reason, **cli.opts())
    return Text(row, registry_move_said("supersede", row["supersedes_id"], row))


def move(cli, args):
    action = getattr(registry, args.registry_command)
    result = run_each(cli, args, "answer", lambda answer_id, **opts: action(cli.ctx, cli.actor, answer_id,
                                                                            args.reason, **opts))
    if isinstance(result, dict):  # one id: the command's own words
        return Text(result, registry_move_said(args.registry_command, result["id"], result))
    return result
