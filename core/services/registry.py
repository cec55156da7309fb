"""The registry of approved answers (DESIGN §5.2): publish, search, chain, readout, supersede,
dispute, retire. Nothing is ever deleted; a published answer's content never changes (a trigger
in the schema refuses both); only its status moves, each move an event.
"""
from __future__ import annotations

from .. import engine, limits
from ..adapters.postgres import Tx, public_row
from ..context import Context
from ..domain import SYSTEM, Actor
from ..errors import InvalidInput
from ..machines.answer import ANSWER
from ..machines.candidate import CANDIDATE
from . import fetch, mutate

STATUSES = ("APPROVED", "DISPUTED", "SUPERSEDED", "RETIRED")


def publish(tx: Tx, candidate: dict, actor: Actor, text: str, *, supersedes: dict | None = None) -> dict:
    """Publish a decided candidate's text as a new APPROVED answer (superseding `supersedes`)."""
    if supersedes is not None:
        engine.apply(tx, ANSWER, supersedes, "supersede", SYSTEM,
                     fields={"reason": f"a new version was published from candidate {candidate['id']}"})
    return engine.create(tx, ANSWER, actor, {
        "candidate_id": candidate["id"], "question": candidate["question"], "text": text,
        "horn_type": candidate["horn_type"], "source_refs": candidate["source_refs"] or [],
        "supersedes_id": supersedes["id"] if supersedes else None, "published_by": actor.name},
        action="publish")


def after_publish(ctx: Context, answer: dict) -> None:
    """Mirror a newly published answer into the graph (RQ), and tell open workstations."""
    ctx.notify("answer", action="publish", id=answer["id"], status=answer["status"])
    from . import graph_sync

    graph_sync.enqueue_sync(ctx, answer["id"])


def retire_in(tx: Tx, answer: dict, actor: Actor, reason: str, **kw) -> dict:
    return engine.apply(tx, ANSWER, answer, "retire", actor, fields={"reason": reason}, changes={"reason": reason},
                        **kw)


def _lock_answer(tx: Tx, answer_id) -> dict:
    return engine.lock(tx, ANSWER, answer_id)


def supersede(ctx: Context, actor: Actor, answer_id, text: str, reason: str, *,
              expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """Publish a new version of an answer; the old one (and its candidate) become SUPERSEDED."""
    if not (limits.text(text, "an answer", limits.ANSWER) or "").strip():
        raise InvalidInput("a new version needs its text (--text)")
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        old = _lock_answer(tx, answer_id)
        engine.apply(tx, ANSWER, old, "supersede", actor, fields={"reason": reason}, changes={"reason": reason},
                     expected_version=expected_version, idempotency_key=idempotency_key)
        old_candidate = engine.lock(tx, CANDIDATE, old["candidate_id"])
        if old_candidate["state"] in ("APPROVED", "REVISED", "DISPUTED"):
            engine.apply(tx, CANDIDATE, old_candidate, "supersede", SYSTEM, fields={"reason": reason})
        candidate = engine.create(tx, CANDIDATE, SYSTEM, {
            "question": old["question"], "text": text.strip(), "horn_type": old["horn_type"],
            "source_refs": old["source_refs"], "origin": "version", "created_by": actor.name,
            "document_id": old_candidate["document_id"], "work_item_id": None}, action="record_version",
            fields={"supersedes_answer": old["id"], "reason": reason})
        new = engine.create(tx, ANSWER, actor, {
            "candidate_id": candidate["id"], "question": old["question"], "text": text.strip(),
            "horn_type": old["horn_type"], "source_refs": old["source_refs"], "supersedes_id": old["id"],
            "published_by": actor.name, "reason": reason}, action="publish", fields={"reason": reason})
        tx.after_commit(lambda: after_publish(ctx, new))
        return public_row(new)

    return mutate(ctx, actor, "registry.supersede", {"id": str(answer_id), "text": text, "reason": reason,
                                                     "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


def dispute(ctx: Context, actor: Actor, answer_id, reason: str, *, expected_version: int | None = None,
            idempotency_key: str | None = None) -> dict:
    """Mark an answer DISPUTED; its candidate goes to the head of its queue for re-review (§5.1)."""
    from . import candidates

    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        answer = _lock_answer(tx, answer_id)
        disputed = engine.apply(tx, ANSWER, answer, "dispute", actor, fields={"reason": reason},
                                changes={"reason": reason}, expected_version=expected_version,
                                idempotency_key=idempotency_key)
        candidate = engine.lock(tx, CANDIDATE, answer["candidate_id"])
        engine.apply(tx, CANDIDATE, candidate, "dispute", actor, fields={"reason": reason},
                     changes={"queue_rank": candidates.head_rank()})
        candidates.requeue(ctx, tx, candidate, head=True)
        tx.after_commit(lambda: ctx.notify("answer", action="dispute", id=disputed["id"], status="DISPUTED",
                                           horn_type=disputed["horn_type"]))
        return public_row(disputed)

    return mutate(ctx, actor, "registry.dispute", {"id": str(answer_id), "reason": reason,
                                                   "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


def retire(ctx: Context, actor: Actor, answer_id, reason: str, *, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """Retire an answer: out of all search and readout, kept for audit. A disputed answer's
    candidate retires with it; an approved one's candidate keeps its state (§5.1 has no such move)."""
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        answer = _lock_answer(tx, answer_id)
        retired = retire_in(tx, answer, actor, reason, expected_version=expected_version,
                            idempotency_key=idempotency_key)
        candidate = engine.lock(tx, CANDIDATE, answer["candidate_id"])
        if candidate["state"] == "DISPUTED":
            engine.apply(tx, CANDIDATE, candidate, "retire", actor, fields={"reason": reason})
        tx.after_commit(lambda: (ctx.notify("answer", action="retire", id=retired["id"], status="RETIRED"),
                                 _sync(ctx, retired["id"])))
        return public_row(retired)

    return mutate(ctx, actor, "registry.retire", {"id": str(answer_id), "reason": reason,
                                                  "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


def _sync(ctx: Context, answer_id: int) -> None:
    from . import graph_sync

    graph_sync.enqueue_sync(ctx, answer_id)


# ----------------------------------------------------------------------------- read

def _statuses(status: str | list[str] | None) -> list[str]:
    if not status:
        return ["APPROVED"]
    values = status if isinstance(status, list) else [s for s in status.split(",") if s.strip()]
    out = []
    for value in values:
        value = value.strip().upper()
        if value == "ALL":
            return list(STATUSES)
        if value not in STATUSES:
            raise InvalidInput(f"unknown answer status {value!r}: expected {', '.join(STATUSES)} or ALL")
        out.append(value)
    return out


def search(ctx: Context, query: str, status: str | list[str] | None = None, *, limit: int = 20,
           offset: int = 0) -> list[dict]:
    """Ranked full-text search; APPROVED only unless `status` widens it. An empty query lists newest."""
    statuses = _statuses(status)
    limit = limits.number(limit, "--limit", limits.SEARCH_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    query = (limits.text(query, "a search", limits.QUERY) or "").strip()
    with ctx.db.read() as tx:
        if not query:
            rows = tx.all("SELECT *, NULL::real AS rank FROM approved_answers WHERE status = ANY(%s) "
                          "ORDER BY id DESC LIMIT %s OFFSET %s", (statuses, limit, offset))
        else:
            rows = tx.all(
                "SELECT a.*, ts_rank_cd(a.search, q) AS rank FROM approved_answers a, "
                "websearch_to_tsquery('english', %s) q WHERE a.search @@ q AND a.status = ANY(%s) "
                "ORDER BY rank DESC, a.id DESC LIMIT %s OFFSET %s", (query, statuses, limit, offset))
            if not rows:  # prefix matching while the user is still typing a word
                prefix = " & ".join(f"{w}:*" for w in _words(query))
                if prefix:
                    rows = tx.all(
                        "SELECT a.*, ts_rank_cd(a.search, q) AS rank FROM approved_answers a, "
                        "to_tsquery('english', %s) q WHERE a.search @@ q AND a.status = ANY(%s) "
                        "ORDER BY rank DESC, a.id DESC LIMIT %s OFFSET %s", (prefix, statuses, limit, offset))
    return [public_row(r) for r in rows]


def _words(query: str) -> list[str]:
    import re

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
    rows = search(ctx, query, ["APPROVED", "DISPUTED"], limit=limit)
    return [{**r, "disputed": r["status"] == "DISPUTED"} for r in rows]

