"""The vector index (docs/architecture.md, "Retrieval"): source passages, candidates and approved
answers embedded as they are written, the recorded model, `r2k index rebuild`, and what
`services status` says about retrieval.

- **Writes.** A document's passages and extracted candidates are embedded in one batch by
  `index_document`, after ingest wrote them (with the shipped model, embedded while the document
  before it is stored: `ahead`), and written by one binary COPY; any other candidate as it is
  created, and an answer as it is published (reactions), by one INSERT. Each write is guarded by the
  recorded model, so a vector of another model never lands beside the index's.
- **The model.** The first write records the model and its dimension (`embedding_index`, with the
  HNSW indexes for that dimension: core/migrations/vectors.py). A configured model that differs from
  the recorded one (or answers with another dimension) is refused with `EmbeddingsMismatch`, naming
  both: `r2k index rebuild` re-embeds everything with the configured one.
- **No pgvector.** A PostgreSQL without the extension has no vector tables: every write is skipped,
  and retrieval runs lexical only.
- **An endpoint that fails** (or whose circuit is open) leaves the rows it was given without vectors,
  logged: retrieval still finds them by their words, and `r2k index rebuild` fills them in.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import psycopg

from ... import embedded
from ...adapters.breaker import CircuitBreaker
from ...adapters.embeddings import BREAKER_KEY, STATIC_MODEL, EmbeddingsError, EndpointEmbedder, StaticEmbedder, literal
from ...errors import Conflict, ServiceUnavailable
from ...migrations.vectors import VECTOR_EXTENSION, VECTOR_SCHEMA

if TYPE_CHECKING:
    from ...adapters.postgres import Tx
    from ...context import Context
    from ...engine import Event

log = logging.getLogger(__name__)

REBUILD_BATCH = 256  # rows embedded and committed together by `index rebuild`: one batch is what a stop loses
RECHECK_SECONDS = 10.0  # a long-lived process reads the recorded model again this often (a rebuild elsewhere)


@dataclass(frozen=True)
class Kind:
    table: str    # the side table of vectors
    key: str      # its column naming the row
    source: str   # the table the rows are of
    text: str     # the SQL expression of what is embedded, over the source table as `s`


# What is embedded of each: a passage's heading path with its text (a question names the section's
# topic as often as its words), a candidate's or an answer's question with its text.
KINDS = {
    "passage": Kind("passage_vectors", "passage_id", "source_passages",
                    "concat_ws(E'\\n', nullif(s.heading, ''), s.text)"),
    "candidate": Kind("candidate_vectors", "candidate_id", "candidates", "s.question || E'\\n' || s.text"),
    "answer": Kind("answer_vectors", "answer_id", "approved_answers", "s.question || E'\\n' || s.text"),
}


class IndexChanged(Conflict):
    """The index was rebuilt for vectors of another length since this process read it."""

    def __init__(self):
        super().__init__("the vector index was rebuilt with another embedding model since this process read it: "
                         "try again")


class EmbeddingsMismatch(Conflict):
    """The configured embedding model is not the one the index holds."""

    def __init__(self, recorded: "Recorded", model: str, dimension: int | None):
        configured = f"{model}" + (f" ({dimension} dimensions)" if dimension else "")
        super().__init__(f"the vector index holds embeddings of {recorded.model} ({recorded.dimension} dimensions), "
                         f"but this r2k is configured for {configured}: run `r2k index rebuild` (an admin) to "
                         f"re-embed everything with it, or configure {recorded.model} again")


@dataclass(frozen=True)
class Recorded:
    model: str | None      # None: pgvector is there, nothing embedded yet
    dimension: int | None
    state: str | None      # 'ready', or 'rebuilding' while `index rebuild` runs


class Embeddings:
    """This process's view of the vector index: the configured embedder (loaded on first use) and
    the recorded model (read once, then kept: it changes only by `index rebuild`)."""

    def __init__(self, ctx: Context):
        self._ctx = ctx
        self._recorded: Recorded | None = None
        self._read_at = 0.0
        self._vectors_table: bool | None = None
        self._embedder = None
        self._lock = threading.Lock()

    # -- the embedder ----------------------------------------------------------------------------
    @property
    def embedder(self):
        with self._lock:
            if self._embedder is None:
                s = self._ctx.settings
                if s.embeddings_url:
                    breaker = CircuitBreaker(self._ctx.redis, s.breaker_threshold, s.breaker_cooldown,
                                             probe_timeout=s.embeddings_timeout * 4, key=BREAKER_KEY)
                    self._embedder = EndpointEmbedder(s.embeddings_url, configured_model(s), s.embeddings_api_key,
                                                      s.embeddings_timeout, s.embeddings_retries, breaker)
                else:
                    self._embedder = StaticEmbedder()
            return self._embedder

    @property
    def model(self) -> str:
        return configured_model(self._ctx.settings)

    # -- the recorded model ----------------------------------------------------------------------
    def recorded(self, tx: Tx) -> Recorded | None:
        """What the index holds; None when this PostgreSQL has no vector tables (no pgvector)."""
        if self._vectors_table is None:
            self._vectors_table = bool(tx.scalar("SELECT to_regclass('passage_vectors') IS NOT NULL"))
        if not self._vectors_table:
            return None
        if self._recorded is None or self._recorded.model is None or time.monotonic() - self._read_at > RECHECK_SECONDS:
            row = tx.one("SELECT model, dimension, state FROM embedding_index WHERE id = 1")
            self._recorded = Recorded(row["model"], row["dimension"], row["state"]) if row else Recorded(None, None, None)
            self._read_at = time.monotonic()
        return self._recorded

    def forget(self) -> None:
        """Read the recorded model again at the next use (after a rebuild, or a write refused)."""
        self._recorded = None
        self._vectors_table = None

    def check(self, recorded: Recorded, dimension: int | None = None) -> None:
        known = dimension or getattr(self.embedder, "dimension", None)
        if recorded.model != self.model or (known and known != recorded.dimension):
            raise EmbeddingsMismatch(recorded, self.model, known)

    # -- writes ----------------------------------------------------------------------------------
    def write(self, tx: Tx, kind: str, rows: list[tuple[int, str]], *, new: bool = False,
              ahead: tuple[list[str], list[list[float]]] | None = None) -> int:
        """Embed `rows` (id, text) of `kind` and store their vectors. Returns how many were stored: 0
        without pgvector, or when the endpoint failed (logged; `index rebuild` fills them in).
        `new`: the rows were written by this transaction (no other can have a vector for them yet),
        so their vectors go in by one binary COPY (`_copy`). `ahead`: texts and their vectors embedded
        before (`ahead`), used when they are the rows' texts."""
        if not rows:
            return 0
        recorded = self.recorded(tx)
        if recorded is None:
            return 0
        if recorded.model is not None:
            self.check(recorded)  # refused before anything is computed
        texts = [text for _, text in rows]
        try:
            vectors = ahead[1] if ahead is not None and ahead[0] == texts else self.embedder.embed(texts)
        except EmbeddingsError as exc:
            log.warning("%d %s(s) stored without vectors (the embeddings endpoint: %s): `r2k index rebuild` "
                        "embeds them", len(rows), kind, exc.detail)
            return 0
        dimension = len(vectors[0])
        if recorded.model is None:
            recorded = self._record(tx, dimension, "ready")
        self.check(recorded, dimension)
        return (self._copy if new else self._store)(tx, kind, [row_id for row_id, _ in rows], vectors, recorded)

    def _record(self, tx: Tx, dimension: int, state: str) -> Recorded:
        row = tx.one("SELECT model, dimension, state FROM r2k_record_embedding_model(%s, %s, %s)",
                     (self.model, dimension, state))
        self._recorded = Recorded(row["model"], row["dimension"], row["state"])
        return self._recorded

    def _store(self, tx: Tx, kind: str, ids: list[int], vectors: list[list[float]], recorded: Recorded) -> int:
        k = KINDS[kind]
        stored = tx.execute(
            f"INSERT INTO {k.table} ({k.key}, embedding) SELECT u.id, u.v::vector FROM unnest(%s::bigint[], "
            "%s::text[]) u(id, v) WHERE EXISTS (SELECT 1 FROM embedding_index WHERE model = %s AND dimension = %s) "
            f"ON CONFLICT ({k.key}) DO UPDATE SET embedding = EXCLUDED.embedding",
            (ids, [literal(v) for v in vectors], recorded.model, recorded.dimension)).rowcount
        if stored == 0:  # another model was recorded meanwhile (a rebuild elsewhere)
            self.forget()
            self.check(self.recorded(tx) or recorded, len(vectors[0]))
        return stored

    def _copy(self, tx: Tx, kind: str, ids: list[int], vectors: list[list[float]], recorded: Recorded) -> int:
        """The vectors of rows this transaction wrote, by one COPY in pgvector's binary form: the text
        form cost a repr of every vector here and a parse of every number in PostgreSQL, about a
        tenth of an ingest (bench/ingest.py). Guarded by the recorded model as `_store` is."""
        k = KINDS[kind]
        if not tx.scalar("SELECT EXISTS (SELECT 1 FROM embedding_index WHERE model = %s AND dimension = %s)",
                         (recorded.model, recorded.dimension)):
            self.forget()  # another model was recorded meanwhile (a rebuild elsewhere)
            self.check(self.recorded(tx) or recorded, len(vectors[0]))
            return 0
        with tx.conn.cursor().copy(f"COPY {k.table} ({k.key}, embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(binary_copy(ids, vectors))
        return len(ids)

    def write_where(self, tx: Tx, kind: str, where: str, params: tuple, *, new: bool = False,
                    ahead: tuple[list[str], list[list[float]]] | None = None) -> int:
        """Embed the rows of `kind` that `where` (over the source table as `s`) picks and that have no
        vector yet (`new`, `ahead`: as `write`)."""
        if self.recorded(tx) is None:
            return 0
        k = KINDS[kind]
        rows = tx.all(f"SELECT s.id, {k.text} AS body FROM {k.source} s WHERE {where} AND NOT EXISTS "
                      f"(SELECT 1 FROM {k.table} v WHERE v.{k.key} = s.id) ORDER BY s.id", params)
        return self.write(tx, kind, [(r["id"], r["body"]) for r in rows], new=new, ahead=ahead)

    # -- reads -----------------------------------------------------------------------------------
    def question(self, tx: Tx, text: str) -> tuple[str, int] | None:
        """The question's vector (pgvector's text form) and the index's dimension, for a nearest-
        neighbour query; None when retrieval runs lexical only (no pgvector, nothing embedded yet, or
        the endpoint failed: logged). A configured model the index does not hold is refused."""
        recorded = self.recorded(tx)
        if recorded is None or recorded.model is None:
            return None
        self.check(recorded)
        try:
            (vector,) = self.embedder.embed([text])
        except EmbeddingsError as exc:
            log.warning("a question searched by its words only (the embeddings endpoint: %s)", exc.detail)
            return None
        self.check(recorded, len(vector))
        return literal(vector), recorded.dimension

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()


def configured_model(settings) -> str:
    if settings.embeddings_url:
        return settings.embeddings_model or "text-embedding-3-small"
    return STATIC_MODEL


# ----------------------------------------------------------------------------- writes, by kind

@dataclass
class Ahead:
    """A document's texts as its passages and candidates will embed them, with their vectors,
    computed while the document before it is stored (`ingest._read_ahead`)."""
    passages: tuple[list[str], list[list[float]]]
    candidates: tuple[list[str], list[list[float]]]


def embeds_ahead(ctx: Context) -> bool:
    """Whether an ingest embeds its documents ahead of storing them: with the shipped model only (in
    process, never failing on text; an endpoint's failure is handled where the rows are written) and
    when there is a vector index to write to."""
    embeddings: Embeddings = ctx.embeddings
    if not isinstance(embeddings.embedder, StaticEmbedder):
        return False
    with ctx.db.read() as tx:
        return embeddings.recorded(tx) is not None


def ahead(sections, units) -> Ahead:
    """The vectors of a document's sections and of its statements' candidates, of the texts KINDS
    reads back for them once stored (the candidate's question and text stripped, as
    candidates.create_candidates stores them). `index_document` uses them only when the rows it
    reads back are these texts, in this order: the same batches, so the same vectors."""
    embedder = StaticEmbedder()
    passages = [f"{x.heading}\n{x.text}" if x.heading else x.text for x in sections]
    candidates = [f"{u.question.strip()}\n{u.text.strip()}" for u in units]
    return Ahead((passages, embedder.embed(passages)), (candidates, embedder.embed(candidates)))


def index_document(tx: Tx, document_id: int, ahead: Ahead | None = None) -> int:
    """After ingest wrote a document's passages and candidates: embed them, in batches, in the same
    transaction (or take the vectors embedded `ahead` of it). Returns how many vectors were stored."""
    embeddings = tx.embeddings
    if embeddings is None:
        return 0
    return (embeddings.write_where(tx, "passage", "s.document_id = %s", (document_id,), new=True,
                                   ahead=ahead.passages if ahead else None)
            + embeddings.write_where(tx, "candidate", "s.document_id = %s AND s.origin = 'extracted'", (document_id,),
                                     new=True, ahead=ahead.candidates if ahead else None))


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # the signature, no flags, no header extension
_COPY_TRAILER = b"\xff\xff"


def binary_copy(ids: list[int], vectors: list[list[float]]) -> bytes:
    """Rows (id bigint, embedding vector) in COPY's binary format, built by numpy in one go: each row
    two fields, the id's 8 bytes and the vector as pgvector receives it (its dimension, a zero, then
    each value a big-endian float4; the text form parsed each to the same float4). numpy is imported
    here, by a write: 136 ms (python -X importtime) that a command which embeds nothing never pays."""
    import numpy

    dimension = len(vectors[0])
    row = numpy.dtype([("fields", ">i2"), ("id_length", ">i4"), ("id", ">i8"), ("vector_length", ">i4"),
                       ("dimension", ">i2"), ("unused", ">i2"), ("values", ">f4", (dimension,))])
    out = numpy.zeros(len(ids), dtype=row)
    out["fields"], out["id_length"], out["id"] = 2, 8, ids
    out["vector_length"], out["dimension"] = 4 + 4 * dimension, dimension
    out["values"] = numpy.asarray(vectors, dtype=numpy.float64)
    return _COPY_HEADER + out.tobytes() + _COPY_TRAILER


def embed_candidate(tx: Tx, event: Event) -> None:
    """A reaction: a candidate was created (or resubmitted with new text) outside an ingest, whose
    extracted candidates `index_document` embeds together."""
    row = event.row
    if tx.embeddings is None or (row.get("origin") == "extracted" and row.get("document_id") is not None
                                 and event.action == "extract"):
        return None
    tx.embeddings.write(tx, "candidate", [(row["id"], f"{row['question']}\n{row['text']}")])
    return None


def embed_answer(tx: Tx, event: Event) -> None:
    """A reaction: an answer was published."""
    row = event.row
    if tx.embeddings is not None:
        tx.embeddings.write(tx, "answer", [(row["id"], f"{row['question']}\n{row['text']}")])
    return None


# ----------------------------------------------------------------------------- rebuild and status

def rebuild(ctx: Context, *, on_progress: Callable[[str, int, int], None] | None = None) -> dict:
    """`r2k index rebuild` (an admin): every passage, candidate and answer embedded again with the
    configured model, in batches each committed, so a rebuild stopped part way resumes where it
    stopped when run again. The vector tables are made first if pgvector arrived after the
    migrations."""
    _ensure_vector_schema(ctx)
    embeddings: Embeddings = ctx.embeddings
    embeddings.forget()
    embedder = embeddings.embedder
    try:
        dimension = embedder.dimension or embedder.probe()
    except EmbeddingsError as exc:
        raise ServiceUnavailable(f"the embeddings endpoint does not answer: {exc.detail}", "embeddings") from None
    with ctx.db.begin() as tx:
        if embeddings.recorded(tx) is None:
            raise Conflict("this PostgreSQL has no pgvector: retrieval runs lexical only, and there is no vector "
                           "index to rebuild (install pgvector, then run `r2k index rebuild` again)")
        before = embeddings.recorded(tx)
        recorded = embeddings._record(tx, dimension, "rebuilding")
    resumed = before.state == "rebuilding" and (before.model, before.dimension) == (recorded.model, recorded.dimension)
    done: dict[str, int] = {}
    for kind, k in KINDS.items():
        with ctx.db.read() as tx:
            total = tx.scalar(f"SELECT count(*) FROM {k.source}")
            left = tx.scalar(f"SELECT count(*) FROM {k.source} s WHERE NOT EXISTS "
                             f"(SELECT 1 FROM {k.table} v WHERE v.{k.key} = s.id)")
        count, after = total - left, 0
        if on_progress:
            on_progress(kind, count, total)
        while True:
            with ctx.db.begin() as tx:
                rows = tx.all(f"SELECT s.id, {k.text} AS body FROM {k.source} s WHERE s.id > %s AND NOT EXISTS "
                              f"(SELECT 1 FROM {k.table} v WHERE v.{k.key} = s.id) ORDER BY s.id LIMIT %s",
                              (after, REBUILD_BATCH))
                if not rows:
                    break
                try:
                    vectors = embedder.embed([r["body"] for r in rows])
                except EmbeddingsError as exc:
                    raise ServiceUnavailable(f"the embeddings endpoint failed after {count} of {total} {kind}s "
                                             f"({exc.detail}): run `r2k index rebuild` again to resume",
                                             "embeddings") from None
                embeddings.check(recorded, len(vectors[0]))
                embeddings._store(tx, kind, [r["id"] for r in rows], vectors, recorded)
            count += len(rows)
            after = rows[-1]["id"]
            if on_progress:
                on_progress(kind, count, total)
        done[kind] = count
    with ctx.db.begin() as tx:
        tx.execute("UPDATE embedding_index SET state = 'ready', updated_at = now() WHERE id = 1 AND model = %s",
                   (recorded.model,))
    embeddings.forget()
    return {"model": recorded.model, "dimension": recorded.dimension, "resumed": resumed, "embedded": done}


def _ensure_vector_schema(ctx: Context) -> None:
    """The vector tables, as the owner, when pgvector is there and the migrations ran without it."""
    with ctx.db.read() as tx:
        if tx.scalar("SELECT to_regclass('passage_vectors') IS NOT NULL"):
            return
    if not ctx.settings.database_url:
        embedded.postgres.create_vector_extension(embedded.superuser_url(ctx.settings))
    owner = embedded.owner_url(ctx.settings)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(VECTOR_EXTENSION)
        if not conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()[0]:
            return
        with conn.transaction():
            conn.execute(VECTOR_SCHEMA)
    if not ctx.settings.database_url:
        embedded.postgres.grant_app(owner)


def status(ctx: Context) -> dict:
    """How retrieval runs here, in words for `services status`: hybrid (the model, how much is
    embedded), lexical only and why, or refused (a model mismatch). Embeds nothing."""
    embeddings: Embeddings = ctx.embeddings
    embeddings.forget()
    model = embeddings.model
    with ctx.db.read() as tx:
        recorded = embeddings.recorded(tx)
        if recorded is None:
            return {"retrieval": "lexical", "model": None, "detail": "lexical only (no pgvector in this PostgreSQL)"}
        counts = {kind: [tx.scalar(f"SELECT count(*) FROM {k.table}"), tx.scalar(f"SELECT count(*) FROM {k.source}")]
                  for kind, k in KINDS.items()}
    shown = ", ".join(f"{n:,} of {total:,} {kind}s" for kind, (n, total) in counts.items())
    if recorded.model is None:
        return {"retrieval": "hybrid", "model": model, "embedded": counts,
                "detail": f"hybrid (words and meaning, {model}); nothing embedded yet"}
    if recorded.model != model:
        return {"retrieval": "refused", "model": model, "recorded": recorded.model, "embedded": counts,
                "detail": f"refused: the index holds {recorded.model}, this r2k is configured for {model}: "
                          f"run `r2k index rebuild`"}
    rebuilding = "; a rebuild is under way (`r2k index rebuild` resumes it)" if recorded.state == "rebuilding" else \
        "; `r2k index rebuild` embeds the rest" if any(n < total for n, total in counts.values()) else ""
    return {"retrieval": "hybrid", "model": model, "dimension": recorded.dimension, "embedded": counts,
            "state": recorded.state,
            "detail": f"hybrid (words and meaning, {model}, {recorded.dimension} dimensions, HNSW): {shown}"
                      f"{rebuilding}"}
