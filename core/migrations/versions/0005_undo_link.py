"""Undo: a candidate made by undoing a decision names the candidate it was undone from.

`undo_of` links the new candidate (origin `undo`) to the undone one; a unique index makes a
decision undone at most once, whatever races. Validation records get an index by actor, so a
validator's last decision is one index read.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE candidates ADD COLUMN undo_of bigint REFERENCES candidates(id)")
    op.execute("CREATE UNIQUE INDEX candidates_undo_of ON candidates (undo_of) WHERE undo_of IS NOT NULL")
    op.execute("CREATE INDEX validation_records_actor ON validation_records (actor, id)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS validation_records_actor")
    op.execute("DROP INDEX IF EXISTS candidates_undo_of")
    op.execute("ALTER TABLE candidates DROP COLUMN IF EXISTS undo_of")
