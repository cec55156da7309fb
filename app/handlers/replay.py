"""replay: every projection rebuilt from the events, compared, repaired. The handlers of the tree in
app/commands/replay.py."""
from __future__ import annotations

from r2k.core.services.operations import admin

from ..output import Text
from .audit import one_per_line


def replay_cmd(cli, args):
    if args.repair:
        return _repair(cli, admin.replay_repair(cli.ctx, cli.admin("run `r2k replay --repair`")))
    report = admin.replay(cli.ctx)
    if report["ok"]:
        text = f"ok: {report['events']} events rebuild all {report['rows']} rows exactly"
    else:
        lines = [f"{len(report['differences'])} difference(s) between events and tables:"]
        for d in report["differences"][:50]:
            where = f"{d['aggregate_type']} {d['id']}" + (f".{d['column']}" if d.get("column") else "")
            what = d.get("problem") or f"events say {d['from_events']!r}, table has {d['in_table']!r}"
            lines.append(f"  {where}: {what}")
        text = one_per_line(lines)
    return Text(report, text), (0 if report["ok"] or not args.verify else 1)


def _repair(cli, report: dict):
    """What `replay --repair` changed, a line each; exit 1 when differences remain."""
    lines = [f"repaired {len(report['changed'])} difference(s); {len(report['left'])} left"
             + ("; every projection now matches its events" if report["ok"] else "")]
    for c in report["changed"][:200]:
        where = f"{c['aggregate_type']} {c['id']}" + (f".{c['column']}" if c.get("column") else "")
        lines.append(f"  {where}: " + (c.get("change") or f"{c['from']!r} -> {c['to']!r}"))
    for d in report["left"][:50]:
        where = f"{d['aggregate_type']} {d['id']}" + (f".{d['column']}" if d.get("column") else "")
        lines.append(f"  left {where}: {d['why']}")
    return Text(report, one_per_line(lines)), (0 if report["ok"] else 1)
