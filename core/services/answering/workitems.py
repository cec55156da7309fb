"""Work items: created by escalation or by hand, moved by generation and by the validator's decision
on the generated candidate, reworked or closed by people. What follows their moves (the generation
job, the escalated candidate closed with its item, live notices) is in the reactions table
(core/reactions.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM, Actor, limits, parse_horn_type
from ...engine import Event
from ...errors import Forbidden, InvalidInput, R2KError, ValidationStateError
from ...machines import WHO
from ...machines.work_item import WORK_ITEM
from .. import jobs
from ..common import Allowed, event_history, fetch, one_state, parse_id
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...context import Context

# What the screens ask of this workflow's moves (they never hold its machine).
allowed = Allowed(WORK_ITEM)

STATES = sorted(WORK_ITEM.states)


def generation_job_id(work_item_id: int) -> str:
    return f"generate-{work_item_id}"


def enqueue_generation(ctx: Context, work_item_id: int, *, at_front: bool = False) -> None:
    """Queue `generate_answer_task` on RQ (after commit: the job reads what was committed)."""
    jobs.enqueue(ctx, "generation", "generate_answer_task", work_item_id,
                 job_id=generation_job_id(work_item_id), at_front=at_front)


def new_item(tx: Tx, actor: Actor, question: str, *, candidate_id: int | None = None, horn_type: str | None = None,
             created_by: str | None = None, escalation_reason: str | None = None,
             idempotency_key: str | None = None) -> dict:
    """A NEW work item; its generation job is queued after the commit (reactions). `escalation_reason`:
    what the validator said escalating the candidate it is opened for (shown, and sent to the LLM)."""
    return engine.create(tx, WORK_ITEM, actor, {
        "question": question.strip(), "candidate_id": candidate_id, "horn_type": horn_type,
        "created_by": created_by or actor.name, "escalation_reason": escalation_reason},
        action="create", idempotency_key=idempotency_key).row


def create(ctx: Context, actor: Actor, question: str, *, horn_type: str | None = None,
           idempotency_key: str | None = None) -> dict:
    """A work item by hand (`workitems create`): a question that needs a generated answer."""
    if not (limits.text(question, "a question", limits.QUESTION) or "").strip():
        raise InvalidInput("a work item needs a question (--question)")
    horn = parse_horn_type(horn_type) if horn_type else None
    return in_unit_of_work(ctx, actor, "workitems.create", {"question": question, "horn_type": horn},
                           lambda tx: public_row(new_item(tx, actor, question, horn_type=horn,
                                                          idempotency_key=idempotency_key)),
                           idempotency_key=idempotency_key)


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
        return public_row(engine.apply(tx, WORK_ITEM, item, "rework", actor, fields={"reason": reason},
                                       changes={"reason": reason, "attempts": item["attempts"] + 1},
                                       expected_version=expected_version, idempotency_key=idempotency_key).row)

    return in_unit_of_work(ctx, actor, "workitems.rework", {"id": parse_id(work_item_id, "work item"), "reason": reason,
                                                            "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def close(ctx: Context, actor: Actor, work_item_id, *, reason: str | None = None,
          expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    limits.text(reason, "a reason", limits.REASON)

    def work(tx):
        return public_row(engine.apply(tx, WORK_ITEM, parse_id(work_item_id, "work item"), "close", actor,
                                       fields={"reason": reason}, changes={"reason": reason} if reason else None,
                                       expected_version=expected_version, idempotency_key=idempotency_key).row)

    return in_unit_of_work(ctx, actor, "workitems.close", {"id": parse_id(work_item_id, "work item"), "reason": reason,
                                                           "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- reactions (core/reactions.py)

def open_for_escalation(tx: Tx, event: Event) -> dict:
    """A validator escalated a candidate. A generated candidate escalates its own work item; any other
    opens a new one (NEW) for its question, by the system in the validator's name (the escalation is
    theirs, authorised and recorded by the engine)."""
    candidate = event.row
    reason = event.fields.get("reason")  # the validator's: kept on the item as its escalation reason
    if candidate["work_item_id"] is not None:
        item = engine.lock(tx, WORK_ITEM, candidate["work_item_id"])
        if item["state"] == "READY_FOR_REVIEW":
            moved = engine.apply(tx, WORK_ITEM, item, "escalate", SYSTEM, fields={"reason": reason},
                                 changes={"reason": reason, "escalation_reason": reason}).row
            _mark_generated(tx, item["id"], "ESCALATED")
            return {"work_item": moved}
    horn = candidate["horn_type"] if candidate["horn_type"] != "OPEN_ISSUE" else None
    return {"work_item": new_item(tx, SYSTEM, candidate["question"], candidate_id=candidate["id"], horn_type=horn,
                                  created_by=event.actor.name, escalation_reason=reason)}


def settle_generated(tx: Tx, event: Event) -> None:
    """A validator decided a generated candidate: approved or revised, its work item is validated and
    closed (closing the escalated candidate it answers); rejected, it needs rework."""
    candidate = event.row
    if candidate["work_item_id"] is None:
        return
    item = engine.lock(tx, WORK_ITEM, candidate["work_item_id"])
    if item["state"] != "READY_FOR_REVIEW":
        return  # the item was closed meanwhile; the decision on the candidate still stands
    if event.action in ("approve", "revise"):
        item = engine.apply(tx, WORK_ITEM, item, "validate", SYSTEM).row
        engine.apply(tx, WORK_ITEM, item, "close", SYSTEM)
        _mark_generated(tx, item["id"], "VALIDATED")
    else:
        reason = event.fields.get("reason")
        engine.apply(tx, WORK_ITEM, item, "reject", SYSTEM, fields={"reason": reason}, changes={"reason": reason})
        _mark_generated(tx, item["id"], "REJECTED")


def open_for_resolved_grey(tx: Tx, event: Event) -> dict | None:
    """The grey queue's automation resolved an entry (enough sources now): a work item generates
    the answer, and the entry names it."""
    question = event.fields.get("question")
    if not question:
        return None  # resolved by a specialist: nothing to generate
    item = new_item(tx, SYSTEM, question)
    engine.update(tx, "grey_entry", "grey_entries", event.row, {"work_item_id": item["id"]}, SYSTEM,
                  event_type="grey_linked")
    return {"work_item": item}


def close_for_resubmitted(tx: Tx, event: Event) -> dict | None:
    """A specialist resubmitted an escalated candidate with reworked text: the rework answers the work
    item its escalation opened (or that generated it), which is closed, by the system, with whatever
    escalated candidate it still holds (docs/architecture.md, "Candidate path"). An item whose
    generation is under way or whose generated answer awaits review cannot close (the work item
    machine closes only from NEW, VALIDATED, NEEDS_REWORK or ESCALATED): then the resubmission is
    refused, as a 422 that says why, and nothing changes."""
    candidate = event.row
    if candidate["work_item_id"] is not None:
        item_id = candidate["work_item_id"]
    else:
        opened = tx.one("SELECT id FROM work_items WHERE candidate_id = %s ORDER BY id DESC LIMIT 1",
                        (candidate["id"],))
        if opened is None:
            return None
        item_id = opened["id"]
    item = engine.lock(tx, WORK_ITEM, item_id)
    if item["state"] == "CLOSED":
        return None
    if not WORK_ITEM.is_legal("close", item["state"]):
        waits = ("its generated answer awaits review: decide that candidate instead"
                 if item["state"] == "READY_FOR_REVIEW" else "an answer is being generated for it")
        raise ValidationStateError("candidate", candidate["id"], "ESCALATED", "resubmit",
                                   f"its work item {item['id']} is {item['state']} and cannot be closed: {waits}")
    reason = f"answered by resubmitted candidate {candidate['id']}"
    return {"work_item": engine.apply(tx, WORK_ITEM, item, "close", SYSTEM, fields={"reason": reason}).row}


def generation_job(ctx: Context, event: Event) -> None:
    """After commit: the work item's generation job (created, or sent back for rework)."""
    enqueue_generation(ctx, event.aggregate_id)


def generate_refusal(actor: Actor, item: dict):
    """Why `actor` may not (re)run generation for `item` as it reads now (the error `generate`
    raises, not raised), or None: the work items screen offers the key only when this is None."""
    who = WHO.HORN_AUTHORITY_OR_SPECIALIST
    if not who(actor, item):  # authority before state
        return Forbidden(f"{actor.name} ({actor.role}) may not generate for work item {item['id']}: "
                         f"only {who.description} may")
    if item["state"] not in ("NEW", "GENERATING"):  # a GENERATING item's job may have died: run it again
        try:
            engine.plan(WORK_ITEM, item, "generate", SYSTEM)  # the 422 that names the state
        except R2KError as exc:
            return exc
    return None


def generate(ctx: Context, actor: Actor, work_item_id) -> dict:
    """Ask the workers to (re)run generation for a NEW item (`workitems generate`)."""
    item = get(ctx, work_item_id)
    if (why := generate_refusal(actor, item)) is not None:
        raise why
    enqueue_generation(ctx, item["id"])
    return {**item, "enqueued": True}


def get(ctx: Context, work_item_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(fetch(tx, "work_items", "work item", work_item_id))


def show(ctx: Context, work_item_id) -> dict:
    """The item with its generated candidates (prompt, sources, model, text) and its history;
    `generated_candidate`: the candidate its latest generation made ({id, state}), None before one."""
    with ctx.db.read() as tx:
        row = fetch(tx, "work_items", "work item", work_item_id)
        generated = tx.all("SELECT * FROM generated_candidates WHERE work_item_id = %s ORDER BY attempt", (row["id"],))
        latest = next((g["candidate_id"] for g in reversed(generated) if g["candidate_id"] is not None), None)
        candidate = tx.one("SELECT id, state FROM candidates WHERE id = %s", (latest,)) if latest else None
        history = event_history(tx, "work_item", row["id"])
    return {**public_row(row), "generated_candidate": public_row(candidate),
            "generated": [public_row(g) for g in generated], "history": history}


def list_items(ctx: Context, state: str | None = None, *, limit: int = 200, offset: int = 0) -> list[dict]:
    """Work items, newest first: each with its `reason` (the last move's: a rework's, an escalation's
    `no_content`) and its `escalation_reason` (the validator's words, when an escalation opened it)."""
    params: list = []
    where = ""
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    if state:
        where = "WHERE state = %s"
        params.append(one_state(state, STATES, "work item state"))
    with ctx.db.read() as tx:
        rows = tx.all(f"SELECT id, question, state, reason, escalation_reason, candidate_id, horn_type, attempts, "
                      f"source_count, "
                      f"created_at, updated_at, version FROM work_items {where} ORDER BY id DESC LIMIT %s OFFSET %s",
                      [*params, limit, offset])
    return [public_row(r) for r in rows]

