"""Candidates' vectors lose their HNSW index (docs/architecture.md, "Retrieval"; core/migrations/vectors.py):
no query reads the candidates nearest a vector, and keeping that index was most of ingest's index
upkeep. The model recorder is replaced by the one that indexes passages and answers only and keeps a
candidate vector's dimension by a CHECK; a database with a recorded model gets that CHECK now.
Dropping an index reads nothing; the CHECK reads every candidate vector once.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-04
"""
from alembic import op

from r2k.core.migrations.vectors import VECTOR_SCHEMA, hnsw_index, recorded_dimension, vector_tables

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if not vector_tables(bind):
        return
    op.execute(VECTOR_SCHEMA)  # CREATE OR REPLACE keeps the function's owner and grants
    op.execute("DROP INDEX IF EXISTS candidate_vectors_hnsw")
    dimension = recorded_dimension(bind)
    if dimension is not None:
        op.execute("ALTER TABLE candidate_vectors DROP CONSTRAINT IF EXISTS candidate_vectors_dimension")
        op.execute(f"ALTER TABLE candidate_vectors ADD CONSTRAINT candidate_vectors_dimension "
                   f"CHECK (vector_dims(embedding) = {int(dimension)})")


def downgrade() -> None:
    """The candidates' index again, for the recorded model (the recorder, replaced, keeps not making it)."""
    bind = op.get_bind()
    if not bind.exec_driver_sql("SELECT to_regclass('candidate_vectors') IS NOT NULL").scalar():
        return
    op.execute("ALTER TABLE candidate_vectors DROP CONSTRAINT IF EXISTS candidate_vectors_dimension")
    dimension = recorded_dimension(bind)
    if dimension is not None:
        op.execute("DROP INDEX IF EXISTS candidate_vectors_hnsw")
        op.execute(hnsw_index("candidate", dimension))
