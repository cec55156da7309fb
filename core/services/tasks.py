"""Durable article tasks (docs/architecture.md, "Durable tasks"): event-sourced review of Markdown
articles, with schema-checked transition requests, mandatory idempotency keys, two real reviewers, an
AI analysis gate on RQ, automatic publication, deprecation, snapshots and replay.

A task is its events. Each move of the table in core/machines/task.py appends one typed event
(`TaskCreated`, `SubmittedForAnalysis`, `AnalysisCompleted`, `ReviewerAssigned`, `ReviewApproved`,
`ReviewRejected`, `ResolutionSubmitted`, `Published`, `Deprecated`) whose `data` is all the fold
(`fold`) reads: the `durable_tasks` row is what folding them gives, written in the same transaction
as the event (and its `set`, the columns the fold changed, is what the generic `replay` compares).

Before an event is committed, its payload is checked against its type's JSON Schema
(core/schemas/event_*.json) and its hash and Ed25519 signature are recomputed and verified. The
engine's checks (core/engine.py `plan`: authority, version, state, who, fields, guard) decide every
move; the chain, hashing and signing are core/events.py's. What follows a move (publication on
APPROVED, the analysis job on submit, the superseded version's deprecation on publish) is a row of
core/reactions.py.

Every N events of a task (R2K_TASK_SNAPSHOT_EVENTS) a snapshot of its projection is kept; `rebuild`
folds the events after the newest snapshot onto it, which gives what a fold from the first event gives.
"""
from __future__ import annotations

import re
import uuid
from datetime import timezone
from typing import TYPE_CHECKING, Callable

from psycopg.types.json import Jsonb

from .. import engine
from ..adapters.postgres import Tx, public_row
from ..domain import SYSTEM, Actor, jsonable, limits
from ..engine import Event
from ..errors import Conflict, Forbidden, InvalidInput, NotFound, ValidationStateError
from ..events import EVENT_COLUMNS, event_hash, event_values, hashed_fields, now, verify_signature
from ..machines.task import EVENT_OF, TASK, approvers, reviewer_names
from ..tasks_schema import check_event, check_request
from . import jobs, retrieval
from .common import mutate, one_state, parse_id

if TYPE_CHECKING:
    from ..context import Context

TABLE = "durable_tasks"
AGGREGATE = TASK.name
STATES = ("DRAFT", "AI_ANALYSIS", "PEER_REVIEW", "RESOLUTION_REQUIRED", "APPROVED", "PUBLISHED", "DEPRECATED")
TITLE = 500
BODY = 100_000
_INSERT_EVENT = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES ({', '.join(['%s'] * 12)})"

# A test's hook between writing a transition's events and its row (tests/test_tasks.py kills the
# process there): the transaction is open, so nothing of it may survive.
between_event_and_row: Callable[[], None] | None = None


# ----------------------------------------------------------------------------- the fold

def fold(state: dict, type_: str, data: dict, actor: str, at: str) -> dict:
    """The columns one typed event changes in a task's projection `state` (which it does not modify).
    The whole projection is the fold of a task's events from `{}`; `version` counts them."""
    version = (state.get("version") or 0) + 1
    if type_ == "TaskCreated":
        return {"title": data["title"], "body": data["body"], "state": "DRAFT", "created_by": data["author"],
                "supersedes_id": data.get("supersedes_id"), "task_version": data.get("version"),
                "ai_confidence_score": None, "flagged_claims": [], "approvals": [], "reviewers": [],
                "decisions": [], "analysis": None, "sources": [], "rendered": None, "resolution_note": None,
                "deprecation_reason": None, "superseded_by": None, "published_at": None,
                "created_at": at, "updated_at": at, "version": version}
    changes: dict = {"updated_at": at, "version": version}
    if type_ == "SubmittedForAnalysis":
        changes["state"] = "AI_ANALYSIS"
    elif type_ == "AnalysisCompleted":
        changes.update(state=data["outcome"], ai_confidence_score=data["ai_confidence_score"],
                       flagged_claims=data["flagged_claims"],
                       analysis={"claims": data["claims"], "supported": data["supported"],
                                 "threshold": data["threshold"], "judged_by": data["judged_by"],
                                 "notes": data.get("notes") or [], "at": at},
                       sources=_sources_of(data["supported"]))
    elif type_ == "ReviewerAssigned":
        known = {r["name"] for r in state.get("reviewers") or []}
        changes["reviewers"] = [*(state.get("reviewers") or []),
                                *({"name": n, "assigned_by": actor, "at": at} for n in data["reviewer_ids"]
                                  if n not in known)]
    elif type_ == "ReviewApproved":
        approvals = [*(state.get("approvals") or []), {"reviewer": data["reviewer"], "at": at}]
        changes.update(approvals=approvals,
                       decisions=[*(state.get("decisions") or []),
                                  {"reviewer": data["reviewer"], "decision": "approve", "reason": data.get("reason"),
                                   "at": at}],
                       state="APPROVED" if len({a["reviewer"] for a in approvals}) >= 2 else state.get("state"))
    elif type_ == "ReviewRejected":
        changes.update(state="RESOLUTION_REQUIRED",
                       decisions=[*(state.get("decisions") or []),
                                  {"reviewer": data["reviewer"], "decision": "reject", "reason": data["reason"],
                                   "at": at}])
        if data.get("flagged_claims") is not None:  # the approval's check of the sources found these
            changes["flagged_claims"] = data["flagged_claims"]
    elif type_ == "ResolutionSubmitted":
        changes.update(state="PEER_REVIEW", approvals=[], resolution_note=data["note"])
        if data.get("body") is not None:
            changes["body"] = data["body"]
        if data.get("supported") is not None:  # the claims' answers in the registry as it was then
            changes["sources"] = _sources_of(data["supported"])
        if data.get("version") is not None:
            changes["task_version"] = data["version"]
    elif type_ == "Published":
        changes.update(state="PUBLISHED", rendered=data["rendered"], sources=data["sources"], published_at=at)
    elif type_ == "Deprecated":
        changes.update(state="DEPRECATED", deprecation_reason=data["reason"],
                       superseded_by=data.get("superseded_by"))
    else:
        raise ValueError(f"unknown task event type {type_!r}")
    return changes


def _sources_of(supported: list[dict]) -> list[dict]:
    """The registry answers an article's supported claims rest on, each once, in order, with the
    claims each supports (so a source found no longer current names them)."""
    seen: dict[int, dict] = {}
    for s in supported:
        if s.get("answer_id") is None:
            continue
        source = seen.setdefault(s["answer_id"], {"answer_id": s["answer_id"], "question": s.get("question"),
                                                  "claims": []})
        source["claims"].append(s["claim"])
    return list(seen.values())


def _at(value) -> str:
    return value.astimezone(timezone.utc).isoformat()


# ----------------------------------------------------------------------------- writing events

def _verified(values: list) -> None:
    """The event about to be committed hashes to what it says and is signed by our key."""
    (aggregate_type, aggregate_id, seq, type_, actor, payload, at, key, prev_hash, digest, signature,
     _key_id) = values
    recomputed = event_hash(hashed_fields(aggregate_type, aggregate_id, seq, type_, actor, payload.obj, at, key,
                                          prev_hash))
    if recomputed != digest:
        raise Conflict(f"the {type_} event of task {aggregate_id} does not hash to its digest: not written")


def _signed(tx: Tx, values: list) -> None:
    if not verify_signature(tx.signer.public_key, bytes(values[10]), values[9]):
        raise Conflict(f"the {values[3]} event of task {values[1]} fails its signature check: not written")


def _append(tx: Tx, actor: Actor, task_id: int, type_: str, payload: dict, key: str | None, at) -> None:
    check_event(type_, payload)
    values = event_values(tx, tx.signer, AGGREGATE, task_id, type_, actor.name, payload, idempotency_key=key, at=at)
    _verified(values)
    _signed(tx, values)
    tx.execute(_INSERT_EVENT, values)


def _snapshot_if_due(tx: Tx, row: dict) -> None:
    from ..config import get_settings

    every = get_settings().task_snapshot_events
    if row["version"] % every == 0:
        tx.execute("INSERT INTO task_snapshots (task_id, seq, state, created_at) VALUES (%s, %s, %s, %s) "
                   "ON CONFLICT DO NOTHING", (row["id"], row["version"], Jsonb(projection(row)), now()))


def projection(row: dict) -> dict:
    """A task row as its fold gives it: JSON values, timestamps in UTC."""
    out = {}
    for k, v in row.items():
        if k == "search":
            continue
        out[k] = _at(v) if hasattr(v, "astimezone") else jsonable(v)
    return out


def _write(tx: Tx, actor: Actor, row: dict, action: str, data: dict, *, fields: dict | None = None,
           key: str | None = None, expected_version: int | None = None) -> dict:
    """One move of the task machine on a row locked in `tx`: the engine's checks, then its typed event
    (schema-checked, hashed, signed and verified) and the folded row, together; what follows it."""
    fields = {k: v for k, v in (fields if fields is not None else data).items() if v is not None}
    move = engine.plan(TASK, row, action, actor, fields, expected_version)
    type_ = EVENT_OF[action]
    at = now()
    changes = fold(projection(row), type_, data, actor.name, _at(at))
    if changes.get("state", row["state"]) != move.to:
        raise ValidationStateError(AGGREGATE, row["id"], row["state"], action,
                                   f"its event would leave it {changes.get('state')}, not {move.to}")
    payload = {"from": row["state"], "to": move.to, "data": data, "set": jsonable(changes)}
    _append(tx, actor, row["id"], type_, payload, key, at)
    if between_event_and_row is not None:
        between_event_and_row()
    moved = tx.update(TABLE, row["id"], changes)
    _snapshot_if_due(tx, moved)
    event = Event(AGGREGATE, action, row["id"], actor, fields, moved["version"], row["state"], move.to, moved)
    tx.react(event)
    # The row as its reactions left it (an approval is published at once).
    return event.outcome.get("published_row") or moved


def _lock(tx: Tx, task_id, *, missing_ok: bool = False) -> dict | None:
    """The task's row locked for this transaction, with the head of its chain as it is now (a lock
    that waited for another transaction reads the head again: engine.lock)."""
    return engine.lock(tx, TASK, task_id, missing_ok=missing_ok)


# ----------------------------------------------------------------------------- create

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
        values = fold({}, "TaskCreated", data, actor.name, _at(at))
        row = tx.insert(TABLE, values)
        _append(tx, actor, row["id"], "TaskCreated", {"from": None, "to": "DRAFT", "data": data,
                                                      "set": jsonable(values)}, idempotency_key, at)
        _snapshot_if_due(tx, row)
        tx.react(Event(AGGREGATE, "create", row["id"], actor, {"title": title}, 1, None, "DRAFT", row))
        return public_row(row)

    return mutate(ctx, actor, "tasks.create", {"title": title, "body": body, "supersedes": old_id,
                                               "version": version}, work, idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- the transition contract

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
    row = _lock(tx, task_id)
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
        moved = _write(tx, actor, row, action, data, fields={**data, "threshold": threshold}, key=key,
                       expected_version=expected)
    elif action == "approve":
        moved = _review_in(tx, actor, row, "approve", meta.get("reason"), key, expected, must_reach=True)
    elif action == "reject":
        moved = _review_in(tx, actor, row, "reject", meta.get("reason"), key, expected)
    elif action == "resolve":
        moved = _resolve_in(tx, actor, row, meta.get("note"), meta.get("body"), meta.get("version"), key, expected)
    elif action == "deprecate":
        moved = _write(tx, actor, row, "deprecate", {"reason": meta.get("reason"), "superseded_by": None},
                       fields={"reason": meta.get("reason")}, key=key, expected_version=expected)
    elif action == "submit":
        moved = _write(tx, actor, row, "submit", {"note": meta.get("note")}, key=key, expected_version=expected)
    else:  # publish: the system's, and it says so
        moved = _write(tx, actor, row, action, {"rendered": render(row), "sources": row["sources"] or []}, key=key,
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
    return mutate(ctx, actor, "tasks.transition", args, lambda tx: _transition(ctx, tx, actor, tid, request),
                  idempotency_key=request["idempotency_key"])


def _key(idempotency_key: str | None) -> str:
    """The request's key; a command given none is a request of its own (a fresh key)."""
    return idempotency_key if idempotency_key is not None else f"auto-{uuid.uuid4()}"


def _run(ctx: Context, actor: Actor, op: str, task_id, args: dict, work, idempotency_key: str | None,
         expected_version: int | None) -> dict:
    tid = parse_id(task_id, "durable task")
    return mutate(ctx, actor, f"tasks.{op}", {"id": tid, **args, "expected_version": expected_version},
                  lambda tx: work(tx, tid), idempotency_key=_key(idempotency_key))


# ----------------------------------------------------------------------------- reviewers

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
    return _write(tx, actor, row, "assign", {"reviewer_ids": new}, key=key, expected_version=expected_version)


def assign(ctx: Context, actor: Actor, task_id, reviewers: list[str], *, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """`tasks assign ID --reviewers a,b`: domain experts join the task's reviewers (the author never)."""
    names = [r for r in (reviewers or []) if r is not None]
    if not [n for n in names if str(n).strip()]:
        raise InvalidInput("assign needs at least one reviewer (--reviewers a,b)")
    _reviewers(names)  # before the transaction: a name twice changes nothing

    def work(tx, tid):
        row = _lock(tx, tid)
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
        return _write(tx, actor, row, "reject", {"reviewer": actor.name, "reason": reason},
                      fields={"reason": reason}, key=key)
    if (again := approved_already(actor, row)) is not None:
        raise again
    if flags := not_current(tx, row["sources"] or [], lock=True):
        # Published, it would cite answers the registry no longer stands by: the approval is the
        # registry check's rejection instead, naming them (docs/architecture.md, "Durable tasks").
        whys = "; ".join(sorted({f["why"] for f in flags}))
        reason = limits.clip(f"not approved: it cites answers no longer current ({whys}): resolve it against the "
                             f"registry as it is now", 2000)
        return _write(tx, actor, row, "reject", {"reviewer": actor.name, "reason": reason, "flagged_claims": flags},
                      fields={"reason": reason}, key=key)
    count = len(approvers(row) | {actor.name})
    action = "approve" if count >= 2 or must_reach else "note_approval"
    return _write(tx, actor, row, action, {"reviewer": actor.name, "reason": reason, "approvals": count},
                  fields={"reviewer": actor.name, "reason": reason}, key=key)


def not_current(tx: Tx, sources: list[dict], *, lock: bool = False) -> list[dict]:
    """The flagged claims (kind `not_current`) of the cited answers that are no longer APPROVED in the
    registry: superseded, disputed or retired, each named with its status. `lock`: the answers are
    held (FOR SHARE) until the transaction ends, so none moves on between this check and the commit."""
    ids = sorted({s["answer_id"] for s in sources if s.get("answer_id") is not None})
    if not ids:
        return []
    rows = tx.all("SELECT a.id, a.status, (SELECT n.id FROM approved_answers n WHERE n.supersedes_id = a.id "
                  "ORDER BY n.id DESC LIMIT 1) AS superseded_by FROM approved_answers a WHERE a.id = ANY(%s) "
                  f"ORDER BY a.id{' FOR SHARE OF a' if lock else ''}", (ids,))
    gone = {r["id"]: r for r in rows if r["status"] != "APPROVED"}
    found = {r["id"] for r in rows}
    gone.update({i: {"id": i, "status": "missing", "superseded_by": None} for i in ids if i not in found})
    flags = []
    for source in sources:
        answer = gone.get(source.get("answer_id"))
        if answer is None:
            continue
        why = f"registry answer {answer['id']} is {status_said(answer)}"
        for claim in source.get("claims") or [f"(the article cites registry answer {answer['id']})"]:
            flags.append({"claim": claim, "kind": "not_current", "answer_id": answer["id"], "answer_text": None,
                          "why": why, "coverage": source.get("coverage")})
    return flags


def status_said(answer: dict) -> str:
    """An answer's registry status in words: APPROVED, DISPUTED, RETIRED, SUPERSEDED by answer 9."""
    if answer["status"] == "SUPERSEDED" and answer.get("superseded_by"):
        return f"SUPERSEDED by answer {answer['superseded_by']}"
    return answer["status"]


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
        row = _lock(tx, tid)
        return public_row(_review_in(tx, actor, row, decision, reason, _key(idempotency_key), expected_version))

    return _run(ctx, actor, "review", task_id, {"decision": decision, "reason": reason}, work, idempotency_key,
                expected_version)


# ----------------------------------------------------------------------------- resolve, submit, deprecate

def _resolve_in(tx: Tx, actor: Actor, row: dict, note: str | None, body: str | None, version: str | None,
                key: str | None, expected_version: int | None) -> dict:
    # The resolved article cites the answers its claims rest on in the registry as it is now (the
    # rules' check, no LLM under the row's lock): the sources it was analysed with may have moved on.
    supported = support_in(tx, body if body is not None else row["body"] or "")["supported"]
    data = {"note": (note or "").strip() or None, "body": body, "version": version, "supported": supported}
    return _write(tx, actor, row, "resolve", data, fields={"note": data["note"]}, key=key,
                  expected_version=expected_version)


def resolve(ctx: Context, actor: Actor, task_id, note: str, body: str | None = None, *, version: str | None = None,
            expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """`tasks resolve ID --body-file F --note N`: back to PEER_REVIEW, earlier approvals cleared."""
    limits.text(note, "a note", limits.REASON)
    if body is not None:
        _body(body)

    def work(tx, tid):
        row = _lock(tx, tid)
        return public_row(_resolve_in(tx, actor, row, note, body, version, _key(idempotency_key), expected_version))

    return _run(ctx, actor, "resolve", task_id, {"note": note, "body": body, "version": version}, work,
                idempotency_key, expected_version)


def submit(ctx: Context, actor: Actor, task_id, *, expected_version: int | None = None,
           idempotency_key: str | None = None) -> dict:
    """DRAFT → AI_ANALYSIS; the analysis job is queued after the commit (core/reactions.py)."""
    def work(tx, tid):
        row = _lock(tx, tid)
        return public_row(_write(tx, actor, row, "submit", {"note": None}, key=_key(idempotency_key),
                                 expected_version=expected_version))

    return _run(ctx, actor, "submit", task_id, {}, work, idempotency_key, expected_version)


def deprecate(ctx: Context, actor: Actor, task_id, reason: str, *, expected_version: int | None = None,
              idempotency_key: str | None = None) -> dict:
    """PUBLISHED → DEPRECATED by the editorial board's decision; terminal and immutable."""
    limits.text(reason, "a reason", limits.REASON)
    reason = (reason or "").strip() or None

    def work(tx, tid):
        row = _lock(tx, tid)
        return public_row(_write(tx, actor, row, "deprecate", {"reason": reason, "superseded_by": None},
                                 fields={"reason": reason}, key=_key(idempotency_key),
                                 expected_version=expected_version))

    return _run(ctx, actor, "deprecate", task_id, {"reason": reason}, work, idempotency_key, expected_version)


# ----------------------------------------------------------------------------- reactions (core/reactions.py)

def headed_by_title(body: str, title: str) -> bool:
    """The article's Markdown opens with its title as a heading already ("# Backups")."""
    first = next((line.strip() for line in (body or "").splitlines() if line.strip()), "")
    return first.startswith("# ") and " ".join(first[2:].split()).casefold() == " ".join(title.split()).casefold()


def render(row: dict, statuses: dict[int, dict] | None = None) -> str:
    """The article as published: its title once (the body's own heading when it opens with it), its
    Markdown, then the registry answers its claims rest on, each with its registry status when
    `statuses` (answer id → row) are given."""
    body = (row["body"] or "").strip()
    lines = ([] if headed_by_title(body, row["title"]) else [f"# {row['title']}", ""]) + [body, ""]
    sources = row.get("sources") or []
    if sources:
        lines += ["## Sources", ""]
        for n, s in enumerate(sources, 1):
            line = f"{n}. Registry answer {s['answer_id']}" + (f": {s['question']}" if s.get("question") else "")
            if statuses is not None:
                line += f" ({status_said(statuses[s['answer_id']])})" if s["answer_id"] in statuses else " (missing)"
            lines.append(line)
        lines.append("")
    if row.get("task_version"):
        lines += [f"_Version {row['task_version']}._", ""]
    return "\n".join(lines)


def publish_approved(tx: Tx, event: Event) -> dict:
    """APPROVED → PUBLISHED at once, in the same transaction: the article rendered with its sources."""
    row = event.row
    rendered = render(row, statuses(tx, row["sources"] or []))  # each APPROVED: the approval checked them
    published = _write(tx, SYSTEM, row, "publish", {"rendered": rendered, "sources": row["sources"] or []})
    return {"published": public_row(published), "published_row": published}


def deprecate_superseded(tx: Tx, event: Event) -> dict | None:
    """A new version published: the version it supersedes is deprecated (when still PUBLISHED)."""
    old_id = event.row.get("supersedes_id")
    if old_id is None:
        return None
    old = _lock(tx, old_id, missing_ok=True)
    if old is None or old["state"] != "PUBLISHED":
        return None
    reason = f"superseded by task {event.aggregate_id}"
    deprecated = _write(tx, SYSTEM, old, "deprecate", {"reason": reason, "superseded_by": event.aggregate_id},
                        fields={"reason": reason})
    return {"deprecated": public_row(deprecated)}


def analysis_job_id(task_id: int, version: int) -> str:
    return f"task-{task_id}-analysis-v{version}"


def analysis_job(ctx: Context, event: Event) -> None:
    """After commit: a submitted task's analysis runs on RQ (the generation queue)."""
    jobs.enqueue(ctx, "generation", "analyze_task_task", event.aggregate_id,
                 job_id=analysis_job_id(event.aggregate_id, event.version))


def recover(ctx: Context, *, stale_after_seconds: float = 600) -> dict:
    """The sweep's part: a task left in AI_ANALYSIS whose analysis job is not waiting (its enqueue
    lost with Redis, its worker dead, the job failed) has it queued again, or it would wait for ever:
    only the system moves it on. Untouched for `stale_after_seconds` (twice the job's timeout) first,
    so a run in progress is left alone; a duplicate run changes nothing (`analyze`)."""
    from datetime import timedelta

    with ctx.db.read() as tx:
        rows = tx.all("SELECT id, version FROM durable_tasks WHERE state = 'AI_ANALYSIS' AND updated_at < %s "
                      "ORDER BY id", (now() - timedelta(seconds=stale_after_seconds),))
    requeued = []
    for row in rows:
        job_id = analysis_job_id(row["id"], row["version"])
        if jobs.waiting(ctx, "generation", job_id):
            continue
        jobs.enqueue(ctx, "generation", "analyze_task_task", row["id"], job_id=job_id)
        requeued.append(row["id"])
    return {"requeued": requeued}


# ----------------------------------------------------------------------------- the AI analysis gate

def analyze(ctx: Context, task_id: int) -> dict:
    """The analysis job: the article's claims checked against the registry (and the graph); the score
    and flagged claims stored by AnalysisCompleted, which moves it to PEER_REVIEW or RESOLUTION_REQUIRED.
    The answers the claims rest on are checked again as it commits (`_current_only`): one superseded,
    disputed or retired meanwhile is a flagged claim naming it.
    Run again (a retried job) it changes nothing: the task is no longer in AI_ANALYSIS. Reviewers
    assigned while it ran do not void it: in AI_ANALYSIS nothing else moves and the body cannot
    change, and no task comes back to AI_ANALYSIS once it has left."""
    with ctx.db.read() as tx:
        row = engine.read(tx, TASK, task_id)
    if row["state"] != "AI_ANALYSIS":
        return {"task": task_id, "outcome": "nothing to do", "state": row["state"]}
    threshold = ctx.settings.task_confidence_threshold
    report = assess(ctx, row["body"] or "", title=row["title"])

    def work(tx: Tx) -> dict:
        current = _lock(tx, task_id)
        if current["state"] != "AI_ANALYSIS" or current["body"] != row["body"]:
            return {"task": task_id, "outcome": "moved meanwhile", "state": current["state"]}
        checked = _current_only(tx, report)
        passes = checked["ai_confidence_score"] >= threshold and not checked["flagged_claims"]
        target = "PEER_REVIEW" if passes else "RESOLUTION_REQUIRED"
        data = {**checked, "threshold": threshold, "outcome": target}
        action = "pass_analysis" if passes else "flag_analysis"
        moved = _write(tx, SYSTEM, current, action, data,
                       fields={"ai_confidence_score": data["ai_confidence_score"],
                               "flagged_claims": data["flagged_claims"], "threshold": threshold},
                       key=analysis_job_id(task_id, row["version"]))
        return {"task": task_id, "outcome": target, "state": moved["state"],
                "ai_confidence_score": data["ai_confidence_score"], "flagged": len(data["flagged_claims"])}

    return mutate(ctx, SYSTEM, "tasks.analysis", {"id": task_id, "version": row["version"]}, work,
                  idempotency_key=analysis_job_id(task_id, row["version"]))


def _current_only(tx: Tx, report: dict) -> dict:
    """The analysis as it is committed: a supported claim whose answer moved on since it was read
    (superseded, disputed, retired) is flagged instead, naming it, and counts for nothing in the score;
    the answers left are held until the commit."""
    flags = not_current(tx, _sources_of(report["supported"]), lock=True)
    if not flags:
        return report
    gone = {f["answer_id"] for f in flags}
    supported = [c for c in report["supported"] if c["answer_id"] not in gone]
    score = round(sum(min(1.0, c["coverage"]) for c in supported) / report["claims"], 3) if report["claims"] else 0.0
    return {**report, "supported": supported, "flagged_claims": report["flagged_claims"] + flags,
            "ai_confidence_score": score}


# ----------------------------------------------------------------------------- read

def get(ctx: Context, task_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(engine.read(tx, TASK, parse_id(task_id, "durable task")))


def show(ctx: Context, task_id) -> dict:
    """A task, its next states and its events: one transaction, the row read once (the articles
    screen's detail, at each highlighted row)."""
    from ..events import trust_store

    keys = trust_store(ctx.settings)
    with ctx.db.read() as tx:
        task = public_row(engine.read(tx, TASK, parse_id(task_id, "durable task")))
        rows = _event_rows(tx, task["id"])
        now_ = statuses(tx, task.get("sources") or [])
    # `article`: what `tasks export` prints; each source with its registry status now.
    return {**task, "next_states": [s for s in TASK.next_states(task["state"]) if s != task["state"]],
            "events": with_signatures(rows, keys), "article": render(task, now_),
            "sources": [{**s, "status": status_said(now_[s["answer_id"]]) if s["answer_id"] in now_ else "missing"}
                        for s in task.get("sources") or []]}


def _event_rows(tx: Tx, task_id: int) -> list[dict]:
    return tx.all("SELECT * FROM events WHERE aggregate_type = %s AND aggregate_id = %s ORDER BY seq",
                  (AGGREGATE, str(task_id)))


def events(ctx: Context, task_id, *, trust=None) -> list[dict]:
    """The task's typed events, oldest first, each with its signature status under the trust store."""
    from ..events import trust_store

    tid = parse_id(task_id, "durable task")
    keys = trust if trust is not None else trust_store(ctx.settings)
    with ctx.db.read() as tx:
        if not tx.one("SELECT 1 FROM durable_tasks WHERE id = %s", (tid,)):
            raise NotFound(f"no durable task {task_id}")
        rows = _event_rows(tx, tid)
    return with_signatures(rows, keys)


def with_signatures(rows: list[dict], keys: dict) -> list[dict]:
    """One aggregate's event rows (all of them, oldest first) as shown, each with its signature
    status under `keys`: verified, broken (hash or chain link), untrusted key or bad signature."""
    out, prev = [], ""
    for r in rows:
        digest = event_hash(hashed_fields(r["aggregate_type"], r["aggregate_id"], r["seq"], r["type"], r["actor"],
                                          r["payload"], r["created_at"], r["idempotency_key"], r["prev_hash"]))
        key = keys.get(r["key_id"])
        if digest != r["hash"] or r["prev_hash"] != prev:
            status = "broken"
        elif key is None:
            status = "untrusted key"
        else:
            status = "verified" if verify_signature(key, bytes(r["signature"]), r["hash"]) else "bad signature"
        prev = r["hash"]
        payload = r["payload"]
        out.append({"seq": r["seq"], "type": r["type"], "actor": r["actor"], "at": _at(r["created_at"]),
                    "from": payload.get("from"), "to": payload.get("to"), "data": payload.get("data"),
                    "idempotency_key": r["idempotency_key"], "signature": status})
    return out


def list_tasks(ctx: Context, state: str | None = None, reviewer: str | None = None, *, limit: int = 200,
               offset: int = 0) -> list[dict]:
    where, params = [], []
    if state:
        where.append("state = %s")
        params.append(one_state(state, STATES, "task state"))
    if reviewer:
        where.append("reviewers @> %s")
        params.append(Jsonb([{"name": limits.text(reviewer, "a reviewer", limits.QUERY)}]))
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    sql = (f"SELECT id, title, state, created_by, ai_confidence_score, jsonb_array_length(flagged_claims) AS flagged, "
           f"reviewers, approvals, supersedes_id, superseded_by, created_at, updated_at, version FROM durable_tasks "
           f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY id DESC LIMIT %s OFFSET %s")
    with ctx.db.read() as tx:
        rows = tx.all(sql, [*params, limit, offset])
    return [{**public_row(r), "reviewers": [x["name"] for x in r["reviewers"]],
             "approvals": [x["reviewer"] for x in r["approvals"]]} for r in rows]


def statuses(tx: Tx, sources: list[dict]) -> dict[int, dict]:
    """Each cited answer's registry row now (id, status, superseded_by), by id."""
    ids = [s["answer_id"] for s in sources if s.get("answer_id") is not None]
    rows = tx.all("SELECT a.id, a.status, (SELECT n.id FROM approved_answers n WHERE n.supersedes_id = a.id "
                  "ORDER BY n.id DESC LIMIT 1) AS superseded_by FROM approved_answers a WHERE a.id = ANY(%s)",
                  (ids,)) if ids else []
    return {r["id"]: r for r in rows}


def export(ctx: Context, task_id) -> str:
    """The article rendered with its sources, each marked with its registry status as it is now (a
    source superseded since publication says so); a task not yet published renders as it stands."""
    with ctx.db.read() as tx:
        task = public_row(engine.read(tx, TASK, parse_id(task_id, "durable task")))
        return render(task, statuses(tx, task.get("sources") or []))


# ----------------------------------------------------------------------------- replay

def rebuild(tx: Tx, task_id: int, *, from_snapshot: bool = True) -> tuple[dict, dict]:
    """A task's projection folded from its events: from its newest snapshot (when asked and there is
    one) plus the events after it. Returns (projection, {"snapshot": seq or None, "events": n})."""
    state: dict = {}
    after = 0
    if from_snapshot:
        snap = tx.one("SELECT seq, state FROM task_snapshots WHERE task_id = %s ORDER BY seq DESC LIMIT 1", (task_id,))
        if snap is not None:
            state, after = dict(snap["state"]), snap["seq"]
    rows = tx.all("SELECT type, actor, created_at, payload->'data' AS data FROM events WHERE aggregate_type = %s "
                  "AND aggregate_id = %s AND seq > %s ORDER BY seq", (AGGREGATE, str(task_id), after))
    for r in rows:
        state.update(fold(state, r["type"], r["data"], r["actor"], _at(r["created_at"])))
    if state:
        state["id"] = task_id
    return state, {"snapshot": after or None, "events": len(rows)}

# ----------------------------------------------------------------------------- claims and their support

SUPPORT = 0.6          # a claim is supported by an answer holding this share of its content words
LLM_SUPPORT = 0.9      # what a claim the LLM judged supported counts for in the score
MAX_CLAIMS = 200
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"[*_`]+")


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", _MARKS.sub("", _LINK.sub(r"\1", text))).strip()


def split_claims(markdown: str) -> list[str]:
    """The claims of a Markdown article: each sentence of its paragraphs and bullets that has content
    (three words or more); headings, tables, code and blank lines say nothing to check."""
    text = _FENCE.sub("", markdown or "")
    blocks: list[str] = []
    paragraph: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|", ">")) or set(stripped) <= set("-=*_ "):
            if paragraph:
                blocks.append(" ".join(paragraph))
                paragraph = []
            if stripped.startswith(">"):
                blocks.append(stripped.lstrip("> "))
            continue
        if _BULLET.match(line):
            if paragraph:
                blocks.append(" ".join(paragraph))
                paragraph = []
            blocks.append(_BULLET.sub("", line, count=1))
            continue
        paragraph.append(stripped)
    if paragraph:
        blocks.append(" ".join(paragraph))
    claims = []
    for block in blocks:
        for sentence in _SENTENCE.split(_plain(block)):
            sentence = sentence.strip()
            if len(re.findall(r"[^\W\d_]{2,}", sentence)) >= 3:
                claims.append(sentence)
    return claims[:MAX_CLAIMS]


# A claim's registry answers: those retrieval finds for it by its words and by its meaning
# (core/services/retrieval.py), plus the graph's neighbours of the best; each with how many of the
# claim's terms it has (`matched` of `total`), the most first.
_MATCHED = (
    "WITH c AS (SELECT coalesce(array_agg(DISTINCT lexeme), '{}') AS lex FROM unnest(to_tsvector('english', %(claim)s))) "
    "SELECT a.id, a.question, a.text, cardinality(c.lex) AS total, "
    "       (SELECT count(*) FROM unnest(a.search) t WHERE t.lexeme = ANY(c.lex)) AS matched "
    "  FROM approved_answers a, c WHERE a.status = 'APPROVED' AND a.id = ANY(%(ids)s)")
MATCHES = 8


def _matches(tx, claim: str, extra: list[int]) -> list[dict]:
    _, ranked = retrieval.rank(tx, claim, passages=False)
    ids = [c.row["id"] for c in ranked]
    found = {r["id"]: r for r in tx.all(_MATCHED, {"claim": claim, "ids": ids + [i for i in extra if i not in ids]})}
    fused = {answer_id: n for n, answer_id in enumerate(ids)}
    rows = sorted(found.values(), key=lambda r: (-r["matched"], fused.get(r["id"], len(fused)), r["id"]))
    return rows[:MATCHES]


def _neighbours(ctx: Context, answer_ids: list[int], notes: list[str]) -> list[int]:
    """Answers the graph puts on the same subject as these (for contradictions and support)."""
    if not answer_ids:
        return []
    try:
        rows = ctx.graph.run("MATCH (a:Answer)-[:ABOUT]->(s:Subject)<-[:ABOUT]-(b:Answer) WHERE a.id IN $ids "
                             "AND b.status = 'APPROVED' RETURN DISTINCT b.id AS id", ids=answer_ids[:20])
    except Exception as exc:  # noqa: BLE001 - the graph is a projection: the registry still answers
        note = f"graph not consulted: {type(exc).__name__}"
        if note not in notes:
            notes.append(note)
        return []
    return [int(r["id"]) for r in rows if r.get("id") is not None]


def _contradiction(claim: str, answer_text: str) -> str | None:
    """Why `claim` contradicts a registry answer (core/contradictions.py, the rules conflict detection
    uses), or None."""
    from ..contradictions import compare

    finding = compare(claim, answer_text)
    return f"{finding.kind}: {finding.detail}" if finding else None


def _verdict(claim: str, best: list[dict]) -> tuple[str, dict]:
    """A claim judged against its best-matching APPROVED answers (`_matches`): contradicted (with the
    answer), supported (by the best one, holding SUPPORT of its words) or unsupported."""
    contradicted = None
    for b in best:
        why = _contradiction(claim, b["text"])
        if why:
            contradicted = (b, why)
            break
    top = best[0] if best else None
    coverage = round(top["matched"] / top["total"], 3) if top and top["total"] else 0.0
    if contradicted:
        b, why = contradicted
        return "contradicted", {"claim": claim, "kind": "contradicted", "answer_id": b["id"],
                                "answer_text": b["text"][:2000], "why": str(why)[:500], "coverage": coverage}
    if top and top["matched"] >= 2 and coverage >= SUPPORT:
        return "supported", {"claim": claim, "answer_id": top["id"], "question": top["question"][:300],
                             "coverage": coverage}
    return "unsupported", {"claim": claim, "kind": "unsupported",
                           "answer_id": top["id"] if top and top["matched"] else None,
                           "answer_text": None, "why": "no registry answer states it", "coverage": coverage}


def support_in(tx: Tx, body: str) -> dict:
    """The rules' check of an article's claims against the APPROVED answers, in `tx` (no graph, no
    LLM): `supported` (each claim with its answer) and `flagged`."""
    out: dict[str, list] = {"supported": [], "flagged": []}
    for claim in split_claims(body):
        kind, judged = _verdict(claim, _matches(tx, claim, []))
        out["supported" if kind == "supported" else "flagged"].append(judged)
    return out


def assess(ctx: Context, body: str, *, title: str = "") -> dict:
    """Each claim of an article looked up in the registry (its answers by words and by meaning) and the
    graph: the confidence score (the mean over claims of how much of each its answer states, 0 for a
    flagged one), the claims it supports with their
    answers, and the flagged ones (unsupported; contradicted, with the answer). Deterministic; with an
    LLM configured it judges the claims the rules could not settle, through the shared breaker."""
    claims = split_claims(body)
    notes: list[str] = []
    supported, flagged, open_claims = [], [], []
    with ctx.db.read() as tx:
        for claim in claims:
            best = _matches(tx, claim, [])
            extra = _neighbours(ctx, [b["id"] for b in best[:3] if b["matched"]], notes)
            if extra:
                best = _matches(tx, claim, extra)
            kind, judged = _verdict(claim, best)
            {"contradicted": flagged, "supported": supported, "unsupported": open_claims}[kind].append(judged)
    judged_by = "rules"
    if open_claims and ctx.settings.llm_url:
        judged_by = _llm_judges(ctx, open_claims, supported, notes)
    flagged += [c for c in open_claims if c["kind"] == "unsupported"] + [c for c in open_claims if c["kind"] == "contradicted"]
    # A supported claim counts by how much of it its answer states (coverage, at least SUPPORT; one
    # the LLM judged supported counts LLM_SUPPORT); a flagged one counts 0.
    score = round(sum(min(1.0, c["coverage"]) for c in supported) / len(claims), 3) if claims else 0.0
    if not claims:
        notes.append("the article states no claim to check")
    return {"ai_confidence_score": score, "flagged_claims": flagged, "supported": supported, "claims": len(claims),
            "judged_by": judged_by, "notes": notes}


def _llm_judges(ctx: Context, open_claims: list[dict], supported: list[dict], notes: list[str]) -> str:
    """The LLM, behind the shared breaker, says which unsettled claims the registry answer nearest
    each one supports; what it supports moves to `supported`. Any failure leaves the rules' verdict."""
    from ..adapters.llm import LLMError
    from .generation import breaker

    with ctx.db.read() as tx:
        texts = {r["id"]: r for r in tx.all("SELECT id, question, text FROM approved_answers WHERE id = ANY(%s)",
                                            ([c["answer_id"] for c in open_claims if c["answer_id"]],))}
    asked = [c for c in open_claims if c["answer_id"] in texts]
    if not asked:
        return "rules"
    cb = breaker(ctx)
    if cb.allow("task-analysis") == "refuse":
        notes.append("LLM circuit open: judged by the rules")
        return "rules"
    prompt = ("For each numbered claim, answer on its own line `N: SUPPORTED` when the registry answer given "
              "with it states the claim, else `N: UNSUPPORTED`.\n\n" + "\n\n".join(
                  f"{n}. Claim: {c['claim']}\n   Registry answer {c['answer_id']}: {texts[c['answer_id']]['text'][:1500]}"
                  for n, c in enumerate(asked, 1)))
    try:
        reply = ctx.llm.complete(prompt).text
    except LLMError as exc:
        cb.record_failure(exc.detail)
        notes.append(f"LLM error ({exc.detail[:100]}): judged by the rules")
        return "rules"
    cb.record_success()
    verdicts = {int(n): v.upper() for n, v in re.findall(r"(?m)^\s*(\d+)\s*[:.)-]\s*(SUPPORTED|UNSUPPORTED)", reply, re.I)}
    for n, claim in enumerate(asked, 1):
        if verdicts.get(n) == "SUPPORTED":
            open_claims.remove(claim)
            supported.append({"claim": claim["claim"], "answer_id": claim["answer_id"],
                              "question": texts[claim["answer_id"]]["question"][:300],
                              "coverage": max(claim["coverage"], LLM_SUPPORT), "judged": "llm"})
    return f"rules and the LLM ({ctx.settings.llm_model})"


# ----------------------------------------------------------------------------- the demo's articles (r2k demo)

DEMO_ANSWERS = [
    ("How long are nightly database backups retained?", "Nightly database backups are retained for 30 days."),
    ("Where are backups stored?", "Backups are stored in the Frankfurt region in the Stowage backup service."),
    ("When do full database backups run?", "Full database backups run every night at 01:00."),
]
DEMO_ARTICLES = [
    ("Backups at a glance", "# Backups at a glance\n\nFull database backups run every night at 01:00.\n\n"
     "- Backups are stored in the Frankfurt region in the Stowage backup service.\n"
     "- Nightly database backups are retained for 30 days.\n", "passes"),
    ("Backup retention, draft", "# Backup retention\n\nNightly database backups are retained for 90 days.\n\n"
     "Restored copies are archived on tape in Lisbon every quarter.\n", "needs resolution"),
    ("Where backups live", "# Where backups live\n\n"
     "Backups are stored in the Frankfurt region in the Stowage backup service.\n", "published"),
]


def demo_articles(ctx: Context, by: Actor) -> list[dict]:
    """`r2k demo`'s three articles, by cleo: one that passed the analysis (PEER_REVIEW, ada and ben to
    review), one that needs resolution (it contradicts the registry and goes beyond it), one already
    published. The registry answers they are checked against are published first, through the
    candidates' own path (added, claimed and approved by dev), so the demo's queues are as before.
    Running it again adds nothing."""
    from . import candidates, claims, users

    with ctx.db.read() as tx:
        if tx.one("SELECT 1 FROM durable_tasks WHERE title = ANY(%s)", ([a[0] for a in DEMO_ARTICLES],)):
            return []
        known = {r["text"] for r in tx.all("SELECT text FROM approved_answers WHERE status = 'APPROVED' "
                                           "AND text = ANY(%s)", ([a[1] for a in DEMO_ANSWERS],))}
    cleo, dev, ada, ben = (users.resolve(ctx, name) for name in ("cleo", "dev", "ada", "ben"))
    for question, text in DEMO_ANSWERS:
        if text not in known:
            added = candidates.add(ctx, by, question, text, "FACT", "13-backup-and-restore.md")
            claims.claim(ctx, dev, added["id"])
            candidates.approve(ctx, dev, added["id"])
    made = []
    for title, body, fate in DEMO_ARTICLES:
        task = create(ctx, cleo, title, body, version="v1")
        submit(ctx, cleo, task["id"])
        analyze(ctx, task["id"])  # at once, not waiting for a worker (its job then finds nothing to do)
        if fate != "needs resolution":
            assign(ctx, cleo, task["id"], ["ada", "ben"])
        if fate == "published":
            review(ctx, ada, task["id"], "approve", "matches the registry")
            review(ctx, ben, task["id"], "approve", "checked against the handbook")
        made.append(get(ctx, task["id"]))
    return made
