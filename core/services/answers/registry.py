"""The registry of approved answers: publish, search, chain, readout, supersede, dispute, retire.
Nothing is ever deleted; a published answer's content never changes (a trigger in the schema
refuses both); only its status moves, each move an event. What follows a move (the candidate's
re-review, the graph mirror, live notices) is in the reactions table (core/reactions.py).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM, Actor, limits
from ...engine import Event
from ...errors import InvalidInput
from ...machines.answer import ANSWER
from ...machines.candidate import CANDIDATE
from .. import jobs
from ..common import Allowed, fetch, status_filter
from ..search import retrieval
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...context import Context

# What the screens ask of this workflow's moves (they never hold its machine).
allowed = Allowed(ANSWER)

STATUSES = ("APPROVED", "DISPUTED", "SUPERSEDED", "RETIRED")


def current_answer(tx: Tx, candidate_id: int) -> dict | None:
    """The newest answer published from a candidate, whatever its status."""
    return tx.one("SELECT * FROM approved_answers WHERE candidate_id = %s ORDER BY id DESC LIMIT 1",
                  (candidate_id,))


def _disputed_answer_settled_by(tx: Tx, candidate: dict) -> dict | None:
    """The DISPUTED answer a decision on `candidate` settles: its own (a re-review), or, for a
    generated candidate, the one its work item was opened to replace."""
    own = current_answer(tx, candidate["id"])
    if own is not None and own["status"] == "DISPUTED":
        return engine.lock(tx, ANSWER, own["id"])
    if candidate.get("work_item_id") is None:
        return None
    return tx.one("SELECT a.* FROM work_items w JOIN approved_answers a ON a.candidate_id = w.candidate_id "
                  "WHERE w.id = %s AND a.status = 'DISPUTED' ORDER BY a.id DESC LIMIT 1 FOR UPDATE OF a",
                  (candidate["work_item_id"],))


# ----------------------------------------------------------------------------- reactions (core/reactions.py)

def graph_jobs_later(ctx: Context, event: Event) -> None:
    """After the commit of a publish: the new answer's graph sync and its contradiction check
    (`sync_graph_task`, `detect_contradictions_task`), queued in one Redis round trip, both or
    neither. If Redis fails then, the after-commit step is logged and the queues rebuilt, as for any effect
    (docs/architecture.md, "Reactions"); the sweep's graph catch-up mirrors the answer and, finding
    no node for it, queues its contradiction check again."""
    jobs.enqueue_many(ctx, "graph", [("sync_graph_task", (event.aggregate_id,)),
                                     ("detect_contradictions_task", (event.aggregate_id,))])


def publish_decided(tx: Tx, event: Event) -> dict:
    """A candidate was approved or revised: its text (the revision, for revise) is published as a new
    APPROVED answer, superseding the disputed answer the decision settles, if any."""
    candidate = event.row
    disputed = _disputed_answer_settled_by(tx, candidate)
    if disputed is not None:
        engine.apply(tx, ANSWER, disputed, "supersede", SYSTEM,
                     fields={"reason": f"a new version was published from candidate {candidate['id']}"})
    # A specialist's adjudication publishes in the system's hand, in the specialist's name (`published_by`).
    by = SYSTEM if event.from_state == "ADJUDICATION" else event.actor
    answer = engine.create(tx, ANSWER, by, {
        "candidate_id": candidate["id"], "question": candidate["question"], "text": candidate["text"],
        "horn_type": candidate["horn_type"], "source_refs": candidate["source_refs"] or [],
        "supersedes_id": disputed["id"] if disputed else None, "published_by": event.actor.name},
        action="publish").row
    return {"answer": answer}


def retire_rejected(tx: Tx, event: Event) -> dict | None:
    """A candidate was rejected on re-review: the disputed answer it was reviewed for is retired."""
    own = current_answer(tx, event.aggregate_id)
    if own is None or own["status"] != "DISPUTED":
        return None
    reason = f"rejected on re-review: {event.fields.get('reason')}"
    retired = engine.apply(tx, ANSWER, engine.lock(tx, ANSWER, own["id"]), "retire", event.actor,
                           fields={"reason": reason}, changes={"reason": reason}).row
    return {"retired": retired}


# ----------------------------------------------------------------------------- commands

def supersede(ctx: Context, actor: Actor, answer_id, text: str, reason: str, *,
              expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """Publish a new version of an answer; the old one (and its candidate) become SUPERSEDED."""
    if not (limits.text(text, "an answer", limits.ANSWER) or "").strip():
        raise InvalidInput("a new version needs its text (--text)")
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        old = engine.lock(tx, ANSWER, answer_id)
        engine.apply(tx, ANSWER, old, "supersede", actor, fields={"reason": reason}, changes={"reason": reason},
                     expected_version=expected_version, idempotency_key=idempotency_key)
        old_candidate = engine.lock(tx, CANDIDATE, old["candidate_id"])
        if old_candidate["state"] in ("APPROVED", "REVISED", "DISPUTED"):
            engine.apply(tx, CANDIDATE, old_candidate, "supersede", SYSTEM, fields={"reason": reason})
        # The new version has a candidate of its own (APPROVED), so it can be disputed and re-reviewed.
        candidate = engine.create(tx, CANDIDATE, SYSTEM, {
            "question": old["question"], "text": text.strip(), "horn_type": old["horn_type"],
            "source_refs": old["source_refs"], "origin": "version", "created_by": actor.name,
            "document_id": old_candidate["document_id"], "work_item_id": None}, action="record_version",
            fields={"supersedes_answer": old["id"], "reason": reason}).row
        new = engine.create(tx, ANSWER, actor, {
            "candidate_id": candidate["id"], "question": old["question"], "text": text.strip(),
            "horn_type": old["horn_type"], "source_refs": old["source_refs"], "supersedes_id": old["id"],
            "published_by": actor.name, "reason": reason}, action="publish", fields={"reason": reason}).row
        return public_row(new)

    return in_unit_of_work(ctx, actor, "registry.supersede", {"id": str(answer_id), "text": text, "reason": reason,
                                                              "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def dispute(ctx: Context, actor: Actor, answer_id, reason: str, *, expected_version: int | None = None,
            idempotency_key: str | None = None) -> dict:
    """Mark an answer DISPUTED; its candidate goes to the head of its queue for re-review (reactions)."""
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        answer = engine.lock(tx, ANSWER, answer_id)
        return public_row(engine.apply(tx, ANSWER, answer, "dispute", actor, fields={"reason": reason},
                                       changes={"reason": reason}, expected_version=expected_version,
                                       idempotency_key=idempotency_key).row)

    return in_unit_of_work(ctx, actor, "registry.dispute", {"id": str(answer_id), "reason": reason,
                                                            "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def retire(ctx: Context, actor: Actor, answer_id, reason: str, *, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """Retire an answer: out of all search and readout, kept for audit. A disputed answer's
    candidate retires with it (reactions)."""
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        answer = engine.lock(tx, ANSWER, answer_id)
        return public_row(engine.apply(tx, ANSWER, answer, "retire", actor, fields={"reason": reason},
                                       changes={"reason": reason}, expected_version=expected_version,
                                       idempotency_key=idempotency_key).row)

    return in_unit_of_work(ctx, actor, "registry.retire", {"id": str(answer_id), "reason": reason,
                                                           "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- read

def search(ctx: Context, query: str, status: str | list[str] | None = None, *, limit: int = 20,
           offset: int = 0, explain: bool = False) -> list[dict]:
    """Answers ranked by their words and their meaning (docs/architecture.md, "Retrieval"); APPROVED
    only unless `status` widens it, a DISPUTED one flagged (`disputed`). An empty query lists the
    newest. `explain` adds each hit's lexical and vector ranks, its similarity and its score."""
    statuses = status_filter(status, STATUSES, "APPROVED", "answer status")
    limit = limits.number(limit, "--limit", limits.SEARCH_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    query = (limits.text(query, "a search", limits.QUERY) or "").strip()
    with ctx.db.read() as tx:
        if not query:
            rows = tx.all("SELECT *, NULL::real AS rank FROM approved_answers WHERE status = ANY(%s) "
                          "ORDER BY id DESC LIMIT %s OFFSET %s", (statuses, limit, offset))
            return [_shown(public_row(r)) for r in rows]
        ranked = retrieval.search_answers(tx, query, statuses, offset + limit)
        if not any(c.row["matched"] for c in ranked):  # prefix matching while the user is still typing a word
            prefix = " & ".join(f"{w}:*" for w in _words(query))
            if prefix:
                ranked = retrieval.search_answers(tx, query, statuses, offset + limit, prefix=prefix)
    shown = []
    for c in ranked[offset:offset + limit]:
        row = {k: v for k, v in c.row.items() if k not in ("kind", "heading", "body", "labels", "matched", "similarity")}
        row["rank"] = round(c.final, 4)
        if explain:
            row["explain"] = {"lexical_rank": c.lexical_rank, "vector_rank": c.vector_rank,
                              "similarity": None if c.similarity is None else round(c.similarity, 4),
                              "coverage": round(c.coverage, 4), "fused": round(c.fused, 4), "score": round(c.final, 4)}
        shown.append(_shown(public_row(row)))
    return shown


def _shown(row: dict) -> dict:
    return {**row, "disputed": row["status"] == "DISPUTED"}


def _words(query: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9]+", query)[:8]


def show(ctx: Context, answer_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(fetch(tx, "approved_answers", "answer", answer_id))


def chain(ctx: Context, answer_id) -> list[dict]:
    """Every version linked to this one by supersedes_id, oldest first."""
    with ctx.db.read() as tx:
        aid = fetch(tx, "approved_answers", "answer", answer_id)["id"]
        rows = tx.all(
            "WITH RECURSIVE back AS ("
            "  SELECT id, supersedes_id FROM approved_answers WHERE id = %(id)s"
            "  UNION SELECT a.id, a.supersedes_id FROM approved_answers a JOIN back b ON a.id = b.supersedes_id),"
            " fwd AS ("
            "  SELECT id FROM approved_answers WHERE id = %(id)s"
            "  UNION SELECT a.id FROM approved_answers a JOIN fwd f ON a.supersedes_id = f.id)"
            " SELECT * FROM approved_answers WHERE id IN (SELECT id FROM back UNION SELECT id FROM fwd) ORDER BY id",
            {"id": aid})
    return [public_row(r) for r in rows]


def readout(ctx: Context, query: str, *, limit: int = 20) -> list[dict]:
    """What the registry answers to a question: current answers, disputed ones flagged, retired never."""
    return search(ctx, query, ["APPROVED", "DISPUTED"], limit=limit)

