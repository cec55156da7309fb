"""Ingest raw documents: store each as a source, split it into classified candidates, queue them.

Each document is one transaction (the source, its passages, its candidates and their events), so
a failure never leaves half a document. A file that cannot be read (missing, not UTF-8, larger than
a document may be, malformed or too deeply nested JSON line, a NUL, a question or answer over its
limit) is reported with its path and line and skipped; the others go in. The same content twice
adds nothing (content hash).

Retrieval reads a document by section (`sections_of`): each passage is a section's text (or a part
of a long one) with the document's title and its heading path, so a question on "headcount" finds
the section headed so even when its text never says the word (docs/architecture.md).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import psycopg

from .. import engine
from ..domain import HORN_TYPES, Actor, files, limits
from ..errors import InvalidInput
from ..extract import MEDIA_TYPES, MIN_WORDS, Extracted, ExtractError, extract
from . import candidates, embeddings, grey

if TYPE_CHECKING:
    from ..context import Context


@dataclass
class Summary:
    documents: int = 0
    candidates: dict = field(default_factory=lambda: {h: 0 for h in HORN_TYPES})
    fragments: int = 0
    duplicates: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    document_ids: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"documents": self.documents, "candidates": self.candidates,
                "candidates_total": sum(self.candidates.values()), "fragments": self.fragments,
                "duplicates": self.duplicates, "skipped": self.skipped, "document_ids": self.document_ids}


def collect(paths: Iterable[str | Path], summary: Summary) -> list[Path]:
    """The files to ingest, in a stable order: folders are walked for .md, .txt and .jsonl (regular
    files only: a FIFO or a device among them is passed by)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        try:
            if path.is_dir():
                found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MEDIA_TYPES)
            elif path.is_file():
                found.append(path)
            else:
                kind = files.kind_at(path)
                reason = f"{kind}, not a file or folder" if kind else "no such file or folder"
                summary.skipped.append({"path": files.shown(path), "line": None, "reason": reason})
        except OSError as exc:  # a name too long, a folder that cannot be listed: is_dir() lets those through
            summary.skipped.append({"path": files.shown(path), "line": None,
                                    "reason": f"cannot be read: {exc.strerror or exc}"})
    return found


def read(path: Path) -> tuple[bytes, str]:
    try:  # a regular file (one swapped for a FIFO since collect is refused), never more than a document may be
        raw = files.read_bytes(path, limits.DOCUMENT_BYTES)
    except files.NotARegularFile as exc:
        raise ExtractError(f"{exc.kind}, not a file") from None
    except files.TooLarge as exc:
        raise ExtractError(f"a document is at most {limits.DOCUMENT_BYTES // 2**20} MB "
                           f"({limits.DOCUMENT_BYTES:,} bytes); this one has {exc.size:,} bytes") from None
    except OSError as exc:
        raise ExtractError(f"unreadable: {exc.strerror or exc}") from None
    try:
        return raw, raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ExtractError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})", line) from None


def ingest(ctx: Context, actor: Actor, paths: Iterable[str | Path], *,
           on_file: Callable[[Path, int, int], None] | None = None) -> dict:
    summary = Summary()
    found = collect(paths, summary)
    if not found and not summary.skipped:
        raise InvalidInput("nothing to ingest: give Markdown, plain-text or JSON Lines files or folders")
    for index, path in enumerate(found):
        if on_file:
            on_file(path, index, len(found))
        name = files.shown(path)
        try:
            raw, content = read(path)
            doc = extract(Path(name), content)
            store(ctx, actor, Path(name), raw, doc, summary)
        except ExtractError as exc:
            summary.skipped.append({"path": name, "line": exc.line, "reason": str(exc)})
        except (InvalidInput, psycopg.DataError, psycopg.errors.ProgramLimitExceeded) as exc:
            # What the checks above missed and the database refused: this file's transaction rolled
            # back whole, and the next file is read.
            reason = exc.message if isinstance(exc, InvalidInput) else f"the database refused it: {exc}"
            summary.skipped.append({"path": name, "line": None, "reason": reason.splitlines()[0]})
    if on_file:
        on_file(Path(""), len(found), len(found))
    return summary.as_dict()


def store(ctx: Context, actor: Actor, path: Path, raw: bytes, doc: Extracted, summary: Summary) -> None:
    content_hash = hashlib.sha256(raw).hexdigest()
    created: list[dict] = []
    with ctx.db.begin() as tx:
        # The lock serialises two ingests of the same content; the unique hash is the backstop.
        tx.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (content_hash,))
        existing = tx.one("SELECT id FROM source_documents WHERE content_hash = %s", (content_hash,))
        if existing:
            summary.duplicates.append({"path": str(path), "document_id": existing["id"]})
            return
        document = engine.record(tx, "source_document", "source_documents", {
            "path": str(path), "title": doc.title[:300], "media_type": doc.media_type, "content": doc.content,
            "content_hash": content_hash, "created_by": actor.name}, actor, event_type="ingested").row
        for ordinal, section in enumerate(sections_of(doc)):  # the retrieval index: titled sections
            tx.execute("INSERT INTO source_passages (document_id, ordinal, span_start, span_end, text, title, heading) "
                       "VALUES (%s, %s, %s, %s, %s, %s, %s)", (document["id"], ordinal, section.start, section.end,
                                                               section.text, doc.title[:300], section.heading))
        for unit in doc.units:
            ref = {"document_id": document["id"], "path": str(path), "title": doc.title,
                   "span": [unit.span[0], unit.span[1]]}
            created.append(candidates.create_candidate(tx, actor, unit.question, unit.text, unit.horn_type,
                                                       [ref], origin="extracted", document_id=document["id"]))
        embeddings.index_document(tx, document["id"])  # its passages and candidates, in batches
        for fragment in doc.fragments:  # r2k's own words around the document's: cut to the limits
            subject = limits.clip(f"{doc.title}: {fragment.topic}", limits.GREY_SUBJECT)
            detail = limits.clip(f"Passage in {path.name} could not become a candidate: \u201c{fragment.text}\u201d",
                                 limits.GREY_DETAIL)
            grey.create_entry(tx, actor, subject=subject, detail=detail, origin="ingest")
    summary.documents += 1
    summary.document_ids.append(document["id"])
    summary.fragments += len(doc.fragments)
    for row in created:
        summary.candidates[row["horn_type"]] += 1


# ----------------------------------------------------------------------------- the retrieval index

SECTION_CHARS = 1500  # a longer section is indexed as several passages, each with the section's heading
HEADING_SEPARATOR = " \u203a "  # "Common questions › Does Harbor deliver on Sundays?"


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    heading: str  # the heading path, outermost first; "" before a document's first heading
    text: str


def sections_of(doc: Extracted) -> list[Section]:
    """The passages retrieval ranks: each section's paragraphs and lists together under its heading
    path (split where a section runs past SECTION_CHARS), a `Q:`/`A:` pair as a passage headed by
    its question, a JSON Lines record headed by its question. A paragraph too short to state
    anything (a fragment: "See appendix B.") grounds nothing and is left out. Pure."""
    if doc.media_type == "application/jsonl":
        return [Section(u.span[0], u.span[1], u.question, u.text) for u in doc.units]
    from ..extract import _blocks, _md_heading, _txt_heading

    heading_of = _md_heading if doc.media_type == "text/markdown" else _txt_heading
    marks: list[tuple[int, str]] = []  # (offset, heading path from there on)
    stack: list[tuple[int, str]] = []
    for kind, value, start, _ in _blocks(doc.content, heading_of):
        if kind != "heading":
            continue
        level, text = value
        if not stack and text == doc.title:
            continue  # the document's title, not a section
        stack = [(lv, t) for lv, t in stack if lv < level] + [(level, text)]
        marks.append((start, HEADING_SEPARATOR.join(t for _, t in stack)))

    def heading_at(offset: int) -> str:
        return next((path for at, path in reversed(marks) if at <= offset), "")

    pieces = [(start, end, heading_at(start), text) for start, end, text in doc.passages
              if len(text.split()) >= MIN_WORDS]
    covered = [(start, end) for start, end, _ in doc.passages]
    for unit in doc.units:  # Q:/A: pairs are units, not passages: they answer their own question
        if unit.question and not any(s <= unit.span[0] < e for s, e in covered):
            path = heading_at(unit.span[0])
            pieces.append((unit.span[0], unit.span[1], HEADING_SEPARATOR.join(p for p in (path, unit.question) if p),
                           unit.text))
    pieces.sort()
    sections: list[Section] = []
    for start, end, heading, text in pieces:
        last = sections[-1] if sections else None
        if last and last.heading == heading and len(last.text) + len(text) + 2 <= SECTION_CHARS:
            sections[-1] = Section(last.start, end, heading, f"{last.text}\n\n{text}")
        else:
            sections.append(Section(start, end, heading, text))
    return sections


def jsonl_heading(content: str, answer_start: int) -> str:
    """The question of a stored JSON Lines record, given where its answer starts: the line above it
    (ingest joins records as "question\nanswer" blocks)."""
    return content[:max(answer_start - 1, 0)].rpartition("\n")[2].strip()
