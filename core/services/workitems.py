"""Work items (DESIGN §5.3): created by escalation or by hand, moved by generation and by the
validator's decision on the generated candidate, reworked or closed by people.
"""
from __future__ import annotations

from .. import engine, limits
from ..adapters.postgres import Tx, public_row
from ..context import Context
from ..domain import SYSTEM, Actor, parse_horn_type
from ..errors import Forbidden, InvalidInput
from ..machines import WHO
from ..machines.candidate import CANDIDATE
from ..machines.work_item import WORK_ITEM
from . import event_history, fetch, mutate, parse_id

STATES = sorted(WORK_ITEM.states)


def generation_job_id(work_item_id: int) -> str:
    return f"generate-{work_item_id}"


def enqueue_generation(ctx: Context, work_item_id: int) -> None:
    """Queue `generate_answer_task` on RQ (after commit: the job reads what was committed)."""
    from . import jobs

    jobs.enqueue(ctx, "generation", "generate_answer_task", work_item_id,
                 job_id=generation_job_id(work_item_id))


def _new_item(ctx: Context, tx: Tx, actor: Actor, question: str, *, candidate: dict | None = None,
              horn_type: str | None = None, created_by: str | None = None,
              idempotency_key: str | None = None) -> dict:
    item = engine.create(tx, WORK_ITEM, actor, {
        "question": question.strip(), "candidate_id": candidate["id"] if candidate else None,
        "horn_type": horn_type, "created_by": created_by or actor.name}, action="create",
        idempotency_key=idempotency_key)
    tx.after_commit(lambda: (enqueue_generation(ctx, item["id"]),
                             ctx.notify("work_item", action="create", id=item["id"], state=item["state"])))
    return item


def create(ctx: Context, actor: Actor, question: str, *, horn_type: str | None = None,
           idempotency_key: str | None = None) -> dict:
    """A work item by hand (`workitems create`): a question that needs a generated answer."""
    if not (limits.text(question, "a question", limits.QUESTION) or "").strip():
        raise InvalidInput("a work item needs a question (--question)")
    horn = parse_horn_type(horn_type) if horn_type else None
    return mutate(ctx, actor, "workitems.create", {"question": question, "horn_type": horn},
                  lambda tx: public_row(_new_item(ctx, tx, actor, question, horn_type=horn,
                                                  idempotency_key=idempotency_key)),
                  idempotency_key=idempotency_key)


def escalated(ctx: Context, tx: Tx, candidate: dict, actor: Actor, reason: str) -> dict | None:
    """A validator escalated `candidate`. A generated candidate escalates its own work item; any
    other creates a new work item (NEW) for its question."""
    if candidate["work_item_id"] is not None:
        item = engine.lock(tx, WORK_ITEM, candidate["work_item_id"])
        if item["state"] == "READY_FOR_REVIEW":
            moved = engine.apply(tx, WORK_ITEM, item, "escalate", SYSTEM, fields={"reason": reason},
                                 changes={"reason": reason})
            _mark_generated(tx, item["id"], "ESCALATED")
            tx.after_commit(lambda: ctx.notify("work_item", action="escalate", id=moved["id"], state=moved["state"]))
            return moved
    horn = candidate["horn_type"] if candidate["horn_type"] != "OPEN_ISSUE" else None
    # The item follows from the validator's escalation (which the engine authorised and recorded as
    # theirs), so the system opens it, in their name.
    return _new_item(ctx, tx, SYSTEM, candidate["question"], candidate=candidate, horn_type=horn,
                     created_by=actor.name)


def origin_disputed_answer(tx: Tx, candidate: dict) -> dict | None:
    """For a generated candidate: the DISPUTED answer its work item was opened to replace, if any."""
    if candidate["work_item_id"] is None:
        return None
    return tx.one("SELECT a.* FROM work_items w JOIN approved_answers a ON a.candidate_id = w.candidate_id "
                  "WHERE w.id = %s AND a.status = 'DISPUTED' ORDER BY a.id DESC LIMIT 1 FOR UPDATE OF a",
                  (candidate["work_item_id"],))


def generated_candidate_decided(ctx: Context, tx: Tx, candidate: dict, outcome: str, actor: Actor,
                                reason: str | None) -> None:
    """A validator approved/revised (`validate`) or rejected (`reject`) a generated candidate:
    move its work item, and on success close the escalated candidate it answers."""
    if candidate["work_item_id"] is None:
        return
    item = engine.lock(tx, WORK_ITEM, candidate["work_item_id"])
    if item["state"] != "READY_FOR_REVIEW":
        return  # the item was closed meanwhile; the decision on the candidate still stands
    if outcome == "validate":
        item = engine.apply(tx, WORK_ITEM, item, "validate", SYSTEM)
        item = engine.apply(tx, WORK_ITEM, item, "close", SYSTEM)
        _mark_generated(tx, item["id"], "VALIDATED")
        _close_origin(tx, item)
    else:
        item = engine.apply(tx, WORK_ITEM, item, "reject", SYSTEM, fields={"reason": reason},
                            changes={"reason": reason})
        _mark_generated(tx, item["id"], "REJECTED")
    tx.after_commit(lambda: ctx.notify("work_item", action=outcome, id=item["id"], state=item["state"]))


def _close_origin(tx: Tx, item: dict) -> None:
    if item["candidate_id"] is None:
        return
    origin = engine.lock(tx, CANDIDATE, item["candidate_id"])
    if origin["state"] == "ESCALATED":
        engine.apply(tx, CANDIDATE, origin, "close", SYSTEM)


def _mark_generated(tx: Tx, work_item_id: int, state: str) -> None:
    row = tx.one("SELECT * FROM generated_candidates WHERE work_item_id = %s ORDER BY attempt DESC LIMIT 1 "
                 "FOR UPDATE", (work_item_id,))
    if row is not None and row["state"] != state:
        engine.update(tx, "generated_candidate", "generated_candidates", row, {"state": state}, SYSTEM,
                      event_type=f"generated_{state.lower()}")


def rework(ctx: Context, actor: Actor, work_item_id, reason: str, *, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """NEEDS_REWORK → GENERATING: regenerate with the reason in the prompt."""
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        item = engine.lock(tx, WORK_ITEM, parse_id(work_item_id, "work item"))
        # A new attempt: its own GeneratedCandidate, the reason in its prompt.
        item = engine.apply(tx, WORK_ITEM, item, "rework", actor, fields={"reason": reason},
                            changes={"reason": reason, "attempts": item["attempts"] + 1},
                            expected_version=expected_version, idempotency_key=idempotency_key)
        tx.after_commit(lambda: (enqueue_generation(ctx, item["id"]),
                                 ctx.notify("work_item", action="rework", id=item["id"], state=item["state"])))
        return public_row(item)

    return mutate(ctx, actor, "workitems.rework", {"id": parse_id(work_item_id, "work item"), "reason": reason,
                                                   "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


def close(ctx: Context, actor: Actor, work_item_id, *, reason: str | None = None,
          expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        item = engine.apply(tx, WORK_ITEM, parse_id(work_item_id, "work item"), "close", actor, fields={"reason": reason},
                            changes={"reason": reason} if reason else None, expected_version=expected_version,
                            idempotency_key=idempotency_key)
        _close_origin(tx, item)
        tx.after_commit(lambda: ctx.notify("work_item", action="close", id=item["id"], state=item["state"]))
        return public_row(item)

    return mutate(ctx, actor, "workitems.close", {"id": parse_id(work_item_id, "work item"), "reason": reason,
                                                  "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


def generate(ctx: Context, actor: Actor, work_item_id) -> dict:
    """Ask the workers to (re)run generation for a NEW item (`workitems generate`)."""
    item = get(ctx, work_item_id)
    who = WHO.HORN_AUTHORITY_OR_SPECIALIST
    if not who(actor, item):  # authority before state
        raise Forbidden(f"{actor.name} ({actor.role}) may not generate for work item {item['id']}: "
                        f"only {who.description} may")
    if item["state"] not in ("NEW", "GENERATING"):
        engine.plan(WORK_ITEM, item, "generate", SYSTEM)  # raises the 422 that names the state
    enqueue_generation(ctx, item["id"])
    return {**item, "enqueued": True}


def get(ctx: Context, work_item_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(fetch(tx, "work_items", "work item", work_item_id))


def show(ctx: Context, work_item_id) -> dict:
    """The item with its generated candidates (prompt, sources, model, text) and its history."""
    with ctx.db.read() as tx:
        row = fetch(tx, "work_items", "work item", work_item_id)
        generated = tx.all("SELECT * FROM generated_candidates WHERE work_item_id = %s ORDER BY attempt", (row["id"],))
        history = event_history(tx, "work_item", row["id"])
    return {**public_row(row), "generated": [public_row(g) for g in generated], "history": history}


def list_items(ctx: Context, state: str | None = None, *, limit: int = 200, offset: int = 0) -> list[dict]:
    params: list = []
    where = ""
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    if state:
        state = state.strip().upper()
        if state not in WORK_ITEM.states:
            raise InvalidInput(f"unknown work item state {state!r}: expected one of {', '.join(STATES)}")
        where = "WHERE state = %s"
        params.append(state)
    with ctx.db.read() as tx:
        rows = tx.all(f"SELECT id, question, state, reason, candidate_id, horn_type, attempts, source_count, "
                      f"created_at, updated_at, version FROM work_items {where} ORDER BY id DESC LIMIT %s OFFSET %s",
                      [*params, limit, offset])
    return [public_row(r) for r in rows]

