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
from ..extract import BINARY, READERS, SUFFIXES, Extracted, ExtractError, extract
from ..extract import sections_of as _sections_of
from ..knowledge.passages import HEADING_SEPARATOR, SECTION_CHARS, Section  # noqa: F401 (the index's names, here as before)
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
    dropped: dict = field(default_factory=dict)  # reason -> pieces that stated nothing (markup, navigation, …)

    def as_dict(self) -> dict:
        return {"documents": self.documents, "candidates": self.candidates,
                "candidates_total": sum(self.candidates.values()), "fragments": self.fragments,
                "dropped": dict(sorted(self.dropped.items())), "dropped_total": sum(self.dropped.values()),
                "duplicates": self.duplicates, "skipped": self.skipped, "document_ids": self.document_ids}


NOT_A_FILE = "not a regular file (a FIFO, a socket or a device): not read"


def collect(paths: Iterable[str | Path], summary: Summary) -> list[Path]:
    """The files to ingest, in a stable order: folders are walked for the types r2k reads
    (`extract.READERS`); any other file met is listed as skipped, with why, and so is a FIFO."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        try:
            if path.is_dir():
                for entry in sorted(p for p in path.rglob("*") if not p.is_dir()):
                    if not entry.is_file():
                        summary.skipped.append({"path": files.shown(entry), "line": None, "reason": NOT_A_FILE})
                    elif entry.suffix.lower() in READERS:
                        found.append(entry)
                    else:
                        summary.skipped.append({"path": files.shown(entry), "line": None,
                                                "reason": unsupported(entry)})
            elif path.is_file():
                found.append(path)
            elif path.exists():
                summary.skipped.append({"path": files.shown(path), "line": None, "reason": NOT_A_FILE})
            else:
                summary.skipped.append({"path": files.shown(path), "line": None, "reason": "no such file or folder"})
        except OSError as exc:  # a name too long, a folder that cannot be listed: is_dir() lets those through
            summary.skipped.append({"path": files.shown(path), "line": None,
                                    "reason": f"cannot be read: {exc.strerror or exc}"})
    return found


def unsupported(path: Path) -> str:
    return f"unsupported file type {path.suffix.lower() or '(none)'}: r2k reads {SUFFIXES}"


def read(path: Path) -> bytes:
    """A file's bytes, never more than a document of its type may be: the text formats' limit is
    the stored text's, HTML, PDF and Word files (markup, pictures) may be larger than the text they
    hold. A regular file only (one swapped for a FIFO since `collect` looked is refused unread)."""
    binary = path.suffix.lower() in BINARY
    limit = limits.PACKED_DOCUMENT_BYTES if binary else limits.DOCUMENT_BYTES
    try:
        return files.read_bytes(path, limit)
    except files.NotARegularFile:
        raise ExtractError(NOT_A_FILE) from None
    except files.TooLarge as exc:
        raise ExtractError(f"a{' packed' if binary else ''} document is at most {limit // 2**20} MB "
                           f"({limit:,} bytes); this one has {exc.size:,} bytes") from None
    except (OSError, ValueError) as exc:
        raise ExtractError(f"unreadable: {getattr(exc, 'strerror', None) or exc}") from None


def ingest(ctx: Context, actor: Actor, paths: Iterable[str | Path], *,
           on_file: Callable[[Path, int, int], None] | None = None) -> dict:
    summary = Summary()
    found = collect(paths, summary)
    if not found and not summary.skipped:
        raise InvalidInput(f"nothing to ingest: give files or folders of {SUFFIXES}")
    for index, path in enumerate(found):
        if on_file:
            on_file(path, index, len(found))
        name = files.shown(path)
        try:
            raw = read(path)
            doc = extract(Path(name), raw)  # the reader by suffix (or a PDF's first bytes) parses the bytes
            stored = summary.documents
            store(ctx, actor, Path(name), raw, doc, summary)
            if summary.documents > stored:  # what it said nothing with, and the parts left out, once
                for reason, n in doc.dropped.items():
                    summary.dropped[reason] = summary.dropped.get(reason, 0) + n
                summary.skipped += [{"path": name, "line": line, "reason": reason} for line, reason in doc.skipped]
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

def sections_of(doc: Extracted) -> list[Section]:
    """The passages retrieval ranks, each a section's text under its heading path
    (core/knowledge/passages.py). Pure."""
    return _sections_of(doc)


def jsonl_heading(content: str, answer_start: int) -> str:
    """The question of a stored JSON Lines record, given where its answer starts: the line above it
    (ingest joins records as "question\nanswer" blocks)."""
    return content[:max(answer_start - 1, 0)].rpartition("\n")[2].strip()
