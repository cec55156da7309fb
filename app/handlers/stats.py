"""stats: your progress, or an admin's view of every validator (core/services/operations/stats.py). The
handlers of the tree in app/commands/stats.py."""
from __future__ import annotations

from r2k.core.errors import InvalidInput
from r2k.core.services.operations import agreement, stats

from ..output import Table, Text, per_decision, render_text, sparkline
from ..safe import visible
from ..widgets.format import span


def stats_cmd(cli, args):
    actor = cli.actor
    if args.view == "agreement":
        if args.all or args.user is not None:
            raise InvalidInput("stats agreement takes --horn, --since, --until and --days, not --all or --user")

        found = agreement.agreement(cli.ctx, actor, horn_type=args.horn, since=args.since, until=args.until,
                                    days=args.days)
        return Text(found, agreement_text(found))
    if args.until is not None or args.days is not None or args.horn is not None:
        raise InvalidInput("--until, --days and --horn go with `r2k stats agreement`")
    if args.all or (args.user is None and actor.role == "admin"):
        if args.user is not None:
            raise InvalidInput("--all and --user cannot go together: --all shows every validator")
        team = stats.team_stats(cli.ctx, actor, since=args.since)
        return Text(team, team_text(team))
    mine = stats.user_stats(cli.ctx, actor, user=args.user, since=args.since)
    return Text(mine, user_text(mine))


def kinds_line(counts: dict) -> str:
    return " · ".join(f"{k} {v}" for k, v in counts.items())


def queues_table(queues: list[dict]) -> str:
    rows = [{"queue": q["horn_type"], "depth": q["depth"], "oldest": span(q["oldest_age_seconds"]),
             "team rate": f"{q['team_rate_per_hour']:g}/h", "time left": span(q["time_left_seconds"]) if q["depth"] else "empty"}
            for q in queues]
    return render_text(Table(rows, ["queue", "depth", "oldest", "team rate", "time left"]))


def user_text(s: dict) -> str:
    hour = s["current_hour"]
    lines = [
        f"{visible(s['user'], multiline=False)}: today since {s['today_from']:%H:%M}, and the last {s['since_text']}",
        f"decisions today      {kinds_line(s['today'])}",
        f"decisions last {s['since_text']:<6}{kinds_line(s['window'])}",
        f"per hour today       {sparkline(s['hourly'][:hour + 1])}  "
        f"({s['hourly'][hour]} this hour, {s['rate_per_hour_today']:g}/h on average; 00:00 to now)",
        f"time per decision    {per_decision(s['median_seconds'])} (median, claim to decision)",
        f"your approvals       published {s['approvals']['published']} · disputed {s['approvals']['disputed']}"
        f" · superseded {s['approvals']['superseded']} (last {s['since_text']})",
        "",
        queues_table(s["queues"]) if s["queues"] else "(you hold no queue)",
    ]
    return "\n".join(lines)


def team_text(t: dict) -> str:
    rows = [{**r, "median": per_decision(r["median_seconds"])} for r in t["validators"]]
    table = render_text(Table(rows, ["user", "today", "approve", "revise", "reject", "escalate", "total", "median",
                                     "disputed", "superseded"],
                              title=f"every validator: today since {t['today_from']:%H:%M}, "
                                    f"the other columns the last {t['since_text']}"))
    return table + "\n\n" + queues_table(t["queues"])


def agreement_text(found: dict) -> str:
    def said(value, suffix=""):
        return "—" if value is None else f"{value:g}{suffix}"

    head = (f"agreement over {found['units']} review round(s) closed from {found['since'][:16]} to "
            f"{found['until'][:16]}: alpha {said(found['alpha'])}, {said(found['percent'], '%')} agreeing")
    queues = [{"queue": q["horn_type"], "rounds": q["units"], "alpha": said(q["alpha"]),
               "agreement": said(q["percent"], "%")} for q in found["queues"]]
    pairs = [{"pair": " · ".join(visible(p, multiline=False) for p in r["pair"]), "rounds": r["units"],
              "alpha": said(r["alpha"]), "agreement": said(r["percent"], "%")} for r in found["pairs"]]
    parts = [head]
    if queues:
        parts.append(render_text(Table(queues, ["queue", "rounds", "alpha", "agreement"], title="per queue")))
    if pairs:
        parts.append(render_text(Table(pairs, ["pair", "rounds", "alpha", "agreement"], title="per pair of validators")))
    return "\n\n".join(parts)
