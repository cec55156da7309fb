"""Export of what was decided (docs/architecture.md, "Export"): the registry, the validators'
decisions and the article tasks, as JSON Lines or CSV.

- **One snapshot.** An export reads in one REPEATABLE READ, READ ONLY transaction, so a move made
  while it runs is either wholly in it or wholly out of it.
- **Streamed.** Rows come from a server-side cursor, `BATCH` at a time: an export of millions of
  rows holds one batch in memory, and reports its progress as it goes.
- **Read back by `r2k ingest`.** A registry or decisions record carries `question`, `answer` and
  `horn_type`, the JSON Lines record ingest reads; the other fields ride along (ingest ignores
  them). An article task has no question, so its records are for other tools.
- **CSV** has one column per field; a list or an object (a chain, sources, reviewers) is its JSON
  text in the cell. A cell that a spreadsheet would run as a formula (it starts with `=`, `+`, `-`,
  `@`, a tab or a CR) gets a leading `'`, as OWASP advises for CSV meant for spreadsheets.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

from ...domain import jsonable
from ...errors import Forbidden, InvalidInput
from ..common import status_filter
from .registry import STATUSES

if TYPE_CHECKING:
    from ...adapters.postgres import Tx
    from ...context import Context
    from ...domain import Actor

KINDS = ("registry", "decisions", "tasks")
FORMATS = ("jsonl", "csv")
BATCH = 1000  # rows fetched from the server-side cursor at a time
CURRENT = ("APPROVED", "DISPUTED")  # the registry's current answers: what an export holds by default

# Each answer with the whole version chain it belongs to (ids oldest first), the version that
# replaced it, and who decided its candidate (approve or revise; the publisher when none did, as
# for an answer generated and approved elsewhere).
_REGISTRY = """
WITH RECURSIVE walk AS (
    SELECT id, id AS root FROM approved_answers WHERE supersedes_id IS NULL
    UNION ALL
    SELECT a.id, w.root FROM approved_answers a JOIN walk w ON a.supersedes_id = w.id
), chains AS (SELECT root, array_agg(id ORDER BY id) AS ids FROM walk GROUP BY root)
SELECT a.id, a.question, a.text AS answer, a.horn_type, a.status, a.version, a.supersedes_id,
       (SELECT n.id FROM approved_answers n WHERE n.supersedes_id = a.id) AS superseded_by,
       c.ids AS chain, a.candidate_id, a.source_refs AS sources, a.published_by,
       coalesce((SELECT array_agg(DISTINCT v.actor ORDER BY v.actor) FROM validation_records v
                 WHERE v.candidate_id = a.candidate_id AND v.action IN ('approve', 'revise')),
                ARRAY[a.published_by]) AS reviewers,
       a.reason, a.created_at, a.updated_at
FROM approved_answers a JOIN walk w ON w.id = a.id JOIN chains c ON c.root = w.root
WHERE a.status = ANY(%(statuses)s) ORDER BY a.id
"""
_REGISTRY_COUNT = "SELECT count(*) FROM approved_answers WHERE status = ANY(%(statuses)s)"

# Every decision a validator made, with what it was about: the candidate's question and the text
# decided (the revised text for a revision), so a decision reads as the claim it judged.
_DECISIONS = """
SELECT v.id, v.candidate_id, v.action, v.actor, v.from_state, v.to_state, c.question,
       coalesce(v.revised_text, c.text) AS answer, c.horn_type, v.reason, v.created_at
FROM validation_records v JOIN candidates c ON c.id = v.candidate_id ORDER BY v.id
"""
_DECISIONS_COUNT = "SELECT count(*) FROM validation_records"

# Every article task with each cited answer's registry status as it is now.
_TASKS = """
SELECT t.id, t.title, t.state, t.body, t.ai_confidence_score, t.reviewers, t.approvals, t.flagged_claims,
       coalesce((SELECT jsonb_agg(s || jsonb_build_object('status_now', a.status) ORDER BY o)
                 FROM jsonb_array_elements(t.sources) WITH ORDINALITY AS e(s, o)
                 LEFT JOIN approved_answers a ON a.id = (s->>'answer_id')::bigint), '[]'::jsonb) AS sources,
       t.supersedes_id, t.superseded_by, t.created_by, t.created_at, t.updated_at, t.version
FROM durable_tasks t ORDER BY t.id
"""
_TASKS_COUNT = "SELECT count(*) FROM durable_tasks"

# The columns of each kind, in the order a CSV export writes them.
COLUMNS = {
    "registry": ("id", "question", "answer", "horn_type", "status", "version", "supersedes_id", "superseded_by",
                 "chain", "candidate_id", "sources", "published_by", "reviewers", "reason", "created_at",
                 "updated_at"),
    "decisions": ("id", "candidate_id", "action", "actor", "from_state", "to_state", "question", "answer",
                  "horn_type", "reason", "created_at"),
    "tasks": ("id", "title", "state", "body", "ai_confidence_score", "reviewers", "approvals", "flagged_claims",
              "sources", "supersedes_id", "superseded_by", "created_by", "created_at", "updated_at", "version"),
}


@dataclass(frozen=True)
class Summary:
    kind: str
    format: str
    rows: int
    statuses: list[str] | None


def kind_of(kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInput(f"unknown export {kind!r}: expected {', '.join(KINDS)}")
    return kind


def format_of(fmt: str) -> str:
    value = (fmt or "").lower()
    if value not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}: expected {' or '.join(FORMATS)}")
    return value


def _query(kind: str, status) -> tuple[str, str, dict, list[str] | None]:
    if kind == "registry":
        statuses = list(CURRENT) if not status else status_filter(status, STATUSES, "APPROVED", "answer status")
        return _REGISTRY, _REGISTRY_COUNT, {"statuses": statuses}, statuses
    if status:
        raise InvalidInput("--status filters the registry export only (answers have statuses)")
    return (_DECISIONS, _DECISIONS_COUNT, {}, None) if kind == "decisions" else (_TASKS, _TASKS_COUNT, {}, None)


def _records(tx: "Tx", sql: str, params: dict) -> Iterator[dict]:
    # A named (server-side) cursor: PostgreSQL holds the result, the client fetches it in batches.
    with tx.conn.cursor(name="r2k_export") as cursor:
        cursor.itersize = BATCH
        cursor.execute(sql, params)
        for row in cursor:
            yield {k: jsonable(v) for k, v in row.items()}


def checked(actor: "Actor", kind: str, fmt: str, status=None) -> tuple[str, str]:
    """The kind and format of an export `actor` may make, else its 400 or 403, before anything is written."""
    kind, fmt = kind_of(kind), format_of(fmt)
    if kind == "decisions" and actor.role != "admin":
        raise Forbidden(f"{actor.name} ({actor.role}) may not export every validator's decisions: only an admin may")
    _query(kind, status)  # a status filter it cannot take is a 400 here
    return kind, fmt


def export(ctx: "Context", actor: "Actor", kind: str, fmt: str, write: Callable[[str], None], *, status=None,
           progress: Callable[[int, int], None] | None = None) -> Summary:
    """Write every record of `kind` through `write`, as `fmt` text (one line a record for JSON
    Lines; a header, then one row a record, for CSV); `progress(done, total)` after each batch.
    The registry and the tasks are anyone's to read; every validator's decisions side by side are
    an admin's, as the team's figures are (`stats`)."""
    kind, fmt = checked(actor, kind, fmt, status)
    sql, count_sql, params, statuses = _query(kind, status)
    encode = encoder(kind, fmt)
    done = 0
    with ctx.db.read() as tx:
        tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        total = tx.scalar(count_sql, params)
        if fmt == "csv":
            write(csv_line(COLUMNS[kind]))
        for record in _records(tx, sql, params):
            write(encode(record))
            done += 1
            if progress is not None and done % BATCH == 0:
                progress(done, total)
    if progress is not None:
        progress(done, total)
    return Summary(kind, fmt, done, statuses)


# ----------------------------------------------------------------------------- encoding (pure)

def encoder(kind: str, fmt: str) -> Callable[[dict], str]:
    """A record → its line (with its newline) in `fmt`."""
    columns = COLUMNS[kind]
    if fmt == "jsonl":
        return lambda record: json.dumps({c: record.get(c) for c in columns}, ensure_ascii=False) + "\n"
    return lambda record: csv_line([cell(record.get(c)) for c in columns])


def cell(value) -> str:
    """One CSV cell: a list or an object as its JSON, None as empty, a formula-like text defused."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return str(value)


def csv_line(values) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(values)  # RFC 4180's line ending
    return out.getvalue()
