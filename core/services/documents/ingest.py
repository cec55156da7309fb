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
import os
import queue
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

import psycopg

from ... import engine
from ...domain import HORN_TYPES, Actor, files, limits
from ...errors import InvalidInput
from ...knowledge.extract import (
    READERS,
    SUFFIXES,
    Extracted,
    ExtractError,
    Unit,
    extract_parts,
    sections_of as _sections_of,
)
from ...knowledge.passages import HEADING_SEPARATOR, SECTION_CHARS, Section  # noqa: F401 (the index's names, here as before)
from ..contradictions import conflicts
from ..grey_entries import grey
from ..search import embeddings
from ..validation import candidates

if TYPE_CHECKING:
    from ...context import Context


@dataclass
class Summary:
    documents: int = 0
    candidates: dict = field(default_factory=lambda: {h: 0 for h in HORN_TYPES})
    fragments: int = 0
    duplicates: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    document_ids: list = field(default_factory=list)
    dropped: dict = field(default_factory=dict)  # reason -> pieces that stated nothing (markup, navigation, …)
    versions: list = field(default_factory=list)  # documents stored as a new version of a file read before
    unchanged: int = 0   # statements a new version states as the one it replaces did
    merged: int = 0      # statements another document states too: a source more for its candidate
    withdrawn: int = 0   # pending candidates whose statement is gone
    flagged: int = 0     # answers whose source statement changed or vanished (source_changed flags)

    def as_dict(self) -> dict:
        return {"documents": self.documents, "candidates": self.candidates,
                "candidates_total": sum(self.candidates.values()), "fragments": self.fragments,
                "dropped": dict(sorted(self.dropped.items())), "dropped_total": sum(self.dropped.values()),
                "duplicates": self.duplicates, "skipped": self.skipped, "document_ids": self.document_ids,
                "versions": self.versions, "unchanged": self.unchanged, "merged": self.merged,
                "withdrawn": self.withdrawn, "flagged": self.flagged}


def not_a_file(path: Path, where: str = "a file or folder") -> str:
    """Why a path that is no regular file is passed by, naming what it is (a FIFO, a device, …)."""
    return f"{files.kind_at(path) or 'not a regular file'}, not {where}"


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
                        summary.skipped.append({"path": files.shown(entry), "line": None,
                                                "reason": not_a_file(entry, "a regular file: not read")})
                    elif entry.suffix.lower() in READERS:
                        found.append(entry)
                    else:
                        summary.skipped.append({"path": files.shown(entry), "line": None,
                                                "reason": unsupported(entry)})
            elif path.is_file():
                found.append(path)
            elif path.exists():
                summary.skipped.append({"path": files.shown(path), "line": None, "reason": not_a_file(path)})
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
    limit = limits.FILE_BYTES  # a text over DOCUMENT_BYTES once read is split by section (`extract_parts`)
    try:
        return files.read_bytes(path, limit)
    except files.NotARegularFile as exc:
        raise ExtractError(f"{exc.kind}, not a file") from None
    except files.TooLarge as exc:
        raise ExtractError(f"a file to ingest is at most {limit // 2**20} MB "
                           f"({limit:,} bytes); this one has {exc.size:,} bytes") from None
    except (OSError, ValueError) as exc:
        raise ExtractError(f"unreadable: {getattr(exc, 'strerror', None) or exc}") from None


def ingest(ctx: Context, actor: Actor, paths: Iterable[str | Path], *,
           on_file: Callable[[Path, int, int], None] | None = None) -> dict:
    summary = Summary()
    found = collect(paths, summary)
    if not found and not summary.skipped:
        raise InvalidInput(f"nothing to ingest: give files or folders of {SUFFIXES}")
    embed_ahead = embeddings.embeds_ahead(ctx)
    for index, (path, name, raw, parts, failed) in enumerate(_read_ahead(found, embed_ahead)):
        if on_file:
            on_file(path, index, len(found))
        try:
            if failed is not None:  # what reading it raised, handled here as before
                raise failed
            # The reader by suffix (or a PDF's first bytes) parsed the bytes; a text over DOCUMENT_BYTES
            # came back in parts of whole sections, each stored as a document of its own ("#part-2").
            for n, (doc, prepared) in enumerate(parts):
                where = name if len(parts) == 1 else f"{name}#part-{n + 1}"
                stored = summary.documents
                store(ctx, actor, Path(where), raw if len(parts) == 1 else doc.content.encode("utf-8", "surrogatepass"),
                      doc, summary, prepared)
                if summary.documents > stored:  # what it said nothing with, and the parts left out, once
                    for reason, count in doc.dropped.items():
                        summary.dropped[reason] = summary.dropped.get(reason, 0) + count
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


READ_AHEAD = 2  # files read and parsed ahead of the one being stored: enough to keep the database busy, and
# few enough that a run of big files (up to 32 MB each) holds only a few in memory


@dataclass
class Prepared:
    """What a document's transaction needs that reading it alone decides: its statements, its
    sections, and (`embeddings.embeds_ahead`) the vectors of both."""
    statements: dict[str, Unit]
    sections: list[Section]
    vectors: embeddings.Ahead | None = None


def prepare(doc: Extracted, embed_ahead: bool = False) -> Prepared:
    statements: dict[str, Unit] = {}  # statement -> its first unit (a statement said twice is one)
    for unit in doc.units:
        statements.setdefault(statement_of(unit.text), unit)
    sections = sections_of(doc)
    vectors = embeddings.ahead(sections, statements.values()) if embed_ahead else None
    return Prepared(statements, sections, vectors)


def _read_one(path: Path, embed_ahead: bool) -> tuple:
    """A file read, parsed and prepared, or what that raised (raised again where it is stored)."""
    name = files.shown(path)
    try:
        raw = read(path)
        parts = extract_parts(Path(name), raw)
        return path, name, raw, [(doc, prepare(doc, embed_ahead)) for doc in parts], None
    except Exception as exc:  # noqa: BLE001 (handed over whole: the storing side handles it as before)
        return path, name, None, [], exc


def _read_ahead(found: list[Path], embed_ahead: bool) -> Iterator[tuple]:
    """The files read and parsed (`_read_one`) in a thread of their own, in order, a few ahead of
    the one stored: parsing is Python and the transaction mostly waits on PostgreSQL (its indexes),
    so on two cores the one is done while the other waits. Stops when its reader stops."""
    if len(found) < 2:
        yield from (_read_one(path, embed_ahead) for path in found)
        return
    ready: queue.Queue = queue.Queue(maxsize=READ_AHEAD)
    stopped = threading.Event()

    def reading() -> None:
        for path in found:
            item = _read_one(path, embed_ahead)
            while not stopped.is_set():
                try:
                    ready.put(item, timeout=0.2)
                    break
                except queue.Full:
                    continue
            if stopped.is_set():
                return

    thread = threading.Thread(target=reading, name="ingest-read-ahead", daemon=True)
    thread.start()
    try:
        for _ in found:
            while True:
                try:
                    yield ready.get(timeout=0.5)
                    break
                except queue.Empty:
                    if not thread.is_alive() and ready.empty():  # stopped by what `_read_one` lets through
                        raise RuntimeError("ingest: reading the files stopped part way") from None
    finally:
        stopped.set()
        thread.join()


def store(ctx: Context, actor: Actor, path: Path, raw: bytes, doc: Extracted, summary: Summary,
          prepared: Prepared | None = None) -> None:
    """One document in one transaction, written in batches (docs/architecture.md, "Ingest"): the
    document, its passages, its statements, its new candidates and grey entries, and their events,
    in a few statements whatever its size. A file read before from the same place is a new version
    of it: the old one is kept, and only what changed between them becomes work (`_compare`)."""
    content_hash = hashlib.sha256(raw).hexdigest()
    location = os.path.abspath(path)
    prepared = prepared or prepare(doc)
    statements = prepared.statements
    with ctx.db.begin() as tx:
        # The locks serialise two ingests of one file, or of the same content; the unique index on
        # supersedes_id is the backstop (one version follows another).
        tx.execute("SELECT pg_advisory_xact_lock(hashtext(%s)), pg_advisory_xact_lock(hashtext(%s))",
                   (f"document:{location}", content_hash))
        previous = tx.one("SELECT id, content_hash FROM source_documents d WHERE location = %s AND NOT EXISTS "
                          "(SELECT 1 FROM source_documents n WHERE n.supersedes_id = d.id) ORDER BY id DESC LIMIT 1",
                          (location,))
        # The same content again adds nothing: the version this file was last ingested as, or, for a
        # file new here, any document.
        same = (previous if previous and previous["content_hash"] == content_hash else None) if previous else \
            tx.one("SELECT id FROM source_documents WHERE content_hash = %s ORDER BY id LIMIT 1", (content_hash,))
        if same:
            summary.duplicates.append({"path": str(path), "document_id": same["id"]})
            return
        document = engine.record(tx, "source_document", "source_documents", {
            "path": str(path), "title": doc.title[:300], "media_type": doc.media_type, "content": doc.content,
            "content_hash": content_hash, "created_by": actor.name, "location": location,
            "supersedes_id": previous["id"] if previous else None}, actor, event_type="ingested").row
        _index_sections(tx, document, doc, prepared.sections, previous)
        outcome = _compare(tx, actor, document, doc, statements, previous)
        embeddings.index_document(tx, document["id"], prepared.vectors)  # its passages and new candidates, in batches
        if doc.fragments:  # r2k's own words around the document's: cut to the limits
            grey.create_entries(tx, actor, [{
                "subject": limits.clip(f"{doc.title}: {fragment.topic}", limits.GREY_SUBJECT),
                "detail": limits.clip(f"Passage in {path.name} could not become a candidate: \u201c{fragment.text}\u201d",
                                      limits.GREY_DETAIL)} for fragment in doc.fragments], origin="ingest")
    summary.documents += 1
    summary.document_ids.append(document["id"])
    summary.fragments += len(doc.fragments)
    for row in outcome["created"]:
        summary.candidates[row["horn_type"]] += 1
    if previous:
        summary.versions.append({"path": str(path), "document_id": document["id"], "supersedes": previous["id"]})
    summary.merged += outcome["merged"]
    summary.unchanged += outcome["unchanged"]
    summary.withdrawn += outcome["withdrawn"]
    summary.flagged += outcome["flagged"]


def _index_sections(tx, document: dict, doc: Extracted, sections: list[Section], previous: dict | None) -> None:
    """The retrieval index: the document's titled sections, in one statement; the version it
    replaces leaves the index (its rows stay, not current)."""
    title = doc.title[:300]
    tx.copy("source_passages", ("document_id", "ordinal", "span_start", "span_end", "text", "title", "heading"),
            [(document["id"], ordinal, x.start, x.end, x.text, title, x.heading)
             for ordinal, x in enumerate(sections)])
    if previous:
        tx.execute("UPDATE source_passages SET current = false WHERE document_id = %s", (previous["id"],))


def _compare(tx, actor: Actor, document: dict, doc: Extracted, statements: dict[str, Unit],
             previous: dict | None) -> dict:
    """The document's statements against what is stored (docs/architecture.md, "Ingest"):
    - one the version it replaces states too keeps its candidate, as it is;
    - one another current document states (a near-duplicate) is that document's candidate, which
      gains this document as a source (an event);
    - any other is new (or changed): a new PENDING candidate;
    - one the replaced version stated and no current document states any more is gone: its
      candidate is withdrawn if it still waits in its queue, and an answer published from it gets
      a `source_changed` flag, for re-review.
    Each statement the document holds is written down with its candidate, for the next version."""
    before = {r["statement"]: r["candidate_id"] for r in tx.all(
        "SELECT statement, candidate_id FROM document_statements WHERE document_id = %s",
        (previous["id"],))} if previous else {}
    # What the other current documents state, of this document's statements and the replaced one's
    # (the replaced version is no longer current: this one supersedes it).
    elsewhere = {r["statement"]: r["candidate_id"] for r in tx.all(
        "SELECT DISTINCT ON (s.statement) s.statement, s.candidate_id FROM document_statements s "
        "WHERE s.statement = ANY(%s) AND NOT EXISTS (SELECT 1 FROM source_documents n WHERE n.supersedes_id = s.document_id) "
        "ORDER BY s.statement, s.candidate_id", (list(statements.keys() | before.keys()),))} \
        if statements or before else {}

    def ref(statement: str, unit: Unit) -> dict:
        return {"document_id": document["id"], "path": document["path"], "title": doc.title,
                "span": [unit.span[0], unit.span[1]], "statement": statement}

    new = [(h, u) for h, u in statements.items() if h not in before and h not in elsewhere]
    created = candidates.create_candidates(tx, actor, [
        {"question": u.question, "text": u.text, "horn_type": u.horn_type, "source_refs": [ref(h, u)],
         "document_id": document["id"]} for h, u in new], origin="extracted")
    holder = {h: row["id"] for (h, _), row in zip(new, created)}
    merged = 0
    for h, unit in statements.items():
        if h in before:
            holder[h] = before[h]
        elif h in elsewhere:
            holder[h] = elsewhere[h]
            candidates.add_source(tx, actor, elsewhere[h], ref(h, unit))
            merged += 1
    tx.copy("document_statements", ("document_id", "statement", "candidate_id", "span_start", "span_end"),
            [(document["id"], h, holder[h], u.span[0], u.span[1]) for h, u in statements.items()])
    kept = set(holder.values())
    gone = {before[h] for h in before if h not in statements and h not in elsewhere} - kept
    withdrawn = candidates.withdraw_removed(tx, sorted(gone), document["id"]) if gone else []
    flagged = conflicts.flag_source_changed(tx, _now_reading(tx, gone, new), document) if gone else []
    return {"created": created, "merged": merged, "unchanged": sum(1 for h in statements if h in before),
            "withdrawn": len(withdrawn), "flagged": len(flagged)}


def _now_reading(tx, gone: set[int], new: list[tuple[str, Unit]]) -> dict[int, str | None]:
    """For each candidate whose statement is gone: the new statement that reads most like it (half
    its words or more in common: the statement changed), else None (the statement vanished)."""
    texts = {r["id"]: r["text"] for r in tx.all("SELECT id, text FROM candidates WHERE id = ANY(%s)", (sorted(gone),))}
    words_of = [set(_WORDS.findall(u.text.casefold())) for _, u in new]
    by_word: dict[str, list[int]] = {}
    for index, words in enumerate(words_of):
        for word in words:
            by_word.setdefault(word, []).append(index)
    reading: dict[int, str | None] = {}
    for candidate_id in sorted(gone):
        words = set(_WORDS.findall(texts.get(candidate_id, "").casefold()))
        shared: dict[int, int] = {}
        for word in words:
            for index in by_word.get(word, ()):
                shared[index] = shared.get(index, 0) + 1
        best = max(shared, key=lambda i: (shared[i] / len(words | words_of[i]), -i), default=None)
        close = best is not None and shared[best] / len(words | words_of[best]) >= 0.5
        reading[candidate_id] = new[best][1].text if close else None
    return reading


_WORDS = re.compile(r"\w+")
_NOT_WORDS = re.compile(r"[\W_]+")


def statement_of(text: str) -> str:
    """A statement's identity: the SHA-256 of its text normalised (Unicode NFKC, case folded, every
    run of characters that are neither letters nor digits one space), so the same statement with
    other emphasis, spacing or punctuation is the same statement."""
    normal = _NOT_WORDS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


# ----------------------------------------------------------------------------- the retrieval index

def sections_of(doc: Extracted) -> list[Section]:
    """The passages retrieval ranks, each a section's text under its heading path
    (core/knowledge/passages.py). Pure."""
    return _sections_of(doc)


def jsonl_heading(content: str, answer_start: int) -> str:
    """The question of a stored JSON Lines record, given where its answer starts: the line above it
    (ingest joins records as "question\nanswer" blocks)."""
    return content[:max(answer_start - 1, 0)].rpartition("\n")[2].strip()
