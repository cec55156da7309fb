"""conflicts: approved answers that contradict each other, and turning them into disputes. The
command tree; the handlers are app/handlers/conflicts.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int


def register(commands) -> None:
    g = commands.group("conflicts", "answers that contradict each other: list, show, escalate to a dispute, "
                                    "dismiss")
    p = g.command("list", "list flags, newest first (open ones unless --status says otherwise)", "conflicts:list_cmd")
    p.add_argument("--status", help="OPEN, ESCALATED, DISMISSED, CLOSED, several separated by commas, or ALL "
                                    "(default OPEN)")
    p.add_argument("--limit", type=bounded_int("--limit", limits.SEARCH_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.SEARCH_LIMIT)})")
    p = g.command("show", "a flag with both answers, the disagreeing words and its history", "conflicts:show")
    p.add_argument("id", help="the flag's id")
    p = g.command("escalate", "make both answers DISPUTED: their candidates go to the head of their queues for "
                              "re-review", "conflicts:escalate", mutates=True)
    p.add_argument("id", help="the flag's id")
    p.add_argument("--reason", help=f"what the re-reviewers should know (at most {limits.REASON:,} characters)")
    p = g.command("dismiss", "judge the answers consistent: the pair is not flagged again unless one changes",
                  "conflicts:dismiss", mutates=True)
    p.add_argument("id", help="the flag's id")
    p.add_argument("--reason", help=f"why they do not contradict each other (required; at most "
                                    f"{limits.REASON:,} characters)")
