"""What a candidate looks like to a reader: one candidate with its sources, answer and history;
lists; the queues' figures. Reads only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...adapters.postgres import public_row
from ...domain import HORN_TYPES, limits, parse_horn_type
from ...events import now
from ...machines.candidate import CANDIDATE
from ..answers.registry import current_answer
from ..common import event_history, fetch, one_state
from . import queue_index

if TYPE_CHECKING:
    from ...context import Context


def get(ctx: Context, candidate_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(fetch(tx, "candidates", "candidate", candidate_id))


def show(ctx: Context, candidate_id) -> dict:
    """The candidate with its source passages, its answer and its history, for review."""
    with ctx.db.read() as tx:
        row = fetch(tx, "candidates", "candidate", candidate_id)
        cid = row["id"]
        sources = []
        for ref in row["source_refs"] or []:
            doc_id = ref.get("document_id")
            if doc_id is None:
                sources.append({**ref, "passage": None})
                continue
            span = ref.get("span") or [0, 0]
            doc = tx.one("SELECT title, path, substr(content, greatest(1, %s - 300), %s + 600) AS excerpt, "
                         "greatest(0, %s - 300) AS excerpt_start, length(content) AS length "
                         "FROM source_documents WHERE id = %s",
                         (span[0] + 1, span[1] - span[0], span[0], doc_id))
            if doc:
                start = span[0] - doc["excerpt_start"]
                excerpt, match = _whole_lines(doc["excerpt"], [start, start + span[1] - span[0]],
                                             cut_before=doc["excerpt_start"] > 0,
                                             cut_after=doc["excerpt_start"] + len(doc["excerpt"]) < doc["length"])
                sources.append({**ref, "title": doc["title"], "excerpt": excerpt, "match": match})
        answer = current_answer(tx, cid)
        work_item = linked_work_item(tx, row)
        history_rows = event_history(tx, "candidate", cid)
    return {**public_row(row), "sources": sources, "answer": public_row(answer), "work_item": work_item,
            "history": history_rows}


def linked_work_item(tx, row: dict) -> dict | None:
    """The work item a candidate is linked to ({id, state, link}): the one it was generated from
    (`link` "generated from"), else the one its escalation opened ("escalated to"); None."""
    if row.get("work_item_id") is not None:
        item = tx.one("SELECT id, state FROM work_items WHERE id = %s", (row["work_item_id"],))
        link = "generated from"
    else:
        item = tx.one("SELECT id, state FROM work_items WHERE candidate_id = %s ORDER BY id DESC LIMIT 1", (row["id"],))
        link = "escalated to"
    return {"id": item["id"], "state": item["state"], "link": link} if item else None


def _whole_lines(excerpt: str, match: list[int], *, cut_before: bool, cut_after: bool) -> tuple[str, list[int]]:
    """An excerpt cut out of a document by characters, trimmed so that it opens and closes on
    whole lines (else whole words) and never mid-word; the match moves with it, never cut."""
    start, end = match
    if cut_before:
        head = excerpt[:start]
        brk = head.find("\n")
        brk = brk if brk >= 0 else head.find(" ")
        drop = brk + 1 if brk >= 0 else 0
        excerpt, start, end = excerpt[drop:], start - drop, end - drop
    if cut_after:
        tail = excerpt[end:]
        brk = tail.rfind("\n")
        brk = brk if brk >= 0 else tail.rfind(" ")
        if brk >= 0:
            excerpt = excerpt[:end + brk]
    return excerpt, [start, end]


def history(ctx: Context, candidate_id) -> list[dict]:
    with ctx.db.read() as tx:
        return event_history(tx, "candidate", fetch(tx, "candidates", "candidate", candidate_id)["id"])


def list_candidates(ctx: Context, state: str | None = None, horn_type: str | None = None, *, limit: int = 100,
                    offset: int = 0, claimed_by: str | None = None) -> list[dict]:
    where, params = [], []
    if state:
        where.append("state = %s")
        params.append(one_state(state, sorted(CANDIDATE.states), "candidate state"))
    if horn_type:
        where.append("horn_type = %s")
        params.append(parse_horn_type(horn_type))
    if claimed_by:
        where.append("claimed_by = %s")
        params.append(limits.text(claimed_by, "a user name", limits.QUERY))
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    sql = (f"SELECT id, question, text, horn_type, state, origin, claimed_by, lease_expires_at, version, created_at "
           f"FROM candidates {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY id LIMIT %s OFFSET %s")
    with ctx.db.read() as tx:
        return [public_row(r) for r in tx.all(sql, [*params, limit, offset])]


def queue_stats(ctx: Context) -> list[dict]:
    """Per Horn type: pending, in review, disputed awaiting re-review, oldest pending age; and how
    many ids the Redis partition holds (`queued`), rebuilt first if Redis lost them. The counts are
    `queue_counts`' (migration 0028), kept in the transaction of every move, so exact and read in
    a few rows whatever the queues hold; the oldest is one step down an index."""
    queue_index.reconcile_if_lost(ctx)
    with ctx.db.read() as tx:
        counts = queue_index.counts(tx)
        rows = {r["horn_type"]: r for r in tx.all(
            "SELECT h AS horn_type, "
            " (SELECT min(created_at) FROM candidates WHERE horn_type = h AND state = 'PENDING') AS oldest "
            "FROM unnest(%s::text[]) AS h", (list(HORN_TYPES),))}
    for horn, r in rows.items():
        r.update({key: counts.get((horn, state), 0) for key, state in
                  (("pending", "PENDING"), ("in_review", "IN_REVIEW"), ("disputed", "DISPUTED"))})
    at = now()
    q = queue_index.queue(ctx)
    out = []
    for horn in HORN_TYPES:
        r = rows[horn]
        oldest = r["oldest"]
        out.append({"horn_type": horn, "pending": r["pending"], "in_review": r["in_review"],
                    "disputed": r["disputed"], "queued": q.length(horn),
                    "oldest_pending_age_seconds": round((at - oldest).total_seconds()) if oldest else None})
    return out


