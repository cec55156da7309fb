"""The audit checkpoints' prefix tree (format 2, core/audit.py) and the graph catch-up's index.

`audit_nodes` holds the writer's stored nodes of the prefix tree: one row per node (its path, a
string of hex digits, and its 16 slots, 32 bytes each), so a checkpoint reads and rewrites the
nodes on the paths of the chains that moved, not every head. Like `audit_heads` it is the
writer's working state: checked against the previous signed root before each use, never read by
`audit verify`. The first checkpoint after this revision builds it from `audit_heads` (once).

`audit_heads.key` is a chain's place in that tree, SHA-256 of (type, 0x00, id), indexed so the
leaf at the end of a path is one index read; filled here for the heads a database already holds.

`approved_answers_updated`: the graph catch-up reads the answers changed since its mark
(`updated_at >= …`), which without an index is a scan of every answer.

Revision ID: 0027
Revises: 0025
Create Date: 2026-12-03
"""
from alembic import op

revision = "0027"
down_revision = "0025"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE audit_nodes (
    path      text COLLATE "C" PRIMARY KEY,
    children  bytea NOT NULL
);
ALTER TABLE audit_heads ADD COLUMN key bytea;
UPDATE audit_heads SET key = sha256(convert_to(aggregate_type, 'UTF8') || '\\x00'::bytea
                                    || convert_to(aggregate_id, 'UTF8'));
ALTER TABLE audit_heads ALTER COLUMN key SET NOT NULL;
CREATE INDEX audit_heads_key ON audit_heads (key);
CREATE INDEX approved_answers_updated ON approved_answers (updated_at);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS approved_answers_updated")
    op.execute("DROP INDEX IF EXISTS audit_heads_key")
    op.execute("ALTER TABLE audit_heads DROP COLUMN IF EXISTS key")
    op.execute("DROP TABLE IF EXISTS audit_nodes")
