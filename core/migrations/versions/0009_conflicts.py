"""Conflict flags as a machine and answers linked to subjects (docs/architecture.md, "Conflicts").

`answer_subjects`: each approved answer's subjects (core/knowledge/subjects.py), written when it is
published; what contradiction detection compares answers by, and what the graph mirrors as Subject
nodes. Answers already published are given theirs here, from their stored question and text.

`conflict_flags` gains what its machine (core/machines/conflict.py) needs: the rule that found it
(`kind`, `judge`: rules or llm), the disagreeing words of each answer (`highlights`), the Horn types
of its answers (who may decide it), the SHA-256 of each answer's text when flagged (a dismissed
pair is not flagged again unless an answer's text changes), the escalation or closing `reason`,
the `dismissed_reason`, and who decided.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE answer_subjects (
    answer_id  bigint NOT NULL REFERENCES approved_answers(id),
    subject    text NOT NULL CHECK (length(subject) BETWEEN 1 AND 200),
    rank       smallint NOT NULL,
    PRIMARY KEY (answer_id, subject)
);
CREATE INDEX answer_subjects_subject ON answer_subjects (subject, answer_id);
ALTER TABLE conflict_flags
    ADD COLUMN kind             text NOT NULL DEFAULT 'quantity',
    ADD COLUMN judge            text NOT NULL DEFAULT 'rules',
    ADD COLUMN highlights       jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN horn_types       jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN answer_hash      text,
    ADD COLUMN other_hash       text,
    ADD COLUMN reason           text,
    ADD COLUMN dismissed_reason text,
    ADD COLUMN decided_by       text;
CREATE INDEX conflict_flags_status ON conflict_flags (status, id);
CREATE INDEX conflict_flags_other ON conflict_flags (other_answer_id);
CREATE INDEX conflict_flags_hashes ON conflict_flags (answer_hash, other_hash) WHERE status = 'DISMISSED';
""")
    _backfill()


def _backfill() -> None:
    """Subjects for every answer published before this revision, and what old flags lack."""
    from r2k.core.knowledge.subjects import subjects_of

    conn = op.get_bind().connection.driver_connection  # the psycopg connection, in this migration's transaction
    rows = conn.execute("SELECT id, question, text FROM approved_answers ORDER BY id").fetchall()
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO answer_subjects (answer_id, subject, rank) VALUES (%s, %s, %s) "
                        "ON CONFLICT DO NOTHING",
                        [(answer_id, subject[:200], rank) for answer_id, question, text in rows
                         for rank, subject in enumerate(subjects_of(question, text))])
    conn.execute(
        "UPDATE conflict_flags f SET horn_types = to_jsonb(ARRAY(SELECT DISTINCT h FROM unnest(ARRAY[a.horn_type, b.horn_type]) h ORDER BY h)), "
        "answer_hash = encode(sha256(convert_to(a.text, 'UTF8')), 'hex'), "
        "other_hash = encode(sha256(convert_to(b.text, 'UTF8')), 'hex') "
        "FROM approved_answers a, approved_answers b WHERE a.id = f.answer_id AND b.id = f.other_answer_id")


def downgrade() -> None:
    op.execute("""
DROP INDEX IF EXISTS conflict_flags_hashes;
DROP INDEX IF EXISTS conflict_flags_other;
DROP INDEX IF EXISTS conflict_flags_status;
ALTER TABLE conflict_flags
    DROP COLUMN IF EXISTS kind, DROP COLUMN IF EXISTS judge, DROP COLUMN IF EXISTS highlights,
    DROP COLUMN IF EXISTS horn_types, DROP COLUMN IF EXISTS answer_hash, DROP COLUMN IF EXISTS other_hash,
    DROP COLUMN IF EXISTS reason, DROP COLUMN IF EXISTS dismissed_reason, DROP COLUMN IF EXISTS decided_by;
DROP TABLE IF EXISTS answer_subjects;
""")
