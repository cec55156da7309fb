"""Documents ingested again, statements as identities, and grey entries matched through an index
(docs/architecture.md, "Ingest").

- `source_documents.location`: the file a document was read from (its absolute path), by which a
  document ingested again is found (none for a document stored otherwise: no version follows it); `supersedes_id`: the version it replaces, kept beside it.
  `content_hash` is no longer unique: a file may come back to what an older version held. Documents
  already stored at one path are chained here in the order they were ingested.
- `source_passages.current`: retrieval ranks only the passages of each document's newest version.
- `document_statements`: what each version of a document states, one row per statement (the
  SHA-256 of its normalised text) and the candidate that holds it, so a version ingested after it
  is compared with it statement by statement. Filled here from the candidates already extracted,
  by the text each was extracted with (their creation event's).
- `grey_entries`: an index of the subject's lexemes of the entries waiting to be retried, which a
  new document's lexemes are matched against.
- `conflict_flags`: a flag of kind `source_changed` names one answer (`other_answer_id` empty),
  the document version that changed its source (`source_document_id`) and the statement as it now
  reads (`source_text`, empty when it is gone); one such flag open per answer at a time.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE source_documents DROP CONSTRAINT source_documents_content_hash_key;
CREATE INDEX source_documents_content_hash ON source_documents (content_hash);
ALTER TABLE source_documents
    ADD COLUMN location       text,
    ADD COLUMN supersedes_id  bigint REFERENCES source_documents(id);
UPDATE source_documents SET location = path;
CREATE INDEX source_documents_location ON source_documents (location, id);
CREATE UNIQUE INDEX source_documents_supersedes ON source_documents (supersedes_id) WHERE supersedes_id IS NOT NULL;
UPDATE source_documents d SET supersedes_id = (
    SELECT max(o.id) FROM source_documents o WHERE o.location = d.location AND o.id < d.id);

ALTER TABLE source_passages ADD COLUMN current boolean NOT NULL DEFAULT true;
UPDATE source_passages p SET current = false
    WHERE EXISTS (SELECT 1 FROM source_documents n WHERE n.supersedes_id = p.document_id);

CREATE TABLE document_statements (
    document_id   bigint NOT NULL REFERENCES source_documents(id),
    statement     text NOT NULL,
    candidate_id  bigint NOT NULL REFERENCES candidates(id),
    span_start    integer NOT NULL,
    span_end      integer NOT NULL,
    PRIMARY KEY (document_id, statement)
);
CREATE INDEX document_statements_statement ON document_statements (statement);
CREATE INDEX document_statements_candidate ON document_statements (candidate_id);

CREATE INDEX grey_entries_retrying_terms ON grey_entries
    USING gin (tsvector_to_array(to_tsvector('english', subject))) WHERE state = 'Retrying';

ALTER TABLE conflict_flags
    ALTER COLUMN other_answer_id DROP NOT NULL,
    ADD COLUMN source_document_id  bigint REFERENCES source_documents(id),
    ADD COLUMN source_text         text;
CREATE INDEX conflict_flags_answer ON conflict_flags (answer_id);
CREATE UNIQUE INDEX conflict_flags_source_changed ON conflict_flags (answer_id)
    WHERE kind = 'source_changed' AND status IN ('OPEN', 'ESCALATED');
"""


def upgrade() -> None:
    op.execute(UPGRADE)
    statements(op.get_bind().connection.driver_connection)  # psycopg's, in this migration's transaction


def statements(conn) -> None:
    """The statements of the candidates extracted before this revision, by the text each was
    extracted with (a revision changes the candidate's text, not what its document says)."""
    from r2k.core.services.documents.ingest import statement_of

    rows = conn.execute(
        "SELECT c.id, c.document_id, c.source_refs, e.payload->'set'->>'text' AS text FROM candidates c "
        "JOIN events e ON e.aggregate_type = 'candidate' AND e.aggregate_id = c.id::text AND e.seq = 1 "
        "WHERE c.origin = 'extracted' AND c.document_id IS NOT NULL ORDER BY c.id").fetchall()
    values = []
    for candidate_id, document_id, refs, text in rows:
        span = next((r.get("span") for r in refs or [] if r.get("document_id") == document_id), None) or [0, 0]
        values.append((document_id, statement_of(text or ""), candidate_id, span[0], span[1]))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO document_statements (document_id, statement, candidate_id, span_start, "
                        "span_end) VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING", values)


def downgrade() -> None:
    op.execute("""
DROP INDEX IF EXISTS conflict_flags_source_changed;
DROP INDEX IF EXISTS conflict_flags_answer;
ALTER TABLE conflict_flags DROP COLUMN IF EXISTS source_text, DROP COLUMN IF EXISTS source_document_id;
DROP INDEX IF EXISTS grey_entries_retrying_terms;
DROP TABLE IF EXISTS document_statements;
ALTER TABLE source_passages DROP COLUMN IF EXISTS current;
DROP INDEX IF EXISTS source_documents_supersedes;
DROP INDEX IF EXISTS source_documents_location;
ALTER TABLE source_documents DROP COLUMN IF EXISTS supersedes_id, DROP COLUMN IF EXISTS location;
DROP INDEX IF EXISTS source_documents_content_hash;
""")
