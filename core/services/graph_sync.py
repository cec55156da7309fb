"""Mirror the registry into the graph and find contradictions there.

The graph is a projection of PostgreSQL: ids, status, Horn type, subject names and short titles,
never full texts; every statement is a small auto-commit MERGE, so a rerun is harmless.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import engine
from ..domain import SYSTEM
from ..extract import QUESTION_FOR
from . import jobs

if TYPE_CHECKING:
    from ..context import Context

_TEMPLATES = [re.compile("^" + re.escape(t).replace(re.escape("{topic}"), "(?P<topic>.+)") + "$", re.I)
              for t in QUESTION_FOR.values()]


def subject_of(question: str) -> str:
    """The subject an answer is about: the topic of a templated question, else the question."""
    for template in _TEMPLATES:
        m = template.match(question.strip())
        if m:
            return m.group("topic").strip().lower()
    return re.sub(r"\s+", " ", question.strip().rstrip("?").lower())[:120]


def enqueue_sync(ctx: Context, answer_id: int) -> None:
    jobs.enqueue(ctx, "graph", "sync_graph_task", answer_id)


def sync_later(ctx: Context, event) -> None:
    """After commit: mirror the answer a registry move changed into the graph (RQ)."""
    enqueue_sync(ctx, event.aggregate_id)


def sync_answer(ctx: Context, answer_id: int) -> dict:
    with ctx.db.read() as tx:
        answer = tx.one("SELECT id, question, status, horn_type, supersedes_id, source_refs FROM approved_answers "
                        "WHERE id = %s", (answer_id,))
    if answer is None:
        return {"answer": answer_id, "synced": False}
    graph = ctx.graph
    subject = subject_of(answer["question"])
    graph.run("MERGE (a:Answer {id: $id}) SET a.status = $status, a.horn_type = $horn, a.title = $title",
              id=answer["id"], status=answer["status"], horn=answer["horn_type"], title=answer["question"])
    graph.run("MATCH (a:Answer {id: $id}) MERGE (s:Subject {name: $subject}) MERGE (a)-[:ABOUT]->(s)",
              id=answer["id"], subject=subject)
    for ref in answer["source_refs"] or []:
        if ref.get("document_id") is not None:
            graph.run("MATCH (a:Answer {id: $id}) MERGE (d:Source {id: $doc}) SET d.title = $title "
                      "MERGE (a)-[:CITES]->(d)", id=answer["id"], doc=ref["document_id"], title=ref.get("title", ""))
    if answer["supersedes_id"]:
        graph.run("MATCH (a:Answer {id: $id}) MERGE (o:Answer {id: $old}) MERGE (a)-[:SUPERSEDES]->(o)",
                  id=answer["id"], old=answer["supersedes_id"])
    if answer["status"] == "APPROVED":
        jobs.enqueue(ctx, "graph", "detect_contradictions_task", answer["id"])
    return {"answer": answer_id, "synced": True, "subject": subject}


_QUANTITY = re.compile(r"\b(\d+(?:[.,]\d+)?)\s*(?:-\s*)?([a-z]+)", re.I)


def _quantities(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for number, unit in _QUANTITY.findall(text):
        found.setdefault(unit.lower().rstrip("s"), set()).add(number.replace(",", "."))
    return found


def disagree(a: str, b: str) -> str | None:
    """Why two answers on one subject contradict each other, or None: the same unit, other numbers."""
    qa, qb = _quantities(a), _quantities(b)
    for unit in sorted(qa.keys() & qb.keys()):
        if qa[unit].isdisjoint(qb[unit]):
            return f"{'/'.join(sorted(qa[unit]))} vs {'/'.join(sorted(qb[unit]))} {unit}(s)"
    return None


def detect_contradictions(ctx: Context, answer_id: int) -> dict:
    rows = ctx.graph.run("MATCH (a:Answer {id: $id})-[:ABOUT]->(s:Subject)<-[:ABOUT]-(b:Answer) "
                         "WHERE b.id <> a.id AND b.status = 'APPROVED' RETURN b.id AS other, s.name AS subject",
                         id=answer_id)
    flagged = []
    if not rows:
        return {"answer": answer_id, "flags": flagged}
    with ctx.db.begin() as tx:
        me = tx.one("SELECT id, text, status FROM approved_answers WHERE id = %s", (answer_id,))
        for row in rows:
            other = tx.one("SELECT id, text, status FROM approved_answers WHERE id = %s", (row["other"],))
            if not me or not other or me["status"] != "APPROVED" or other["status"] != "APPROVED":
                continue
            first, second = sorted((me, other), key=lambda r: r["id"])  # one pair, one wording
            why = disagree(first["text"], second["text"])
            if not why:
                continue
            low, high = first["id"], second["id"]
            if tx.one("SELECT 1 FROM conflict_flags WHERE answer_id = %s AND other_answer_id = %s", (low, high)):
                continue
            flag = engine.record(tx, "conflict_flag", "conflict_flags", {
                "answer_id": low, "other_answer_id": high, "subject": row["subject"], "detail": why,
                "status": "OPEN"}, SYSTEM, event_type="conflict_detected").row
            flagged.append(flag["id"])
    return {"answer": answer_id, "flags": flagged}
