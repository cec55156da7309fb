"""Durable article tasks: reviews, snapshots, idempotent transitions.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""
from alembic import op  # noqa: F401

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
