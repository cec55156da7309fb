"""Retrieval by section and the escalation reason on work items.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""
from alembic import op  # noqa: F401

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
