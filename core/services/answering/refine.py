"""Extraction refined by an LLM, on a worker (docs/architecture.md, "Documents and extraction").

Ingest is deterministic and stays so: it makes every candidate from the document's own words, LLM or
not. When an LLM is configured (`R2K_LLM_URL`, with `R2K_LLM_EXTRACTION` on, its default), the
document's `ingested` event enqueues `refine_candidates_task` on the generation queue (reactions).
The task asks the LLM, through the shared circuit breaker, for a question, a claim and a Horn type for
each of the document's candidates that still waits unclaimed (PENDING, origin `extracted`, never
refined before, and under overlap never reviewed), a batch of statements per prompt, as JSON checked against
core/schemas/extraction_proposal.json and then against the statement itself
(core/knowledge/proposals.py). An accepted proposal that changes anything is the candidate
machine's `refine` move (PENDING → PENDING, by the system), whose event carries the values before
(`fields.before`) and after (`set`); it is made only while the row is still at the version the
statement was read at, PENDING and unclaimed, so a claim that lands meanwhile wins and nothing
changes under a validator. A new Horn type moves the id between Redis lists in one step after the
commit (reactions; core/adapters/redis_queues.py).

Any failure keeps the deterministic candidate, and says why in the job's result (`kept`, reason →
count) and in the log: `circuit_open` (the breaker refused: no call made), `llm_error` (HTTP error,
timeout, malformed completion), `invalid_json`, `schema` (the reply's shape, a wrong count or
numbering), `unsupported` (the claim or question is not the statement's), `moved` (claimed,
changed or gone before the proposal arrived).
"""
from __future__ import annotations

import logging
import time
from bisect import bisect_right
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.jobs import JOB_TIMEOUT
from ...adapters.llm import LLMError
from ...domain import SYSTEM, limits
from ...knowledge import proposals
from ...knowledge.proposals import Asked, NotJSON
from ...machines.candidate import CANDIDATE
from ...tasks_schema import validator
from .. import jobs
from ..validation.candidates import tail_rank
from .generation import breaker

if TYPE_CHECKING:
    from ...context import Context
    from ...engine import Event

log = logging.getLogger(__name__)

SCHEMA = "extraction_proposal"
# A job asks no more batches once this much of its RQ timeout has gone: the rest of the document goes
# on in a job of its own, from the next candidate (a big document at 30 s a call would outlive one job).
BUDGET = JOB_TIMEOUT["generation"] * 0.5
REASONS = ("circuit_open", "llm_error", "invalid_json", "schema", "unsupported", "moved")


def enabled(ctx: Context) -> bool:
    return bool(ctx.settings.llm_url) and ctx.settings.llm_extraction


def job_id(document_id: int, after: int = 0) -> str:
    return f"refine-{document_id}" + (f"-after-{after}" if after else "")


def refine_later(ctx: Context, event: Event) -> None:
    """After commit (reactions): a document was ingested; with an LLM configured, a worker refines its
    candidates. Without one, nothing is enqueued."""
    if enabled(ctx):
        jobs.enqueue(ctx, "generation", "refine_candidates_task", event.aggregate_id,
                     job_id=job_id(event.aggregate_id))


class Rejected(ValueError):
    """A reply that is no acceptable proposal; `reason` is one of REASONS."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def _path(error) -> str:
    path = ""
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(the reply)"


def _said(error) -> str:
    """What is wrong, in a line that never repeats a long value."""
    if error.validator == "maxLength":
        return f"is longer than {error.validator_value} characters"
    if error.validator == "pattern":
        return "must end with a question mark" if error.absolute_path[-1] == "question" else "must not be blank"
    return error.message[:200]


def check_reply(reply: str, asked: list[Asked]) -> dict[int, dict]:
    """The proposals of a reply for the statements `asked`, by their candidate id: `question`,
    `claim`, `horn_type`, or `why_not` (the reason a statement's proposal is not the statement's, so
    its candidate stays as it is). A reply that is not JSON, breaks the schema, or does not give
    exactly one entry for each statement numbered as asked raises Rejected for the whole batch."""
    try:
        data = proposals.parse(reply)
    except NotJSON as exc:
        raise Rejected("invalid_json", str(exc)) from None
    errors = sorted(validator(SCHEMA).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        raise Rejected("schema", f"{_path(errors[0])}: {_said(errors[0])}")
    numbers = [item["n"] for item in data["statements"]]
    if sorted(numbers) != list(range(1, len(asked) + 1)):
        raise Rejected("schema", f"{len(asked)} statement(s) asked, numbered 1 to {len(asked)}; "
                                 f"the reply numbers {numbers[:10]}")
    out: dict[int, dict] = {}
    for item in data["statements"]:
        statement = asked[item["n"] - 1]
        question, claim = " ".join(item["question"].split()), item["claim"].strip()
        why = proposals.why_not(question, claim, statement.text, statement.heading) \
            or limits.too_long("a claim", limits.ANSWER, len(claim))
        out[statement.candidate_id] = {"question": question, "claim": claim, "horn_type": item["horn_type"],
                                       "why_not": why}
    return out


def _waiting(ctx: Context, document_id: int, after: int) -> tuple[dict | None, list[dict], dict[str, int]]:
    """The document, its candidates a refinement may still change (each with its section's heading),
    and the questions its candidates ask now (casefolded, → candidate id)."""
    with ctx.db.read() as tx:
        document = tx.one("SELECT id, title FROM source_documents WHERE id = %s", (document_id,))
        if document is None:
            return None, [], {}
        rows = tx.all(
            "SELECT c.id, c.version, c.question, c.text, c.horn_type, c.source_refs FROM candidates c "
            "WHERE c.document_id = %s AND c.origin = 'extracted' AND c.state = 'PENDING' AND c.claimed_by IS NULL "
            "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.aggregate_type = 'candidate' "
            "AND e.aggregate_id = c.id::text AND e.type = 'refine') "
            # Under overlap, a candidate one validator has reviewed keeps the words they judged.
            "AND NOT EXISTS (SELECT 1 FROM candidate_reviews r WHERE r.candidate_id = c.id) "
            "AND c.id > %s ORDER BY c.id", (document_id, after))
        asked = {" ".join(r["question"].split()).casefold(): r["id"] for r in tx.all(
            "SELECT id, question FROM candidates WHERE document_id = %s ORDER BY id", (document_id,))}
        passages = tx.all("SELECT span_start, span_end, heading FROM source_passages WHERE document_id = %s "
                          "ORDER BY ordinal", (document_id,))
    starts = [p["span_start"] for p in passages]  # in order: the section holding a span by bisection
    for row in rows:
        span = next((r.get("span") for r in row["source_refs"] or []
                     if isinstance(r, dict) and r.get("document_id") == document_id), None) or [0, 0]
        at = bisect_right(starts, span[0]) - 1
        holding = passages[at] if at >= 0 and span[1] <= passages[at]["span_end"] else None
        row["heading"] = (holding or {}).get("heading") or ""
    return document, rows, asked


def refine_document(ctx: Context, document_id: int, after: int = 0, *, llm=None, budget: float = BUDGET) -> dict:
    """The body of `refine_candidates_task`: what was asked, refined, left as it was (the proposal
    said the same), and kept by each reason of REASONS. Candidates after the id `after` only; once
    `budget` seconds have gone, the rest is left to a job of its own (`continued`: the last id done)."""
    result = {"document": document_id, "asked": 0, "refined": 0, "same": 0, "kept": {}}
    if not enabled(ctx):
        return {**result, "outcome": "no LLM configured"}
    document, rows, questions = _waiting(ctx, document_id, int(after))
    if document is None:
        return {**result, "outcome": "no such document"}
    size = ctx.settings.llm_extraction_batch
    cb = breaker(ctx)
    client = llm or ctx.llm
    began = time.monotonic()
    for start in range(0, len(rows), size):
        if start and time.monotonic() - began >= budget:
            done = rows[start - 1]["id"]
            jobs.enqueue(ctx, "generation", "refine_candidates_task", document_id, done,
                         job_id=job_id(document_id, done))
            return {**result, "continued": done}
        batch = rows[start:start + size]
        asked = [Asked(r["id"], r["text"], r["heading"]) for r in batch]
        if cb.allow(f"refine:{document_id}") == "refuse":
            _keep(result, "circuit_open", len(rows) - start, f"document {document_id}: the LLM circuit is open")
            break
        result["asked"] += len(batch)
        try:
            reply = client.complete(proposals.prompt(document["title"], asked), system=proposals.SYSTEM)
        except LLMError as exc:
            cb.record_failure(exc.detail)
            _keep(result, "llm_error", len(batch), f"document {document_id}: {exc.detail}")
            continue
        cb.record_success()  # the endpoint answered; what it said is judged below
        try:
            proposed = check_reply(limits.scrub(str(reply.text)), asked)
        except Rejected as exc:
            _keep(result, exc.reason, len(batch), f"document {document_id}: {exc.detail}")
            continue
        _apply(ctx, batch, proposed, limits.clip(limits.scrub(str(reply.model)), 200), questions, result)
    return result


def _keep(result: dict, reason: str, count: int, detail: str) -> None:
    result["kept"][reason] = result["kept"].get(reason, 0) + count
    log.info("extraction kept %d deterministic candidate(s) (%s): %s", count, reason, detail)


def _apply(ctx: Context, batch: list[dict], proposed: dict[int, dict], model: str, questions: dict[str, int],
           result: dict) -> None:
    """The accepted proposals of one batch, in one transaction: each a `refine` move, made only on a
    row still as it was read (version, PENDING, unclaimed). Two candidates of a document share a
    question only when they answer the same thing: a proposed question another of its candidates
    asks (now, or as proposed before it) is refused."""
    with ctx.db.begin() as tx:
        for read in batch:  # in id order, as every writer that locks several
            p = proposed[read["id"]]
            asker = questions.get(p["question"].casefold(), read["id"])
            why_not = p["why_not"] or (f"candidate {asker} asks that question" if asker != read["id"] else None)
            if why_not:
                _keep(result, "unsupported", 1, f"candidate {read['id']}: {why_not}")
                continue
            before = {"question": read["question"], "text": read["text"], "horn_type": read["horn_type"]}
            after = {"question": p["question"], "text": p["claim"], "horn_type": p["horn_type"]}
            if after == before:
                result["same"] += 1
                continue
            row = engine.lock(tx, CANDIDATE, read["id"], missing_ok=True)
            if row is None or row["version"] != read["version"] or row["state"] != "PENDING" or row["claimed_by"]:
                _keep(result, "moved", 1, f"candidate {read['id']}: claimed or changed before the proposal arrived")
                continue
            changes = dict(after)
            if after["horn_type"] != before["horn_type"]:
                changes["queue_rank"] = tail_rank()  # the tail of its new queue, as reconcile will order it
            questions.pop(" ".join(read["question"].split()).casefold(), None)
            questions[p["question"].casefold()] = read["id"]
            engine.apply(tx, CANDIDATE, row, "refine", SYSTEM, changes=changes, expected_version=read["version"],
                         fields={**after, "before": before, "model": model})
            result["refined"] += 1
