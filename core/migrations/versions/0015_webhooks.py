"""Webhooks (docs/architecture.md, "HTTP API"): hooks, their deliveries and each attempt.

- `webhooks`: a URL, the event names it takes (`candidate.approved`, `answer.published`, `*` …), its
  own secret (the HMAC-SHA256 key of its signatures), whether it is paused (and why), how many
  deliveries in a row failed, and when it was removed (rows are never deleted).
- `webhook_deliveries`: one event for one hook, with its delivery id (a UUID the receiver
  deduplicates on), the body as sent (the signature covers these bytes), its status
  (`pending`, `delivered`, `failed`, `skipped`) and attempts.
- `webhook_attempts`: every try: when, the HTTP status or the error, how long it took.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE webhooks (
            id bigserial PRIMARY KEY,
            url text NOT NULL,
            events text[] NOT NULL,
            secret text NOT NULL,
            created_by text NOT NULL,
            created_at timestamptz NOT NULL,
            paused_at timestamptz,
            paused_reason text,
            failures integer NOT NULL DEFAULT 0,
            removed_at timestamptz,
            removed_by text,
            version integer NOT NULL DEFAULT 1
        );
        CREATE TABLE webhook_deliveries (
            id bigserial PRIMARY KEY,
            delivery_id text NOT NULL UNIQUE,
            webhook_id bigint NOT NULL REFERENCES webhooks (id),
            event text NOT NULL,
            body text NOT NULL,
            status text NOT NULL DEFAULT 'pending',
            attempts integer NOT NULL DEFAULT 0,
            next_attempt_at timestamptz,
            created_at timestamptz NOT NULL,
            delivered_at timestamptz
        );
        CREATE INDEX webhook_deliveries_by_hook ON webhook_deliveries (webhook_id, id);
        CREATE TABLE webhook_attempts (
            id bigserial PRIMARY KEY,
            delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id),
            attempt integer NOT NULL,
            at timestamptz NOT NULL,
            status_code integer,
            error text,
            duration_ms integer NOT NULL
        );
        CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id, attempt);
    """)


def downgrade() -> None:
    op.execute("DROP TABLE webhook_attempts; DROP TABLE webhook_deliveries; DROP TABLE webhooks")
