"""Retrieval by meaning (docs/architecture.md, "Retrieval"): the shipped embedder offline, the
embeddings endpoint against a real local server, vectors written as passages, candidates and answers
are, the recorded model and its refusal, `r2k index rebuild`, the hybrid ranking on the demo corpus,
registry search by words and meaning with its statuses, and the lexical-only path on a PostgreSQL
without pgvector (the compatibility run's)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

from r2k.core.adapters.breaker import CircuitBreaker
from r2k.core.adapters.embeddings import BREAKER_KEY, STATIC_MODEL, EmbeddingsError, EndpointEmbedder
from r2k.core.bootstrap import bootstrap
from r2k.core.context import Context
from r2k.core.errors import Conflict
from r2k.core.knowledge.ranking import Ranking
from r2k.core.services.answering import generation, workitems
from r2k.core.services.answers import registry
from r2k.core.services.documents import ingest
from r2k.core.services.operations.demo import CORPUS
from r2k.core.services.queue import claims
from r2k.core.services.search import embeddings, retrieval
from r2k.core.services.search.embeddings import EmbeddingsMismatch
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, r2k, r2k_json
from tests.llm_server import EmbeddingsServer

RIDE = "Can an operator give a colleague a ride on a forklift?"  # the text says "never carry passengers"


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def count(ctx, table: str) -> int:
    with ctx.db.read() as tx:
        return tx.scalar(f"SELECT count(*) FROM {table}")


def has_pgvector(ctx) -> bool:
    with ctx.db.read() as tx:
        return bool(tx.scalar("SELECT to_regclass('passage_vectors') IS NOT NULL"))


@pytest.fixture
def demo(ctx, people):
    ingest.ingest(ctx, people["root"], [CORPUS])
    with ctx.db.begin() as tx:  # the Horn queues to what each test adds
        tx.execute("UPDATE candidates SET state = 'REJECTED'")
    ctx.redis.flushdb()
    return ctx


def with_endpoint(ctx: Context, server: EmbeddingsServer) -> Context:
    return bootstrap(ctx.settings.model_copy(update={"embeddings_url": server.url, "embeddings_model": server.model,
                                                   "embeddings_retries": 0}), pool_size=2)


def publish(ctx, people, question, text, horn="FACT", who="alice"):
    candidates.add(ctx, people["root"], question, text, horn)
    claimed = claims.claim_next(ctx, people[who], horn)
    return candidates.approve(ctx, people[who], claimed["id"])["answer"]


# ----------------------------------------------------------------------------- the embedders

GUARDED = textwrap.dedent("""
    import json, logging, socket, sys
    def refuse(*args, **kwargs):
        raise OSError("no network for the shipped model")
    socket.socket.connect = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    from r2k.core.adapters.embeddings import StaticEmbedder
    vectors = StaticEmbedder().embed(sys.argv[1:])
    print(json.dumps({"vectors": vectors, "root_handlers": len(logging.getLogger().handlers)}))
""")


def test_the_shipped_model_embeds_offline_and_fetches_nothing(tmp_path):
    # A fresh interpreter with every connection refused, no Hugging Face hub and an empty home (no
    # cache to find): the weights and tokenizer can only come from the wordllama wheel itself.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    texts = ["Nightly database backups are kept for 30 days.", "How long are the nightly backups kept?",
             "The site manager owns the forklift fleet.", ""]
    result = subprocess.run([sys.executable, "-c", GUARDED, *texts], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    vectors = out["vectors"]
    assert [len(v) for v in vectors] == [256] * 4
    assert all(abs(sum(x * x for x in v) - 1) < 1e-4 for v in vectors)  # unit length, the empty text too
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])  # near in meaning is near
    assert out["root_handlers"] == 0  # wordllama's import left the process's logging alone
    assert not any(tmp_path.rglob("*"))  # nothing downloaded, nothing cached


def test_the_endpoint_embeds_in_batches_and_its_failures_open_a_circuit_of_its_own(ctx):
    with EmbeddingsServer(dimension=12) as server:
        breaker = CircuitBreaker(ctx.redis, threshold=2, cooldown=60, key=BREAKER_KEY)
        embedder = EndpointEmbedder(server.url, server.model, "sk-test", 5, 0, breaker)
        texts = ["backups are kept nightly", "nightly backups kept", "the forklift fleet"] * 30
        vectors = embedder.embed(texts)
        assert (len(vectors), embedder.dimension, server.calls) == (90, 12, 2)  # 64 texts a request
        assert server.keys[0] == "Bearer sk-test" and server.texts == texts
        assert all(abs(sum(x * x for x in v) - 1) < 1e-9 for v in vectors)
        assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
        server.mode = "error"
        for _ in range(2):
            with pytest.raises(EmbeddingsError, match="HTTP 500"):
                embedder.embed(["x"])
        calls = server.calls
        with pytest.raises(EmbeddingsError, match="embeddings circuit open"):
            embedder.embed(["x"])
        assert server.calls == calls  # refused without a call
        assert CircuitBreaker(ctx.redis).status()["state"] == "closed"  # the LLM's circuit is its own
        embedder.close()


# ----------------------------------------------------------------------------- writes and the recorded model

def test_passages_candidates_and_answers_are_embedded_as_they_are_written(demo, people):
    if not has_pgvector(demo):
        pytest.skip("this PostgreSQL has no pgvector: test_retrieval_runs_lexical_only_without_pgvector")
    state = embeddings.status(demo)
    assert (state["retrieval"], state["model"], state["dimension"]) == ("hybrid", STATIC_MODEL, 256)
    assert state["embedded"]["passage"][0] == state["embedded"]["passage"][1] > 200
    assert state["embedded"]["candidate"][0] == state["embedded"]["candidate"][1] > 200
    answer = publish(demo, people, "Who signs off a forklift licence?", "The Safety Officer signs off licences.")
    with demo.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM answer_vectors WHERE answer_id = %s", (answer["id"],)) == 1
        assert tx.scalar("SELECT count(*) FROM candidate_vectors WHERE candidate_id = %s",
                         (answer["candidate_id"],)) == 1
        index = tx.one("SELECT model, dimension, state FROM embedding_index")
    assert index == {"model": STATIC_MODEL, "dimension": 256, "state": "ready"}


def test_the_hnsw_indexes_are_built_cheap_to_maintain_and_only_where_a_query_reads_them(demo):
    """Ingest maintains the indexes for every vector it writes: they are made with m = 8 and
    ef_construction = 32, not pgvector's 16 and 64 (core/migrations/vectors.py), for passages and
    answers, which nearest-neighbour queries read. Candidates' vectors, which none reads, have no
    index; a CHECK refuses one of another model's length, as the index's cast did."""
    import psycopg

    if not has_pgvector(demo):
        pytest.skip("this PostgreSQL has no pgvector")
    with demo.db.read() as tx:
        options = {r["relname"]: r["reloptions"] for r in tx.all(
            "SELECT relname, reloptions FROM pg_class WHERE relname LIKE '%_vectors_hnsw'")}
        candidate = tx.one("SELECT candidate_id FROM candidate_vectors LIMIT 1")["candidate_id"]
        indexes = [r["indexname"] for r in tx.all("SELECT indexname FROM pg_indexes WHERE tablename = 'candidate_vectors'")]
    assert options == {f"{kind}_vectors_hnsw": ["m=8", "ef_construction=32"] for kind in ("passage", "answer")}
    assert indexes == ["candidate_vectors_pkey"]
    with psycopg.connect(demo.database_url) as conn:
        with pytest.raises(psycopg.errors.CheckViolation, match="candidate_vectors_dimension"):
            conn.execute("UPDATE candidate_vectors SET embedding = '[1,2,3]' WHERE candidate_id = %s", (candidate,))
    with demo.db.read() as tx:  # nothing changed
        assert tx.scalar("SELECT vector_dims(embedding) FROM candidate_vectors WHERE candidate_id = %s",
                         (candidate,)) == 256


def test_migration_0023_rebuilds_the_indexes_a_database_made_before_has(ctx, services):
    """A database whose indexes were built with pgvector's defaults (as every one made before) gets
    the cheaper ones, for the model it records, and its vectors stay; one with no model is left as is."""
    import psycopg

    from r2k.core import migrations
    from tests.conftest import scratch_databases

    if not has_pgvector(ctx):
        pytest.skip("this PostgreSQL has no pgvector")
    names = [f"r2k_before_0023_{os.getpid()}_{n}" for n in (0, 1)]

    def options(url: str) -> dict:
        with psycopg.connect(url) as conn:
            return dict(conn.execute("SELECT relname, reloptions FROM pg_class WHERE relname LIKE '%_vectors_hnsw'"))

    with scratch_databases(services, *names) as (recorded, empty):
        for url in (recorded, empty):
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            migrations.upgrade(url, "0022")
        with psycopg.connect(recorded, autocommit=True) as conn:
            conn.execute("SELECT * FROM r2k_record_embedding_model('old-model', 3, 'ready')")
            for kind in ("passage", "candidate", "answer"):  # as the recorder built them before
                conn.execute(f"DROP INDEX IF EXISTS {kind}_vectors_hnsw")
                conn.execute(f"CREATE INDEX {kind}_vectors_hnsw ON {kind}_vectors USING hnsw "
                             "((embedding::vector(3)) vector_cosine_ops)")
        assert set(options(recorded).values()) == {None}
        migrations.upgrade(recorded, "0023")
        migrations.upgrade(empty, "0023")
        assert options(recorded) == {f"{k}_vectors_hnsw": ["m=8", "ef_construction=32"]
                                     for k in ("passage", "candidate", "answer")}
        assert options(empty) == {}
        with psycopg.connect(recorded, autocommit=True) as conn:
            assert conn.execute("SELECT model, dimension FROM embedding_index").fetchall() == [("old-model", 3)]
            conn.execute("INSERT INTO candidates (id, question, text, horn_type, state, origin, created_by, created_at, updated_at) "
                         "VALUES (1, 'Q?', 'A.', 'FACT', 'PENDING', 'manual', 'root', now(), now())")
            conn.execute("INSERT INTO candidate_vectors VALUES (1, '[1,0,0]')")
        # 0029: the candidates' index goes (no query reads it), their vectors stay, a CHECK keeps the dimension.
        migrations.upgrade(recorded, "head")
        migrations.upgrade(empty, "head")
        assert options(recorded) == {f"{k}_vectors_hnsw": ["m=8", "ef_construction=32"] for k in ("passage", "answer")}
        assert options(empty) == {}
        with psycopg.connect(recorded) as conn:
            assert conn.execute("SELECT candidate_id FROM candidate_vectors").fetchall() == [(1,)]
            with pytest.raises(psycopg.errors.CheckViolation, match="candidate_vectors_dimension"):
                conn.execute("INSERT INTO candidate_vectors VALUES (1, '[1,0]') ON CONFLICT (candidate_id) "
                             "DO UPDATE SET embedding = EXCLUDED.embedding")


def test_a_configured_model_the_index_does_not_hold_is_refused_until_a_rebuild(demo, people, monkeypatch):
    if not has_pgvector(demo):
        pytest.skip("this PostgreSQL has no pgvector")
    # The demo's process keeps the recorded model it read for the whole test, as a long-lived process
    # does within RECHECK_SECONDS: on a loaded machine the commands below outlast the 10 s.
    monkeypatch.setattr(embeddings, "RECHECK_SECONDS", 3600.0)
    with EmbeddingsServer() as server:
        other = with_endpoint(demo, server)
        try:
            with pytest.raises(EmbeddingsMismatch) as refused:
                retrieval.retrieve(other, "How many people work at Harbor Logistics?")
            said = refused.value.message
            assert STATIC_MODEL in said and server.model in said and "r2k index rebuild" in said
            assert refused.value.status == 409
            before = count(demo, "candidates")
            with pytest.raises(EmbeddingsMismatch):
                candidates.add(other, people["root"], "Who opens the gate?", "The first shift opens the gate.", "FACT")
            assert count(demo, "candidates") == before  # nothing written
            assert server.calls == 0  # refused before anything was embedded
            assert embeddings.status(other)["retrieval"] == "refused"

            env = {"R2K_EMBEDDINGS_URL": server.url, "R2K_EMBEDDINGS_MODEL": server.model}
            result = r2k("--as", "root", "index", "rebuild", env=env)
            assert result.returncode == 0, result.stderr
            assert f"embedded with {server.model} (16 dimensions)" in result.stdout
            denied = r2k("--as", "alice", "index", "rebuild", env=env)
            assert denied.returncode == 7  # an admin's

            other.embeddings.forget()
            state = embeddings.status(other)
            assert (state["retrieval"], state["model"], state["dimension"]) == ("hybrid", server.model, 16)
            assert state["embedded"]["passage"][0] == state["embedded"]["passage"][1]
            sources = retrieval.retrieve(other, "What is established about headcount?")
            assert sources[0]["heading"] == "Headcount"
            assert any(s["vector_rank"] is not None for s in sources)  # the endpoint's vectors took part
            # A process that read the index before the rebuild is told so, then refused as the other model.
            with pytest.raises(Conflict, match="rebuilt with another embedding model"):
                retrieval.retrieve(demo, "What is established about headcount?")
            with pytest.raises(EmbeddingsMismatch):
                retrieval.retrieve(demo, "What is established about headcount?")
        finally:
            other.close()
    back = embeddings.rebuild(demo)
    assert (back["model"], back["dimension"], back["resumed"]) == (STATIC_MODEL, 256, False)
    assert retrieval.retrieve(demo, "What is established about headcount?")[0]["heading"] == "Headcount"


def test_a_rebuild_stopped_part_way_resumes_where_it_stopped(demo, monkeypatch):
    if not has_pgvector(demo):
        pytest.skip("this PostgreSQL has no pgvector")
    monkeypatch.setattr(embeddings, "REBUILD_BATCH", 50)
    seen = []

    def stop(kind, done, total):
        seen.append((kind, done, total))
        if kind == "passage" and done >= 100:
            raise KeyboardInterrupt  # the operator's ctrl+c

    with pytest.raises(KeyboardInterrupt):
        embeddings.rebuild(demo, on_progress=stop)
    assert seen[0][:2] == ("passage", 0)
    with demo.db.read() as tx:
        assert tx.scalar("SELECT state FROM embedding_index") == "rebuilding"
    assert count(demo, "passage_vectors") == 100 and count(demo, "answer_vectors") == 0
    assert "a rebuild is under way" in embeddings.status(demo)["detail"]
    done = embeddings.rebuild(demo)
    assert done["resumed"] is True
    assert done["embedded"]["passage"] == count(demo, "source_passages") == count(demo, "passage_vectors")
    assert done["embedded"]["candidate"] == count(demo, "candidates")
    with demo.db.read() as tx:
        assert tx.scalar("SELECT state FROM embedding_index") == "ready"


# ----------------------------------------------------------------------------- the hybrid ranking

def test_a_question_worded_unlike_its_section_is_answered_by_meaning(demo, people):
    if not has_pgvector(demo):
        pytest.skip("this PostgreSQL has no pgvector")
    assert retrieval.retrieve(demo, RIDE, ranking=Ranking(vectors=False)) == []  # its words alone: no_content
    sources = retrieval.retrieve(demo, RIDE)
    assert len(sources) >= 2 and all(not s.get("related") for s in sources[:2])
    assert "Passengers" in [s["heading"] for s in sources]
    assert all(s["vector_rank"] is not None for s in sources)
    item = workitems.create(demo, people["sam"], RIDE)
    outcome = generation.generate_answer(demo, item["id"])
    assert outcome["outcome"] == "generated", outcome


def test_a_question_the_corpus_does_not_answer_still_escalates_no_content(demo, people):
    item = workitems.create(demo, people["sam"], "What is on the canteen menu on Fridays?")
    outcome = generation.generate_answer(demo, item["id"])
    assert (outcome["outcome"], outcome["reason"]) == ("escalated", "no_content")


# ----------------------------------------------------------------------------- registry search

def test_search_ranks_by_words_and_meaning_excluding_and_flagging_by_status(ctx, people):
    kept = publish(ctx, people, "How long are backups kept?", "Nightly database backups are kept for 30 days.")
    stored = publish(ctx, people, "Where are backups stored?", "Backups are stored in the Frankfurt region.")
    fleet = publish(ctx, people, "Who owns the forklift fleet?", "The site manager owns the forklift fleet.")
    vectors = has_pgvector(ctx)
    explained = r2k_json("--as", "bob", "registry", "search", "backups kept", "--explain")
    assert explained[0]["id"] == kept["id"]
    ranks = explained[0]["explain"]
    assert ranks["lexical_rank"] == 1 and (ranks["vector_rank"] is not None) == vectors
    text = r2k("--as", "bob", "registry", "search", "backups kept", "--explain").stdout
    assert "LEXICAL_RANK" in text and "VECTOR_RANK" in text
    assert registry.search(ctx, "canteen menu on Fridays") == []  # nothing near enough in words or meaning

    newer = registry.supersede(ctx, people["alice"], stored["id"], "Backups are stored in Amsterdam.", "moved")
    registry.retire(ctx, people["alice"], fleet["id"], "sold")
    registry.dispute(ctx, people["bob"], kept["id"], "14 days elsewhere")
    default = [a["id"] for a in registry.search(ctx, "backups")]
    assert default == [newer["id"]]  # SUPERSEDED, RETIRED and DISPUTED are out by default
    assert registry.search(ctx, "forklift fleet") == []
    widened = {a["id"]: a for a in registry.search(ctx, "backups", "APPROVED,DISPUTED")}
    assert set(widened) == {newer["id"], kept["id"]}
    assert widened[kept["id"]]["disputed"] is True and widened[newer["id"]]["disputed"] is False
    readout = {a["id"]: a for a in registry.readout(ctx, "backups")}
    assert readout[kept["id"]]["disputed"] is True and fleet["id"] not in readout


def test_an_ingest_stores_each_vector_as_the_embedder_gives_it_for_the_text_stored(ctx, people, tmp_path):
    """An ingest embeds a document while the one before it is stored and writes the vectors by one
    binary COPY: each passage's and candidate's stored vector is the embedder's own for the text
    stored, to the bit, also for a document whose candidates are not the statements it was embedded
    for (one of them another document's: embedded where it is written)."""
    from r2k.core.adapters.embeddings import StaticEmbedder, literal

    if not has_pgvector(ctx):
        pytest.skip("this PostgreSQL has no pgvector")
    shared = "Every forklift is inspected by the shift lead before its first use of the day."
    (tmp_path / "a.md").write_text(f"# Forklifts\n\n{shared}\n\n## Charging\n\nBatteries are charged "
                                   "overnight in bay seven of the yard.\n")
    (tmp_path / "b.md").write_text(f"# Yard\n\n{shared}\n\nVisitors wear a yellow vest in every part of the "
                                   "yard at all times.\n")
    summary = ingest.ingest(ctx, people["root"], [tmp_path])
    assert (summary["documents"], summary["merged"]) == (2, 1)
    embedder = StaticEmbedder()
    with ctx.db.read() as tx:
        for kind, k in embeddings.KINDS.items():
            if kind == "answer":
                continue
            where = "s.document_id = %s" + (" AND s.origin = 'extracted'" if kind == "candidate" else "")
            for document_id in summary["document_ids"]:
                rows = tx.all(f"SELECT s.id, {k.text} AS body FROM {k.source} s WHERE {where} ORDER BY s.id",
                              (document_id,))
                assert rows
                for row, vector in zip(rows, embedder.embed([r["body"] for r in rows])):
                    assert tx.scalar(f"SELECT embedding = %s::vector FROM {k.table} WHERE {k.key} = %s",
                                     (literal(vector), row["id"])) is True, (kind, row["body"])


def test_the_binary_form_of_a_vector_is_pgvectors():
    """Rows (id, vector) in COPY's binary form: the signature, each row's two fields (an 8-byte id;
    the dimension, a zero, then big-endian float4s), the trailer."""
    data = embeddings.binary_copy([7], [[0.5, -0.25]])
    assert data == (b"PGCOPY\n\xff\r\n\x00" + bytes(8) + b"\x00\x02" + b"\x00\x00\x00\x08" + (7).to_bytes(8, "big")
                    + b"\x00\x00\x00\x0c" + b"\x00\x02\x00\x00" + b"\x3f\x00\x00\x00" + b"\xbe\x80\x00\x00"
                    + b"\xff\xff")


# ----------------------------------------------------------------------------- without pgvector

@pytest.mark.compat
def test_retrieval_runs_lexical_only_without_pgvector(ctx, people, tmp_path):
    """The compatibility run's PostgreSQL has no pgvector: everything works by words, and services
    status says so. On the embedded one (pgvector) the same calls run hybrid."""
    doc = tmp_path / "backups.md"
    doc.write_text("# Backup policy\n\n## Retention\n\nNightly database backups are kept for 30 days in the "
                   "Frankfurt region.\n\n## Restores\n\nA restore of the nightly backup takes about two hours "
                   "and needs the on-call engineer.\n")
    summary = ingest.ingest(ctx, people["root"], [doc])
    assert summary["documents"] == 1
    state = embeddings.status(ctx)
    rows = {r["name"]: r for r in r2k_json("--as", "root", "services", "status")}
    if has_pgvector(ctx):
        assert state["retrieval"] == "hybrid" and rows["retrieval"]["detail"].startswith("hybrid")
    else:
        assert state == {"retrieval": "lexical", "model": None,
                         "detail": "lexical only (no pgvector in this PostgreSQL)"}
        assert rows["retrieval"]["detail"] == "lexical only (no pgvector in this PostgreSQL)"
        with pytest.raises(Conflict, match="no pgvector"):
            embeddings.rebuild(ctx)
    sources = retrieval.retrieve(ctx, "How long are nightly database backups kept?")
    assert len(sources) == 2 and sources[0]["heading"] == "Retention"
    answer = publish(ctx, people, "How long are backups kept?", "Nightly database backups are kept for 30 days.")
    assert [a["id"] for a in registry.search(ctx, "backups kept")] == [answer["id"]]
    assert registry.search(ctx, "backu")[0]["id"] == answer["id"]  # a word still being typed
