"""comments: notes on candidates, answers, grey entries, work items and article tasks
(core/services/validation/comments.py). Never edited nor deleted: a correction is a new comment. The command tree; the handlers are app/handlers/comments.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int

KINDS = "candidate, answer, grey, workitem or task"


def register(commands) -> None:
    group = commands.group("comments", "comments on candidates, answers, grey entries, work items and tasks "
                           "(never edited nor deleted; @name tells that user)")
    p = group.command("add", "comment on one entity; each @name of a known user tells them", "comments:add", mutates=True)
    p.add_argument("kind", help=f"what the comment is on: {KINDS}")
    p.add_argument("id", help="its id")
    p.add_argument("--text", required=True, help="the comment (at most 10,000 characters); @name mentions a user")
    p = group.command("list", "the comments on one entity, oldest first; or on every entity of a kind, or "
                      "those mentioning a user, newest first", "comments:list_cmd")
    p.add_argument("kind", nargs="?", help=f"{KINDS} (none: every kind)")
    p.add_argument("id", nargs="?", help="its id (none: every entity of the kind)")
    p.add_argument("--mentions", metavar="USER", help="only comments that mention USER")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.LIST_LIMIT)})")
    p.add_argument("--offset", type=bounded_int("--offset", limits.OFFSET), default=0,
                   help=f"skip this many (the next page; {limits.said(limits.OFFSET)})")
