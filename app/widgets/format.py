"""How the workstation writes times, durations, counts and long texts, and makes idempotency keys:
one version of each, so every screen and the CLI say "3m" or "just now" the same way (what a
decision or a registry move did is `app/wording.py`). Plain Python: the CLI imports it without
Textual."""
from __future__ import annotations

import math
import uuid
from datetime import datetime, timezone


def parse_time(value: str | None) -> datetime | None:
    """An ISO time from the core; None when missing or unreadable."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


def span(seconds: float | None) -> str:
    """A human duration, coarse enough to read at a glance: <1m, 3m, 2h, 4d; "—" when unknown."""
    if seconds is None:
        return "—"
    s = max(0.0, seconds)
    if s < 60:
        return "<1m"
    if s < 3600:
        return f"{int(s // 60)}m"
    if s < 86400:
        return f"{int(s // 3600)}h"
    return f"{int(s // 86400)}d"


def age(value: str | None, now: datetime | None = None) -> str:
    """How long ago an ISO time was, for a column ("3m"); empty when unknown."""
    at = parse_time(value)
    if at is None:
        return ""
    return span(((now or datetime.now(timezone.utc)) - at).total_seconds())


def ago(value: str | None, now: datetime | None = None) -> str:
    """How long ago an ISO time was, in words ("just now", "3m ago"); empty when unknown."""
    text = age(value, now)
    if not text:
        return ""
    return "just now" if text == "<1m" else f"{text} ago"


def until(value: str | None, now: datetime | None = None) -> str:
    """How long until an ISO time ("7d", rounded up), or "overdue"; empty when unknown."""
    at = parse_time(value)
    if at is None:
        return ""
    seconds = (at - (now or datetime.now(timezone.utc))).total_seconds()
    if seconds <= 0:
        return "overdue"
    if seconds < 60:
        return "<1m"
    for unit, size, below in (("m", 60, 3600), ("h", 3600, 86400), ("d", 86400, math.inf)):
        whole = math.ceil(seconds / size)
        if whole * size < below:
            return f"{whole}{unit}"
    return ""


def clip(text: str | None, width: int) -> str:
    """One line of at most `width` characters: white space folded, an ellipsis where cut."""
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def plural(n: int, one: str, many: str | None = None) -> str:
    """"1 work item", "3 work items", "2 entries"."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def new_idempotency_key() -> str:
    """One idempotency key per key press: a retried call never applies twice."""
    return uuid.uuid4().hex
