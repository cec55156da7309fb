"""Ranking maths of hybrid retrieval (docs/architecture.md, "Retrieval"). Pure: no I/O.

A candidate (a passage or an approved answer) comes from the full-text search, from the nearest
neighbours of the question's vector, or both. Each has:

- its **lexical score and coverage** (`score`): the share of the question's weight it has anywhere
  (coverage), and that share with heading and title matches weighed as such plus a bonus for the
  question's adjacent terms standing together in it (score). A term weighs its rarity (`idf`), a
  quarter for a word of asking (`generic`);
- its **similarity**, the cosine of its vector with the question's (None when it has none);
- its **ranks**: lexical (by score) and vector (by similarity), 1 the best, None when absent.

`order` fuses the two ranks by reciprocal rank fusion and re-ranks by coverage: the final score is
the lexical score plus `fusion_weight` times the fused rank (1.0 for a candidate first in both lists).
`supports` says whether a candidate grounds an answer: enough coverage of the question, or, by
meaning, enough similarity. `choose` keeps the best supporting ones; none when the question is
mostly names no passage has (`asks_elsewhere`). Every constant is a field of
`Ranking`, so `bench/retrieval.py` measures each one's effect.
"""
from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field, replace

# Words of r2k's own question templates (core/knowledge/extract.py, QUESTION_FOR) and of asking in general,
# stemmed: they say how a question is asked, not what about.
GENERIC = frozenset("establish rule appli forbidden regard step still unsettl mani much long often happen need get "
                    "allow may must shall exact".split())


@dataclass(frozen=True)
class Ranking:
    """The constants of the ranking; bench/retrieval.py prints each one's measured effect."""
    generic_weight: float = 0.25   # a word of asking weighs a quarter
    heading_weight: float = 1.3    # a question term in the section's heading path
    title_weight: float = 0.6      # in the document's title (true of every section of it)
    phrase_weight: float = 0.0     # adjacent question terms adjacent in the passage (off: it cost the real sets)
    best_coverage: float = 0.5     # the best source covers half the question's weight …
    other_coverage: float = 0.15   # … the others 0.15
    best_similarity: float = 0.45  # … or, by meaning: the best this cosine with the question,
    other_similarity: float = 0.3  # the others this one
    wide: int = 50                 # full-text candidates of each kind PostgreSQL ranks for scoring here
    nearest: int = 40              # vector candidates of each kind (HNSW, cosine; at most hnsw.ef_search, 40)
    rrf_k: int = 60                # reciprocal rank fusion: 1 / (rrf_k + rank)
    fusion_weight: float = 0.5     # what the fused ranks count beside the lexical score
    similarity_weight: float = 2.0  # what the cosine with the question counts beside them
    feedback_terms: int = 8        # pseudo-relevance feedback: the best passage's most telling terms
    best_within: int = 2           # the best source: the first of this many ranked that supports as the best must
    unknown_share: float = 0.3     # a question this much of whose weight is names no passage has: no sources
    vectors: bool = True           # retrieval by meaning at all (off: lexical only)
    changed: tuple = field(default=(), compare=False)  # names the bench set (for its rows)

    def but(self, **changes) -> "Ranking":
        return replace(self, changed=tuple(changes), **changes)


DEFAULT = Ranking()


@dataclass(frozen=True)
class Term:
    lexeme: str
    position: int   # first position in the question
    weight: float   # inverse document frequency, less for a generic word
    df: int = 0     # how many passages and answers have it


@dataclass
class Hits:
    """Where a passage has the question's terms: lexeme → positions, in its text, heading and title."""
    body: dict
    heading: dict
    title: dict


def generic(lexeme: str) -> bool:
    """A word of asking, a lone letter, or a symbol (an emoji): no topic of its own."""
    return lexeme in GENERIC or len(lexeme) < 2 or not any(ch.isalnum() for ch in lexeme)


def idf(n: int, df: int) -> float:
    """A term's weight: rarer in the corpus, more telling. A term no passage has weighs as one that
    a single passage has (the question asks about something the corpus may not know)."""
    return math.log(1 + (n + 1) / (max(df, 1) + 0.5))


def weigh(lexeme: str, position: int, n: int, df: int, ranking: Ranking = DEFAULT) -> Term:
    return Term(lexeme, position, idf(n, df) * (ranking.generic_weight if generic(lexeme) else 1.0), df)


def score(terms: list[Term], hits: Hits, ranking: Ranking = DEFAULT) -> tuple[float, float]:
    """(score, coverage) of a passage for the question's `terms`. Coverage: the share of the
    question's weight the passage has anywhere. Score: that share with heading and title matches
    weighed as such, plus the phrase bonus."""
    total = sum(t.weight for t in terms) or 1.0
    covered = weighted = phrase = 0.0
    for t in terms:
        places = [w for part, w in ((hits.body, 1.0), (hits.heading, ranking.heading_weight),
                                    (hits.title, ranking.title_weight)) if t.lexeme in part]
        if places:
            covered += t.weight
            weighted += t.weight * max(places)
    ordered = sorted(terms, key=lambda t: t.position) if ranking.phrase_weight else []  # no bonus, no search
    for a, b in zip(ordered, ordered[1:]):
        gap = b.position - a.position
        if 0 < gap <= 3 and any(adjacent(part.get(a.lexeme), part.get(b.lexeme), gap + 1)
                                for part in (hits.body, hits.heading, hits.title)):
            phrase += ranking.phrase_weight * (a.weight + b.weight) / 2
    return (weighted + phrase) / total, covered / total


def adjacent(first: list[int] | None, second: list[int] | None, within: int) -> bool:
    """A position of `second` within `within` after one of `first`: for each of `first`, the next of
    `second` after it is the one to look at (a common term has hundreds of positions)."""
    if not first or not second:
        return False
    after = sorted(second)
    last = len(after)
    for p in first:
        i = bisect_right(after, p)
        if i < last and after[i] - p <= within:
            return True
    return False


@dataclass
class Candidate:
    """One passage or answer being ranked; `row` is what retrieval returns of it."""
    key: tuple            # (kind, id)
    row: dict
    score: float = 0.0    # lexical score (0 when it shares no term with the question)
    coverage: float = 0.0
    rank: float = 0.0     # PostgreSQL's cover density, the lexical tie-break
    similarity: float | None = None
    lexical_rank: int | None = None
    vector_rank: int | None = None
    fused: float = 0.0    # the reciprocal rank fusion, 1.0 when first in both lists
    final: float = 0.0


def order(candidates: list[Candidate], ranking: Ranking = DEFAULT) -> list[Candidate]:
    """The candidates ranked: each one's lexical and vector ranks, fused, then re-ranked by the
    lexical score (coverage of the question). Sets the ranks, `fused` and `final` on each."""
    lexical = sorted((c for c in candidates if c.coverage > 0), key=lambda c: (-c.score, -c.rank, c.key))
    for n, c in enumerate(lexical, start=1):
        c.lexical_rank = n
    nearest = sorted((c for c in candidates if c.similarity is not None), key=lambda c: (-c.similarity, c.key))
    for n, c in enumerate(nearest, start=1):
        c.vector_rank = n
    lists = 2 if nearest else 1
    for c in candidates:
        rrf = sum(1 / (ranking.rrf_k + r) for r in (c.lexical_rank, c.vector_rank) if r is not None)
        c.fused = rrf * (ranking.rrf_k + 1) / lists
        c.final = c.score + ranking.fusion_weight * c.fused + ranking.similarity_weight * (c.similarity or 0.0)
    return sorted(candidates, key=lambda c: (-c.final, -c.score, -c.rank, c.key))


def supports(c: Candidate, ranking: Ranking = DEFAULT, *, best: bool = False) -> bool:
    """Does `c` ground an answer: enough of the question's words, or near enough in meaning."""
    coverage, similarity = (ranking.best_coverage, ranking.best_similarity) if best else \
        (ranking.other_coverage, ranking.other_similarity)
    return c.coverage >= coverage or (c.similarity is not None and c.similarity >= similarity)


_NAME = re.compile(r"[\w.+-]*[A-Z][\w.+-]*")  # a word with a capital: "Redis", "SQLite", "AWS", "GitHub"


def unknown(terms: list[Term], question: str) -> float:
    """The share of the question's weight in names (its words with a capital) that no passage or answer
    has: a product the corpus never mentions ("Redis", "SQLite") says it asks about something else. A
    plain word the corpus lacks ("ride", "colleague") is only another wording: meaning may find it."""
    names = [w.lower() for w in _NAME.findall(question or "")]
    total = sum(t.weight for t in terms) or 1.0
    return sum(t.weight for t in terms if t.df == 0 and not generic(t.lexeme) and _named(t.lexeme, names)) / total


def _named(lexeme: str, names: list[str]) -> bool:
    """Is `lexeme` the stem of one of the question's names? A stem is the word's start ("redi" of
    "redis"), but for a final y made i ("Hardy", "hardi")."""
    heads = (lexeme, lexeme[:-1] + "y") if lexeme.endswith("i") else (lexeme,)
    return any(n.startswith(head) for n in names for head in heads)


def asks_elsewhere(terms: list[Term], question: str, ranking: Ranking = DEFAULT) -> bool:
    """Does the question ask about what the corpus does not know (`unknown_share` of it or more in names
    it never mentions)? Then no passage grounds an answer, however near in meaning: the nearest is
    about something else."""
    return unknown(terms, question) >= ranking.unknown_share


def choose(ranked: list[Candidate], k: int, ranking: Ranking = DEFAULT) -> list[Candidate]:
    """The sources: the first of the best `best_within` candidates that supports an answer as the best
    must, then the others that support one, in rank order, at most `k` in all. None when none of them
    does (a first one that only shares the question's words, far in meaning, no longer hides a second
    that answers it)."""
    best = next((c for c in ranked[:ranking.best_within] if supports(c, ranking, best=True)), None)
    if best is None:
        return []
    return [best] + [c for c in ranked if c is not best and supports(c, ranking)][:k - 1]
