"""Comments on candidates, answers, grey entries, work items and article tasks (docs/architecture.md,
"Comments"): each one a row here and its signed creation event; never edited, never deleted (a
correction is a new comment). `mentions` holds the known users its `@name`s named, for their live
notice and `comments list --mentions`.

Revision ID: 0020
Revises: 0015
Create Date: 2026-12-02
"""
from alembic import op

revision = "0020"
down_revision = "0015"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE comments (
    id           bigserial PRIMARY KEY,
    entity_type  text NOT NULL CHECK (entity_type IN ('candidate', 'answer', 'grey_entry', 'work_item', 'task')),
    entity_id    bigint NOT NULL,
    author       text NOT NULL,
    body         text NOT NULL,
    mentions     text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    version      integer NOT NULL DEFAULT 1
);
CREATE INDEX comments_entity ON comments (entity_type, entity_id, id);
CREATE INDEX comments_mentions ON comments USING gin (mentions);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS comments")
