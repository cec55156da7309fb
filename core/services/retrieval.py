"""Retrieval: the passages of source documents and approved answers that ground an answer to a
question (PostgreSQL full-text search). Used by generation and by the grey queue's automation.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapters.postgres import Tx

if TYPE_CHECKING:
    from ..context import Context


def retrieve(ctx: Context, question: str, k: int | None = None) -> list[dict]:
    """The best-ranked passages of source documents and approved answers for `question`."""
    k = k or ctx.settings.retrieval_top_k
    with ctx.db.read() as tx:
        return retrieve_in(tx, question, k)


def retrieve_in(tx: Tx, question: str, k: int) -> list[dict]:
    # Any of the question's stemmed terms may match (a question rarely repeats a passage's every
    # word), but a source must share at least two of them to count as grounding, not a stray word.
    lexemes = tx.scalar("SELECT array_agg(DISTINCT lexeme) FROM unnest(to_tsvector('english', %s))", (question,))
    if not lexemes:
        return []
    query = " | ".join("'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes)
    rows = tx.all(
        "WITH q AS (SELECT to_tsquery('simple', %(q)s) AS q) "
        "(SELECT 'passage' AS kind, p.id, d.id AS document_id, d.title, p.text, p.span_start, p.span_end, "
        "        ts_rank_cd(p.search, q.q) AS rank, "
        "        (SELECT count(*) FROM unnest(p.search) t WHERE t.lexeme = ANY(%(lexemes)s)) AS matched "
        "   FROM source_passages p JOIN source_documents d ON d.id = p.document_id, q "
        "  WHERE p.search @@ q.q ORDER BY rank DESC LIMIT %(wide)s) "
        "UNION ALL "
        "(SELECT 'answer', a.id, NULL, 'Registry answer ' || a.id, a.text, NULL, NULL, ts_rank_cd(a.search, q.q), "
        "        (SELECT count(*) FROM unnest(a.search) t WHERE t.lexeme = ANY(%(lexemes)s)) "
        "   FROM approved_answers a, q WHERE a.search @@ q.q AND a.status = 'APPROVED' ORDER BY 8 DESC LIMIT %(wide)s) "
        "ORDER BY matched DESC, rank DESC", {"q": query, "lexemes": lexemes, "wide": k * 4})
    return [{**r, "rank": float(r["rank"])} for r in rows if r["matched"] >= 2][:k]
