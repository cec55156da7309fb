"""Candidate commands: create a candidate, decide a claimed one (approve, revise, reject, escalate),
release it; what follows a decision (the registry, the work item) happens in the same transaction.

Every state change commits first; the queue push or live notice runs after the commit
(`tx.after_commit`), so Redis never gets ahead of PostgreSQL.
"""
from __future__ import annotations

import time

from .. import engine, limits
from ..adapters.postgres import Tx, public_row
from ..context import Context, notice
from ..domain import SYSTEM, Actor, parse_horn_type
from ..errors import Conflict, InvalidInput
from ..events import now
from ..machines.candidate import CANDIDATE
from . import mutate, parse_id, queue_index


_last_rank = 0.0


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
    """Insert a PENDING candidate (extract move); the caller queues it after commit."""
    return engine.create(tx, CANDIDATE, actor, {
        "question": question.strip(), "text": text.strip(), "horn_type": horn_type, "source_refs": source_refs,
        "origin": origin, "document_id": document_id, "work_item_id": work_item_id, "created_by": actor.name,
        "queue_rank": tail_rank()}, action="extract", idempotency_key=idempotency_key)


def enqueue_created(ctx: Context, rows: list[dict]) -> None:
    if not rows:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for row in rows:
        pipe.rpush(f"raw_to_knowledge:val_queue:{row['horn_type']}", row["id"])
    pipe.execute()
    ctx.notify("candidate", action="extract", count=len(rows), horn_types=sorted({r["horn_type"] for r in rows}))


def add(ctx: Context, actor: Actor, question: str, text: str, horn_type: str | None = None,
        source_ref: str | None = None, *, idempotency_key: str | None = None) -> dict:
    """Add one candidate by hand (`candidates add`)."""
    from ..classify import classify

    if not (limits.text(question, "a question", limits.QUESTION) or "").strip():
        raise InvalidInput("a candidate needs a question (--question)")
    if not (limits.text(text, "an answer", limits.ANSWER) or "").strip():
        raise InvalidInput("a candidate needs an answer text (--text)")
    limits.text(source_ref, "a source reference", limits.SOURCE_REF)
    horn = parse_horn_type(horn_type) if horn_type else classify(text)
    refs = [{"ref": source_ref}] if source_ref else []

    def work(tx):
        row = create_candidate(tx, actor, question, text, horn, refs, origin="manual",
                               idempotency_key=idempotency_key)
        tx.after_commit(lambda: enqueue_created(ctx, [row]))
        return public_row(row)

    return mutate(ctx, actor, "candidates.add", {"question": question, "text": text, "horn_type": horn,
                                                 "source_ref": source_ref}, work, idempotency_key=idempotency_key)


def current_answer(tx: Tx, candidate_id: int) -> dict | None:
    return tx.one("SELECT * FROM approved_answers WHERE candidate_id = %s ORDER BY id DESC LIMIT 1",
                  (candidate_id,))


def current_answer_of(ctx: Context, candidate_id) -> dict | None:
    with ctx.db.read() as tx:
        return public_row(current_answer(tx, parse_id(candidate_id, "candidate")))


def _record(tx: Tx, actor: Actor, before: dict, after: dict, action: str, *, revised_text=None, reason=None):
    engine.record(tx, "validation_record", "validation_records", {
        "candidate_id": before["id"], "action": action, "actor": actor.name, "from_state": before["state"],
        "to_state": after["state"], "revised_text": revised_text, "reason": reason}, actor,
        event_type=f"validation_{action}")


def decide(ctx: Context, actor: Actor, candidate_id: int, action: str, *, text: str | None = None,
           reason: str | None = None, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """Approve, revise, reject or escalate a claimed candidate, with everything that follows from it:
    publishing to the registry, settling a dispute, creating or moving the work item."""
    if action not in ("approve", "revise", "reject", "escalate"):
        raise InvalidInput(f"unknown decision {action!r}")
    limits.text(text, "an answer", limits.ANSWER)
    limits.text(reason, "a reason", limits.REASON)
    from . import registry, workitems

    def work(tx):
        row = engine.lock(tx, CANDIDATE, candidate_id)
        fields = {"revised_text": text, "reason": reason}
        # Authority, version and state first (403, 409, 422), then whether the claim still holds.
        engine.plan(CANDIDATE, row, action, actor, {k: v for k, v in fields.items() if v is not None},
                    expected_version)
        check_lease(row)
        changes = {"claimed_by": None, "lease_expires_at": None}
        if action == "revise" and text is not None:
            changes["text"] = text.strip()
        decided = engine.apply(tx, CANDIDATE, row, action, actor, fields=fields, changes=changes,
                               expected_version=expected_version, idempotency_key=idempotency_key)
        _record(tx, actor, row, decided, action, revised_text=text if action == "revise" else None, reason=reason)
        result = {"candidate": public_row(decided)}
        disputed = current_answer(tx, row["id"])
        if disputed is not None and disputed["status"] != "DISPUTED":
            disputed = None
        if disputed is None and action in ("approve", "revise"):
            disputed = workitems.origin_disputed_answer(tx, row)  # a generated replacement settles it
        if action in ("approve", "revise"):
            published_text = text.strip() if action == "revise" else row["text"]
            answer = registry.publish(tx, decided, actor, published_text, supersedes=disputed)
            result["answer"] = public_row(answer)
            workitems.generated_candidate_decided(ctx, tx, decided, "validate", actor, reason)
            tx.after_commit(lambda: registry.after_publish(ctx, answer))
        elif action == "reject":
            if disputed is not None:  # rejecting a disputed answer on re-review retires it
                result["retired"] = public_row(registry.retire_in(tx, disputed, actor,
                                                                  f"rejected on re-review: {reason}"))
            workitems.generated_candidate_decided(ctx, tx, decided, "reject", actor, reason)
        else:  # escalate
            item = workitems.escalated(ctx, tx, decided, actor, reason)
            if item is not None:
                result["work_item"] = public_row(item)
        tx.after_commit(lambda: notify_of(ctx, decided, action))
        return result

    return mutate(ctx, actor, f"candidates.{action}",
                  {"id": parse_id(candidate_id, "candidate"), "text": text, "reason": reason,
                   "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


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


def release(ctx: Context, actor: Actor, candidate_id: int, *, expected_version: int | None = None,
            idempotency_key: str | None = None) -> dict:
    """Give a claimed candidate back: PENDING again, at the head of its queue."""
    def work(tx):
        row = engine.lock(tx, CANDIDATE, candidate_id)
        released = _release_row(ctx, tx, row, actor, expected_version, idempotency_key)
        return public_row(released)

    return mutate(ctx, actor, "candidates.release",
                  {"id": parse_id(candidate_id, "candidate"), "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


def _release_row(ctx: Context, tx: Tx, row: dict, actor: Actor, expected_version=None, idempotency_key=None) -> dict:
    released = engine.apply(tx, CANDIDATE, row, "release", actor, expected_version=expected_version,
                            changes={"claimed_by": None, "lease_expires_at": None, "queue_rank": head_rank()},
                            idempotency_key=idempotency_key)
    tx.after_commit(lambda: (queue_index.queue(ctx).push_head(released["horn_type"], released["id"]),
                             notify_of(ctx, released, "release")))
    return released


def release_expired(ctx: Context) -> list[int]:
    """The lease sweeper: claims whose lease ran out go back to the head of their queue."""
    released = []
    with ctx.db.begin() as tx:
        rows = tx.all("SELECT * FROM candidates WHERE state = 'IN_REVIEW' AND lease_expires_at < now() "
                      "ORDER BY lease_expires_at FOR UPDATE SKIP LOCKED LIMIT 500")
        for row in rows:
            _release_row(ctx, tx, row, SYSTEM)
            released.append(row["id"])
    return released


def requeue(ctx: Context, tx: Tx, row: dict, *, head: bool) -> None:
    """After commit, push a candidate that (re-)entered a queued state."""
    q = queue_index.queue(ctx)
    push = q.push_head if head else q.push_tail
    tx.after_commit(lambda: push(row["horn_type"], row["id"]))


def notice_of(row: dict, action: str) -> str:
    return notice("candidate", action=action, id=row["id"], horn_type=row["horn_type"], state=row["state"],
                  actor=row.get("claimed_by"))


def notify_of(ctx: Context, row: dict, action: str) -> None:
    ctx.notify("candidate", action=action, id=row["id"], horn_type=row["horn_type"], state=row["state"],
               actor=row.get("claimed_by"))

