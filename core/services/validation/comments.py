"""Comments (docs/architecture.md, "Comments"): a note anyone who can log in leaves on a candidate,
an answer, a grey entry, a work item or an article task. Each is a row and its signed creation
event; none is ever edited or deleted (a correction is a new comment). An `@name` of a known user
is a mention: it is stored with the comment, and the live notice of the comment lets that user's
open workstation tell them.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import public_row
from ...domain import limits
from ...errors import InvalidInput, NotFound
from ..common import fetch
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...adapters.postgres import Tx
    from ...context import Context
    from ...domain import Actor

BODY = limits.REASON * 5  # 10,000 characters: a few paragraphs of discussion, not a document
# What each takes a comment on: its word on the command line, its aggregate type, its table, and how
# its id is named in an error.
ENTITIES = {
    "candidate": ("candidate", "candidates", "candidate"),
    "answer": ("answer", "approved_answers", "answer"),
    "grey": ("grey_entry", "grey_entries", "grey entry"),
    "workitem": ("work_item", "work_items", "work item"),
    "task": ("task", "durable_tasks", "durable task"),
}
_MENTION = re.compile(r"(?<![\w@.])@([A-Za-z0-9][A-Za-z0-9_.-]{0,99})")


def entity_of(word: str) -> tuple[str, str, str]:
    if word not in ENTITIES:
        raise InvalidInput(f"comments are on {', '.join(ENTITIES)}: got {word!r}")
    return ENTITIES[word]


def mentioned(body: str) -> list[str]:
    """The names `@name` in `body`, in order, each once (an e-mail address is no mention). A name
    may end a sentence: its trailing dots are not part of it."""
    names: list[str] = []
    for match in _MENTION.finditer(body):
        name = match.group(1).rstrip(".-")
        if name and name not in names:
            names.append(name)
    return names


def add(ctx: Context, actor: Actor, entity: str, entity_id, body: str, *,
        idempotency_key: str | None = None) -> dict:
    """A comment on one entity, which must exist (404). Its mentions are the known users it names."""
    aggregate, table, what = entity_of(entity)
    body = (limits.text(body, "a comment", BODY) or "").strip()
    if not body:
        raise InvalidInput("a comment needs text (--text)")

    def work(tx: Tx) -> dict:
        target = fetch(tx, table, what, entity_id)
        names = mentioned(body)
        known = [r["name"] for r in tx.all("SELECT name FROM users WHERE name = ANY(%s)", (names,))] if names else []
        mentions = [n for n in names if n in known]
        event = engine.record(tx, "comment", "comments", {
            "entity_type": aggregate, "entity_id": target["id"], "author": actor.name, "body": body,
            "mentions": mentions}, actor, event_type="add")
        return public_row(event.row)

    return in_unit_of_work(ctx, actor, "comments.add", {"entity": aggregate, "id": str(entity_id), "body": body}, work,
                           idempotency_key=idempotency_key)


def list_comments(ctx: Context, entity: str | None = None, entity_id=None, *, mentioning: str | None = None,
                  limit: int = 200, offset: int = 0) -> list[dict]:
    """The comments on one entity, oldest first (its id given), or on every entity of a kind, or
    those mentioning a user; newest first when no entity is named."""
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    where, params, order = [], [], "id DESC"
    with ctx.db.read() as tx:
        if entity is not None:
            aggregate, table, what = entity_of(entity)
            where.append("entity_type = %s")
            params.append(aggregate)
            if entity_id is not None:
                where.append("entity_id = %s")
                params.append(fetch(tx, table, what, entity_id)["id"])
                order = "id"
        elif entity_id is not None:
            raise InvalidInput("an id needs its kind: comments list KIND ID")
        if mentioning is not None:
            name = (limits.text(mentioning, "a user name", limits.QUERY) or "").strip()
            if not tx.one("SELECT 1 FROM users WHERE name = %s", (name,)):
                raise NotFound(f"no user {name!r}")
            where.append("mentions @> ARRAY[%s]")
            params.append(name)
        rows = tx.all(f"SELECT * FROM comments {'WHERE ' + ' AND '.join(where) if where else ''} "
                      f"ORDER BY {order} LIMIT %s OFFSET %s", [*params, limit, offset])
    return [public_row(r) for r in rows]


def show(ctx: Context, comment_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(fetch(tx, "comments", "comment", comment_id))
