"""An LLM's proposal for extracted statements: the prompt that asks for it, and the checks that keep
only what the source holds (docs/architecture.md, "Documents and extraction"). Pure: no I/O.

The LLM is asked, for a batch of statements of one document, for one `{"n", "question", "claim",
"horn_type"}` each. Its reply's shape is checked against core/schemas/extraction_proposal.json (by
core/services/answering/refine.py); what is checked here is whether a proposed claim is still the statement the
source holds:

- every content word of the claim (a word of three letters or more that is not a function word, or
  any token with a digit) is a word of the statement or of its section's heading path, case and a
  plural "s"/"es" aside: a claim may drop, reorder and join the source's words, never bring its own
  (no invented number, name or obligation);
- the claim keeps the statement's negations and adds none (as many of not, no, never, nor, cannot,
  n't): dropping a "not" turns a prohibition into an order;
- the question shares a content word with the statement or its heading path: it asks about it.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

SYSTEM = (
    "You prepare statements taken from a document for validators of a knowledge registry. For each numbered "
    "statement give: the question a person would ask that this statement answers, specific to it (never a "
    "heading turned into a template); the claim, the statement said as one self-contained sentence or list "
    "using only the statement's own words (do not add facts, numbers or names, keep every negation); and its "
    "Horn type by logical form: FACT (holds unconditionally), RULE (an obligation, recommendation, permission "
    "or an if/when/unless statement), CONSTRAINT (a prohibition: must not, never, not allowed), PROCEDURE (an "
    "ordered sequence of steps), OPEN_ISSUE (the text says it is unknown or undecided). Reply with JSON only, "
    'no prose: {"statements": [{"n": 1, "question": "...", "claim": "...", "horn_type": "FACT"}, ...]}, '
    "exactly one entry per statement, numbered as given.")


@dataclass(frozen=True)
class Asked:
    """One statement put to the LLM: its candidate, the text and its heading path."""

    candidate_id: int
    text: str
    heading: str = ""


def prompt(title: str, asked: list[Asked]) -> str:
    """The user message: the document's title, then each statement numbered from 1, with its heading
    path in brackets (one line; the statement's own line breaks kept as spaces)."""
    lines = [f"Document: {' '.join(title.split())}", "", "Statements:"]
    for n, item in enumerate(asked, start=1):
        where = f"({' '.join(item.heading.split())}) " if item.heading.strip() else ""
        lines.append(f"[{n}] {where}{' '.join(item.text.split())}")
    lines += ["", f"Reply with the JSON object for these {len(asked)} statements."]
    return "\n".join(lines)


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(?P<body>[\s\S]*?)\n?\s*```\s*$", re.IGNORECASE)


class NotJSON(ValueError):
    """The reply is not one JSON object (alone, or alone in a ``` fence)."""


def parse(reply: str) -> object:
    """The reply as JSON: the whole text, or the whole of one ``` fence (models often add one);
    anything else (prose around it, two objects, NaN) is NotJSON."""
    match = _FENCE.match(reply)
    body = match.group("body") if match else reply

    def no_constant(name: str):
        raise NotJSON(f"{name} is not JSON")

    try:
        return json.loads(body, parse_constant=no_constant)
    except (ValueError, RecursionError) as exc:
        raise NotJSON(str(exc).splitlines()[0][:200]) from None


FUNCTION_WORDS = frozenset((
    "the", "and", "for", "are", "was", "were", "that", "this", "these", "those", "with", "from", "into", "onto",
    "its", "their", "them", "they", "there", "then", "than", "has", "have", "had", "but", "can", "any", "all",
    "each", "per", "who", "whom", "whose", "which", "what", "when", "where", "how", "why", "does", "did", "done",
    "been", "being", "also", "only", "such", "our", "your", "you", "his", "her", "him", "she", "one", "ones",
    "both", "either", "neither",
    "not", "never", "nor", "cannot",  # negations: counted, not looked up (`negations`)
))
NEGATIONS = re.compile(r"\b(?:not|no|never|nor|cannot)\b|n't\b|n\u2019t\b", re.IGNORECASE)
_TOKENS = re.compile(r"\w+")


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")


def content_words(text: str) -> list[str]:
    """The words a claim may only take from its source, in order: three letters or more and not a
    function word, or any token with a digit."""
    return [w for w in _TOKENS.findall(_normal(text))
            if any(c.isdigit() for c in w) or (len(w) >= 3 and w not in FUNCTION_WORDS)]


def _forms(word: str) -> set[str]:
    forms = {word}
    if len(word) > 3 and word.endswith("s"):
        forms.add(word[:-1])
        if len(word) > 4 and word.endswith("es"):
            forms.add(word[:-2])
    return forms


def _source(statement: str, heading: str) -> set[str]:
    """Every form of every word of the statement and its heading path."""
    source: set[str] = set()
    for word in _TOKENS.findall(_normal(f"{statement}\n{heading}")):
        source |= _forms(word)
    return source


def unsupported(claim: str, statement: str, heading: str = "") -> list[str]:
    """The claim's content words that neither the statement nor its heading path has (empty: all
    supported), each once, in order."""
    source = _source(statement, heading)
    out: list[str] = []
    for word in content_words(claim):
        if not _forms(word) & source and word not in out:
            out.append(word)
    return out


def negations(text: str) -> int:
    return len(NEGATIONS.findall(_normal(text)))


def why_not(question: str, claim: str, statement: str, heading: str = "") -> str | None:
    """Why a proposal is not the statement the source holds, or None when it is (the module's rules)."""
    foreign = unsupported(claim, statement, heading)
    if foreign:
        return f"the claim has words the statement does not: {', '.join(foreign[:5])}"
    if negations(claim) != negations(statement):
        return "the claim does not keep the statement's negations"
    source = _source(statement, heading)
    if not any(_forms(word) & source for word in content_words(question)):
        return "the question shares no word with the statement"
    return None
