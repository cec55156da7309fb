"""Overlap (docs/architecture.md, "Overlap"): a Horn queue may require k independent, blind reviews
per candidate. `queue_settings` keeps every version of a queue's setting (a row each, with its
signed event; the newest is in force, none means k = 1). `candidate_reviews` holds each review: who
decided what in which round of a candidate, and how the round ended (`open` while it waits for the
others, then `agreed`, `disagreed` (sent to adjudication), `undone` or `void`).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

HORN = "('FACT', 'RULE', 'CONSTRAINT', 'PROCEDURE', 'OPEN_ISSUE')"

UPGRADE = f"""
CREATE TABLE queue_settings (
    id          bigserial PRIMARY KEY,
    horn_type   text NOT NULL CHECK (horn_type IN {HORN}),
    reviews     integer NOT NULL CHECK (reviews BETWEEN 1 AND 9),
    author      text NOT NULL,
    created_at  timestamptz NOT NULL,
    version     integer NOT NULL DEFAULT 1
);
CREATE INDEX queue_settings_horn ON queue_settings (horn_type, id DESC);

CREATE TABLE candidate_reviews (
    id            bigserial PRIMARY KEY,
    candidate_id  bigint NOT NULL REFERENCES candidates(id),
    round         integer NOT NULL CHECK (round > 0),
    actor         text NOT NULL,
    action        text NOT NULL CHECK (action IN ('approve', 'revise', 'reject')),
    revised_text  text,
    reason        text,
    status        text NOT NULL CHECK (status IN ('open', 'agreed', 'disagreed', 'undone', 'void')),
    closed_at     timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    version       integer NOT NULL DEFAULT 1
);
-- One review per validator per round; one open review per validator per candidate.
CREATE UNIQUE INDEX candidate_reviews_round ON candidate_reviews (candidate_id, round, actor)
    WHERE status <> 'undone';
CREATE UNIQUE INDEX candidate_reviews_open ON candidate_reviews (candidate_id, actor) WHERE status = 'open';
CREATE INDEX candidate_reviews_closed ON candidate_reviews (closed_at) WHERE status IN ('agreed', 'disagreed');
CREATE INDEX candidate_reviews_actor ON candidate_reviews (actor, id DESC);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS candidate_reviews")
    op.execute("DROP TABLE IF EXISTS queue_settings")
