"""Idempotency keys are each user's own (docs/architecture.md, "Idempotency keys"): a key is unique
per (actor, key), as Stripe scopes keys per account, so one user's key never makes another user's
request a 409 nor returns the other's stored result.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, "
               "ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (actor, key)")


def downgrade() -> None:
    # One key per key again: of the users who chose the same key, the newest use keeps it.
    op.execute("DELETE FROM idempotency_keys older USING idempotency_keys newer WHERE older.key = newer.key "
               "AND (older.created_at, older.actor) < (newer.created_at, newer.actor)")
    op.execute("ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, "
               "ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (key)")
