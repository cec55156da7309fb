"""The words every contradiction rule reads (docs/architecture.md, "Conflicts"): a `Finding`, the
function, negation and modal words, stems, sentences, and the capitalised names of a sentence. Pure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..subjects import singular


@dataclass(frozen=True)
class Finding:
    """A contradiction between two texts.

    kind: "quantity", "modal", "negation", "attribute" (or "judged" when an LLM found it);
    detail: a short human line naming the disagreeing words ("15 minutes vs 30 minutes (break)");
    words_a / words_b: the disagreeing words as they are written in each text, for highlighting.
    """

    kind: str
    detail: str
    words_a: tuple[str, ...] = field(default_factory=tuple)
    words_b: tuple[str, ...] = field(default_factory=tuple)


# ----------------------------------------------------------------------------- words

FUNCTION = frozenset(["a", "an", "the", "this", "that", "these", "those", "it", "its", "they", "them", "their", "there", "here", "of", "in", "on", "at", "by", "for", "from", "to", "into", "onto", "with", "without", "within", "about", "after", "before", "between", "during", "through", "across", "per", "via", "than", "then", "as", "and", "or", "nor", "but", "if", "so", "is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "had", "having", "do", "does", "did", "done", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "also", "just", "very", "too", "all", "any", "each", "every", "some", "such", "same", "own", "only", "which", "who", "whom", "whose", "what", "when", "where", "how", "whether", "while", "our", "your", "we", "you", "he", "she", "his", "her", "i", "me", "my", "us", "up", "out", "off", "over", "under"])
NEGATIONS = frozenset({"not", "no", "never", "cannot", "can't", "don't", "doesn't", "isn't", "aren't",
                        "won't", "mustn't", "shouldn't", "wasn't", "weren't", "none", "nobody", "nothing",
                        "neither", "nor", "without"})
MODAL_WORDS = frozenset({"must", "may", "might", "can", "could", "shall", "should", "need", "needs", "needed",
                          "require", "requires", "required", "requirement", "mandatory", "compulsory",
                          "obligatory", "prohibited", "forbidden", "banned", "allowed", "permitted", "optional",
                          "always", "never", "have", "has", "to", "cannot", "mustn't", "not", "no", "ever"})
TOKEN = re.compile(r"\d{1,2}:\d{2}\b|°[CF]|[A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*|[-−]?\d[\d,]*(?:\.\d+)?|%|€|\$|£|[.;:!?,()]")


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    w = word.lower().replace("’", "'")
    if w.endswith(("'s", "s'")) and len(w) > 3:  # "the user's session": the user's
        w = w[:-2] if w.endswith("'s") else w[:-1]
    w = singular(w)
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[:-len(suffix)]
            if len(w) > 3 and w[-1] == w[-2]:  # stopped → stopp → stop
                w = w[:-1]
            break
    if w.endswith(("able", "ible")) and len(w) >= 8:  # "readable" is what "read" says of a file
        w = w[:-4]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?;])\s+|\n+|(?<=:)\s+(?=[A-Z])", text or "")
    return [p.strip() for p in parts if p and p.strip()]


def capitalised_names(sentence: str) -> set[str]:
    """Capitalised words not at the start of the sentence, and codes ("RTM-1", "ISO 9001")."""
    words = re.findall(r"[A-Za-z][\w'-]*", sentence)
    return {w.lower() for i, w in enumerate(words) if i > 0 and w[0].isupper() and w.lower() not in FUNCTION}
