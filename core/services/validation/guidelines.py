"""Guidelines per Horn queue (docs/architecture.md, "Guidelines"): Markdown that tells the validators
of one queue how to judge its candidates. An admin writes a new version; every version is kept, a
row and its signed event each (`number` counts a queue's versions: 1, 2, …). The review screen shows
the one in force, and each decision records its number.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import public_row
from ...domain import limits, parse_horn_type
from ...errors import Forbidden, InvalidInput, NotFound
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...adapters.postgres import Tx
    from ...context import Context
    from ...domain import Actor

BODY = 100_000  # characters: a few pages of Markdown, as an article may be


def set_guidelines(ctx: Context, actor: Actor, horn_type: str, body: str, *,
                   idempotency_key: str | None = None) -> dict:
    """A new version of the queue's guidelines (an admin); the same text as the one in force is a
    400, so a repeat makes no empty version."""
    may_write(actor)
    horn = parse_horn_type(horn_type)
    body = (limits.text(body, "guidelines", BODY) or "").strip()
    if not body:
        raise InvalidInput("guidelines need text (--file)")

    def work(tx: Tx) -> dict:
        # One writer per queue at a time: the next number is taken under the queue's lock.
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('queue_guidelines:' || %s))", (horn,))
        current = in_force(tx, horn)
        if current is not None and current["body"] == body:
            raise InvalidInput(f"the {horn} guidelines in force (version {current['number']}) already say this")
        number = (current["number"] if current else 0) + 1
        event = engine.record(tx, "guidelines", "queue_guidelines", {
            "horn_type": horn, "number": number, "body": body, "author": actor.name}, actor, event_type="write")
        return public_row(event.row)

    return in_unit_of_work(ctx, actor, "queue.guidelines", {"horn_type": horn, "body": body}, work,
                           idempotency_key=idempotency_key)


def may_write(actor: Actor) -> None:
    """Only an admin writes guidelines (a 403 before anything is read)."""
    if actor.role != "admin":
        raise Forbidden(f"{actor.name} ({actor.role}) may not write guidelines: only an admin may")


def in_force(tx: Tx, horn_type: str) -> dict | None:
    return tx.one("SELECT * FROM queue_guidelines WHERE horn_type = %s ORDER BY number DESC LIMIT 1", (horn_type,))


def number_in_force(tx: Tx, horn_type: str) -> int | None:
    """The version a decision on this queue is made under now (None while it has none)."""
    return tx.scalar("SELECT max(number) FROM queue_guidelines WHERE horn_type = %s", (horn_type,))


def show(ctx: Context, horn_type: str, number: int | None = None) -> dict | None:
    """The guidelines in force (or version `number`); None while the queue has none."""
    horn = parse_horn_type(horn_type)
    with ctx.db.read() as tx:
        if number is None:
            return public_row(in_force(tx, horn))
        row = tx.one("SELECT * FROM queue_guidelines WHERE horn_type = %s AND number = %s", (horn, number))
    if row is None:
        raise NotFound(f"no version {number} of the {horn} guidelines")
    return public_row(row)


def history(ctx: Context, horn_type: str) -> list[dict]:
    """Every version, newest first, without its text."""
    horn = parse_horn_type(horn_type)
    with ctx.db.read() as tx:
        rows = tx.all("SELECT id, horn_type, number, author, created_at, length(body) AS characters "
                      "FROM queue_guidelines WHERE horn_type = %s ORDER BY number DESC", (horn,))
    return [public_row(r) for r in rows]
