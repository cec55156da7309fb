"""Embeddings for retrieval by meaning (docs/architecture.md, "Retrieval"): the recorded model and its
dimension (`embedding_index`), and, when this PostgreSQL has pgvector, one side table of vectors per
kind (source passages, candidates, approved answers) with an HNSW index (cosine) for the recorded
dimension. The projections themselves are untouched: vectors are derived data, like the full-text
vectors, and never part of an event.

pgvector is created here when the role may (a superuser, or a configured database whose owner
may); the embedded cluster's superuser creates it before the migrations run
(core/embedded/__init__.py, `prepare_database`). Without it only `embedding_index` is made, and
retrieval runs lexical only; `r2k index rebuild` makes the vector tables once pgvector is
installed (`core/migrations/vectors.py`).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""
from alembic import op

from r2k.core.migrations.vectors import VECTOR_EXTENSION, VECTOR_SCHEMA

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE embedding_index (
    id          smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    model       text NOT NULL,
    dimension   integer NOT NULL CHECK (dimension BETWEEN 1 AND 2000),
    state       text NOT NULL CHECK (state IN ('ready', 'rebuilding')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
"""


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(VECTOR_EXTENSION)
    if op.get_bind().exec_driver_sql("SELECT to_regtype('vector') IS NOT NULL").scalar():
        op.execute(VECTOR_SCHEMA)
