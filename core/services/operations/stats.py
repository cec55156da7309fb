"""Your progress (`r2k stats`, the workstation's "My work" screen): plain SQL over the validation
records, the event log and the registry, read in one snapshot.

- A *decision* is a validation record: approve, revise, reject or escalate (docs/architecture.md,
  Reactions: each of these writes one). It counts for its actor, unless it was undone.
- *Today* starts at the local midnight of the process asking; the window starts `since` ago
  (`--since 7d`, the default a week).
- *Time per decision* runs from the claim (the last `claim` or `re_review` event of the candidate
  before the decision) to the decision; the median is over the window.
- *Approvals later disputed or superseded*: answers the user published in the window (approve or
  revise) that were since disputed (a `dispute` event in the answer's chain) or superseded.
- Per queue (Horn type) the user holds: its depth (candidates waiting, pending or disputed), the age
  of its oldest pending candidate and the time left at the team's current rate (every validator's
  decisions on that Horn type over the last hour).

A validator or specialist sees their own figures; an admin anyone's, and the per-validator table.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ...domain import HORN_TYPES, Actor
from ...errors import Forbidden, InvalidInput, NotFound
from ...events import now

if TYPE_CHECKING:
    from ...context import Context

KINDS = ("approve", "revise", "reject", "escalate")
DEFAULT_SINCE = "7d"
RATE_WINDOW = timedelta(hours=1)  # the team's "current" rate
# A decision taken back with undo does not count: the candidate its undo made names it (`undo_of`).
NOT_UNDONE = "NOT EXISTS (SELECT 1 FROM candidates u WHERE u.undo_of = v.candidate_id)"
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
SPAN = re.compile(r"\s*(\d{1,7})\s*([mhdw])\s*", re.IGNORECASE)
MAX_SINCE = timedelta(days=3660)


def parse_since(text: str | None) -> timedelta:
    """`30m`, `12h`, `7d` or `2w` as a duration, from one minute to ten years; else a 400 that says so."""
    text = DEFAULT_SINCE if text is None else str(text)
    match = SPAN.fullmatch(text)
    if not match:
        raise InvalidInput(f"--since is a duration such as 30m, 12h, 7d or 2w (minutes, hours, days, weeks), "
                           f"got {text!r}")
    span = timedelta(seconds=int(match[1]) * _UNITS[match[2].lower()])
    if not timedelta(minutes=1) <= span <= MAX_SINCE:
        raise InvalidInput(f"--since is from 1m to 3660d (ten years), got {text!r}")
    return span


def _start_of_today(at: datetime) -> datetime:
    local = at.astimezone()
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _kinds(rows: list[dict], key: str) -> dict:
    counts = {k: 0 for k in KINDS}
    for r in rows:
        if r[key]:
            counts[r["action"]] = counts.get(r["action"], 0) + r[key]
    counts["total"] = sum(counts.values())
    return counts


def _visible_user(ctx: Context, actor: Actor, user: str | None) -> str:
    name = actor.name if user is None else str(user).strip()
    if name != actor.name:
        if actor.role != "admin":
            raise Forbidden(f"{actor.name} ({actor.role}) may see only their own figures: "
                            "an admin sees anyone's (`r2k stats --user NAME`)")
        with ctx.db.read() as tx:
            if tx.scalar("SELECT 1 FROM users WHERE name = %s", (name,)) is None:
                raise NotFound(f"no user named {name!r}: `r2k users list` names them")
    return name


# The claim before each decision: the candidate's chain read backwards on its unique index.
_CLAIMED = ("LEFT JOIN LATERAL (SELECT e.created_at FROM events e WHERE e.aggregate_type = 'candidate' "
            "AND e.aggregate_id = v.candidate_id::text AND e.type IN ('claim', 're_review') "
            "AND e.created_at <= v.created_at ORDER BY e.seq DESC LIMIT 1) c ON true ")


def user_stats(ctx: Context, actor: Actor, user: str | None = None, since: str | None = None) -> dict:
    """One user's figures (the acting user's unless an admin names another)."""
    span = parse_since(since)
    name = _visible_user(ctx, actor, user)
    at = now()
    today = _start_of_today(at)
    start = min(at - span, today)  # the window always holds today
    with ctx.db.read() as tx:
        role = tx.one("SELECT role, horn_types FROM users WHERE name = %s", (name,))
        by_kind = tx.all(
            "SELECT action, count(*) FILTER (WHERE created_at >= %s) AS today, "
            "count(*) FILTER (WHERE created_at >= %s) AS in_window FROM validation_records v "
            f"WHERE actor = %s AND created_at >= %s AND {NOT_UNDONE} GROUP BY action",
            (today, at - span, name, start))
        hours = tx.all(
            "SELECT floor(extract(epoch FROM created_at - %s) / 3600)::int AS hour, count(*) AS n "
            f"FROM validation_records v WHERE actor = %s AND created_at >= %s AND {NOT_UNDONE} GROUP BY 1",
            (today, name, today))
        median = tx.scalar(
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM v.created_at - c.created_at)) "
            f"FROM validation_records v {_CLAIMED}WHERE v.actor = %s AND v.created_at >= %s "
            f"AND c.created_at IS NOT NULL AND {NOT_UNDONE}", (name, at - span))
        answers = tx.one(
            "SELECT count(*) AS published, count(*) FILTER (WHERE status = 'SUPERSEDED') AS superseded, "
            "count(*) FILTER (WHERE status = 'DISPUTED' OR EXISTS (SELECT 1 FROM events e "
            " WHERE e.aggregate_type = 'answer' AND e.aggregate_id = a.id::text AND e.type = 'dispute')) AS disputed "
            "FROM approved_answers a WHERE published_by = %s AND created_at >= %s "
            "AND NOT EXISTS (SELECT 1 FROM candidates u WHERE u.undo_of = a.candidate_id)", (name, at - span))
        held = _held(role)
        queues = _queues(tx, held, at)
    hourly = [0] * 24
    for r in hours:
        if 0 <= r["hour"] < 24:
            hourly[r["hour"]] = r["n"]
    hours_today = max((at - today).total_seconds() / 3600, 1 / 60)
    today_kinds = _kinds(by_kind, "today")
    return {
        "user": name, "at": at, "today_from": today, "since": at - span, "since_text": since or DEFAULT_SINCE,
        "today": today_kinds, "window": _kinds(by_kind, "in_window"),
        "hourly": hourly, "current_hour": min(int((at - today).total_seconds() // 3600), 23),
        "rate_per_hour_today": round(today_kinds["total"] / hours_today, 1),
        "median_seconds": None if median is None else round(float(median), 1),
        "approvals": {"published": answers["published"], "disputed": answers["disputed"],
                      "superseded": answers["superseded"]},
        "queues": queues,
    }


def _held(role: dict | None) -> list[str]:
    """The queues a user holds: a validator's Horn types, every queue for a specialist or admin."""
    if role is None or role["role"] != "validator":
        return list(HORN_TYPES)
    return [h for h in HORN_TYPES if h in set(role["horn_types"] or [])]


def _queues(tx, horn_types: list[str], at: datetime) -> list[dict]:
    if not horn_types:
        return []
    rows = tx.all(
        "SELECT h AS horn_type, "
        " (SELECT coalesce(sum(n), 0)::bigint FROM queue_counts WHERE horn_type = h "  # kept with each move
        "   AND state IN ('PENDING', 'DISPUTED')) AS depth, "
        " (SELECT min(created_at) FROM candidates WHERE horn_type = h AND state = 'PENDING') AS oldest, "
        " (SELECT count(*) FROM validation_records v JOIN candidates c ON c.id = v.candidate_id "
        "   WHERE v.created_at >= %s AND c.horn_type = h) AS last_hour "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS q(h, n) ORDER BY n", (at - RATE_WINDOW, horn_types))
    out = []
    for r in rows:
        rate = r["last_hour"] / (RATE_WINDOW.total_seconds() / 3600)
        out.append({"horn_type": r["horn_type"], "depth": r["depth"],
                    "oldest_age_seconds": round((at - r["oldest"]).total_seconds()) if r["oldest"] else None,
                    "team_rate_per_hour": round(rate, 1),
                    "time_left_seconds": (0 if not r["depth"] else round(r["depth"] / rate * 3600) if rate else None)})
    return out


def team_stats(ctx: Context, actor: Actor, since: str | None = None) -> dict:
    """Every validator's figures side by side, and every queue: an admin's view."""
    span = parse_since(since)
    if actor.role != "admin":
        raise Forbidden(f"{actor.name} ({actor.role}) may not see every validator's figures: only an admin may")
    at = now()
    today = _start_of_today(at)
    start = at - span
    with ctx.db.read() as tx:
        people = tx.all("SELECT name, role FROM users WHERE role = 'validator' "
                        "OR name IN (SELECT DISTINCT actor FROM validation_records WHERE created_at >= %s) "
                        "ORDER BY name", (min(start, today),))
        decided = tx.all(
            "SELECT actor, action, count(*) FILTER (WHERE created_at >= %s) AS today, "
            "count(*) FILTER (WHERE created_at >= %s) AS in_window FROM validation_records v "
            f"WHERE created_at >= %s AND {NOT_UNDONE} GROUP BY actor, action", (today, start, min(start, today)))
        medians = {r["actor"]: r["median"] for r in tx.all(
            "SELECT v.actor, percentile_cont(0.5) WITHIN GROUP "
            "(ORDER BY extract(epoch FROM v.created_at - c.created_at)) AS median "
            f"FROM validation_records v {_CLAIMED}WHERE v.created_at >= %s AND c.created_at IS NOT NULL "
            f"AND {NOT_UNDONE} GROUP BY v.actor", (start,))}
        answers = {r["published_by"]: r for r in tx.all(
            "SELECT published_by, count(*) AS published, count(*) FILTER (WHERE status = 'SUPERSEDED') AS superseded, "
            "count(*) FILTER (WHERE status = 'DISPUTED' OR EXISTS (SELECT 1 FROM events e "
            " WHERE e.aggregate_type = 'answer' AND e.aggregate_id = a.id::text AND e.type = 'dispute')) AS disputed "
            "FROM approved_answers a WHERE created_at >= %s "
            "AND NOT EXISTS (SELECT 1 FROM candidates u WHERE u.undo_of = a.candidate_id) GROUP BY published_by",
            (start,))}
        queues = _queues(tx, list(HORN_TYPES), at)
    rows = []
    for person in people:
        mine = [r for r in decided if r["actor"] == person["name"]]
        window, day = _kinds(mine, "in_window"), _kinds(mine, "today")
        a = answers.get(person["name"]) or {"published": 0, "disputed": 0, "superseded": 0}
        median = medians.get(person["name"])
        rows.append({"user": person["name"], "role": person["role"], "today": day["total"], **window,
                     "median_seconds": None if median is None else round(float(median), 1),
                     "disputed": a["disputed"], "superseded": a["superseded"]})
    return {"at": at, "today_from": today, "since": start, "since_text": since or DEFAULT_SINCE,
            "validators": rows, "queues": queues}
