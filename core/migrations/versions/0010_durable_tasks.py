"""Durable article tasks (docs/architecture.md, "Durable tasks"): the projection of a task's typed events
gains its reviewers, every review decision, the analysis, the published rendering and the supersession
links; snapshots of the projection every N events (`task_snapshots`, append-only); a DEPRECATED task
is immutable, in SQL too.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE durable_tasks
    ADD COLUMN reviewers           jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN decisions           jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN analysis            jsonb,
    ADD COLUMN sources             jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN rendered            text,
    ADD COLUMN resolution_note     text,
    ADD COLUMN deprecation_reason  text,
    ADD COLUMN supersedes_id       bigint REFERENCES durable_tasks(id),
    ADD COLUMN superseded_by       bigint,
    ADD COLUMN published_at        timestamptz;
CREATE INDEX durable_tasks_reviewers ON durable_tasks USING gin (reviewers jsonb_path_ops);
CREATE INDEX durable_tasks_supersedes ON durable_tasks (supersedes_id) WHERE supersedes_id IS NOT NULL;

CREATE TABLE task_snapshots (
    task_id     bigint NOT NULL,
    seq         integer NOT NULL,
    state       jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE TRIGGER task_snapshots_append_only BEFORE UPDATE OR DELETE ON task_snapshots
    FOR EACH ROW EXECUTE FUNCTION r2k_refuse_change();

CREATE FUNCTION r2k_task_deprecated_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.state = 'DEPRECATED' THEN
        RAISE EXCEPTION 'durable task % is DEPRECATED: terminal and immutable', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER durable_tasks_deprecated_immutable BEFORE UPDATE OR DELETE ON durable_tasks
    FOR EACH ROW EXECUTE FUNCTION r2k_task_deprecated_immutable();
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS durable_tasks_deprecated_immutable ON durable_tasks")
    op.execute("DROP FUNCTION IF EXISTS r2k_task_deprecated_immutable()")
    op.execute("DROP TABLE IF EXISTS task_snapshots")
    op.execute("DROP INDEX IF EXISTS durable_tasks_supersedes")
    op.execute("DROP INDEX IF EXISTS durable_tasks_reviewers")
    op.execute("ALTER TABLE durable_tasks DROP COLUMN IF EXISTS reviewers, DROP COLUMN IF EXISTS decisions, "
               "DROP COLUMN IF EXISTS analysis, DROP COLUMN IF EXISTS sources, DROP COLUMN IF EXISTS rendered, "
               "DROP COLUMN IF EXISTS resolution_note, DROP COLUMN IF EXISTS deprecation_reason, "
               "DROP COLUMN IF EXISTS supersedes_id, DROP COLUMN IF EXISTS superseded_by, "
               "DROP COLUMN IF EXISTS published_at")
