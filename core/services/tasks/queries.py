"""Reading tasks: one task, its events with their signatures, the list, the export."""
from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg.types.json import Jsonb

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import limits
from ...errors import NotFound
from ...events import event_hash, hashed_fields, trust_store, verify_signature
from ...machines.task import TASK
from ..common import one_state, parse_id
from .fold import AGGREGATE, STATES, at_text
from .sources import render, status_said, statuses

if TYPE_CHECKING:
    from ...context import Context


def get(ctx: Context, task_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(engine.read(tx, TASK, parse_id(task_id, "durable task")))


def show(ctx: Context, task_id) -> dict:
    """A task, its next states and its events: one transaction, the row read once (the articles
    screen's detail, at each highlighted row)."""
    keys = trust_store(ctx.settings)
    with ctx.db.read() as tx:
        task = public_row(engine.read(tx, TASK, parse_id(task_id, "durable task")))
        rows = _event_rows(tx, task["id"])
        now_ = statuses(tx, task.get("sources") or [])
    # `article`: what `tasks export` prints; each source with its registry status now.
    return {**task, "next_states": [s for s in TASK.next_states(task["state"]) if s != task["state"]],
            "events": with_signatures(rows, keys), "article": render(task, now_),
            "sources": [{**s, "status": status_said(now_[s["answer_id"]]) if s["answer_id"] in now_ else "missing"}
                        for s in task.get("sources") or []]}


def _event_rows(tx: Tx, task_id: int) -> list[dict]:
    return tx.all("SELECT * FROM events WHERE aggregate_type = %s AND aggregate_id = %s ORDER BY seq",
                  (AGGREGATE, str(task_id)))


def events(ctx: Context, task_id, *, trust=None) -> list[dict]:
    """The task's typed events, oldest first, each with its signature status under the trust store."""
    tid = parse_id(task_id, "durable task")
    keys = trust if trust is not None else trust_store(ctx.settings)
    with ctx.db.read() as tx:
        if not tx.one("SELECT 1 FROM durable_tasks WHERE id = %s", (tid,)):
            raise NotFound(f"no durable task {task_id}")
        rows = _event_rows(tx, tid)
    return with_signatures(rows, keys)


def with_signatures(rows: list[dict], keys: dict) -> list[dict]:
    """One aggregate's event rows (all of them, oldest first) as shown, each with its signature
    status under `keys`: verified, broken (hash or chain link), untrusted key or bad signature."""
    out, prev = [], ""
    for r in rows:
        digest = event_hash(hashed_fields(r["aggregate_type"], r["aggregate_id"], r["seq"], r["type"], r["actor"],
                                          r["payload"], r["created_at"], r["idempotency_key"], r["prev_hash"]))
        key = keys.get(r["key_id"])
        if digest != r["hash"] or r["prev_hash"] != prev:
            status = "broken"
        elif key is None:
            status = "untrusted key"
        else:
            status = "verified" if verify_signature(key, bytes(r["signature"]), r["hash"]) else "bad signature"
        prev = r["hash"]
        payload = r["payload"]
        out.append({"seq": r["seq"], "type": r["type"], "actor": r["actor"], "at": at_text(r["created_at"]),
                    "from": payload.get("from"), "to": payload.get("to"), "data": payload.get("data"),
                    "idempotency_key": r["idempotency_key"], "signature": status})
    return out


def list_tasks(ctx: Context, state: str | None = None, reviewer: str | None = None, *, limit: int = 200,
               offset: int = 0) -> list[dict]:
    where, params = [], []
    if state:
        where.append("state = %s")
        params.append(one_state(state, STATES, "task state"))
    if reviewer:
        where.append("reviewers @> %s")
        params.append(Jsonb([{"name": limits.text(reviewer, "a reviewer", limits.QUERY)}]))
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    sql = (f"SELECT id, title, state, created_by, ai_confidence_score, jsonb_array_length(flagged_claims) AS flagged, "
           f"reviewers, approvals, supersedes_id, superseded_by, created_at, updated_at, version FROM durable_tasks "
           f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY id DESC LIMIT %s OFFSET %s")
    with ctx.db.read() as tx:
        rows = tx.all(sql, [*params, limit, offset])
    return [{**public_row(r), "reviewers": [x["name"] for x in r["reviewers"]],
             "approvals": [x["reviewer"] for x in r["approvals"]]} for r in rows]


def export(ctx: Context, task_id) -> str:
    """The article rendered with its sources, each marked with its registry status as it is now (a
    source superseded since publication says so); a task not yet published renders as it stands."""
    with ctx.db.read() as tx:
        task = public_row(engine.read(tx, TASK, parse_id(task_id, "durable task")))
        return render(task, statuses(tx, task.get("sources") or []))
