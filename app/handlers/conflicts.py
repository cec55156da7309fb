"""conflicts: approved answers that contradict each other, and turning them into disputes. The
handlers of the tree in app/commands/conflicts.py."""
from __future__ import annotations

from r2k.core.services.contradictions import conflicts

from ..output import Table, Text

COLUMNS = ["id", "status", "kind", "answer_id", "other_answer_id", "subject", "detail", "version"]


def list_cmd(cli, args):
    cli.actor
    return Table(conflicts.list_flags(cli.ctx, args.status, limit=args.limit), COLUMNS)


def show(cli, args):
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
    return conflicts.escalate(cli.ctx, cli.actor, args.id, args.reason, **cli.opts())


def dismiss(cli, args):
    return conflicts.dismiss(cli.ctx, cli.actor, args.id, args.reason, **cli.opts())
