"""Conflict flags as a machine and answers linked to subjects.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""
from alembic import op  # noqa: F401

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
