"""Agreement between validators under overlap (docs/architecture.md, "Overlap"): per queue and per
pair of validators, Krippendorff's alpha (nominal: the decision actions are categories) and raw
percent agreement, over the review rounds closed in a window.

`alpha` follows Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), section C
(nominal data, any number of coders, missing values): the coincidence matrix of the pairable values,
alpha = 1 - (n - 1) * (sum of off-diagonal o_ck) / (sum over c != k of n_c * n_k). The paper's
worked example (4 coders, 12 units, missing values) gives 0.743; tests/test_overlap.py checks it.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from datetime import UTC, datetime, timedelta
from itertools import combinations
from typing import TYPE_CHECKING

from ...adapters.postgres import public_row
from ...domain import Actor, parse_horn_type
from ...errors import Forbidden, InvalidInput
from ...events import now
from .stats import SPAN, parse_since

if TYPE_CHECKING:
    from ...context import Context


def alpha(units: Iterable[Iterable[Hashable]]) -> float | None:
    """Krippendorff's alpha, nominal, of `units` (each the values its coders gave, missing ones
    left out). Units with fewer than two values are not pairable and count for nothing. None when
    it is undefined: fewer than two pairable values, or all of them one category (no expected
    disagreement)."""
    coincidence: Counter = Counter()
    for unit in units:
        values = list(unit)
        m = len(values)
        if m < 2:
            continue
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    coincidence[(a, b)] += 1 / (m - 1)
    totals: Counter = Counter()
    for (a, _), weight in coincidence.items():
        totals[a] += weight
    n = sum(totals.values())
    if n < 2 or len(totals) < 2:
        return None
    observed = sum(w for (a, b), w in coincidence.items() if a != b)
    expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b)
    return 1 - (n - 1) * observed / expected


def percent(units: Iterable[Iterable[Hashable]]) -> float | None:
    """Raw percent agreement: of every pair of values within a unit, the share that agree (a unit of
    two coders is one pair, agreeing or not). None when there is no pair."""
    agreeing = pairs = 0
    for unit in units:
        for a, b in combinations(list(unit), 2):
            pairs += 1
            agreeing += a == b
    return 100 * agreeing / pairs if pairs else None


# ----------------------------------------------------------------------------- the window

def window(since: str | None = None, until: str | None = None, days=None) -> tuple[datetime, datetime]:
    """--days N (the last N days, 30 by default) or --since/--until, each a span back from now (7d)
    or an ISO date or time (UTC unless it says)."""
    end = now()
    if days is not None and (since or until):
        raise InvalidInput("--days, or --since/--until: not both")
    if days is not None:
        text = str(days).strip()
        if not text.isdigit() or not 1 <= int(text) <= 3660:
            raise InvalidInput(f"--days must be a whole number from 1 to 3660, not {str(days)[:40]!r}")
        return end - timedelta(days=int(text)), end
    start = _when(since, "--since") if since else end - timedelta(days=30)
    stop = _when(until, "--until") if until else end
    if stop <= start:
        raise InvalidInput("--until must come after --since")
    return start, stop


def _when(value: str, flag: str) -> datetime:
    """A moment: a span back from now (7d, 12h, as `r2k stats --since` takes) or an ISO date or time."""
    if SPAN.fullmatch(value.strip()):
        return now() - parse_since(value.strip())
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(f"{flag} must be a span (7d, 12h) or an ISO date or time (2026-12-01, 2026-12-01T09:00), not "
                           f"{value[:40]!r}") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


# ----------------------------------------------------------------------------- the figures

def agreement(ctx: Context, actor: Actor, *, horn_type: str | None = None, since: str | None = None,
              until: str | None = None, days=None) -> dict:
    """Per queue and per pair of validators, over the review rounds closed in the window (an admin:
    it names every validator, as the team's stats do): units (rounds), alpha and percent agreement."""
    if actor.role != "admin":
        raise Forbidden(f"{actor.name} ({actor.role}) may not see the validators' agreement: only an admin may")
    horn = parse_horn_type(horn_type) if horn_type else None
    start, stop = window(since, until, days)
    with ctx.db.read() as tx:
        rows = tx.all("SELECT r.candidate_id, r.round, r.actor, r.action, c.horn_type FROM candidate_reviews r "
                      "JOIN candidates c ON c.id = r.candidate_id "
                      "WHERE r.status IN ('agreed', 'disagreed') AND r.closed_at >= %s AND r.closed_at < %s "
                      "AND (%s::text IS NULL OR c.horn_type = %s) ORDER BY r.candidate_id, r.round, r.id",
                      (start, stop, horn, horn))
    return figures([public_row(r) for r in rows]) | {"since": start.isoformat(), "until": stop.isoformat(),
                                                      "horn_type": horn}


def per_queue(tx, days: int = 30, *, pairs: bool = False) -> dict:
    """The dashboard's figures: candidates awaiting adjudication and each queue's agreement over the
    rounds closed in the last `days` days (no validator named, so anyone's); with `pairs` (an admin's
    dashboard, as `stats agreement` is an admin's), each pair of validators' too."""
    rows = tx.all("SELECT r.candidate_id, r.round, r.actor, r.action, c.horn_type FROM candidate_reviews r "
                  "JOIN candidates c ON c.id = r.candidate_id WHERE r.status IN ('agreed', 'disagreed') "
                  "AND r.closed_at >= %s ORDER BY r.candidate_id, r.round, r.id", (now() - timedelta(days=days),))
    waiting = tx.scalar("SELECT count(*) FROM candidates WHERE state = 'ADJUDICATION'")
    found = figures(rows)
    return {"adjudication": int(waiting or 0), "days": days, "queues": found["queues"],
            **({"pairs": found["pairs"]} if pairs else {})}


def figures(rows: list[dict]) -> dict:
    """The figures of review rows (candidate_id, round, actor, action, horn_type)."""
    units: dict[tuple, dict] = {}
    for r in rows:
        unit = units.setdefault((r["candidate_id"], r["round"]), {"horn_type": r["horn_type"], "by": {}})
        unit["by"][r["actor"]] = r["action"]
    queues = []
    for horn in sorted({u["horn_type"] for u in units.values()}):
        mine = [list(u["by"].values()) for u in units.values() if u["horn_type"] == horn]
        queues.append({"horn_type": horn, "units": len(mine), "alpha": _round(alpha(mine)),
                       "percent": _round(percent(mine))})
    pairs = []
    people = sorted({name for u in units.values() for name in u["by"]})
    for a, b in combinations(people, 2):
        both = [[u["by"][a], u["by"][b]] for u in units.values() if a in u["by"] and b in u["by"]]
        if both:
            pairs.append({"pair": [a, b], "units": len(both), "alpha": _round(alpha(both)),
                          "percent": _round(percent(both))})
    every = [list(u["by"].values()) for u in units.values()]
    return {"units": len(every), "alpha": _round(alpha(every)), "percent": _round(percent(every)),
            "queues": queues, "pairs": pairs}


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None
