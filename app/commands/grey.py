"""grey: the queue of unknowns and its triage. The command tree; the handlers are
app/handlers/grey.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..bulk import add_ids
from ..cli import bounded_int


def register(commands) -> None:
    g = commands.group("grey", "the grey queue: unknowns whose evidence is not yet sufficient")
    p = g.command("add", "add an entry by hand", "grey:add", mutates=True)
    p.add_argument("--subject", required=True,
                   help=f"what is unknown, in one line (at most {limits.GREY_SUBJECT:,} characters)")
    p.add_argument("--detail", default="", help=f"what is known so far (at most {limits.GREY_DETAIL:,} characters)")
    p.add_argument("--ttl", type=bounded_int("--ttl", limits.TTL_SECONDS, "seconds"), metavar="SECONDS",
                   help="expires after this long unresolved (default 7 days; "
                        f"{limits.said(limits.TTL_SECONDS, 'seconds')})")
    p.add_argument("--max-attempts", type=bounded_int("--max-attempts", limits.MAX_ATTEMPTS), metavar="N",
                   help=f"automated retries before it fails (default 5; {limits.said(limits.MAX_ATTEMPTS)})")
    review = p.add_mutually_exclusive_group()
    review.add_argument("--assign-me", action="store_true",
                        help="review it yourself: it goes to UnderReview at once, and the automation never takes it "
                             "(a specialist or an admin); without it the automation looks for sources first")
    review.add_argument("--assignee", metavar="USER", help="add it for USER's review, as --assign-me does for you")
    p = g.command("list", "list entries", "grey:list_cmd")
    p.add_argument("--state", help="only this state: Pending, Processing, Retrying, UnderReview, Escalated, "
                                   "Resolved, Rejected, Failed, Expired or Dismissed")
    p.add_argument("--assignee", metavar="USER", help="only entries assigned to this user")
    p.add_argument("--text", help="only entries whose subject or detail holds these words, or this text as "
                                  "typed (%% and _ are characters, not patterns)")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.LIST_LIMIT)})")
    for name, what in [("show", "an entry with its history and valid next states"),
                       ("transitions", "the valid next states from the current one"),
                       ("history", "every transition: who, when, from, to, why")]:
        p = g.command(name, what, "grey:read")
        p.add_argument("id", help="the entry's id")
    p = g.command("assign", "assign for review (UnderReview)", "grey:move", mutates=True)
    add_ids(p, "grey entry")
    p.add_argument("--assignee", required=True, metavar="USER", help="who reviews it")
    p.add_argument("--notes", help=f"what the reviewer should know (at most {limits.REASON:,} characters)")
    for name, what, reason in [
            ("unassign", "back to Pending", False), ("deescalate", "back to UnderReview", False),
            ("escalate", "escalate (notifies specialists)", True), ("reopen", "reopen a rejected or dismissed entry", None),
            ("dismiss", "dismiss a pending entry", None), ("reset", "reset a failed entry to Pending", None)]:
        p = g.command(name, what, "grey:move", mutates=True)
        add_ids(p, "grey entry")
        if reason is True:
            p.add_argument("--reason", required=True, help="why, in words the next reader understands "
                                                           f"(at most {limits.REASON:,} characters)")
        elif reason is None:
            p.add_argument("--reason", help=f"why (kept in the entry's history; at most {limits.REASON:,} characters)")
    p = g.command("reject", "reject as invalid or not actionable (recorded as rejected by you)", "grey:move", mutates=True)
    add_ids(p, "grey entry")
    p.add_argument("--reason", required=True,
                   help=f"why it is invalid or not actionable (at most {limits.REASON:,} characters)")
    p = g.command("resolve", "resolve: the evidence is now sufficient", "grey:move", mutates=True)
    add_ids(p, "grey entry")
    p.add_argument("--resolution", help=f"what settled it (at most {limits.REASON:,} characters)")
