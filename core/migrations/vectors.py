"""The vector schema of retrieval by meaning (docs/architecture.md, "Retrieval"), made by migration 0011
when this PostgreSQL has pgvector, and by `r2k index rebuild` once pgvector is installed later.

Three side tables, one per kind that is embedded (source passages, candidates, approved answers),
each row one vector of the recorded model (derived data: a row removed, by a migration that re-indexes
passages, takes its vector with it). A vector column is typed with no dimension, because the
dimension is the model's: `r2k_record_embedding_model` (run by the application, as the owner) records
a first model, or starts a rebuild for another one, and makes the HNSW indexes (cosine) for its
dimension. A vector of any other length fails the index's cast, so two models never mix.

The HNSW indexes are built with m = 8 and ef_construction = 32 (pgvector's defaults are 16 and 64):
ingest maintains them for every passage and candidate it writes, and the defaults made that the
largest share of its time. On the bench corpus's distinct vectors (bench/ingest.py's, 100 a
statement) the index's inserts took 2.3 to 4.5 s instead of 7.8 to 8.9 s, and of a query's ten
nearest 97.7% were the exact ten instead of 99.6%; bench/retrieval.py's recall@5, top-1 and answer
figures were unchanged on every set, and the ingest's PostgreSQL CPU fell from 28.6 s to 11.4 s.
A database made before gets them from migration 0023, which rebuilds its indexes once.

Candidates' vectors have no HNSW index (migration 0029): no query asks for the candidates nearest a
vector (retrieval ranks passages and approved answers), and candidates are most of what ingest embeds
(500 of 705 vectors on the Python FAQs), so their index was most of ingest's index upkeep for no
reader. A CHECK of the recorded dimension keeps the rule the index's cast kept: a vector of another
model's length is refused.
"""

# Created by the role migrations run as when it may (a superuser); otherwise a notice, and retrieval
# runs lexical only.
VECTOR_EXTENSION = """
DO $$
BEGIN
    IF to_regtype('vector') IS NULL AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS vector;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'pgvector is installed but this role may not create it: retrieval runs lexical only';
        END;
    END IF;
END $$;
"""

# The HNSW indexes' build parameters (see above), for the recorder and for migration 0023.
HNSW_WITH = "WITH (m = 8, ef_construction = 32)"
KINDS = ("passage", "candidate", "answer")
INDEXED = ("passage", "answer")  # the kinds a nearest-neighbour query reads, so the kinds with an HNSW index


def vector_tables(bind) -> bool:
    """Whether this database has pgvector and the vector tables (a migration that re-indexes them has
    nothing to do otherwise)."""
    return bool(bind.exec_driver_sql("SELECT to_regtype('vector') IS NOT NULL "
                                     "AND to_regclass('passage_vectors') IS NOT NULL").scalar())


def recorded_dimension(bind) -> int | None:
    """The recorded model's dimension, None before a first model is recorded."""
    return bind.exec_driver_sql("SELECT dimension FROM embedding_index WHERE id = 1").scalar()


def hnsw_index(kind: str, dimension: int) -> str:
    """The statement that makes one kind's HNSW index for a model of `dimension`."""
    return (f"CREATE INDEX {kind}_vectors_hnsw ON {kind}_vectors USING hnsw "
            f"((embedding::vector({int(dimension)})) vector_cosine_ops) {HNSW_WITH}")


VECTOR_SCHEMA = """
CREATE TABLE IF NOT EXISTS passage_vectors (
    passage_id    bigint PRIMARY KEY REFERENCES source_passages(id) ON DELETE CASCADE,
    embedding     vector NOT NULL
);
CREATE TABLE IF NOT EXISTS candidate_vectors (
    candidate_id  bigint PRIMARY KEY REFERENCES candidates(id) ON DELETE CASCADE,
    embedding     vector NOT NULL
);
CREATE TABLE IF NOT EXISTS answer_vectors (
    answer_id     bigint PRIMARY KEY REFERENCES approved_answers(id) ON DELETE CASCADE,
    embedding     vector NOT NULL
);

-- p_state 'ready': a writer's first use, which records a model only when none is (and returns what
-- is recorded, for the caller to compare). p_state 'rebuilding': `r2k index rebuild`, which resumes a
-- rebuild of the same model under way, or else empties the tables and records the model anew.
CREATE OR REPLACE FUNCTION r2k_record_embedding_model(p_model text, p_dimension integer, p_state text)
RETURNS SETOF embedding_index LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    recorded embedding_index;
    kind text;
BEGIN
    IF p_state NOT IN ('ready', 'rebuilding') OR p_dimension NOT BETWEEN 1 AND 2000 THEN
        RAISE EXCEPTION 'no such embedding index state or dimension: %, %', p_state, p_dimension
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One recorder at a time: a second first use waits, then finds the model recorded.
    PERFORM pg_advisory_xact_lock(72731003);
    SELECT * INTO recorded FROM embedding_index WHERE id = 1;
    IF FOUND AND (p_state = 'ready' OR (recorded.state = 'rebuilding'
                                        AND (recorded.model, recorded.dimension) = (p_model, p_dimension))) THEN
        RETURN NEXT recorded;
        RETURN;
    END IF;
    TRUNCATE passage_vectors, candidate_vectors, answer_vectors;
    FOREACH kind IN ARRAY ARRAY['passage', 'answer'] LOOP
        EXECUTE format('DROP INDEX IF EXISTS %I', kind || '_vectors_hnsw');
        EXECUTE format('CREATE INDEX %I ON %I USING hnsw ((embedding::vector(%s)) vector_cosine_ops) '
                       '""" + HNSW_WITH + """',
                       kind || '_vectors_hnsw', kind || '_vectors', p_dimension);
    END LOOP;
    -- Candidates: no index (no query reads their neighbours), the dimension kept by a CHECK instead.
    DROP INDEX IF EXISTS candidate_vectors_hnsw;
    ALTER TABLE candidate_vectors DROP CONSTRAINT IF EXISTS candidate_vectors_dimension;
    EXECUTE format('ALTER TABLE candidate_vectors ADD CONSTRAINT candidate_vectors_dimension '
                   'CHECK (vector_dims(embedding) = %s)', p_dimension);
    INSERT INTO embedding_index (id, model, dimension, state, updated_at)
    VALUES (1, p_model, p_dimension, p_state, now())
    ON CONFLICT (id) DO UPDATE SET model = EXCLUDED.model, dimension = EXCLUDED.dimension,
                                   state = EXCLUDED.state, updated_at = now()
    RETURNING * INTO recorded;
    RETURN NEXT recorded;
END $$;
REVOKE ALL ON FUNCTION r2k_record_embedding_model(text, integer, text) FROM PUBLIC;
"""
