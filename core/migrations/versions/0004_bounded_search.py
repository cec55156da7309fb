"""The full-text search columns read bounded prefixes of their text, so no text can overflow a tsvector.

A tsvector holds at most 1 MB, and text can make about 10.5 bytes of it per character (hyphenated
pairs of distinct four-byte letters; plain prose makes well under 1), so an index of 100,000
characters could already fail. Each row's search column now reads at most 50,000 characters in
all (about 525 KB at worst): far more than a question and an answer within their limits
(`core.domain.limits`: 2,000 and 20,000), and the first 49,000 characters of a document; a document's
passages, which retrieval ranks, are each indexed whole.

PostgreSQL 16 cannot change a generated column's expression, so each column is dropped and added
again (which rewrites the table without firing its row triggers) and its GIN index recreated.
The app role's privileges are on the tables, so they survive.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BOUNDED = {
    "approved_answers": "setweight(to_tsvector('english', left(question, 5000)), 'A') || "
                        "setweight(to_tsvector('english', left(text, 45000)), 'B')",
    "source_documents": "setweight(to_tsvector('english', left(title, 1000)), 'A') || "
                        "setweight(to_tsvector('english', left(content, 49000)), 'B')",
    "source_passages": "to_tsvector('english', left(text, 50000))",
    "grey_entries": "to_tsvector('english', left(subject, 5000) || ' ' || left(detail, 45000))",
}

WHOLE = {  # as 0001 made them
    "approved_answers": "setweight(to_tsvector('english', question), 'A') || "
                        "setweight(to_tsvector('english', text), 'B')",
    "source_documents": "setweight(to_tsvector('english', title), 'A') || "
                        "setweight(to_tsvector('english', content), 'B')",
    "source_passages": "to_tsvector('english', text)",
    "grey_entries": "to_tsvector('english', subject || ' ' || detail)",
}


def _rebuild(expressions: dict[str, str]) -> None:
    for table, expression in expressions.items():
        op.execute(f"ALTER TABLE {table} DROP COLUMN search")  # drops {table}_search with it
        op.execute(f"ALTER TABLE {table} ADD COLUMN search tsvector GENERATED ALWAYS AS ({expression}) STORED")
        op.execute(f"CREATE INDEX {table}_search ON {table} USING gin (search)")


def upgrade() -> None:
    _rebuild(BOUNDED)


def downgrade() -> None:
    _rebuild(WHOLE)
