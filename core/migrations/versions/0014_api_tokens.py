"""API tokens (docs/architecture.md, "HTTP API"): each user's bearer tokens for `r2k serve api`.

A token is shown once, when made; only its SHA-256 is kept (a token is 256 random bits, so a plain
hash is enough: nothing to guess from). `prefix` is its first characters, for a person to tell their
tokens apart in `r2k users token list`. A revoked token keeps its row (who revoked it, when).
Tokens are made and revoked through events on their user (`user_token_created`, `user_token_revoked`).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE api_tokens (
            id bigserial PRIMARY KEY,
            user_name text NOT NULL REFERENCES users (name),
            name text NOT NULL DEFAULT '',
            prefix text NOT NULL,
            token_hash text NOT NULL UNIQUE,
            created_by text NOT NULL,
            created_at timestamptz NOT NULL,
            last_used_at timestamptz,
            revoked_at timestamptz,
            revoked_by text
        );
        CREATE INDEX api_tokens_by_user ON api_tokens (user_name, id);
    """)


def downgrade() -> None:
    op.execute("DROP TABLE api_tokens")
