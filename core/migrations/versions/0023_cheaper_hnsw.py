"""The HNSW indexes of a database made before their parameters changed (docs/architecture.md, "The
vector index"): the model recorder is replaced by the one that builds them with m = 8 and
ef_construction = 32, and the three indexes of the recorded model are built again so. Rebuilding
reads every vector once (on the bench corpus, seconds; on a large index, minutes). A database
without pgvector, or with no model recorded yet, has nothing to rebuild.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02
"""
from alembic import op

from r2k.core.migrations.vectors import KINDS, VECTOR_SCHEMA, hnsw_index, recorded_dimension, vector_tables

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if not vector_tables(bind):
        return
    op.execute(VECTOR_SCHEMA)  # CREATE OR REPLACE keeps the function's owner and grants
    dimension = recorded_dimension(bind)
    if dimension is None:
        return
    for kind in KINDS:
        op.execute(f"DROP INDEX IF EXISTS {kind}_vectors_hnsw")
        op.execute(hnsw_index(kind, dimension))


def downgrade() -> None:
    """The indexes with pgvector's default parameters again (the recorder keeps building cheap ones)."""
    bind = op.get_bind()
    if not bind.exec_driver_sql("SELECT to_regclass('passage_vectors') IS NOT NULL").scalar():
        return
    dimension = recorded_dimension(bind)
    if dimension is None:
        return
    for kind in KINDS:
        op.execute(f"DROP INDEX IF EXISTS {kind}_vectors_hnsw")
        op.execute(hnsw_index(kind, dimension).split(" WITH (")[0])
