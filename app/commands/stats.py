"""stats: your progress, or an admin's view of every validator (core/services/operations/stats.py). The command
tree; the handlers are app/handlers/stats.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    p = commands.command("stats", "your progress: decisions today and this week, rate, time per decision, "
                         "your approvals later disputed or superseded, and your queues", "stats:stats_cmd")
    p.add_argument("--user", metavar="NAME", help="another user's figures (admins only)")
    p.add_argument("--all", action="store_true", help="every validator side by side (admins only; "
                   "what an admin sees without --user)")
    p.add_argument("view", nargs="?", choices=["agreement"], metavar="agreement",
                   help="`agreement`: the validators' agreement under overlap (admins only), per queue and per "
                        "pair, as Krippendorff's alpha (nominal, over the decisions) and raw percent agreement, "
                        "over the review rounds closed in the window (the last 30 days by default)")
    p.add_argument("--since", metavar="SPAN", help="the window: 30m, 12h, 7d (the default) or 2w; for agreement, "
                   "also an ISO date or time")
    p.add_argument("--until", metavar="WHEN", help="agreement only: the window's end (a span back from now or an "
                   "ISO date or time; now by default)")
    p.add_argument("--days", metavar="N", help="agreement only: the last N days")
    p.add_argument("--horn", metavar="HORN_TYPE", help="agreement only: one queue")
