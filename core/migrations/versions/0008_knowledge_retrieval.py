"""Retrieval by section and the escalation reason on work items.

Passages become sections that carry their document's title and their heading path, indexed in
`heading_search` (title weight A, heading weight B) beside the text's own `search` column, so
retrieval can rank a heading or title match above a stray word in the text. Documents already
ingested are re-indexed here, from the content they were stored with, so an upgraded data dir
retrieves by section at once (docs/architecture.md, "Retrieval and generation").

`work_items.escalation_reason`: what the validator said when escalating the candidate the item
was opened for (or the generated candidate it answers); shown with the item and sent to the LLM.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""
from pathlib import Path

from alembic import op
from psycopg.rows import tuple_row

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE source_passages ADD COLUMN title text NOT NULL DEFAULT '', "
               "ADD COLUMN heading text NOT NULL DEFAULT ''")
    op.execute("ALTER TABLE source_passages ADD COLUMN heading_search tsvector GENERATED ALWAYS AS ("
               "setweight(to_tsvector('english', left(title, 1000)), 'A') || "
               "setweight(to_tsvector('english', left(heading, 2000)), 'B')) STORED")
    op.execute("CREATE INDEX source_passages_heading_search ON source_passages USING gin (heading_search)")
    op.execute("ALTER TABLE work_items ADD COLUMN escalation_reason text")
    reindex(op.get_bind().connection.driver_connection)  # psycopg's, in this migration's transaction


def reindex(conn) -> None:
    """Every stored document's passages, split again into titled sections (ingest.sections_of), on
    a psycopg connection (tuple rows)."""
    # Here, not at the top: the parsers and the ingest service (0.7 s), which Alembic would load with
    # every revision script it reads, for every migration.
    from r2k.core.knowledge.extract import ExtractError, extract
    from r2k.core.services.documents.ingest import jsonl_heading, sections_of

    conn = conn.cursor(row_factory=tuple_row)
    documents = conn.execute("SELECT id, path, title, media_type, content FROM source_documents ORDER BY id").fetchall()
    for document_id, path, title, media_type, content in documents:
        if media_type == "application/jsonl":
            # Stored as "question\nanswer" blocks: each answer's heading is the question line above it.
            rows = conn.execute("SELECT id, span_start FROM source_passages WHERE document_id = %s",
                                (document_id,)).fetchall()
            for passage_id, start in rows:
                conn.execute("UPDATE source_passages SET title = %s, heading = %s WHERE id = %s",
                             (title, jsonl_heading(content, start), passage_id))
            continue
        try:
            doc = extract(Path(path), content)
        except ExtractError:  # stored under older limits: its passages keep their text, with the title
            conn.execute("UPDATE source_passages SET title = %s WHERE document_id = %s", (title, document_id))
            continue
        conn.execute("DELETE FROM source_passages WHERE document_id = %s", (document_id,))
        for ordinal, section in enumerate(sections_of(doc)):
            conn.execute("INSERT INTO source_passages (document_id, ordinal, span_start, span_end, text, title, "
                         "heading) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                         (document_id, ordinal, section.start, section.end, section.text, title, section.heading))


def downgrade() -> None:
    op.execute("ALTER TABLE work_items DROP COLUMN escalation_reason")
    op.execute("DROP INDEX source_passages_heading_search")
    op.execute("ALTER TABLE source_passages DROP COLUMN heading_search, DROP COLUMN heading, DROP COLUMN title")
