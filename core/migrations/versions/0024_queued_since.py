"""An index of the queued candidates by the time of their last move, for the queue sweep's repair
check (docs/architecture.md, "Queues"): it looks only at the rows that entered or moved within their
queue since its last run, so its cost is what changed, not what is queued.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-03
"""
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS candidates_queued_since ON candidates (updated_at) "
               "WHERE state IN ('PENDING', 'DISPUTED')")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS candidates_queued_since")
