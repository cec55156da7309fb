"""The whole schema : entities, histories, the signed event log, idempotency keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

HORN = "('FACT','RULE','CONSTRAINT','PROCEDURE','OPEN_ISSUE')"

SCHEMA = f"""
CREATE TABLE users (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    role        text NOT NULL CHECK (role IN ('validator','specialist','admin')),
    horn_types  jsonb NOT NULL DEFAULT '[]',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    version     integer NOT NULL DEFAULT 1
);

CREATE TABLE source_documents (
    id            bigserial PRIMARY KEY,
    path          text NOT NULL,
    title         text NOT NULL,
    media_type    text NOT NULL,
    content       text NOT NULL,
    content_hash  text NOT NULL UNIQUE,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    version       integer NOT NULL DEFAULT 1,
    search        tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', content), 'B')
    ) STORED
);
CREATE INDEX source_documents_search ON source_documents USING gin (search);

-- Passages are an index derived from a document's content (split deterministically at ingest),
-- not an entity: retrieval ranks passages, not whole documents.
CREATE TABLE source_passages (
    id           bigserial PRIMARY KEY,
    document_id  bigint NOT NULL REFERENCES source_documents(id),
    ordinal      integer NOT NULL,
    span_start   integer NOT NULL,
    span_end     integer NOT NULL,
    text         text NOT NULL,
    search       tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    UNIQUE (document_id, ordinal)
);
CREATE INDEX source_passages_search ON source_passages USING gin (search);

CREATE TABLE candidates (
    id                bigserial PRIMARY KEY,
    question          text NOT NULL,
    text              text NOT NULL,
    horn_type         text NOT NULL CHECK (horn_type IN {HORN}),
    state             text NOT NULL,
    origin            text NOT NULL,
    source_refs       jsonb NOT NULL DEFAULT '[]',
    document_id       bigint REFERENCES source_documents(id),
    work_item_id      bigint,
    claimed_by        text,
    lease_expires_at  timestamptz,
    queue_rank        double precision,
    created_by        text NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    version           integer NOT NULL DEFAULT 1
);
CREATE INDEX candidates_queue ON candidates (horn_type, state, queue_rank);
CREATE INDEX candidates_state ON candidates (state, horn_type);
CREATE INDEX candidates_lease ON candidates (lease_expires_at) WHERE state = 'IN_REVIEW';
CREATE INDEX candidates_document ON candidates (document_id);

CREATE TABLE validation_records (
    id            bigserial PRIMARY KEY,
    candidate_id  bigint NOT NULL REFERENCES candidates(id),
    action        text NOT NULL,
    actor         text NOT NULL,
    from_state    text NOT NULL,
    to_state      text NOT NULL,
    revised_text  text,
    reason        text,
    created_at    timestamptz NOT NULL,
    version       integer NOT NULL DEFAULT 1
);
CREATE INDEX validation_records_candidate ON validation_records (candidate_id, id);

CREATE TABLE approved_answers (
    id              bigserial PRIMARY KEY,
    candidate_id    bigint NOT NULL REFERENCES candidates(id),
    question        text NOT NULL,
    text            text NOT NULL,
    horn_type       text NOT NULL CHECK (horn_type IN {HORN}),
    status          text NOT NULL,
    supersedes_id   bigint REFERENCES approved_answers(id),
    source_refs     jsonb NOT NULL DEFAULT '[]',
    published_by    text NOT NULL,
    reason          text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    version         integer NOT NULL DEFAULT 1,
    search          tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', question), 'A') || setweight(to_tsvector('english', text), 'B')
    ) STORED
);
CREATE UNIQUE INDEX approved_answers_supersedes ON approved_answers (supersedes_id) WHERE supersedes_id IS NOT NULL;
CREATE INDEX approved_answers_candidate ON approved_answers (candidate_id, id);
CREATE INDEX approved_answers_status ON approved_answers (status);
CREATE INDEX approved_answers_search ON approved_answers USING gin (search);

CREATE TABLE work_items (
    id             bigserial PRIMARY KEY,
    question       text NOT NULL,
    state          text NOT NULL,
    reason         text,
    candidate_id   bigint REFERENCES candidates(id),
    horn_type      text CHECK (horn_type IN {HORN}),
    attempts       integer NOT NULL DEFAULT 0,
    source_count   integer,
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    version        integer NOT NULL DEFAULT 1
);
CREATE INDEX work_items_state ON work_items (state, updated_at);

CREATE TABLE generated_candidates (
    id             bigserial PRIMARY KEY,
    work_item_id   bigint NOT NULL REFERENCES work_items(id),
    attempt        integer NOT NULL,
    candidate_id   bigint REFERENCES candidates(id),
    state          text NOT NULL,
    text           text NOT NULL,
    horn_type      text CHECK (horn_type IN {HORN}),
    prompt         text NOT NULL,
    sources        jsonb NOT NULL DEFAULT '[]',
    model          text NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    version        integer NOT NULL DEFAULT 1,
    UNIQUE (work_item_id, attempt)   -- a retried job never makes a second one
);

CREATE TABLE conflict_flags (
    id               bigserial PRIMARY KEY,
    answer_id        bigint NOT NULL REFERENCES approved_answers(id),
    other_answer_id  bigint NOT NULL REFERENCES approved_answers(id),
    subject          text NOT NULL,
    detail           text NOT NULL,
    status           text NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    version          integer NOT NULL DEFAULT 1,
    UNIQUE (answer_id, other_answer_id)
);

CREATE TABLE grey_entries (
    id               bigserial PRIMARY KEY,
    subject          text NOT NULL,
    detail           text NOT NULL DEFAULT '',
    state            text NOT NULL,
    origin           text NOT NULL,
    ttl_seconds      integer NOT NULL,
    expires_at       timestamptz NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    next_attempt_at  timestamptz,
    assignee         text,
    notes            text,
    reason           text,
    rejected_by      text,
    resolution       text,
    work_item_id     bigint REFERENCES work_items(id),
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    version          integer NOT NULL DEFAULT 1,
    search           tsvector GENERATED ALWAYS AS (
        to_tsvector('english', subject || ' ' || detail)
    ) STORED
);
CREATE INDEX grey_entries_state ON grey_entries (state, expires_at);
CREATE INDEX grey_entries_assignee ON grey_entries (assignee);
CREATE INDEX grey_entries_search ON grey_entries USING gin (search);

-- Each grey entry's transition history: who, when, from, to, why.
CREATE TABLE grey_transitions (
    id          bigserial PRIMARY KEY,
    entry_id    bigint NOT NULL REFERENCES grey_entries(id),
    action      text NOT NULL,
    from_state  text,
    to_state    text NOT NULL,
    actor       text NOT NULL,
    reason      text,
    created_at  timestamptz NOT NULL,
    version     integer NOT NULL DEFAULT 1
);
CREATE INDEX grey_transitions_entry ON grey_transitions (entry_id, id);

CREATE TABLE durable_tasks (
    id                   bigserial PRIMARY KEY,
    title                text NOT NULL,
    body                 text NOT NULL DEFAULT '',
    state                text NOT NULL,
    ai_confidence_score  double precision,
    flagged_claims       jsonb NOT NULL DEFAULT '[]',
    approvals            jsonb NOT NULL DEFAULT '[]',
    task_version         text,
    created_by           text NOT NULL,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    version              integer NOT NULL DEFAULT 1
);
CREATE INDEX durable_tasks_state ON durable_tasks (state);

CREATE TABLE signing_keys (
    key_id      text PRIMARY KEY,
    public_key  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE events (
    id               bigserial PRIMARY KEY,
    aggregate_type   text NOT NULL,
    aggregate_id     text NOT NULL,
    seq              integer NOT NULL,
    type             text NOT NULL,
    actor            text NOT NULL,
    payload          jsonb NOT NULL,
    created_at       timestamptz NOT NULL,
    idempotency_key  text,
    prev_hash        text NOT NULL,
    hash             text NOT NULL,
    signature        bytea NOT NULL,
    key_id           text NOT NULL REFERENCES signing_keys(key_id),
    UNIQUE (aggregate_type, aggregate_id, seq)
);
CREATE INDEX events_created ON events (created_at);

CREATE TABLE idempotency_keys (
    key           text PRIMARY KEY,
    actor         text NOT NULL,
    request_hash  text NOT NULL,
    response      jsonb,
    created_at    timestamptz NOT NULL
);

-- Append-only means append-only: the application's statements cannot rewrite history.
CREATE FUNCTION r2k_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on % is refused: % is append-only', TG_OP, TG_TABLE_NAME, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION r2k_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION r2k_refuse_change();
CREATE TRIGGER signing_keys_append_only BEFORE UPDATE OR DELETE ON signing_keys
    FOR EACH ROW EXECUTE FUNCTION r2k_refuse_change();

-- The registry never deletes, and a published answer's content never changes.
CREATE FUNCTION r2k_answer_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'approved answers are never deleted' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.question IS DISTINCT FROM OLD.question OR NEW.text IS DISTINCT FROM OLD.text
       OR NEW.horn_type IS DISTINCT FROM OLD.horn_type OR NEW.candidate_id IS DISTINCT FROM OLD.candidate_id
       OR NEW.supersedes_id IS DISTINCT FROM OLD.supersedes_id OR NEW.source_refs IS DISTINCT FROM OLD.source_refs THEN
        RAISE EXCEPTION 'the content of approved answer % never changes; publish a new version', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER approved_answers_immutable BEFORE UPDATE OR DELETE ON approved_answers
    FOR EACH ROW EXECUTE FUNCTION r2k_answer_immutable();
CREATE TRIGGER approved_answers_no_truncate BEFORE TRUNCATE ON approved_answers
    FOR EACH STATEMENT EXECUTE FUNCTION r2k_refuse_change();
"""

TABLES = ["idempotency_keys", "events", "signing_keys", "durable_tasks", "grey_transitions", "grey_entries",
          "conflict_flags", "generated_candidates", "work_items", "approved_answers", "validation_records",
          "candidates", "source_passages", "source_documents", "users"]


def upgrade() -> None:
    op.execute(SCHEMA)


def downgrade() -> None:
    op.execute("SET session_replication_role = replica")
    for table in TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
    op.execute("DROP FUNCTION IF EXISTS r2k_refuse_change() CASCADE")
    op.execute("DROP FUNCTION IF EXISTS r2k_answer_immutable() CASCADE")
    op.execute("RESET session_replication_role")
