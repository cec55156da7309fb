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

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..domain import formats, limits
from . import docx, html, jsonl, markdown, passages, pdf, rst, text
from .claims import MIN_WORDS, claims_of
from .documents import Document, Unreadable
from .horn import Form, horn_type
from .questions import QUESTION_FOR, ask, distinct, names_of

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
           "extract", "extract_parts", "reader_for", "split_by_section"]


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
    """`data`: the file's bytes (or, for a text format, its text as stored). A document whose text
    is over DOCUMENT_BYTES is refused here; `extract_parts` splits it by section."""
    document = _document(path, data)
    if _size(document.content) > limits.DOCUMENT_BYTES:
        raise ExtractError(f"its text is over {limits.DOCUMENT_BYTES // 2**20} MB once read "
                           f"({len(document.content):,} characters): split it into several files")
    return _candidates(document)


def extract_parts(path: Path, data: bytes | str) -> list[Extracted]:
    """The document whole, or, when its text is over DOCUMENT_BYTES once read, its parts: runs of
    whole sections, each within the limit, titled "… (part 2 of 3)". A section over the limit
    alone is left out with its line and why (on the first part); the rest goes in."""
    document = _document(path, data)
    if _size(document.content) <= limits.DOCUMENT_BYTES:
        return [_candidates(document)]
    pieces, skipped = split_by_section(document)
    out: list[Extracted] = []
    for piece in pieces:
        try:
            out.append(_candidates(piece))
        except ExtractError as exc:  # a part of headings and code alone: nothing to review in it
            skipped.append((exc.line, f"{piece.title}: {exc}"))
    if not out:
        line, reason = skipped[0]
        raise ExtractError(reason, line)
    out[0].skipped[:0] = skipped
    return out


def _size(content: str) -> int:
    return len(content.encode("utf-8", "surrogatepass"))


def split_by_section(doc: Document) -> tuple[list[Document], list[tuple[int | None, str]]]:
    """A document over DOCUMENT_BYTES as parts of whole sections, each within it; the document's
    dropped counts and skips go with the first. A part starts where the section before it ended,
    so that its heading and the blank lines before it go with it."""
    skipped: list[tuple[int | None, str]] = list(doc.skipped)
    runs: list[tuple[int, list]] = []  # (where its text begins, its sections)
    begin, current, previous_end = 0, [], 0
    for section in doc.sections:
        if not section.blocks:
            continue
        start, end = min(b.start for b in section.blocks), max(b.end for b in section.blocks)
        alone = _size(doc.content[start:end])
        if alone > limits.DOCUMENT_BYTES:  # one part over the limit alone: left out, the rest goes in
            skipped.append((section.line or None,
                            f"a document is at most {limits.DOCUMENT_BYTES // 2**20} MB once read "
                            f"({limits.DOCUMENT_BYTES:,} bytes), and the section "
                            f"\u201c{' › '.join(section.heading)[:200] or doc.title}\u201d alone has {alone:,} bytes: "
                            f"left out"))
            if current:
                runs.append((begin, current))
            begin, current, previous_end = end, [], end
            continue
        if current and _size(doc.content[begin:end]) > limits.DOCUMENT_BYTES:
            runs.append((begin, current))
            begin, current = previous_end, []
        current.append(section)
        previous_end = end
    if current:
        runs.append((begin, current))
    parts = []
    for n, (start, sections) in enumerate(runs):
        finish = max(b.end for section in sections for b in section.blocks)
        part = Document(title=f"{doc.title} (part {n + 1} of {len(runs)})", media_type=doc.media_type,
                        content=doc.content[start:finish])
        for section in sections:
            part.sections.append(replace(section, blocks=[replace(b, start=b.start - start, end=b.end - start)
                                                          for b in section.blocks]))
        parts.append(part)
    if parts:
        parts[0].dropped = doc.dropped.copy()
    return parts, skipped


def _document(path: Path, data: bytes | str) -> Document:
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
    return document


def _candidates(document: Document) -> Extracted:
    found = claims_of(document)
    out = Extracted(title=document.title, media_type=document.media_type, content=document.content,
                    document=document, skipped=list(document.skipped) + found.skipped)
    dropped = document.dropped + found.dropped
    out.dropped = dict(sorted(dropped.items()))
    names = names_of(" ".join(b.plain for _, b in document.blocks() if b.kind == "paragraph"))
    types = [claim.horn_type or horn_type(Form(claim.plain, claim.items, claim.ordered, claim.intro,
                                               claim.term if claim.kind == "definition" else ""))
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
