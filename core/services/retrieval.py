"""Retrieval: the passages of source documents and approved answers that ground an answer to a
question (PostgreSQL full-text search, built-ins only). Used by generation and by the grey queue's
automation.

A passage is a section of a document with its title and heading path (core/services/ingest.py,
`sections_of`), of the newest version of its document (`current`). PostgreSQL finds the passages sharing any of the question's stemmed terms in their
text (`search`) or in their title and headings (`heading_search`: title weight A, heading B) and
ranks them by cover density (`ts_rank_cd`); `rank` here then scores each one by how much of the
question it covers, each term weighed by its rarity in the corpus (a word every passage has says
little), a term in the heading or title counting more than one in the text, and a bonus for the
question's adjacent terms standing together in the passage (a phrase, "protective equipment").

A passage grounds an answer only if it covers enough of the question: the best one at least
`BEST_COVERAGE` of the question's weight, the others `OTHER_COVERAGE`. When only the best one
does, the passages nearest to it (sharing its rarest terms: pseudo-relevance feedback) are
added as related context, marked `related`. Nothing covering enough: no sources, and generation
escalates `no_content` (fewer than 2), as docs/architecture.md says.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..adapters.postgres import Tx

if TYPE_CHECKING:
    from ..context import Context

# Words of r2k's own question templates (core/extract.py, QUESTION_FOR) and of asking in general,
# stemmed: they say how a question is asked, not what about, so they weigh a quarter.
GENERIC = frozenset("establish rule appli forbidden regard step still unsettl mani much long often happen need get "
                    "allow may must shall exact".split())
GENERIC_WEIGHT = 0.25
HEADING_WEIGHT = 1.3  # a question term in the section's heading path
TITLE_WEIGHT = 0.6    # in the document's title (true of every section of it)
PHRASE_WEIGHT = 0.5   # adjacent question terms adjacent in the passage
BEST_COVERAGE = 0.5
OTHER_COVERAGE = 0.3
WIDE = 200            # candidates PostgreSQL ranks for scoring here
FEEDBACK_TERMS = 8
COUNT_CAP = 100_000


@dataclass(frozen=True)
class Term:
    lexeme: str
    position: int   # first position in the question
    weight: float   # inverse document frequency, a quarter for a generic word
    df: int = 0     # how many passages and answers have it


@dataclass
class Hits:
    """Where a passage has the question's terms: lexeme → positions, in its text, heading and title."""
    body: dict
    heading: dict
    title: dict


def retrieve(ctx: Context, question: str, k: int | None = None) -> list[dict]:
    """The best-ranked passages of source documents and approved answers for `question`."""
    k = k or ctx.settings.retrieval_top_k
    with ctx.db.read() as tx:
        return retrieve_in(tx, question, k)


def retrieve_in(tx: Tx, question: str, k: int) -> list[dict]:
    parsed = tx.all("SELECT lexeme, positions[1] AS position FROM unnest(to_tsvector('english', left(%s, 5000)))",
                    (question,))
    if not parsed:
        return []
    terms = _weigh(tx, parsed)
    rows = _candidates(tx, [t.lexeme for t in terms])
    scored = sorted(((score(terms, _hits(r)), r) for r in rows), key=lambda s: (-s[0][0], -s[1]["rank"], s[1]["id"]))
    if not scored or scored[0][0][1] < BEST_COVERAGE:
        return []
    chosen = [_source(scored[0][1], scored[0][0])]
    chosen += [_source(r, s) for s, r in scored[1:] if s[1] >= OTHER_COVERAGE][:k - 1]
    if len(chosen) < 2 and chosen[0]["kind"] == "passage":
        chosen += _related(tx, chosen[0], terms, k - len(chosen))
    return chosen[:k]


def _weigh(tx: Tx, parsed: list[dict]) -> list[Term]:
    lexemes = [r["lexeme"] for r in parsed]
    # Counted up to COUNT_CAP: past that a term is common whatever its exact count, and a large
    # corpus is sized by the planner's estimate instead of a scan.
    counts = tx.one(
        "SELECT (SELECT CASE WHEN c.reltuples > %(cap)s THEN c.reltuples::bigint ELSE (SELECT count(*) FROM "
        "        source_passages) END FROM pg_class c WHERE c.oid = 'source_passages'::regclass) + "
        "       (SELECT count(*) FROM (SELECT 1 FROM approved_answers WHERE status = 'APPROVED' LIMIT %(cap)s) a) AS n, "
        "       (SELECT json_object_agg(l, (SELECT count(*) FROM (SELECT 1 FROM source_passages p WHERE (p.search @@ t.q "
        "                                   OR p.heading_search @@ t.q) AND p.current LIMIT %(cap)s) p) + "
        "                                  (SELECT count(*) FROM (SELECT 1 FROM approved_answers a WHERE a.search @@ t.q "
        "                                   AND a.status = 'APPROVED' LIMIT %(cap)s) a)) "
        "          FROM unnest(%(lexemes)s::text[], %(quoted)s::text[]) u(l, quoted), "
        "               LATERAL (SELECT to_tsquery('simple', u.quoted) AS q) t) AS df",
        {"lexemes": lexemes, "quoted": [_quoted(lexeme) for lexeme in lexemes], "cap": COUNT_CAP})
    n, df = counts["n"], counts["df"] or {}
    return [Term(r["lexeme"], int(r["position"] or 0), idf(n, df.get(r["lexeme"], 0))
                 * (GENERIC_WEIGHT if generic(r["lexeme"]) else 1.0), df.get(r["lexeme"], 0)) for r in parsed]


def generic(lexeme: str) -> bool:
    """A word of asking, a lone letter, or a symbol (an emoji): no topic of its own."""
    return lexeme in GENERIC or len(lexeme) < 2 or not any(ch.isalnum() for ch in lexeme)


def idf(n: int, df: int) -> float:
    """A term's weight: rarer in the corpus, more telling. A term no passage has weighs as one that
    a single passage has (the question asks about something the corpus may not know)."""
    return math.log(1 + (n + 1) / (max(df, 1) + 0.5))


def _quoted(lexeme: str) -> str:
    """A lexeme as one quoted tsquery operand, whatever its characters: the query is built from
    to_tsvector's lexemes, never from the question's text, and passed as a parameter."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _candidates(tx: Tx, lexemes: list[str], exclude: int | None = None) -> list[dict]:
    query = " | ".join(_quoted(lexeme) for lexeme in lexemes)
    hits = ("(SELECT json_object_agg(t.lexeme, json_build_object('p', t.positions, 'w', t.weights)) "
            "   FROM unnest({vector}) t WHERE t.lexeme = ANY(%(lexemes)s))")
    rows = tx.all(
        "WITH q AS (SELECT to_tsquery('simple', %(q)s) AS q) "
        "(SELECT 'passage' AS kind, p.id, p.document_id, p.title, p.heading, p.text, p.span_start, p.span_end, "
        "        ts_rank_cd(p.heading_search || p.search, q.q) AS rank, "
        f"       {hits.format(vector='p.search')} AS body, {hits.format(vector='p.heading_search')} AS labels "
        "   FROM source_passages p, q WHERE (p.search @@ q.q OR p.heading_search @@ q.q) AND p.current "
        "    AND p.id IS DISTINCT FROM %(exclude)s ORDER BY rank DESC, p.id LIMIT %(wide)s) "
        "UNION ALL "
        "(SELECT 'answer', a.id, NULL, 'Registry answer ' || a.id, a.question, a.text, NULL, NULL, "
        "        ts_rank_cd(a.search, q.q), NULL, "
        f"       {hits.format(vector='a.search')} "
        "   FROM approved_answers a, q WHERE a.search @@ q.q AND a.status = 'APPROVED' "
        "  ORDER BY 9 DESC, a.id LIMIT %(wide)s)",
        {"q": query, "lexemes": lexemes, "wide": WIDE, "exclude": exclude})
    return [{**r, "rank": float(r["rank"])} for r in rows]


def _hits(row: dict) -> Hits:
    body, heading, title = {}, {}, {}
    for lexeme, hit in (row["body"] or {}).items():
        body[lexeme] = hit["p"]
    for lexeme, hit in (row["labels"] or {}).items():
        for position, weight in zip(hit["p"], hit["w"]):
            # Passages: title A, heading B (heading_search). Answers: question A (their heading), text B.
            if row["kind"] == "answer":
                (heading if weight == "A" else body).setdefault(lexeme, []).append(position)
            else:
                (title if weight == "A" else heading).setdefault(lexeme, []).append(position)
    return Hits(body, heading, title)


def score(terms: list[Term], hits: Hits) -> tuple[float, float]:
    """(score, coverage) of a passage for the question's `terms`. Coverage: the share of the
    question's weight the passage has anywhere. Score: that share with heading and title matches
    weighed as such, plus the phrase bonus. Pure."""
    total = sum(t.weight for t in terms) or 1.0
    covered = weighted = phrase = 0.0
    for t in terms:
        places = [w for part, w in ((hits.body, 1.0), (hits.heading, HEADING_WEIGHT), (hits.title, TITLE_WEIGHT))
                  if t.lexeme in part]
        if places:
            covered += t.weight
            weighted += t.weight * max(places)
    ordered = sorted(terms, key=lambda t: t.position)
    for a, b in zip(ordered, ordered[1:]):
        gap = b.position - a.position
        if 0 < gap <= 3 and any(_adjacent(part.get(a.lexeme), part.get(b.lexeme), gap + 1)
                                for part in (hits.body, hits.heading, hits.title)):
            phrase += PHRASE_WEIGHT * (a.weight + b.weight) / 2
    return (weighted + phrase) / total, covered / total


def _adjacent(first: list[int] | None, second: list[int] | None, within: int) -> bool:
    if not first or not second:
        return False
    return any(0 < q - p <= within for p in first for q in second)


def _source(row: dict, scored: tuple[float, float]) -> dict:
    out = {k: row[k] for k in ("kind", "id", "document_id", "title", "heading", "text", "span_start", "span_end")}
    return {**out, "rank": round(scored[0], 4), "coverage": round(scored[1], 4)}


def _related(tx: Tx, best: dict, terms: list[Term], room: int) -> list[dict]:
    """Passages that share the best passage's most telling terms (pseudo-relevance feedback): the
    context around a question only one passage answers."""
    if room <= 0:
        return []
    asked = {t.lexeme for t in terms}
    own = tx.all("SELECT t.lexeme, array_length(t.positions, 1) AS tf FROM source_passages p, "
                 "unnest(p.heading_search || p.search) t WHERE p.id = %s", (best["id"],))
    if not own:
        return []
    weighed = _weigh(tx, [{"lexeme": r["lexeme"], "position": 0} for r in own if r["lexeme"] not in asked])
    tf = {r["lexeme"]: r["tf"] or 1 for r in own}
    # A term of this passage alone finds nothing else; one every passage has finds everything.
    feedback = sorted((t for t in weighed if not generic(t.lexeme) and len(t.lexeme) > 2 and t.df > 1),
                      key=lambda t: (-t.weight * tf[t.lexeme], t.lexeme))[:FEEDBACK_TERMS]
    if len(feedback) < 2:
        return []
    rows = _candidates(tx, [t.lexeme for t in feedback], exclude=best["id"])
    scored = []
    for row in rows:
        hits = _hits(row)
        matched = [t for t in feedback if t.lexeme in hits.body or t.lexeme in hits.heading]
        if len(matched) >= 2:
            scored.append((score(feedback, hits), row))
    scored.sort(key=lambda s: (-s[0][0], s[1]["id"]))
    return [{**_source(row, s), "related": True} for s, row in scored[:room]]
