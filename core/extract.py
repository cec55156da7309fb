"""A raw document's bytes as candidates (question, answer text, Horn type, span), fragments and
retrieval passages: the interface ingest stores (docs/architecture.md, "Documents and extraction").

The reading is done by core/knowledge: a reader per format parses the file into sections and
blocks (`READERS`, chosen by the file's suffix, or by its first bytes for PDF and Word), the
claims are cut from the blocks, each gets its Horn type and its question. What the document holds
that states nothing is dropped and counted (`dropped`); a part over a limit is skipped with its
line (`skipped`) and the rest goes in. A file that cannot be read at all raises ExtractError, with
its line when known: never half of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .domain import formats, limits
from .knowledge import docx, html, jsonl, markdown, pdf, rst, text
from .knowledge.claims import MIN_WORDS, claims_of
from .knowledge.documents import Document, Unreadable
from .knowledge.horn import Form, horn_type
from .knowledge.questions import QUESTION_FOR, ask, distinct, names_of
from .knowledge import passages

ExtractError = Unreadable

# suffix -> (reader, reads bytes): a binary format's reader takes the file's bytes, the others its text.
READERS = {
    ".md": (markdown, False), ".markdown": (markdown, False), ".txt": (text, False), ".text": (text, False),
    ".jsonl": (jsonl, False), ".rst": (rst, False), ".rest": (rst, False),
    ".html": (html, True), ".htm": (html, True), ".xhtml": (html, True),
    ".pdf": (pdf, True), ".docx": (docx, True),
}
MEDIA_TYPES = {suffix: reader.MEDIA_TYPE for suffix, (reader, _) in READERS.items()}
BINARY = formats.BINARY
SUFFIXES = formats.LISTED

__all__ = ["BINARY", "MEDIA_TYPES", "MIN_WORDS", "QUESTION_FOR", "READERS", "ExtractError", "Extracted", "Unit",
           "extract", "reader_for"]


@dataclass
class Unit:
    question: str
    text: str
    horn_type: str
    span: tuple[int, int]
    topic: str       # the section's heading, else the document's title
    line: int = 0    # 1-based, in the file as given (0 when the format has no lines)
    heading: tuple[str, ...] = ()  # the heading path of its section
    asked_by_document: bool = False  # its question is the document's own (Q:/A:, a heading that asks, JSON Lines)


@dataclass
class Extracted:
    title: str
    media_type: str
    content: str
    units: list[Unit] = field(default_factory=list)
    fragments: list[Unit] = field(default_factory=list)
    passages: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, text) of each block indexed
    document: Document | None = None
    dropped: dict[str, int] = field(default_factory=dict)     # reason -> how many pieces stated nothing
    skipped: list[tuple[int | None, str]] = field(default_factory=list)  # (line, reason) of parts left out


def reader_for(path: Path, head: bytes = b""):
    """The reader of a file, by its suffix; a PDF or a Word file by its first bytes whatever its name."""
    suffix = path.suffix.lower()
    if suffix in READERS:
        return READERS[suffix]
    if head.startswith(b"%PDF-"):
        return READERS[".pdf"]
    return None


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ExtractError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})", line) from None


def extract(path: Path, data: bytes | str) -> Extracted:
    """`data`: the file's bytes (or, for a text format, its text as stored)."""
    head = data[:8] if isinstance(data, bytes) else b""
    found = reader_for(path, head)
    if found is None:
        raise ExtractError(f"unsupported file type {path.suffix.lower() or '(none)'}: expected {SUFFIXES}")
    reader, binary = found
    title = path.stem.replace("-", " ").replace("_", " ").strip() or path.name
    if not binary:
        content = _decode(data) if isinstance(data, bytes) else data
        at = limits.first_refused(content)
        if at >= 0:
            raise ExtractError(f"the file {limits.refused_character(content)}", content.count("\n", 0, at) + 1)
        document = reader.read(content, title)
    else:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        if not data.strip():
            raise ExtractError("an empty file: nothing to read")
        document = reader.read(data, title)
        at = limits.first_refused(document.content)
        if at >= 0:
            raise ExtractError(f"its text {limits.refused_character(document.content)}")
    if len(document.content.encode("utf-8", "surrogatepass")) > limits.DOCUMENT_BYTES:
        raise ExtractError(f"its text is over {limits.DOCUMENT_BYTES // 2**20} MB once read "
                           f"({len(document.content):,} characters): split it into several files")
    return _candidates(document)


def _candidates(document: Document) -> Extracted:
    found = claims_of(document)
    out = Extracted(title=document.title, media_type=document.media_type, content=document.content,
                    document=document, skipped=list(document.skipped) + found.skipped)
    dropped = document.dropped + found.dropped
    out.dropped = dict(sorted(dropped.items()))
    names = names_of(" ".join(b.plain for _, b in document.blocks() if b.kind == "paragraph"))
    types = [claim.horn_type or horn_type(Form(claim.plain, claim.items, claim.ordered, claim.intro))
             for claim in found.claims]
    questions = distinct([ask(c, document.title, t, names) for c, t in zip(found.claims, types)], found.claims,
                         document.title)
    for claim, horn, question in zip(found.claims, types, questions):
        why = limits.too_long("a question", limits.QUESTION, len(question.strip()))
        if why:
            out.skipped.append((claim.line, why))
            continue
        topic = claim.heading[-1] if claim.heading else document.title
        out.units.append(Unit(question, claim.text, horn, (claim.start, claim.end), topic, claim.line, claim.heading,
                              bool(claim.question)))
    for claim in found.fragments:
        topic = claim.heading[-1] if claim.heading else document.title
        out.fragments.append(Unit("", claim.text, "", (claim.start, claim.end), topic, claim.line, claim.heading))
    out.passages = [(start, end, text) for start, end, _, text in passages.blocks_indexed(document)]
    if not out.units and not out.fragments:  # empty, or headings alone: no document to keep
        if out.skipped:
            line, reason = out.skipped[0]
            raise ExtractError(reason, line)
        raise ExtractError("nothing to review in it: no statement, list or question")
    return out


def sections_of(doc: Extracted) -> list[passages.Section]:
    """The passages retrieval ranks (core/knowledge/passages.py)."""
    asked = [(u.span[0], u.span[1], u.question, u.text) for u in doc.units
             if u.asked_by_document]
    return passages.sections(doc.document, asked, by_question=doc.media_type == jsonl.MEDIA_TYPE)
