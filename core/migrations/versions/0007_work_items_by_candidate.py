"""A candidate's work item without a scan: every candidate view (`candidates show`, the review
screen) looks up the work item an escalation opened by `work_items.candidate_id`, which had no
index, so each view read the whole table.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX work_items_candidate ON work_items (candidate_id, id)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS work_items_candidate")
