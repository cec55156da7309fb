"""The moves of a task: create, the schema-checked transition requests, reviewers, review, resolve,
submit and deprecate; each a unit of work with a mandatory idempotency key."""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import Actor, jsonable, limits
from ...engine import Event
from ...errors import Conflict, Forbidden, InvalidInput, ValidationStateError
from ...events import now
from ...machines.task import TASK, approvers, reviewer_names
from ...tasks_schema import check_request
from ..common import parse_id
from ..unit_of_work import in_unit_of_work
from .analysis import support_in
from .fold import AGGREGATE, BODY, TABLE, TITLE, at_text, fold
from .sources import not_current, render
from .writing import append, row_for_update, snapshot_if_due, write

if TYPE_CHECKING:
    from ...context import Context


def _body(body: str | None) -> str:
    body = body if body is not None else ""
    limits.text(body, "an article body", BODY)
    return body


def create(ctx: Context, actor: Actor, title: str, body: str = "", *, supersedes: int | None = None,
           version: str | None = None, idempotency_key: str | None = None) -> dict:
    """A DRAFT article (Markdown); with `supersedes`, a new version of a PUBLISHED one, which its
    publication deprecates."""
    title = (limits.text(title, "a title", TITLE) or "").strip()
    if not title:
        raise InvalidInput("an article needs a title (--title)")
    body = _body(body)
    if version is not None:
        limits.text(version, "a version", 100)
    old_id = parse_id(supersedes, "durable task") if supersedes is not None else None

    def work(tx: Tx) -> dict:
        if old_id is not None:
            old = engine.read(tx, TASK, old_id)
            if old["state"] != "PUBLISHED":
                raise ValidationStateError(AGGREGATE, old_id, old["state"], "supersede",
                                           "only a PUBLISHED article has new versions")
        data = {"title": title, "body": body, "author": actor.name, "supersedes_id": old_id, "version": version}
        move = TASK.creation("create")
        engine.check_who(TASK, move, actor, {"created_by": actor.name})
        at = now()
        values = fold({}, "TaskCreated", data, actor.name, at_text(at))
        row = tx.insert(TABLE, values)
        append(tx, actor, row["id"], "TaskCreated", {"from": None, "to": "DRAFT", "data": data,
                                                      "set": jsonable(values)}, idempotency_key, at)
        snapshot_if_due(tx, row)
        tx.react(Event(AGGREGATE, "create", row["id"], actor, {"title": title}, 1, None, "DRAFT", row))
        return public_row(row)

    return in_unit_of_work(ctx, actor, "tasks.create", {"title": title, "body": body, "supersedes": old_id,
                                                        "version": version}, work, idempotency_key=idempotency_key)


def _move_to(row: dict, target: str) -> str:
    """The action of the move from the row's state to `target` (not assign, not a first approval)."""
    for m in TASK.moves:
        if row["state"] in m.sources and m.to == target and m.action not in ("assign", "note_approval"):
            return m.action
    nexts = [s for s in TASK.next_states(row["state"]) if s != row["state"]]
    raise ValidationStateError(AGGREGATE, row["id"], row["state"], f"move to {target}",
                               f"from {row['state']} it can move to {', '.join(nexts)}" if nexts
                               else f"{row['state']} is terminal and immutable")


def _flagged(items: list) -> list[dict]:
    return [i if isinstance(i, dict) else {"claim": str(i), "kind": "unsupported"} for i in items]


def _analysis_data(meta: dict, target: str, threshold: float) -> dict:
    return {"ai_confidence_score": meta.get("ai_confidence_score"), "flagged_claims": _flagged(meta.get("flagged_claims") or []),
            "supported": [], "claims": 0, "threshold": threshold, "outcome": target, "judged_by": "the request"}


def _transition(ctx: Context, tx: Tx, actor: Actor, task_id: int, request: dict) -> dict:
    row = row_for_update(tx, task_id)
    meta = request.get("metadata") or {}
    target = request["new_state"]
    expected = request.get("expected_version")
    if meta.get("reviewer_ids"):
        assigned = _assign_in(tx, actor, row, meta["reviewer_ids"], request["idempotency_key"], expected)
        expected = None if assigned is row else assigned["version"]
        row = assigned
        if target == row["state"]:
            return public_row(row)
    action = _move_to(row, target)
    threshold = ctx.settings.task_confidence_threshold
    key = request["idempotency_key"]
    if action in ("pass_analysis", "flag_analysis"):
        data = _analysis_data(meta, target, threshold)
        moved = write(tx, actor, row, action, data, fields={**data, "threshold": threshold}, key=key,
                       expected_version=expected)
    elif action == "approve":
        moved = _review_in(tx, actor, row, "approve", meta.get("reason"), key, expected, must_reach=True)
    elif action == "reject":
        moved = _review_in(tx, actor, row, "reject", meta.get("reason"), key, expected)
    elif action == "resolve":
        moved = _resolve_in(tx, actor, row, meta.get("note"), meta.get("body"), meta.get("version"), key, expected)
    elif action == "deprecate":
        moved = write(tx, actor, row, "deprecate", {"reason": meta.get("reason"), "superseded_by": None},
                       fields={"reason": meta.get("reason")}, key=key, expected_version=expected)
    elif action == "submit":
        moved = write(tx, actor, row, "submit", {"note": meta.get("note")}, key=key, expected_version=expected)
    else:  # publish: the system's, and it says so
        moved = write(tx, actor, row, action, {"rendered": render(row), "sources": row["sources"] or []}, key=key,
                       expected_version=expected)
    return public_row(moved)


def transition(ctx: Context, actor: Actor, task_id, request) -> dict:
    """`tasks transition`: the request ({new_state, metadata, idempotency_key[, expected_version]}) is
    checked against transition_request.json first (400 naming the field); the key is mandatory; a
    repeat within 24 h returns the first result, another request under the key is a 409; a stale
    expected version is a 409."""
    check_request(request)
    tid = parse_id(task_id, "durable task")
    args = {"id": tid, **{k: v for k, v in request.items() if k != "idempotency_key"}}
    return in_unit_of_work(ctx, actor, "tasks.transition", args, lambda tx: _transition(ctx, tx, actor, tid, request),
                           idempotency_key=request["idempotency_key"])


def _key(idempotency_key: str | None) -> str:
    """The request's key; a command given none is a request of its own (a fresh key)."""
    return idempotency_key if idempotency_key is not None else f"auto-{uuid.uuid4()}"


def _run(ctx: Context, actor: Actor, op: str, task_id, args: dict, work, idempotency_key: str | None,
         expected_version: int | None) -> dict:
    tid = parse_id(task_id, "durable task")
    return in_unit_of_work(ctx, actor, f"tasks.{op}", {"id": tid, **args, "expected_version": expected_version},
                           lambda tx: work(tx, tid), idempotency_key=_key(idempotency_key))


def _reviewers(names: list[str]) -> list[str]:
    """The reviewers a request names, each stripped and named once: a reviewer listed twice is a 400
    (a typo for someone else, most likely), never quietly one."""
    cleaned: list[str] = []
    for name in names:
        name = (limits.text(name, "a reviewer", limits.QUERY) or "").strip()
        if not name:
            raise InvalidInput("a reviewer id is a user's name, got an empty one")
        if name in cleaned:
            raise InvalidInput(f"reviewer {name!r} is listed twice: each reviewer once")
        cleaned.append(name)
    return cleaned


def _assign_in(tx: Tx, actor: Actor, row: dict, names: list[str], key: str | None,
               expected_version: int | None) -> dict:
    engine.plan(TASK, row, "assign", actor, {"reviewer_ids": names}, expected_version)
    cleaned = _reviewers(names)
    for name in cleaned:
        if name == row["created_by"]:
            raise InvalidInput(f"{name} wrote task {row['id']}: an author never reviews their own article")
        if not tx.one("SELECT 1 FROM users WHERE name = %s", (name,)):
            raise InvalidInput(f"reviewer {name!r} is not a known user")
    new = [n for n in cleaned if n not in reviewer_names(row)]
    if not new:
        return row
    return write(tx, actor, row, "assign", {"reviewer_ids": new}, key=key, expected_version=expected_version)


def assign(ctx: Context, actor: Actor, task_id, reviewers: list[str], *, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """`tasks assign ID --reviewers a,b`: domain experts join the task's reviewers (the author never)."""
    names = [r for r in (reviewers or []) if r is not None]
    if not [n for n in names if str(n).strip()]:
        raise InvalidInput("assign needs at least one reviewer (--reviewers a,b)")
    _reviewers(names)  # before the transaction: a name twice changes nothing

    def work(tx, tid):
        row = row_for_update(tx, tid)
        return public_row(_assign_in(tx, actor, row, names, _key(idempotency_key), expected_version))

    return _run(ctx, actor, "assign", task_id, {"reviewers": names}, work, idempotency_key, expected_version)


def _review_in(tx: Tx, actor: Actor, row: dict, decision: str, reason: str | None, key: str | None,
               expected_version: int | None, *, must_reach: bool = False) -> dict:
    engine.check_standing(TASK, "approve", actor, row)
    if actor.name == row["created_by"]:
        raise Forbidden(f"{actor.name} wrote task {row['id']}: an author never reviews their own article")
    if actor.name not in reviewer_names(row):
        assigned = ", ".join(sorted(reviewer_names(row))) or "none yet"
        raise Forbidden(f"{actor.name} is not assigned to review task {row['id']} (reviewers: {assigned})")
    engine.check_version(TASK, row, expected_version)
    if decision == "reject":
        return write(tx, actor, row, "reject", {"reviewer": actor.name, "reason": reason},
                      fields={"reason": reason}, key=key)
    if (again := approved_already(actor, row)) is not None:
        raise again
    if flags := not_current(tx, row["sources"] or [], lock=True):
        # Published, it would cite answers the registry no longer stands by: the approval is the
        # registry check's rejection instead, naming them (docs/architecture.md, "Durable tasks").
        whys = "; ".join(sorted({f["why"] for f in flags}))
        reason = limits.clip(f"not approved: it cites answers no longer current ({whys}): resolve it against the "
                             f"registry as it is now", 2000)
        return write(tx, actor, row, "reject", {"reviewer": actor.name, "reason": reason, "flagged_claims": flags},
                      fields={"reason": reason}, key=key)
    count = len(approvers(row) | {actor.name})
    action = "approve" if count >= 2 or must_reach else "note_approval"
    return write(tx, actor, row, action, {"reviewer": actor.name, "reason": reason, "approvals": count},
                  fields={"reviewer": actor.name, "reason": reason}, key=key)


def approved_already(actor: Actor, row: dict) -> Conflict | None:
    """The 409 of an approval the reviewer has made already (in this round of review), said as theirs:
    the articles screen hides its key and says this when it is pressed."""
    if row["state"] == "PEER_REVIEW" and actor.name in approvers(row):
        return Conflict(f"you approved task {row['id']} already: a reviewer's approval counts once "
                        f"(a resolution clears the approvals)")
    return None


def review(ctx: Context, actor: Actor, task_id, decision: str, reason: str | None = None, *,
           expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """`tasks review ID --approve|--reject --reason R`: an assigned reviewer's decision, with who and
    when. The second distinct approval makes it APPROVED (and so PUBLISHED); a rejection sends it to
    RESOLUTION_REQUIRED."""
    if decision not in ("approve", "reject"):
        raise InvalidInput(f"a review is approve or reject, got {decision!r}")
    if reason is not None:
        limits.text(reason, "a reason", limits.REASON)
        reason = reason.strip() or None
    if decision == "reject" and not reason:
        raise InvalidInput("a rejection needs a reason (--reason)")

    def work(tx, tid):
        row = row_for_update(tx, tid)
        return public_row(_review_in(tx, actor, row, decision, reason, _key(idempotency_key), expected_version))

    return _run(ctx, actor, "review", task_id, {"decision": decision, "reason": reason}, work, idempotency_key,
                expected_version)


def _resolve_in(tx: Tx, actor: Actor, row: dict, note: str | None, body: str | None, version: str | None,
                key: str | None, expected_version: int | None) -> dict:
    # The resolved article cites the answers its claims rest on in the registry as it is now (the
    # rules' check, no LLM under the row's lock): the sources it was analysed with may have moved on.
    supported = support_in(tx, body if body is not None else row["body"] or "")["supported"]
    data = {"note": (note or "").strip() or None, "body": body, "version": version, "supported": supported}
    return write(tx, actor, row, "resolve", data, fields={"note": data["note"]}, key=key,
                  expected_version=expected_version)


def resolve(ctx: Context, actor: Actor, task_id, note: str, body: str | None = None, *, version: str | None = None,
            expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """`tasks resolve ID --body-file F --note N`: back to PEER_REVIEW, earlier approvals cleared."""
    limits.text(note, "a note", limits.REASON)
    if body is not None:
        _body(body)

    def work(tx, tid):
        row = row_for_update(tx, tid)
        return public_row(_resolve_in(tx, actor, row, note, body, version, _key(idempotency_key), expected_version))

    return _run(ctx, actor, "resolve", task_id, {"note": note, "body": body, "version": version}, work,
                idempotency_key, expected_version)


def submit(ctx: Context, actor: Actor, task_id, *, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """DRAFT → AI_ANALYSIS; the analysis job is queued after the commit (core/reactions.py)."""
    def work(tx, tid):
        row = row_for_update(tx, tid)
        return public_row(write(tx, actor, row, "submit", {"note": None}, key=_key(idempotency_key),
                                 expected_version=expected_version))

    return _run(ctx, actor, "submit", task_id, {}, work, idempotency_key, expected_version)


def deprecate(ctx: Context, actor: Actor, task_id, reason: str, *, expected_version: int | None = None,
              idempotency_key: str | None = None) -> dict:
    """PUBLISHED → DEPRECATED by the editorial board's decision; terminal and immutable."""
    limits.text(reason, "a reason", limits.REASON)
    reason = (reason or "").strip() or None

    def work(tx, tid):
        row = row_for_update(tx, tid)
        return public_row(write(tx, actor, row, "deprecate", {"reason": reason, "superseded_by": None},
                                 fields={"reason": reason}, key=_key(idempotency_key),
                                 expected_version=expected_version))

    return _run(ctx, actor, "deprecate", task_id, {"reason": reason}, work, idempotency_key, expected_version)
