"""Bulk actions (docs/architecture.md, "Bulk actions"): one request over many entities, each item
its own move in its own transaction, with its own event and its own idempotency key. An item that
fails is reported with its error and changes nothing of itself; the others go on. Nothing is half
applied to one item, because each item is one unit of work.
"""
from __future__ import annotations

from typing import Callable

from ..domain import limits, parse_id
from ..errors import InvalidInput, R2KError
from ..outage import service_error


def ids_of(given: list[str], what: str) -> list[int]:
    """The ids of a bulk request, each once in the order given; a 400 naming the first bad one."""
    if not given:
        raise InvalidInput(f"no {what} id given: name one or more, or --from-file FILE")
    out, seen = [], set()
    for value in given:
        entity_id = parse_id(value.strip() if isinstance(value, str) else value, what)
        if entity_id not in seen:
            seen.add(entity_id)
            out.append(entity_id)
    if len(out) > limits.BULK_IDS:
        raise InvalidInput(f"at most {limits.BULK_IDS:,} ids at once, got {len(out):,}")
    return out


def ids_in(text: str) -> list[str]:
    """The ids of an ids file: one a line; blank lines and what follows a `#` are left out."""
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def each(ids: list[int], move: Callable[[int, str | None], dict], *, idempotency_key: str | None = None,
         progress: Callable[[int, int], None] | None = None) -> dict:
    """`move(id, key)` for every id, each in its own unit of work. With `idempotency_key` K, item N
    is keyed `K:N`, so a repeat of the whole request returns each item's first result and applies
    nothing twice. Returns {"done", "failed", "items": [{"id", "ok", "result" | "error"}]}."""
    if idempotency_key is not None and ids and len(f"{idempotency_key}:{max(ids)}") > 200:
        raise InvalidInput("a bulk action's idempotency key is at most 200 characters with its items' ids "
                           f"(`KEY:ID`): this one leaves {200 - len(str(max(ids))) - 1}")
    items = []
    for n, entity_id in enumerate(ids, 1):
        key = f"{idempotency_key}:{entity_id}" if idempotency_key else None
        try:
            items.append({"id": entity_id, "ok": True, "result": move(entity_id, key)})
        except R2KError as exc:
            items.append({"id": entity_id, "ok": False, "error": exc.as_dict()})
        except Exception as exc:  # a server gone midway: that item and those after it say so
            translated = service_error(exc)
            if translated is None:
                raise
            items.append({"id": entity_id, "ok": False, "error": translated.as_dict()})
        if progress is not None:
            progress(n, len(ids))
    failed = sum(1 for item in items if not item["ok"])
    return {"done": len(items) - failed, "failed": failed, "items": items}
