"""Guidelines per Horn queue (docs/architecture.md, "Guidelines"): Markdown an admin writes for the
validators of one queue, every version kept (a row each, with its signed event); each validation
record names the version in force when the decision was made (`guidelines_version`, empty while
the queue has none).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02
"""
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

HORN = "('FACT', 'RULE', 'CONSTRAINT', 'PROCEDURE', 'OPEN_ISSUE')"

UPGRADE = f"""
CREATE TABLE queue_guidelines (
    id          bigserial PRIMARY KEY,
    horn_type   text NOT NULL CHECK (horn_type IN {HORN}),
    number      integer NOT NULL CHECK (number > 0),
    body        text NOT NULL,
    author      text NOT NULL,
    created_at  timestamptz NOT NULL,
    version     integer NOT NULL DEFAULT 1,
    UNIQUE (horn_type, number)
);
ALTER TABLE validation_records ADD COLUMN guidelines_version integer;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("ALTER TABLE validation_records DROP COLUMN IF EXISTS guidelines_version")
    op.execute("DROP TABLE IF EXISTS queue_guidelines")
