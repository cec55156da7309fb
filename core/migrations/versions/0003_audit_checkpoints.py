"""Signed checkpoints of the event log: what was anchored, so truncation and deletion are found.

`audit_checkpoints` is append-only like `events`. `audit_heads` (the head of every chain as of the
latest checkpoint) and `audit_buckets` (the digest of each bucket of heads) are the writer's
working state, updated with every checkpoint; they are checked against the previous checkpoint's
signed root before each use, and `audit verify` never trusts them (it rebuilds the heads from the
checkpoints' deltas).

`r2k_events_watermark()` takes `LOCK TABLE events IN SHARE MODE`, which waits for every
transaction still inserting events, then returns max(id): every event up to it is committed.
It is SECURITY DEFINER because a SHARE lock needs UPDATE or ownership of the table, which the
application's role is not meant to hold on an append-only table; that role needs EXECUTE on it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SCHEMA = """
CREATE TABLE audit_checkpoints (
    number      integer NOT NULL UNIQUE CHECK (number > 0),
    watermark   bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    hash        text NOT NULL,
    record      jsonb NOT NULL,
    delta       jsonb NOT NULL
);

CREATE TRIGGER audit_checkpoints_append_only BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION r2k_refuse_change();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION r2k_refuse_change();

CREATE TABLE audit_heads (
    aggregate_type  text NOT NULL,
    aggregate_id    text NOT NULL,
    seq             integer NOT NULL,
    hash            text NOT NULL,
    bucket          integer NOT NULL,
    leaf            bytea NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
);
CREATE INDEX audit_heads_bucket ON audit_heads (bucket);

CREATE TABLE audit_buckets (
    bucket  integer PRIMARY KEY,
    digest  bytea NOT NULL
);

CREATE FUNCTION r2k_events_watermark() RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, public AS $$
BEGIN
    LOCK TABLE events IN SHARE MODE;
    RETURN coalesce((SELECT max(id) FROM events), 0);
END $$;
-- A caller holding the lock in a long transaction would stop every insert of events: only the
-- roles granted EXECUTE (and the owner) may take it.
REVOKE EXECUTE ON FUNCTION r2k_events_watermark() FROM PUBLIC;
"""


def upgrade() -> None:
    op.execute(SCHEMA)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS r2k_events_watermark()")
    op.execute("DROP TABLE IF EXISTS audit_buckets, audit_heads, audit_checkpoints")  # DROP fires no trigger
