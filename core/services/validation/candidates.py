"""Candidate commands: create a candidate, decide a claimed one (approve, revise, reject, escalate),
release it; and the candidate's part in what follows other workflows' moves (reactions).

What follows a decision (publishing to the registry, settling a dispute, moving the work item, the
queue push and the live notice) is not called from here: the reactions table says it
(core/reactions.py), and the unit of work runs it, in the same transaction or after the commit.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM, Actor, limits, parse_horn_type
from ...engine import Event
from ...errors import Conflict, InvalidInput
from ...events import now
from ...knowledge.classify import classify
from ...machines.candidate import CANDIDATE, not_open_issue
from ..common import Allowed, parse_id
from ..unit_of_work import in_unit_of_work
from . import guidelines, overlap

if TYPE_CHECKING:
    from ...context import Context

# What the screens ask of this workflow's moves (they never hold its machine).
allowed = Allowed(CANDIDATE)


_last_rank = 0.0


def revision_refused(row: dict) -> str | None:
    """Why this candidate's text may not be revised or approved at all, asked before any typing (an
    OPEN_ISSUE is never approved or revised: the machine's own guard)."""
    return not_open_issue(row, {})


def tail_rank() -> float:
    """Queue order for a push at the tail: microseconds since the epoch, strictly increasing."""
    global _last_rank
    _last_rank = max(_last_rank + 1, time.time() * 1e6)
    return _last_rank


def head_rank() -> float:
    """Queue order for a push at the head: later pushes sort first, as LPUSH does."""
    return -tail_rank()


def create_candidate(tx: Tx, actor: Actor, question: str, text: str, horn_type: str, source_refs: list,
                     *, origin: str, document_id: int | None = None, work_item_id: int | None = None,
                     idempotency_key: str | None = None) -> dict:
    """Insert a PENDING candidate (extract move); it is queued after the commit (reactions)."""
    return engine.create(tx, CANDIDATE, actor, {
        "question": question.strip(), "text": text.strip(), "horn_type": horn_type, "source_refs": source_refs,
        "origin": origin, "document_id": document_id, "work_item_id": work_item_id, "created_by": actor.name,
        "queue_rank": tail_rank()}, action="extract", idempotency_key=idempotency_key).row


def create_candidates(tx: Tx, actor: Actor, made: list[dict], *, origin: str) -> list[dict]:
    """Many PENDING candidates at once (one document's statements: `question`, `text`, `horn_type`,
    `source_refs`, `document_id` each), as `create_candidate` makes each, written together
    (engine.create_all); queued in order after the commit, in one round trip (reactions)."""
    rows = [{"question": m["question"].strip(), "text": m["text"].strip(), "horn_type": m["horn_type"],
             "source_refs": m["source_refs"], "origin": origin, "document_id": m.get("document_id"),
             "work_item_id": None, "created_by": actor.name, "queue_rank": tail_rank()} for m in made]
    return [event.row for event in engine.create_all(tx, CANDIDATE, actor, rows, action="extract")]


SOURCE_REMOVED = "source_removed"  # why a candidate is withdrawn: its document no longer states it


def add_source(tx: Tx, actor: Actor, candidate_id: int, ref: dict) -> dict:
    """Another document states what a candidate states (a near-duplicate): the candidate gains the
    reference, whatever its state, and an event records it; one that cites that document already
    is left as it is."""
    row = engine.lock(tx, CANDIDATE, candidate_id)
    if any(r.get("document_id") == ref.get("document_id") for r in row["source_refs"] or []):
        return row
    return engine.update(tx, "candidate", "candidates", row, {"source_refs": [*(row["source_refs"] or []), ref]},
                         actor, event_type="source_added").row


def withdraw_removed(tx: Tx, candidate_ids: list[int], document_id: int) -> list[int]:
    """The candidates whose statement a document ingested again no longer holds: those still waiting
    in their queue (PENDING) are withdrawn by the system (REJECTED, reason `source_removed`) and leave
    it (reactions); the others are left as they are. The ids withdrawn."""
    withdrawn = []
    for candidate_id in sorted(candidate_ids):  # in one order, as every writer that locks several
        row = engine.lock(tx, CANDIDATE, candidate_id)
        if row["state"] != "PENDING":
            continue
        engine.apply(tx, CANDIDATE, row, "withdraw", SYSTEM, fields={"reason": SOURCE_REMOVED, "document_id": document_id},
                     changes={"claimed_by": None, "lease_expires_at": None})
        withdrawn.append(candidate_id)
    return withdrawn


def add(ctx: Context, actor: Actor, question: str, text: str, horn_type: str | None = None,
        source_ref: str | None = None, *, idempotency_key: str | None = None) -> dict:
    """Add one candidate by hand (`candidates add`)."""
    if not (limits.text(question, "a question", limits.QUESTION) or "").strip():
        raise InvalidInput("a candidate needs a question (--question)")
    if not (limits.text(text, "an answer", limits.ANSWER) or "").strip():
        raise InvalidInput("a candidate needs an answer text (--text)")
    limits.text(source_ref, "a source reference", limits.SOURCE_REF)
    horn = parse_horn_type(horn_type) if horn_type else classify(text)
    refs = [{"ref": source_ref}] if source_ref else []

    def work(tx):
        return public_row(create_candidate(tx, actor, question, text, horn, refs, origin="manual",
                                           idempotency_key=idempotency_key))

    return in_unit_of_work(ctx, actor, "candidates.add",
                           {"question": question, "text": text, "horn_type": horn, "source_ref": source_ref},
                           work, idempotency_key=idempotency_key)


def decide(ctx: Context, actor: Actor, candidate_id: int, action: str, *, text: str | None = None,
           reason: str | None = None, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """Approve, revise, reject or escalate a claimed candidate. The result names the candidate and
    what its reactions made of the decision: the published `answer`, the `retired` disputed answer,
    the `work_item` opened or moved."""
    if action not in ("approve", "revise", "reject", "escalate"):
        raise InvalidInput(f"unknown decision {action!r}")
    limits.text(text, "an answer", limits.ANSWER)
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        row = engine.lock(tx, CANDIDATE, candidate_id)
        fields = {"revised_text": text, "reason": reason}
        # Authority, version and state first (403, 409, 422), then whether the claim still holds.
        engine.plan(CANDIDATE, row, action, actor, {k: v for k, v in fields.items() if v is not None},
                    expected_version)
        check_lease(row)
        if action == "revise" and text is not None and text.strip() == row["text"]:
            raise InvalidInput(f"the revised text is candidate {row['id']}'s text as it stands: nothing was "
                               f"revised; to publish it as it is, approve it (candidates approve {row['id']})")
        if action != "escalate" and row["state"] == "IN_REVIEW":
            k = overlap.reviews_required(tx, row["horn_type"])
            if k > 1 and not _re_review(tx, row):
                reviewed = overlap.decide(tx, actor, row, action, text, reason, k, tail_rank(),
                                          idempotency_key=idempotency_key)
                if reviewed is not None:  # a review short of k, or a disagreement: nothing published
                    return {"candidate": public_row(reviewed.row),
                            **{name: public_row(v) for name, v in reviewed.outcome.items()}}
        changes = {"claimed_by": None, "lease_expires_at": None}
        if action == "revise" and text is not None:
            changes["text"] = text.strip()
        decided = engine.apply(tx, CANDIDATE, row, action, actor, fields=fields, changes=changes,
                               expected_version=expected_version, idempotency_key=idempotency_key)
        return {"candidate": public_row(decided.row), **{k: public_row(v) for k, v in decided.outcome.items()}}

    return in_unit_of_work(ctx, actor, f"candidates.{action}",
                           {"id": parse_id(candidate_id, "candidate"), "text": text, "reason": reason,
                            "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def _re_review(tx: Tx, row: dict) -> bool:
    """The candidate was claimed to settle the dispute of its published answer (one decision)."""
    return bool(tx.scalar("SELECT EXISTS (SELECT 1 FROM approved_answers WHERE candidate_id = %s)", (row["id"],)))


def check_lease(row: dict) -> None:
    """A decision needs a claim that still holds: once its lease ran out, the candidate belongs back
    in its queue (the sweep releases it), and another validator may already be about to claim it."""
    expires = row.get("lease_expires_at")
    if row["state"] == "IN_REVIEW" and expires is not None and expires <= now():
        raise Conflict(f"your claim on candidate {row['id']} expired at {expires:%Y-%m-%d %H:%M:%S %Z}: "
                       f"nothing was decided; claim it again to decide it")


def approve(ctx, actor, candidate_id, **kw) -> dict:
    return decide(ctx, actor, candidate_id, "approve", **kw)


def revise(ctx, actor, candidate_id, text: str, **kw) -> dict:
    return decide(ctx, actor, candidate_id, "revise", text=text, **kw)


def reject(ctx, actor, candidate_id, reason: str, **kw) -> dict:
    return decide(ctx, actor, candidate_id, "reject", reason=reason, **kw)


def escalate(ctx, actor, candidate_id, reason: str, **kw) -> dict:
    return decide(ctx, actor, candidate_id, "escalate", reason=reason, **kw)


def resubmit(ctx: Context, actor: Actor, candidate_id: int, text: str, *, horn_type: str | None = None,
             expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """ESCALATED → PENDING with reworked text (`candidates resubmit`; a specialist or an admin): the
    candidate goes back to the tail of its Horn queue, and the work item its escalation opened (or
    that generated it) is closed, answered by the rework (reactions: workitems.close_for_resubmitted).
    It keeps its Horn type unless `horn_type` names another; an OPEN_ISSUE, never approvable, takes the
    type its reworked text classifies as. The result names the `candidate` and the `work_item` closed
    (none when it was closed already)."""
    limits.text(text, "an answer", limits.ANSWER)
    if not (text or "").strip():
        raise InvalidInput("a resubmission needs the reworked answer text (--text)")
    horn = parse_horn_type(horn_type) if horn_type else None

    def work(tx):
        row = engine.lock(tx, CANDIDATE, candidate_id)
        # Authority, version and state first (403, 409, 422).
        engine.plan(CANDIDATE, row, "resubmit", actor, {"text": text}, expected_version)
        if text.strip() == row["text"]:
            raise InvalidInput(f"the text is candidate {row['id']}'s text as it stands: nothing was reworked")
        to_horn = horn or (classify(text) if row["horn_type"] == "OPEN_ISSUE" else row["horn_type"])
        moved = engine.apply(tx, CANDIDATE, row, "resubmit", actor, fields={"text": text.strip()},
                             changes={"text": text.strip(), "horn_type": to_horn, "claimed_by": None,
                                      "lease_expires_at": None, "queue_rank": tail_rank()},
                             expected_version=expected_version, idempotency_key=idempotency_key)
        return {"candidate": public_row(moved.row), "work_item": public_row(moved.outcome.get("work_item"))}

    return in_unit_of_work(ctx, actor, "candidates.resubmit",
                           {"id": parse_id(candidate_id, "candidate"), "text": text, "horn_type": horn,
                            "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def escalated_for_item(ctx: Context, work_item_id) -> dict | None:
    """The ESCALATED candidate a work item holds, the one a resubmission reworks: the candidate its
    generation made that a validator escalated, else the one its escalation was opened for; None."""
    item_id = parse_id(work_item_id, "work item")
    with ctx.db.read() as tx:
        row = tx.one("SELECT id, question, text, horn_type, state, version, work_item_id FROM candidates "
                     "WHERE state = 'ESCALATED' AND (work_item_id = %s OR id = (SELECT candidate_id FROM work_items "
                     "WHERE id = %s)) ORDER BY COALESCE(work_item_id = %s, false) DESC, id DESC LIMIT 1",
                     (item_id, item_id, item_id))
    return public_row(row)


def release(ctx: Context, actor: Actor, candidate_id: int, *, expected_version: int | None = None,
            idempotency_key: str | None = None) -> dict:
    """Give a claimed candidate back: PENDING again, at the head of its queue."""
    def work(tx):
        row = engine.lock(tx, CANDIDATE, candidate_id)
        return public_row(_release_row(tx, row, actor, expected_version, idempotency_key))

    return in_unit_of_work(ctx, actor, "candidates.release",
                           {"id": parse_id(candidate_id, "candidate"), "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def _release_row(tx: Tx, row: dict, actor: Actor, expected_version=None, idempotency_key=None) -> dict:
    return engine.apply(tx, CANDIDATE, row, "release", actor, expected_version=expected_version,
                        changes={"claimed_by": None, "lease_expires_at": None, "queue_rank": head_rank()},
                        idempotency_key=idempotency_key).row


def release_expired(ctx: Context) -> list[int]:
    """The lease sweeper: claims whose lease ran out go back to the head of their queue."""
    released = []
    with ctx.db.begin() as tx:
        rows = tx.all("SELECT * FROM candidates WHERE state = 'IN_REVIEW' AND lease_expires_at < now() "
                      "ORDER BY lease_expires_at FOR UPDATE SKIP LOCKED LIMIT 500")
        for row in rows:
            _release_row(tx, row, SYSTEM)
            released.append(row["id"])
    return released


# ----------------------------------------------------------------------------- reactions (core/reactions.py)

def record_decision(tx: Tx, event: Event) -> None:
    """Every decision leaves its validation record: who decided what, from which state, why."""
    engine.record(tx, "validation_record", "validation_records", {
        "candidate_id": event.aggregate_id, "action": event.action, "actor": event.actor.name,
        "from_state": event.from_state, "to_state": event.to_state,
        "revised_text": event.fields.get("revised_text") if event.action == "revise" else None,
        "reason": event.fields.get("reason"),
        "guidelines_version": guidelines.number_in_force(tx, event.row["horn_type"])},
        event.actor, event_type=f"validation_{event.action}")


def send_for_re_review(tx: Tx, event: Event) -> None:
    """An answer is disputed: its candidate goes DISPUTED, to the head of its queue for re-review."""
    candidate = engine.lock(tx, CANDIDATE, event.row["candidate_id"])
    engine.apply(tx, CANDIDATE, candidate, "dispute", event.actor, fields={"reason": event.fields.get("reason")},
                 changes={"queue_rank": head_rank()})


def retire_with_answer(tx: Tx, event: Event) -> None:
    """A disputed answer is retired: its candidate, waiting for re-review, retires with it (an
    approved answer's candidate keeps its state: the candidate machine has no such move)."""
    candidate = engine.lock(tx, CANDIDATE, event.row["candidate_id"])
    if candidate["state"] == "DISPUTED":
        engine.apply(tx, CANDIDATE, candidate, "retire", event.actor, fields={"reason": event.fields.get("reason")})


def close_escalated_origin(tx: Tx, event: Event) -> None:
    """A work item closed: the escalated candidates it holds are closed with it, the one it was opened
    for and any it generated that a validator escalated (which moved the item to ESCALATED)."""
    ids = [r["id"] for r in tx.all("SELECT id FROM candidates WHERE work_item_id = %s AND state = 'ESCALATED' "
                                   "ORDER BY id", (event.aggregate_id,))]
    if event.row.get("candidate_id") is not None:
        ids.insert(0, event.row["candidate_id"])
    for candidate_id in ids:
        candidate = engine.lock(tx, CANDIDATE, candidate_id)
        if candidate["state"] == "ESCALATED":
            engine.apply(tx, CANDIDATE, candidate, "close", SYSTEM)
