"""conflicts: approved answers that contradict each other, and turning them into disputes."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int
from ..output import Table, Text

COLUMNS = ["id", "status", "kind", "answer_id", "other_answer_id", "subject", "detail", "version"]


def register(commands) -> None:
    g = commands.group("conflicts", "answers that contradict each other: list, show, escalate to a dispute, "
                                    "dismiss")
    p = g.command("list", "list flags, newest first (open ones unless --status says otherwise)", list_cmd)
    p.add_argument("--status", help="OPEN, ESCALATED, DISMISSED, CLOSED, several separated by commas, or ALL "
                                    "(default OPEN)")
    p.add_argument("--limit", type=bounded_int("--limit", limits.SEARCH_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.SEARCH_LIMIT)})")
    p = g.command("show", "a flag with both answers, the disagreeing words and its history", show)
    p.add_argument("id", help="the flag's id")
    p = g.command("escalate", "make both answers DISPUTED: their candidates go to the head of their queues for "
                              "re-review", escalate, mutates=True)
    p.add_argument("id", help="the flag's id")
    p.add_argument("--reason", help=f"what the re-reviewers should know (at most {limits.REASON:,} characters)")
    p = g.command("dismiss", "judge the answers consistent: the pair is not flagged again unless one changes",
                  dismiss, mutates=True)
    p.add_argument("id", help="the flag's id")
    p.add_argument("--reason", help=f"why they do not contradict each other (required; at most "
                                    f"{limits.REASON:,} characters)")


def list_cmd(cli, args):
    from r2k.core.services import conflicts

    cli.actor
    return Table(conflicts.list_flags(cli.ctx, args.status, limit=args.limit), COLUMNS)


def show(cli, args):
    from r2k.core.services import conflicts

    cli.actor
    flag = conflicts.show(cli.ctx, args.id)
    lines = [f"Conflict {flag['id']}  {flag['status']}  version {flag['version']}  ({flag['kind']}, "
             f"found by {flag['judge']})",
             f"Subject: {flag['subject']}", f"Disagree: {flag['detail']}"]
    for side in ("answer", "other"):
        a = flag[side]
        if a:
            lines += ["", f"Answer {a['id']} ({a['status']}, {a['horn_type']}): {a['question']}", f"  {a['text']}"]
    if flag.get("dismissed_reason"):
        lines += ["", f"Dismissed: {flag['dismissed_reason']}"]
    if flag.get("reason"):
        lines += ["", f"Reason: {flag['reason']}"]
    lines += ["", "History:"] + [f"  {h['at']}  {h['actor']}  {h['action']}  {h['from'] or '—'} → {h['to']}"
                                 + (f"  ({h['reason']})" if h.get("reason") else "") for h in flag["history"]]
    return Text(flag, "\n".join(lines))


def escalate(cli, args):
    from r2k.core.services import conflicts

    return conflicts.escalate(cli.ctx, cli.actor, args.id, args.reason, **cli.opts())


def dismiss(cli, args):
    from r2k.core.services import conflicts

    return conflicts.dismiss(cli.ctx, cli.actor, args.id, args.reason, **cli.opts())
