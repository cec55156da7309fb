"""registry: search, read and move published answers."""
from __future__ import annotations

from r2k.core.domain import limits

from ..bulk import add_ids, run_each
from ..cli import bounded_int
from ..output import Table, Text

ANSWER_COLUMNS = ["id", "status", "horn_type", "question", "text", "supersedes_id", "version"]


def register(commands) -> None:
    reg = commands.group("registry", "the registry of approved answers (never deletes)")
    p = reg.command("search", "answers ranked by their words and their meaning (APPROVED only unless --status)",
                    search)
    p.add_argument("query", nargs="?", default="", help="words or a phrase; none lists the newest answers "
                                                        f"(at most {limits.QUERY:,} characters)")
    p.add_argument("--status", help="comma-separated statuses to include, or ALL")
    p.add_argument("--explain", action="store_true",
                   help="show each hit's rank by words and by meaning, its similarity and its score")
    p.add_argument("--limit", type=bounded_int("--limit", limits.SEARCH_LIMIT), default=20,
                   help=f"at most this many (default 20; {limits.said(limits.SEARCH_LIMIT)})")
    p.add_argument("--offset", type=bounded_int("--offset", limits.OFFSET), default=0,
                   help=f"skip this many results (the next page; {limits.said(limits.OFFSET)})")
    p = reg.command("show", "one answer by id, whatever its status", show)
    p.add_argument("id", help="the answer's id")
    p = reg.command("chain", "the whole supersede chain of an answer, oldest first", chain)
    p.add_argument("id", help="the id of any answer in the chain")
    p = reg.command("readout", "what the registry answers: disputed answers flagged, retired never", readout)
    p.add_argument("query", help=f"words or a phrase (at most {limits.QUERY:,} characters)")
    p.add_argument("--limit", type=bounded_int("--limit", limits.SEARCH_LIMIT), default=20,
                   help=f"at most this many (default 20; {limits.said(limits.SEARCH_LIMIT)})")
    p = reg.command("supersede", "publish a new version of an answer", supersede, mutates=True)
    p.add_argument("id", help="the id of an APPROVED or DISPUTED answer")
    p.add_argument("--text", required=True, help=f"the new version's text (at most {limits.ANSWER:,} characters)")
    p.add_argument("--reason", required=True, help=f"why the answer changes (at most {limits.REASON:,} characters)")
    for name, what in [("dispute", "dispute an answer: its candidate returns for re-review"),
                       ("retire", "retire an answer: out of all search and readout, kept for audit")]:
        p = reg.command(name, what, move, mutates=True)
        add_ids(p, "answer")
        p.add_argument("--reason", required=True, help="why, in words the next reader understands "
                                                       f"(at most {limits.REASON:,} characters)")


def search(cli, args):
    from r2k.core.services import registry

    cli.actor
    explain = getattr(args, "explain", False)
    rows = registry.search(cli.ctx, args.query, args.status, limit=args.limit, offset=args.offset, explain=explain)
    if not explain:
        return Table(rows, ANSWER_COLUMNS)
    for row in rows:  # the ranks side by side in text; JSON keeps them under "explain"
        row.update({f"{k}": v for k, v in (row.get("explain") or {}).items()})
    return Table(rows, ["id", "status", "lexical_rank", "vector_rank", "similarity", "score", "question"])


def show(cli, args):
    from r2k.core.services import registry

    cli.actor
    return registry.show(cli.ctx, args.id)


def chain(cli, args):
    from r2k.core.services import registry

    cli.actor
    return Table(registry.chain(cli.ctx, args.id), ANSWER_COLUMNS)


def readout(cli, args):
    from r2k.core.services import registry

    cli.actor
    rows = registry.readout(cli.ctx, args.query, limit=args.limit)
    for row in rows:
        row["flag"] = "DISPUTED" if row["disputed"] else ""
    return Table(rows, ["id", "flag", "horn_type", "question", "text"])


def supersede(cli, args):
    from r2k.core.services import registry

    from ..wording import registry_move_said

    row = registry.supersede(cli.ctx, cli.actor, args.id, args.text, args.reason, **cli.opts())
    return Text(row, registry_move_said("supersede", row["supersedes_id"], row))


def move(cli, args):
    from r2k.core.services import registry

    from ..wording import registry_move_said

    action = getattr(registry, args.registry_command)
    result = run_each(cli, args, "answer", lambda answer_id, **opts: action(cli.ctx, cli.actor, answer_id,
                                                                            args.reason, **opts))
    if isinstance(result, dict):  # one id: the command's own words
        return Text(result, registry_move_said(args.registry_command, result["id"], result))
    return result
