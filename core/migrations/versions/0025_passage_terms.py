"""Each passage's terms with their weight, kept beside it (docs/architecture.md, "Retrieval", "The
term index"): retrieval's first pass reads the few rows of the question's terms instead of ranking
every passage that has any of them with `ts_rank_cd` over its whole tsvector (the largest share of
retrieval's time: ~8 ms of ~24 on the real corpora).

`passage_terms` holds one row per passage and lexeme of `heading_search || search`: its `weight`, the
sum over the lexeme's positions of 10 for title (A), 4 for heading (B), 2 (C) and 1 for text (D), ten
times what `ts_rank_cd` adds for them for a query of any of the question's terms (each position a
cover of one), in integers, so sums are exact; and where the passage has it, as the scoring reads it
(`body`: its positions in `search`; `labels` and `label_weights`: in `heading_search`), so the pool's
hits are a few index rows, not every lexeme of every pooled tsvector unnested. Derived data: written
by a trigger as a passage is written (or its text, title or heading changed), removed with it;
filled here for the passages a database already holds.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-03
"""
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

# The weight of each of a lexeme's positions (setweight's letters; `search` is unweighted, D).
WEIGHT = "(SELECT coalesce(sum(CASE w WHEN 'A' THEN 10 WHEN 'B' THEN 4 WHEN 'C' THEN 2 ELSE 1 END), 0)::integer " \
         "FROM unnest(t.weights) w)"

UPGRADE = f"""
CREATE TABLE passage_terms (
    lexeme      text NOT NULL,
    passage_id  bigint NOT NULL REFERENCES source_passages(id) ON DELETE CASCADE,
    weight      integer NOT NULL,
    body        smallint[],
    labels      smallint[],
    label_weights text[],
    PRIMARY KEY (lexeme, passage_id) INCLUDE (weight)
);
CREATE INDEX passage_terms_passage ON passage_terms (passage_id);
-- The passages of older versions (few): what the first pass leaves out, without reading the rest.
CREATE INDEX source_passages_stale ON source_passages (id) WHERE NOT current;

-- The owner's, so the application role (which may not DELETE) keeps the derived rows in step.
CREATE FUNCTION r2k_passage_terms() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM passage_terms WHERE passage_id = NEW.id;
    END IF;
    INSERT INTO passage_terms (lexeme, passage_id, weight, body, labels, label_weights)
    SELECT t.lexeme, NEW.id, {WEIGHT}, b.positions, h.positions, h.weights
      FROM unnest(NEW.heading_search || NEW.search) t
      LEFT JOIN unnest(NEW.search) b ON b.lexeme = t.lexeme
      LEFT JOIN unnest(NEW.heading_search) h ON h.lexeme = t.lexeme;
    RETURN NULL;
END $$;
CREATE TRIGGER source_passages_terms AFTER INSERT OR UPDATE OF text, title, heading ON source_passages
    FOR EACH ROW EXECUTE FUNCTION r2k_passage_terms();

INSERT INTO passage_terms (lexeme, passage_id, weight, body, labels, label_weights)
SELECT t.lexeme, p.id, {WEIGHT}, b.positions, h.positions, h.weights
  FROM source_passages p
 CROSS JOIN LATERAL unnest(p.heading_search || p.search) t
  LEFT JOIN LATERAL unnest(p.search) b ON b.lexeme = t.lexeme
  LEFT JOIN LATERAL unnest(p.heading_search) h ON h.lexeme = t.lexeme;
ANALYZE passage_terms;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS source_passages_terms ON source_passages")
    op.execute("DROP FUNCTION IF EXISTS r2k_passage_terms()")
    op.execute("DROP TABLE IF EXISTS passage_terms")
    op.execute("DROP INDEX IF EXISTS source_passages_stale")
