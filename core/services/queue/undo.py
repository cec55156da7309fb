"""Undo: a validator takes back their last decision, within `R2K_UNDO_SECONDS` (default 60) and
while nothing downstream has used it (docs/architecture.md, "Undo and skip").

Undo never erases and never moves a candidate out of a terminal state. Each step is an engine move,
so each is a signed event in the audit chain and sets off its own row of the reactions table
(core/reactions.py):

- approve, revise: the answer the decision published is retired with the reason "undone";
- escalate: the work item it opened (still NEW) is closed by the system, and with it (reactions)
  the escalated candidate;
- reject: the candidate stays REJECTED;

then a new candidate (origin `undo`, `undo_of` the undone one, with its question, its text as it
was before the decision, its sources and Horn type) is created and claimed by the validator with a
fresh lease. A decision is undone at most once (a unique index on `undo_of`).
"""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM, Actor
from ...errors import Conflict, Forbidden, NotFound, R2KError
from ...events import now
from ...machines.answer import ANSWER
from ...machines.candidate import CANDIDATE
from ...machines.work_item import WORK_ITEM
from ..common import mover, moves_since, parse_id
from ..unit_of_work import in_unit_of_work
from ..validation import candidates, overlap
from . import candidate_views, queue_index

if TYPE_CHECKING:
    from ...context import Context

DECISIONS = ("approve", "revise", "reject", "escalate")
REASON = "undone"


def last_decision(tx: Tx, actor: Actor) -> dict | None:
    """The actor's newest decision that has not been undone (its validation record)."""
    return tx.one("SELECT v.* FROM validation_records v WHERE v.actor = %s AND v.action = ANY(%s) "
                  "AND NOT EXISTS (SELECT 1 FROM candidates c WHERE c.undo_of = v.candidate_id) "
                  "ORDER BY v.id DESC LIMIT 1", (actor.name, list(DECISIONS)))


def _instead(action: str, candidate_id: int, answer_id: int | None, item_id: int | None) -> str:
    if action in ("approve", "revise"):
        return (f"dispute it from the registry instead (answer {answer_id})" if answer_id
                else "dispute it from the registry instead")
    if action == "escalate":
        return (f"dispute it from the registry instead once answered, or close work item {item_id} "
                f"from the work items screen" if item_id else "dispute it from the registry instead")
    return (f"dispute it from the registry instead, or add the candidate again "
            f"(r2k candidates add) if candidate {candidate_id} deserves another review")


def _used(tx: Tx, aggregate: str, entity_id: int, actor: Actor) -> str:
    """Who moved what a decision made (its answer, its work item) since it was made, in words: "the
    generation worker took it up (generate, escalate)", "bob moved it (dispute)"."""
    moves = moves_since(tx, aggregate, entity_id, 1)
    if not moves:
        return "it moved on"
    kinds = ", ".join(m["type"] for m in moves)
    first = moves[0]
    if aggregate == "work_item" and first["actor"] == SYSTEM.name and first["type"] == "generate":
        return f"the generation worker took it up ({kinds})"
    return f"{mover(first['actor'], actor)} moved it ({kinds})"


def _text_before(tx: Tx, candidate_id: int, decision_seq: int) -> str | None:
    """The candidate's text as it stood before the decision (a revision wrote over it)."""
    return tx.scalar("SELECT payload->'set'->>'text' FROM events WHERE aggregate_type = 'candidate' "
                     "AND aggregate_id = %s AND seq < %s AND payload->'set' ? 'text' ORDER BY seq DESC LIMIT 1",
                     (str(candidate_id), decision_seq))


def undo(ctx: Context, actor: Actor, candidate_id=None, *, expected_version: int | None = None,
         idempotency_key: str | None = None) -> dict:
    """Undo the actor's last decision (on `candidate_id`, if named: it must be that decision).

    Refusals change nothing: no such candidate or no decision left to undo (404), someone else's
    decision (403), not the last one, past the window, or used downstream (409, saying what to do
    instead). The result: `undone` (the candidate, the action, the `retired` answer or the closed
    `work_item`) and `candidate`, the new one, claimed by the actor.
    """
    named = parse_id(candidate_id, "candidate") if candidate_id is not None else None

    def work(tx):
        last = last_decision(tx, actor)
        review = overlap.last_open_review(tx, actor)  # under overlap, a review may be the newest
        if (review is not None and review["status"] == "open" and (named is None or named == review["candidate_id"])
                and (last is None or review["created_at"] >= last["created_at"])):
            return overlap.undo_review(ctx, tx, actor, review)
        if named is None and last is None:
            raise NotFound(f"nothing to undo: {actor.name} has no decision left to undo")
        target = named if named is not None else last["candidate_id"]
        row = engine.lock(tx, CANDIDATE, target)  # 404 when there is no such candidate
        record = tx.one("SELECT * FROM validation_records WHERE candidate_id = %s AND action = ANY(%s) "
                        "ORDER BY id DESC LIMIT 1", (target, list(DECISIONS)))
        if record is None:
            raise NotFound(f"nothing to undo: candidate {target} has not been decided")
        if record["actor"] != actor.name:
            raise Forbidden(f"{actor.name} may not undo the decision on candidate {target}: {record['actor']} "
                            f"made it, and only the validator who decided may undo it")
        engine.check_version(CANDIDATE, row, expected_version)
        again = tx.scalar("SELECT id FROM candidates WHERE undo_of = %s", (target,))
        if again is not None:
            raise NotFound(f"nothing to undo: your decision on candidate {target} was undone already "
                           f"(candidate {again})")
        if last is None or last["id"] != record["id"]:
            raise Conflict(f"candidate {target} is not your last decision (candidate {last['candidate_id']} is): "
                           f"only the last decision can be undone")
        action = record["action"]
        if record["from_state"] == "ADJUDICATION":
            raise Conflict(f"your adjudication of candidate {target} settled a disagreement between reviewers, "
                           f"which undo cannot reopen: {_instead(action, target, None, None)}")
        answer = registry_answer(tx, target) if action in ("approve", "revise") else None
        item = (tx.one("SELECT * FROM work_items WHERE candidate_id = %s ORDER BY id DESC LIMIT 1 FOR UPDATE",
                       (target,)) if action == "escalate" else None)
        instead = _instead(action, target, answer and answer["id"], item and item["id"])
        age = (now() - record["created_at"]).total_seconds()
        window = ctx.settings.undo_seconds
        if age > window:
            raise Conflict(f"your {action} of candidate {target} was {int(age)} s ago, past the {window:g} s "
                           f"undo window: {instead}")
        # What used the decision, as its event log says (who moved what since): the answer or work
        # item it made first, whose moves moved the candidate on in turn.
        if answer is not None and answer["status"] != "APPROVED":
            raise Conflict(f"answer {answer['id']}, which your {action} published, is {answer['status']} now: "
                           f"{_used(tx, 'answer', answer['id'], actor)}: undo cannot take it back; {instead}")
        if action == "escalate" and item is not None and item["state"] != "NEW":
            raise Conflict(f"work item {item['id']}, which your escalation opened, is {item['state']} now: "
                           f"{_used(tx, 'work_item', item['id'], actor)}: undo cannot take it back; close or "
                           f"rework it from the work items screen")
        chain = tx.all("SELECT seq, type, actor FROM events WHERE aggregate_type = 'candidate' AND aggregate_id = %s "
                       "ORDER BY seq DESC LIMIT 2", (str(target),))
        if not chain or chain[0]["type"] != action:
            raise Conflict(f"candidate {target} moved on since your {action} ({chain[0]['type']} by "
                           f"{mover(chain[0]['actor'], actor)}; it is {row['state']} now): {instead}")
        if len(chain) > 1 and chain[1]["type"] == "re_review":
            raise Conflict(f"your {action} of candidate {target} settled the dispute of its published answer, "
                           f"which cannot be restored: {instead}")
        if row["work_item_id"] is not None:
            raise Conflict(f"candidate {target} was generated for work item {row['work_item_id']}, which your "
                           f"{action} moved on: rework or close the work item from the work items screen instead")

        undone = {"action": action}
        if answer is not None:
            undone["retired"] = public_row(engine.apply(tx, ANSWER, answer, "retire", actor, fields={"reason": REASON},
                                                        changes={"reason": REASON}).row)
        if item is not None:  # its escalated candidate is closed with it (reactions)
            undone["work_item"] = public_row(engine.apply(tx, WORK_ITEM, item, "close", SYSTEM,
                                                          fields={"reason": REASON}, changes={"reason": REASON}).row)
        text = _text_before(tx, target, tx.scalar(
            "SELECT max(seq) FROM events WHERE aggregate_type = 'candidate' AND aggregate_id = %s", (str(target),)))
        made = engine.create(tx, CANDIDATE, actor, {
            "question": row["question"], "text": text if text is not None else row["text"],
            "horn_type": row["horn_type"], "source_refs": row["source_refs"] or [], "origin": "undo",
            "document_id": row["document_id"], "work_item_id": None, "created_by": actor.name,
            "queue_rank": candidates.tail_rank(), "undo_of": target},
            action="extract", fields={"undo_of": target, "undone": action}).row
        claimed = engine.apply(tx, CANDIDATE, made, "claim", actor, changes={
            "claimed_by": actor.name,
            "lease_expires_at": now() + timedelta(seconds=ctx.settings.claim_lease_seconds)}).row
        # Made PENDING and claimed at once: after the commit, out of the list its creation pushed it to.
        tx.after_commit(lambda: queue_index.queue(ctx).remove(claimed["horn_type"], claimed["id"]))
        undone["candidate"] = public_row(engine.read(tx, CANDIDATE, target))
        return {"undone": undone, "candidate": public_row(claimed)}

    return in_unit_of_work(ctx, actor, "candidates.undo", {"id": named, "expected_version": expected_version}, work,
                           idempotency_key=idempotency_key)


def registry_answer(tx: Tx, candidate_id: int) -> dict | None:
    """The answer the candidate's decision published (its newest), locked."""
    row = tx.one("SELECT id FROM approved_answers WHERE candidate_id = %s ORDER BY id DESC LIMIT 1", (candidate_id,))
    return engine.lock(tx, ANSWER, row["id"]) if row is not None else None


def undo_and_show(ctx: Context, actor: Actor, candidate_id=None, *, release: dict | None = None,
                  idempotency_key: str | None = None) -> dict:
    """The review screen's undo: undo the last decision, give back the claim on screen (`release`,
    the candidate as shown, if any: the undone one takes its place) and read the new candidate as a
    reviewer sees it (`shown`). A failed release is returned (`error`), not raised: the undo stands."""
    result = undo(ctx, actor, candidate_id, idempotency_key=idempotency_key)
    released, error = None, None
    if release is not None:
        try:
            released = candidates.release(ctx, actor, release["id"], expected_version=release.get("version"),
                                          idempotency_key=f"{idempotency_key}:release" if idempotency_key else None)
        except R2KError as exc:
            error = exc.as_dict()
    return {**result, "released": released, "error": error,
            "shown": candidate_views.show(ctx, result["candidate"]["id"])}
