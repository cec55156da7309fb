"""Retrieval: the passages of source documents and approved answers that ground an answer to a
question, found by their words and by their meaning (docs/architecture.md, "Retrieval"). Used by
generation and by the grey queue's automation; the registry's search ranks answers the same way.

A passage is a section of a document with its title and heading path (core/services/documents/ingest.py,
`sections_of`), of the newest version of its document (`current`: an older version's passages are
kept, and never found). Two searches find candidates, sent to PostgreSQL together (one round trip):

- **by words**: the passages and APPROVED answers having any of the question's stemmed terms in their
  text (`search`) or in their title and headings (`heading_search`), the best `wide` of each by cover
  density (`ts_rank_cd`; a passage's from the term index, `passage_terms`: docs/architecture.md,
  "Retrieval", "The term index"), each with where it has the question's terms;
- **by meaning**: the `nearest` passages and APPROVED answers to the question's vector (pgvector's
  HNSW index, cosine), when this PostgreSQL has pgvector (core/services/search/embeddings.py).

The ranking maths is core/knowledge/ranking.py: each candidate's lexical score (how much of the
question it covers, each term weighed by its rarity) and its similarity; the two ranks fused by
reciprocal rank fusion and re-ranked by coverage. A passage grounds an answer only if it covers
enough of the question or is near enough to it in meaning (`supports`). When only the best one does,
the passages nearest to it (sharing its rarest terms: pseudo-relevance feedback) are added as
related context, marked `related`: context, not sources. Fewer than 2 sources, and generation
escalates `no_content`.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable

import psycopg

from ...adapters.postgres import Tx
from ...knowledge.ranking import (  # noqa: F401 - Term, Hits, idf and generic: this module's API too
    DEFAULT,
    Candidate,
    Hits,
    Ranking,
    Term,
    asks_elsewhere,
    choose,
    generic,
    idf,
    order,
    score,
    weigh,
)
from .embeddings import IndexChanged

if TYPE_CHECKING:
    from ...context import Context

COUNT_CAP = 100_000
QUESTION_CHARS = 5000  # a question is read from its first 5,000 characters

# A lexeme as one quoted tsquery operand, whatever its characters: the tsquery is built from
# to_tsvector's lexemes, never from the question's text. Cast, not parsed again: to_tsquery('simple')
# made a hyphenated lexeme (`keyring-provid`) a phrase of three that matched nothing, and a quote
# split one in two. `_OPERAND` is one lexeme's query, `_ANY_OF` the query for any of an array's.
_QUOTE = "'''' || replace(replace({x}, '\\', '\\\\'), '''', '''''') || ''''"
_OPERAND = "(" + _QUOTE + ")::tsquery"
_ANY_OF = "(SELECT string_agg(" + _QUOTE.format(x="l") + ", ' | ')::tsquery FROM unnest({x}) l)"
# The question's terms (`q.lexemes`) and the query for any of them (`q.q`): parsed from the question,
# or given as lexemes (the feedback terms).
_FROM_QUESTION = (
    "parsed AS (SELECT lexeme, positions[1] AS position FROM unnest(to_tsvector('english', "
    f"left(%(question)s, {QUESTION_CHARS})))), "
    "q AS (SELECT coalesce(array_agg(lexeme), '{}') AS lexemes, "
    f"string_agg({_QUOTE.format(x='lexeme')}, ' | ')::tsquery AS q FROM parsed)")
_FROM_LEXEMES = ("parsed AS (SELECT unnest(%(lexemes)s::text[]) AS lexeme), "
                 "q AS (SELECT %(lexemes)s::text[] AS lexemes, " + _ANY_OF.format(x="%(lexemes)s::text[]") + " AS q)")
_HITS = ("(SELECT json_object_agg(t.lexeme, json_build_object('p', t.positions, 'w', t.weights)) "
         "   FROM unnest({vector}) t WHERE t.lexeme = ANY(q.lexemes))")
# A passage's hits come from the term index (migration 0025, `hits_p` below): the same positions and
# weights its `search` and `heading_search` hold, read from the pool's rows of the question's terms.
_PASSAGE = ("'passage' AS kind, p.id, p.document_id, p.title, p.heading, p.text, p.span_start, p.span_end, "
            "h.body, h.labels")
_ANSWER = ("'answer' AS kind, a.id, NULL::bigint AS document_id, 'Registry answer ' || a.id AS title, "
           "a.question AS heading, a.text, NULL::integer AS span_start, NULL::integer AS span_end, {answer_hits}")
# Where each candidate has the question's terms, two ways (`_hits` reads both). With their positions,
# as JSON (lexeme → positions, and the weights of those in the title and heading): only the phrase
# bonus needs them. Without (`phrase_weight` 0, the default), as text arrays of the lexemes: `body`
# those in the text, `labels` each with its place's letter before it ('A' the title, or an answer's
# question; 'B' the heading). Building the positions' JSON for the pool was the largest share of
# retrieval's time beyond its two searches (docs/architecture.md, "Retrieval").
_HIT_FORMS = {
    True: {"passage_hits": "json_object_agg(t.lexeme, t.body) FILTER (WHERE t.body IS NOT NULL) AS body, "
                           "json_object_agg(t.lexeme, json_build_object('p', t.labels, 'w', t.label_weights)) "
                           "  FILTER (WHERE t.labels IS NOT NULL) AS labels ",
           "answer_hits": f"NULL::json AS body, {_HITS.format(vector='a.search')} AS labels"},
    False: {"passage_hits": "array_agg(t.lexeme) FILTER (WHERE t.body IS NOT NULL) AS body, "
                            "array_agg('A' || t.lexeme) FILTER (WHERE 'A' = ANY(t.label_weights)) || "
                            "array_agg('B' || t.lexeme) FILTER (WHERE NOT 'A' = ALL(t.label_weights)) AS labels ",
            "answer_hits": "ARRAY(SELECT t.lexeme FROM unnest(a.search) t WHERE t.lexeme = ANY(q.lexemes) "
                           "      AND NOT 'A' = ALL(t.weights)) AS body, "
                           "ARRAY(SELECT 'A' || t.lexeme FROM unnest(a.search) t WHERE t.lexeme = ANY(q.lexemes) "
                           "      AND 'A' = ANY(t.weights)) AS labels"},
}

# Each term of the question with how many passages (of the current versions: the term index's rows
# of the term) and APPROVED answers have it, counted up to COUNT_CAP: past that a term is common
# whatever its exact count, and a large corpus is sized by the planner's estimate instead of a scan.
WEIGH = (
    "WITH " + _FROM_QUESTION + " "
    "SELECT p.lexeme, p.position, "
    "       (SELECT CASE WHEN c.reltuples > %(cap)s THEN c.reltuples::bigint ELSE (SELECT count(*) FROM "
    "        source_passages) END FROM pg_class c WHERE c.oid = 'source_passages'::regclass) + "
    "       (SELECT count(*) FROM (SELECT 1 FROM approved_answers WHERE status = 'APPROVED' LIMIT %(cap)s) a) AS n, "
    "       (SELECT count(*) FROM (SELECT 1 FROM passage_terms s WHERE s.lexeme = p.lexeme "
    "        AND s.passage_id NOT IN (SELECT o.id FROM source_passages o WHERE NOT o.current) LIMIT %(cap)s) s) + "
    "       (SELECT count(*) FROM (SELECT 1 FROM approved_answers a WHERE a.search @@ t.q AND a.status = 'APPROVED' "
    "        LIMIT %(cap)s) a) AS df "
    "  FROM parsed p, LATERAL (SELECT " + _OPERAND.format(x="p.lexeme") + " AS q) t "
    " ORDER BY p.position, p.lexeme")

# The pool's hits are read through the term index's key, (lexeme, passage): each of the question's
# terms (`parsed`, a join the planner drives) in the pooled passages, ~140 rows on the real corpora.
# With `lexeme = ANY(q.lexemes)` the generic plan read them by passage instead, every term of the ~60
# pooled passages (~4,900 rows), the largest step of the statement.
# The candidates, by words and by meaning, each with where it has the question's terms (computed once
# for the pool of both): the best `wide` by cover density of the passages (and APPROVED answers)
# having any term, and the `nearest` by cosine through the HNSW index, whose ORDER BY is the index's
# expression with the question's vector as a parameter ({d}: the recorded dimension). Answers of
# another status are dropped after the index scan, so a few fewer than `nearest` may come back.
_NEAR = ("SELECT {key} AS id, embedding::vector({d}) <=> %(vector)s::vector({d}) AS distance FROM {table} "
         "ORDER BY embedding::vector({d}) <=> %(vector)s::vector({d}) LIMIT %(nearest)s")
_NONE = "SELECT NULL::bigint AS id, NULL::float8 AS distance WHERE false"
_SEARCH = (
    "lex_p AS (SELECT t.passage_id AS id, (sum(t.weight) / 10.0)::float8 AS rank FROM passage_terms t, q "
    "          WHERE %(passages)s AND t.lexeme = ANY(q.lexemes) AND t.passage_id IS DISTINCT FROM %(exclude)s "
    "            AND t.passage_id NOT IN (SELECT s.id FROM source_passages s WHERE NOT s.current) "
    "          GROUP BY t.passage_id ORDER BY rank DESC, t.passage_id LIMIT %(wide)s), "
    "near_p AS ({near_p}), "
    "pool_p AS (SELECT ARRAY(SELECT id FROM lex_p UNION SELECT id FROM near_p WHERE %(passages)s) AS ids), "
    "hits_p AS (SELECT t.passage_id AS id, {passage_hits}"
    "             FROM passage_terms t, q, pool_p "
    "            WHERE t.lexeme IN (SELECT lexeme FROM parsed) AND t.passage_id = ANY(pool_p.ids) GROUP BY t.passage_id), "
    "lex_a AS (SELECT a.id, ts_rank_cd(a.search, q.q) AS rank FROM approved_answers a, q "
    "          WHERE %(answers)s AND a.search @@ q.q AND a.status = 'APPROVED' ORDER BY rank DESC, a.id LIMIT %(wide)s), "
    "near_a AS ({near_a}) "
    "SELECT " + _PASSAGE + ", coalesce(l.rank, 0) AS rank, 1 - coalesce(n.distance, {exact_p}) AS similarity "
    "  FROM pool_p JOIN source_passages p ON p.id = ANY(pool_p.ids) AND p.current "
    "  LEFT JOIN lex_p l ON l.id = p.id LEFT JOIN near_p n ON n.id = p.id LEFT JOIN hits_p h ON h.id = p.id "
    "UNION ALL "
    "SELECT " + _ANSWER + ", coalesce(l.rank, 0), 1 - coalesce(n.distance, {exact_a}) "
    "  FROM (SELECT id FROM lex_a UNION SELECT id FROM near_a WHERE %(answers)s) pool "
    "  JOIN approved_answers a ON a.id = pool.id AND a.status = 'APPROVED' "
    "  LEFT JOIN lex_a l ON l.id = a.id LEFT JOIN near_a n ON n.id = a.id, q")
# A candidate found by its words only gets its cosine too, from its own vector (one index lookup by
# key): every candidate is then ranked by meaning, not only the `nearest`.
_EXACT = "(SELECT v.embedding::vector({d}) <=> %(vector)s::vector({d}) FROM {table} v WHERE v.{key} = {row}.id)"
LEXICAL_IN = {positions: "WITH " + _FROM_QUESTION + ", " + _SEARCH.format(
    near_p=_NONE, near_a=_NONE, exact_p="NULL", exact_a="NULL", **_HIT_FORMS[positions]) for positions in _HIT_FORMS}
LEXICAL_OF_TERMS_IN = {positions: "WITH " + _FROM_LEXEMES + ", " + _SEARCH.format(
    near_p=_NONE, near_a=_NONE, exact_p="NULL", exact_a="NULL", **_HIT_FORMS[positions]) for positions in _HIT_FORMS}
LEXICAL = LEXICAL_IN[True]


_GENERIC = "SELECT set_config('plan_cache_mode', %s, true)"


def hybrid_sql(dimension: int, positions: bool = True) -> str:
    """The search by words and by meaning, for vectors of `dimension`; the hits with their positions
    or without (`_HIT_FORMS`)."""
    return "WITH " + _FROM_QUESTION + ", " + _SEARCH.format(
        near_p=_NEAR.format(key="passage_id", table="passage_vectors", d=int(dimension)),
        near_a=_NEAR.format(key="answer_id", table="answer_vectors", d=int(dimension)),
        exact_p=_EXACT.format(key="passage_id", table="passage_vectors", d=int(dimension), row="p"),
        exact_a=_EXACT.format(key="answer_id", table="answer_vectors", d=int(dimension), row="a"),
        **_HIT_FORMS[positions])


# Registry search (core/services/answers/registry.py): the answers of the statuses asked for, by words (the
# search's websearch query, or its prefixes while a word is being typed) and by meaning, the first
# `window` of each.
_ANSWERS = (
    "WITH q AS (SELECT ARRAY(SELECT lexeme FROM unnest(to_tsvector('english', "
    f"          left(%(question)s, {QUESTION_CHARS})))) AS lexemes, "
    "          CASE WHEN %(prefix)s::text IS NULL THEN websearch_to_tsquery('english', %(question)s) "
    "               ELSE to_tsquery('english', %(prefix)s) END AS q), "
    "lex AS (SELECT a.id, ts_rank_cd(a.search, q.q) AS rank FROM approved_answers a, q "
    "        WHERE a.search @@ q.q AND a.status = ANY(%(statuses)s) ORDER BY rank DESC, a.id DESC LIMIT %(window)s), "
    "near AS ({near}) "
    "SELECT a.*, 'answer' AS kind, a.question AS heading, NULL::json AS body, "
    "       " + _HITS.format(vector="a.search") + " AS labels, coalesce(l.rank, 0) AS rank, "
    "       l.id IS NOT NULL AS matched, 1 - n.distance AS similarity "
    "  FROM (SELECT id FROM lex UNION SELECT id FROM near) pool JOIN approved_answers a ON a.id = pool.id "
    "  LEFT JOIN lex l ON l.id = a.id LEFT JOIN near n ON n.id = a.id, q WHERE a.status = ANY(%(statuses)s)")


def search_answers(tx: Tx, text: str, statuses: list[str], window: int, *, prefix: str | None = None,
                   ranking: Ranking = DEFAULT) -> list[Candidate]:
    """Registry answers of `statuses` for a search, ranked as retrieval ranks sources: by its words
    (or by `prefix`, a tsquery of the words being typed) and by its meaning, fused, then re-ranked by
    how much of it each covers. An answer found by meaning alone is kept when it is as near to the
    search as a best source must be to a question (`best_similarity`)."""
    asked = tx.embeddings.question(tx, text[:QUESTION_CHARS]) \
        if ranking.vectors and tx.embeddings is not None and text.strip() else None
    near = _NEAR.format(key="answer_id", table="answer_vectors", d=int(asked[1])) if asked else _NONE
    params = {"question": text, "prefix": prefix, "cap": COUNT_CAP, "statuses": statuses, "window": window,
              "nearest": min(window, 1000), "vector": asked[0] if asked else None}
    with _vectors_checked(tx), tx.conn.pipeline():
        weighed = tx.execute(WEIGH, params)
        if asked:  # the index returns at most ef_search rows (40 unless told)
            tx.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(40, min(window, 1000))),))
        found = tx.execute(_ANSWERS.format(near=near), params)
    terms = [weigh(r["lexeme"], int(r["position"] or 0), r["n"], r["df"], ranking) for r in weighed.fetchall()]
    ranked = order(candidates(terms, found.fetchall(), ranking), ranking)
    return [c for c in ranked if c.row["matched"]
            or (c.similarity is not None and c.similarity >= ranking.best_similarity)]


def retrieve(ctx: Context, question: str, k: int | None = None, *, ranking: Ranking = DEFAULT,
             leave_out: Callable[[dict], bool] | None = None) -> list[dict]:
    """The best-ranked passages of source documents and approved answers for `question`. `leave_out`:
    passages and answers that may not ground the answer (an escalated candidate's own passage), left
    out before the best is chosen, as if the corpus did not hold them."""
    k = k or ctx.settings.retrieval_top_k
    with ctx.db.read() as tx:
        return retrieve_in(tx, question, k, ranking=ranking, leave_out=leave_out)


def retrieve_in(tx: Tx, question: str, k: int, *, ranking: Ranking = DEFAULT,
                leave_out: Callable[[dict], bool] | None = None) -> list[dict]:
    terms, ranked = rank(tx, question, ranking)
    if asks_elsewhere(terms, question, ranking):
        return []  # about what the corpus never names: its nearest passages are about something else
    if leave_out is not None:
        ranked = [c for c in ranked if not leave_out(c.row)]
    chosen = [_source(c) for c in choose(ranked, k, ranking)]
    if len(chosen) == 1 and chosen[0]["kind"] == "passage":
        chosen += _related(tx, chosen[0], terms, k - len(chosen), ranking, leave_out)
    return chosen[:k]


def rank(tx: Tx, question: str, ranking: Ranking = DEFAULT, *, passages: bool = True,
         answers: bool = True) -> tuple[list[Term], list[Candidate]]:
    """The question's weighed terms, and every passage and APPROVED answer (unless `passages` or
    `answers` is off) found by its words or by its meaning, ranked."""
    question = question or ""
    asked = tx.embeddings.question(tx, question[:QUESTION_CHARS]) \
        if ranking.vectors and tx.embeddings is not None and question.strip() else None
    params = {"question": question, "cap": COUNT_CAP, "wide": ranking.wide, "exclude": None, "answers": answers,
              "passages": passages, "nearest": ranking.nearest, "vector": asked[0] if asked else None}
    with _vectors_checked(tx), tx.conn.pipeline():  # both statements in one round trip
        # Planned once per connection, for any question (docs/architecture.md, "Retrieval"): the plan
        # does not depend on the question, and planning these statements cost more than running WEIGH.
        tx.execute(_GENERIC, ("force_generic_plan",))
        weighed = tx.conn.execute(WEIGH, params, prepare=True)
        positions = ranking.phrase_weight != 0  # only the phrase bonus reads where the terms stand
        found = tx.conn.execute(hybrid_sql(asked[1], positions) if asked else LEXICAL_IN[positions], params,
                                prepare=True)
        tx.execute(_GENERIC, ("auto",))
    terms = [weigh(r["lexeme"], int(r["position"] or 0), r["n"], r["df"], ranking) for r in weighed.fetchall()]
    return terms, order(candidates(terms, found.fetchall(), ranking), ranking)


def candidates(terms: list[Term], rows: list[dict], ranking: Ranking = DEFAULT) -> list[Candidate]:
    """One Candidate per passage or answer, whichever search found it, scored for `terms`."""
    found: dict[tuple, Candidate] = {}
    for row in rows:
        key = (row["kind"], row["id"])
        c = found.get(key)
        if c is None:
            scored = score(terms, _hits(row), ranking)
            c = found[key] = Candidate(key, row, score=scored[0], coverage=scored[1], rank=float(row["rank"] or 0))
        if row["similarity"] is not None:
            c.similarity = float(row["similarity"])
    return list(found.values())


@contextmanager
def _vectors_checked(tx: Tx):
    """A vector of the length this process read as recorded met vectors of another: the index was
    rebuilt for another model meanwhile. Said so (the transaction is lost), and read again next time."""
    try:
        yield
    except psycopg.errors.DataException as exc:
        if "dimensions" not in str(exc) or tx.embeddings is None:
            raise
        tx.embeddings.forget()

        raise IndexChanged() from None


def _weigh(tx: Tx, lexemes: list[str], ranking: Ranking) -> list[Term]:
    """Terms weighed by how many passages and answers have them (the feedback terms')."""
    if not lexemes:
        return []
    counts = tx.one(
        "SELECT (SELECT count(*) FROM source_passages) + (SELECT count(*) FROM approved_answers "
        "        WHERE status = 'APPROVED') AS n, "
        "       (SELECT json_object_agg(l, (SELECT count(*) FROM (SELECT 1 FROM source_passages p WHERE (p.search @@ t.q "
        "                                   OR p.heading_search @@ t.q) AND p.current LIMIT %(cap)s) p) + "
        "                                  (SELECT count(*) FROM (SELECT 1 FROM approved_answers a WHERE a.search @@ t.q "
        "                                   AND a.status = 'APPROVED' LIMIT %(cap)s) a)) "
        "          FROM unnest(%(lexemes)s::text[]) u(l), "
        "               LATERAL (SELECT " + _OPERAND.format(x="u.l") + " AS q) t) AS df",
        {"lexemes": lexemes, "cap": COUNT_CAP})
    n, df = counts["n"], counts["df"] or {}
    return [weigh(lexeme, 0, n, df.get(lexeme, 0), ranking) for lexeme in lexemes]


def _hits(row: dict) -> Hits:
    if isinstance(row["body"], list) or isinstance(row["labels"], list):  # without positions (`_HIT_FORMS`)
        body, heading, title = {lexeme: [] for lexeme in row["body"] or []}, {}, {}
        for label in row["labels"] or []:
            if row["kind"] == "answer":  # an answer's question is its heading
                (heading if label[:1] == "A" else body)[label[1:]] = []
            else:
                (title if label[:1] == "A" else heading)[label[1:]] = []
        return Hits(body, heading, title)
    body, heading, title = dict(row["body"] or {}), {}, {}  # a passage's text: lexeme → positions
    for lexeme, hit in (row["labels"] or {}).items():
        for position, weight in zip(hit["p"], hit["w"]):
            # Passages: title A, heading B (heading_search). Answers: question A (their heading), text B.
            if row["kind"] == "answer":
                (heading if weight == "A" else body).setdefault(lexeme, []).append(position)
            else:
                (title if weight == "A" else heading).setdefault(lexeme, []).append(position)
    return Hits(body, heading, title)


def _source(c: Candidate) -> dict:
    out = {k: c.row[k] for k in ("kind", "id", "document_id", "title", "heading", "text", "span_start", "span_end")}
    return {**out, "rank": round(c.final, 4), "coverage": round(c.coverage, 4),
            "similarity": None if c.similarity is None else round(c.similarity, 4),
            "lexical_rank": c.lexical_rank, "vector_rank": c.vector_rank}


def _related(tx: Tx, best: dict, terms: list[Term], room: int, ranking: Ranking,
             leave_out: Callable[[dict], bool] | None = None) -> list[dict]:
    """Passages that share the best passage's most telling terms (pseudo-relevance feedback): the
    context around a question only one passage answers."""
    if room <= 0:
        return []
    asked = {t.lexeme for t in terms}
    own = tx.all("SELECT t.lexeme, array_length(t.positions, 1) AS tf FROM source_passages p, "
                 "unnest(p.heading_search || p.search) t WHERE p.id = %s", (best["id"],))
    if not own:
        return []
    weighed = _weigh(tx, [r["lexeme"] for r in own if r["lexeme"] not in asked], ranking)
    tf = {r["lexeme"]: r["tf"] or 1 for r in own}
    # A term of this passage alone finds nothing else; one every passage has finds everything.
    feedback = sorted((t for t in weighed if not generic(t.lexeme) and len(t.lexeme) > 2 and t.df > 1),
                      key=lambda t: (-t.weight * tf[t.lexeme], t.lexeme))[:ranking.feedback_terms]
    if len(feedback) < 2:
        return []
    rows = tx.all(LEXICAL_OF_TERMS_IN[ranking.phrase_weight != 0], {"lexemes": [t.lexeme for t in feedback],
                                                                    "wide": ranking.wide,
                                     "exclude": best["id"], "answers": False, "passages": True})
    scored = []
    for row in rows:
        if row["kind"] != "passage" or (leave_out is not None and leave_out(row)):
            continue
        hits = _hits(row)
        matched = [t for t in feedback if t.lexeme in hits.body or t.lexeme in hits.heading]
        if len(matched) >= 2:
            s = score(feedback, hits, ranking)
            scored.append(Candidate(("passage", row["id"]), row, score=s[0], coverage=s[1], final=s[0]))
    scored.sort(key=lambda c: (-c.score, c.row["id"]))
    return [{**_source(c), "related": True} for c in scored[:room]]
