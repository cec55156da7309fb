"""The passages retrieval ranks (docs/architecture.md, "Retrieval and generation"): each section's
statements together under its heading path, split where a section runs past SECTION_CHARS; a
`Q:`/`A:` pair as a passage headed by its question; a JSON Lines record headed by its question. A
paragraph too short to state anything grounds nothing and is left out; code and footnotes are
context a validator reads beside a claim, not passages.
"""
from __future__ import annotations

from dataclasses import dataclass

from .claims import MIN_WORDS, asks
from .documents import DEFINITION, LIST, PARAGRAPH, TABLE, Document

SECTION_CHARS = 1500  # a longer section is indexed as several passages, each with the section's heading
HEADING_SEPARATOR = " \u203a "  # "Common questions › Does Harbor deliver on Sundays?"
_INDEXED = (PARAGRAPH, LIST, DEFINITION, TABLE)


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    heading: str  # the heading path, outermost first; "" before a document's first heading
    text: str


def blocks_indexed(document: Document) -> list[tuple[int, int, str, str]]:
    """(start, end, heading path, text) of each block a passage is made of."""
    return [(b.start, b.end, HEADING_SEPARATOR.join(s.heading), b.text) for s, b in document.blocks()
            if b.kind in _INDEXED and len(b.plain.split()) >= MIN_WORDS and not b.question
            and not asks(b.text)]


def sections(document: Document, asked: list[tuple[int, int, str, str]], *, by_question: bool = False) -> list[Section]:
    """`asked`: (start, end, question, text) of the claims that ask their own question (a `Q:`/`A:`
    pair, a JSON Lines record). JSON Lines (`by_question`): one passage per record."""
    if by_question:
        return [Section(start, end, question, text) for start, end, question, text in asked]
    pieces = blocks_indexed(document)
    covered = [(start, end) for start, end, _, _ in pieces]
    marks = [(b.start, HEADING_SEPARATOR.join(s.heading)) for s, b in document.blocks()]
    for start, end, question, text in asked:  # Q:/A: pairs answer their own question
        if not any(s <= start < e for s, e in covered):
            path = next((h for at, h in reversed(marks) if at <= start), "")
            pieces.append((start, end, HEADING_SEPARATOR.join(p for p in (path, question) if p), text))
    pieces.sort()
    out: list[Section] = []
    for start, end, heading, text in pieces:
        last = out[-1] if out else None
        if last and last.heading == heading and len(last.text) + len(text) + 2 <= SECTION_CHARS:
            out[-1] = Section(last.start, end, heading, f"{last.text}\n\n{text}")
        else:
            out.append(Section(start, end, heading, text))
    return out
