"""The grey queue of unknowns: triage by specialists, automation on RQ.

Every transition goes through the engine (signed event), and a reaction writes a line of the entry's
own transition history (who, when, from, to, why), table `grey_transitions`.
Automation: a processing job retries retrieval for the entry's subject and resolves it once at
least two sources exist (opening a work item so an answer gets generated); otherwise it retries
with exponential backoff until `max_attempts`, then fails. A sweep expires entries past their TTL
and picks up due retries and entries a dead worker left in Processing. The automation works only
what is left to it (`left_to_automation`): an entry added for someone's review is theirs at once
(docs/architecture.md, "Grey queue").
"""
from __future__ import annotations

from datetime import timedelta
from itertools import groupby
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM, Actor, limits
from ...engine import Event
from ...errors import InvalidInput
from ...events import now
from ...machines.grey import GREY
from ...machines.work_item import NO_CONTENT
from .. import jobs
from ..common import Allowed, fetch, one_state, parse_id
from ..search import retrieval
from ..search.extractive import grounding
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...context import Context

# What the screens ask of this workflow's moves (they never hold its machine).
allowed = Allowed(GREY)

DEFAULT_TTL = 7 * 24 * 3600
DEFAULT_MAX_ATTEMPTS = 5
BACKOFF_BASE = 30.0      # seconds before the first retry; doubles each attempt
BACKOFF_CAP = 3600.0
STALE_PROCESSING = timedelta(seconds=60)  # as for work items: a dead worker's job, after a minute
STATES = sorted(GREY.states)


def backoff(attempts: int) -> float:
    return min(BACKOFF_BASE * 2 ** max(0, attempts - 1), BACKOFF_CAP)


def processing_job_id(entry_id: int) -> str:
    return f"grey-{entry_id}"


def retrigger_job_id(entry_id: int) -> str:
    return f"grey-{entry_id}-retrigger"


def job_waiting(ctx: Context, entry_id: int) -> bool:
    """Whether a processing job of the entry (its own, or a retrigger) still waits in the queue:
    it will see the entry as it is when it runs, so another one adds nothing."""
    return any(jobs.waiting(ctx, "generation", job_id)
               for job_id in (processing_job_id(entry_id), retrigger_job_id(entry_id)))


def enqueue_processing(ctx: Context, entry_id: int, *, at_front: bool = False) -> None:
    jobs.enqueue(ctx, "generation", "process_grey_task", entry_id, job_id=processing_job_id(entry_id),
                 at_front=at_front)


def create_entry(tx: Tx, actor: Actor, *, subject: str, detail: str = "", origin: str = "manual",
                 ttl_seconds: int | None = None, max_attempts: int | None = None,
                 work_item_id: int | None = None, assignee: str | None = None,
                 idempotency_key: str | None = None) -> dict:
    """A new entry in Pending. `assignee`: whom it is added for (the move that assigns it follows in the
    same transaction); the add's event says so, which keeps it from the automation (`left_to_automation`)."""
    return engine.create(tx, GREY, actor, _entry(actor, subject, detail, origin, ttl_seconds, max_attempts,
                                                 work_item_id), action="add",
                         fields={"assignee": assignee} if assignee else None, idempotency_key=idempotency_key).row


def create_entries(tx: Tx, actor: Actor, entries: list[dict], *, origin: str) -> list[dict]:
    """Many entries at once (one document's fragments: `subject` and `detail` each), as
    `create_entry` makes each, written together (engine.create_all), each left to the automation."""
    rows = [_entry(actor, e["subject"], e.get("detail", ""), origin, None, None, None) for e in entries]
    return [event.row for event in engine.create_all(tx, GREY, actor, rows, action="add")]


def _entry(actor: Actor, subject: str, detail: str, origin: str, ttl_seconds: int | None,
           max_attempts: int | None, work_item_id: int | None) -> dict:
    ttl = DEFAULT_TTL if ttl_seconds is None else limits.number(ttl_seconds, "--ttl", limits.TTL_SECONDS, "seconds")
    attempts = DEFAULT_MAX_ATTEMPTS if max_attempts is None else limits.number(max_attempts, "--max-attempts",
                                                                               limits.MAX_ATTEMPTS)
    if not (limits.text(subject, "a grey subject", limits.GREY_SUBJECT) or "").strip():
        raise InvalidInput("a grey entry needs a subject (--subject)")
    limits.text(detail, "a grey detail", limits.GREY_DETAIL)
    return {"subject": subject.strip(), "detail": (detail or "").strip(), "origin": origin, "ttl_seconds": ttl,
            "expires_at": now() + timedelta(seconds=ttl), "max_attempts": attempts, "work_item_id": work_item_id,
            "created_by": actor.name}


def add(ctx: Context, actor: Actor, subject: str, detail: str = "", *, ttl_seconds: int | None = None,
        max_attempts: int | None = None, assignee: str | None = None, idempotency_key: str | None = None) -> dict:
    """A grey entry by hand (`grey add`). Given an `assignee` it goes to their review in the same
    transaction (add, then assign: two moves, two events), so the automation never takes it;
    without one it is left to the automation."""
    if assignee is not None:
        limits.text(assignee, "an assignee", limits.QUERY)
        assignee = assignee.strip() or None

    def work(tx):
        entry = create_entry(tx, actor, subject=subject, detail=detail, origin="manual", ttl_seconds=ttl_seconds,
                             max_attempts=max_attempts, assignee=assignee, idempotency_key=idempotency_key)
        if assignee is not None:
            fields = {"assignee": assignee}
            engine.plan(GREY, entry, "assign", actor, fields)  # who may assign (403) before the user lookup
            _known_user(tx, assignee)
            entry = engine.apply(tx, GREY, entry, "assign", actor, fields=fields, changes=_WRITES["assign"](fields)).row
        return public_row(entry)

    return in_unit_of_work(ctx, actor, "grey.add", {"subject": subject, "detail": detail, "ttl": ttl_seconds,
                                                    "max_attempts": max_attempts, "assignee": assignee},
                           work, idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- triage

# action -> (columns the move writes, taken from the request's fields)
_WRITES = {
    "assign": lambda f: {"assignee": f["assignee"].strip(), "notes": f.get("notes")},
    "unassign": lambda f: {"assignee": None},
    "escalate": lambda f: {"reason": f["reason"]},
    "deescalate": lambda f: {"reason": f.get("reason")},
    "reject": lambda f: {"reason": f["reason"], "rejected_by": f["rejected_by"]},
    "reopen": lambda f: {"reason": f.get("reason"), "rejected_by": None, "attempts": 0, "next_attempt_at": None},
    "reset": lambda f: {"reason": f.get("reason"), "attempts": 0, "next_attempt_at": None},
    "resolve": lambda f: {"resolution": f.get("resolution")},
    "dismiss": lambda f: {"reason": f.get("reason")},
}


_FIELD_SAID = {"assignee": "an assignee", "notes": "a note", "reason": "a reason", "resolution": "a resolution"}


def transition(ctx: Context, actor: Actor, entry_id, action: str, *, expected_version: int | None = None,
               idempotency_key: str | None = None, **fields) -> dict:
    """One triage action on an entry; the reason and assignee rules are the machine's."""
    if action not in _WRITES:
        raise InvalidInput(f"unknown grey action {action!r}: expected one of {', '.join(sorted(_WRITES))}")
    fields = {k: v for k, v in fields.items() if v is not None}
    for name, value in fields.items():
        limits.text(value, _FIELD_SAID.get(name, name), limits.QUERY if name == "assignee" else limits.REASON)
    if action == "reject":
        fields["rejected_by"] = actor.name  # who rejects is whoever acts, never a name they type

    def work(tx):
        entry = engine.lock(tx, GREY, parse_id(entry_id, "grey entry"))
        engine.plan(GREY, entry, action, actor, fields, expected_version)
        if action == "assign":
            _known_user(tx, fields["assignee"])
        return public_row(engine.apply(tx, GREY, entry, action, actor, fields=fields,
                                       changes=_WRITES[action](fields), idempotency_key=idempotency_key).row)

    return in_unit_of_work(ctx, actor, f"grey.{action}",
                           {"id": parse_id(entry_id, "grey entry"), **fields, "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def _known_user(tx: Tx, name: str) -> None:
    if not tx.one("SELECT 1 FROM users WHERE name = %s", (name.strip(),)):
        raise InvalidInput(f"assignee {name!r} is not a known user")


# ----------------------------------------------------------------------------- reactions (core/reactions.py)

def record_transition(tx: Tx, event: Event) -> None:
    """Every move of an entry leaves a line of its transition history: who, when, from, to, why."""
    engine.record(tx, "grey_transition", "grey_transitions", _transition(event), event.actor,
                  event_type=f"grey_{event.action}")


def record_transitions(tx: Tx, events: list[Event]) -> None:
    """`record_transition` for many moves of one action (entries added together), written together."""
    for _, same in groupby(events, key=lambda e: e.actor):
        same = list(same)
        engine.record_all(tx, "grey_transition", "grey_transitions", [_transition(e) for e in same], same[0].actor,
                          event_type=f"grey_{same[0].action}")


def _transition(event: Event) -> dict:
    fields = event.fields
    reason = fields.get("reason") or fields.get("resolution") or fields.get("notes")
    if event.action == "process":
        reason = f"attempt {event.row['attempts']}"
    return {"entry_id": event.aggregate_id, "action": event.action, "from_state": event.from_state,
            "to_state": event.to_state, "actor": event.actor.name, "reason": reason}


def open_for_no_content(tx: Tx, event: Event) -> dict | None:
    """A work item escalated `no_content` (fewer than two sources): its question becomes a grey
    entry, so the automation keeps looking and a specialist can triage it."""
    if event.fields.get("reason") != NO_CONTENT:
        return None
    item = event.row
    entry = create_entry(tx, SYSTEM, subject=limits.clip(item["question"], limits.GREY_SUBJECT),
                         detail=f"Work item {item['id']} found {item['source_count'] or 0} source(s); "
                                f"at least 2 are needed.", origin="no_content", work_item_id=item["id"])
    return {"grey_entry": entry}


def retrigger_after_ingest(ctx: Context, event: Event) -> None:
    """After commit: a document arrived, so the waiting entries it may answer are processed again."""
    retrigger_for_document(ctx, event.aggregate_id)


def left_to_automation(event: Event) -> bool:
    """Who works an entry a move put in Pending (docs/architecture.md, "Grey queue"): the automation,
    unless it was added for someone's review. So it takes what the system raises (ingest, generation's
    `no_content`), an entry a person adds for nobody, and one a person puts back in Pending (unassign,
    reopen, reset); an entry added with an assignee (`grey add --assign-me`, the workstation's +)
    goes to their review at once and is never the automation's."""
    return event.to_state == "Pending" and not event.fields.get("assignee")


def processing_job(ctx: Context, event: Event) -> None:
    """After commit: an entry left to the automation gets its processing job."""
    if left_to_automation(event):
        enqueue_processing(ctx, event.aggregate_id)


def processing_jobs(ctx: Context, events: list[Event]) -> None:
    """`processing_job` for many entries, in one round trip."""
    jobs.enqueue_all(ctx, "generation", "process_grey_task",
                     [((e.aggregate_id,), processing_job_id(e.aggregate_id)) for e in events if left_to_automation(e)])


# ----------------------------------------------------------------------------- automation

def process(ctx: Context, entry_id: int, *, force: bool = False) -> dict:
    """The processing job: Pending/Retrying → Processing → Resolved, Retrying or Failed."""
    with ctx.db.begin() as tx:
        entry = engine.lock(tx, GREY, entry_id)
        state = entry["state"]
        due = entry["next_attempt_at"] is None or entry["next_attempt_at"] <= now()
        stale = state == "Processing" and entry["updated_at"] < now() - STALE_PROCESSING
        if state in ("Pending", "Retrying") and (due or force):
            entry = engine.apply(tx, GREY, entry, "process", SYSTEM,
                                 changes={"attempts": entry["attempts"] + 1}).row
        elif not stale:
            return {"entry": entry_id, "outcome": "nothing to do", "state": state}
    # Retrieve for exactly the question a resolution hands to generation, so an entry never
    # resolves on sources its work item would not find (which would escalate it straight back here).
    # The sources are counted as generation counts them (`extractive.grounding`): a passage retrieval
    # added only because it is near another (`related`) is no source.

    question = _as_question(entry["subject"])
    sources = grounding(question, retrieval.retrieve(ctx, question))
    with ctx.db.begin() as tx:
        current = engine.lock(tx, GREY, entry_id)
        if current["state"] != "Processing":
            return {"entry": entry_id, "outcome": "moved meanwhile", "state": current["state"]}
        if len(sources) >= 2:
            resolution = f"{len(sources)} sources found; a work item generates the answer"
            # The question goes with the move: a reaction opens the work item for it.
            moved = engine.apply(tx, GREY, current, "resolve", SYSTEM,
                                 fields={"resolution": resolution, "question": question},
                                 changes={"resolution": resolution}).row
            outcome = "resolved"
        elif current["attempts"] >= current["max_attempts"]:
            why = f"{current['attempts']} attempts found {len(sources)} source(s)"
            moved = engine.apply(tx, GREY, current, "fail", SYSTEM, fields={"reason": why},
                                 changes={"reason": why}).row
            outcome = "failed"
        else:
            wait = backoff(current["attempts"])
            why = f"found {len(sources)} source(s); retry in {wait:.0f}s"
            moved = engine.apply(tx, GREY, current, "retry", SYSTEM, fields={"reason": why},
                                 changes={"next_attempt_at": now() + timedelta(seconds=wait)}).row
            outcome = "retrying"
    return {"entry": entry_id, "outcome": outcome, "state": moved["state"], "sources": len(sources)}


def _as_question(subject: str) -> str:
    subject = subject.strip()
    return subject if subject.endswith("?") else f"What do the sources say about {subject}?"


def sweep(ctx: Context) -> dict:
    """Expire entries past their TTL; enqueue due retries and entries a dead worker left in Processing."""
    expired = []
    with ctx.db.begin() as tx:
        for entry in tx.all("SELECT * FROM grey_entries WHERE state IN ('Pending', 'Retrying') AND expires_at < %s "
                            "ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 500", (now(),)):
            why = f"TTL of {entry['ttl_seconds']}s ran out"
            engine.apply(tx, GREY, entry, "expire", SYSTEM, fields={"reason": why}, changes={"reason": why})
            expired.append(entry["id"])
    with ctx.db.read() as tx:
        due = [(r["id"], r["state"]) for r in tx.all(
            "SELECT id, state FROM grey_entries WHERE (state = 'Retrying' AND next_attempt_at <= %s) "
            "OR (state = 'Processing' AND updated_at < %s) OR (state = 'Pending' AND attempts = 0 "
            "AND created_at < %s) ORDER BY id LIMIT 500",
            (now(), now() - STALE_PROCESSING, now() - timedelta(minutes=1)))]
    # An entry whose job still waits in the queue (no worker running, say) is not queued again.
    due = [(entry_id, state) for entry_id, state in due if not job_waiting(ctx, entry_id)]
    for entry_id, state in due:
        # A Processing entry's job died in its worker after waiting its turn once: ahead of the backlog.
        enqueue_processing(ctx, entry_id, at_front=state == "Processing")
    return {"expired": expired, "requeued": [entry_id for entry_id, _ in due]}


# The entries a new document may answer: those waiting to be retried whose subject shares at least
# two lexemes with the document (its title and its text as `search` indexes them). Through the index
# of the retrying entries' subject lexemes (migration 0011), probed with the document's lexemes: the
# cost is that of the entries it finds, whatever else the grey queue holds. A Pending entry is not
# looked for: each move into Pending queues its processing job (reactions), which sees every
# document there is when it runs, so an entry with a job waiting is left alone (a job lost with
# Redis is queued again by the sweep).
DOCUMENT_TERMS = "SELECT tsvector_to_array(search) FROM source_documents WHERE id = %s"
MATCHING_ENTRIES = (
    "SELECT g.id FROM grey_entries g WHERE g.state = 'Retrying' "
    "AND tsvector_to_array(to_tsvector('english', g.subject)) && %(terms)s::text[] "
    "AND cardinality(ARRAY(SELECT unnest(tsvector_to_array(to_tsvector('english', g.subject))) "
    "INTERSECT SELECT unnest(%(terms)s::text[]))) >= 2 ORDER BY g.id")


def entries_matching(tx: Tx, document_id: int) -> list[int]:
    """The ids MATCHING_ENTRIES finds for a document, planned for its terms (not once for all)."""
    terms = tx.scalar(DOCUMENT_TERMS, (document_id,))
    if not terms:
        return []
    return [r["id"] for r in tx.all(MATCHING_ENTRIES, {"terms": terms}, prepare=False)]


def retrigger_for_document(ctx: Context, document_id: int) -> list[int]:
    """New sources arrived: process again, at once, the waiting entries they may answer
    (MATCHING_ENTRIES). An entry with a job still waiting in the queue is left alone: that job will
    see these sources when it runs (a folder of documents, ingested with no worker running, queues
    one job, not one per document)."""
    with ctx.db.read() as tx:
        ids = entries_matching(tx, document_id)
    ids = [entry_id for entry_id in ids if not job_waiting(ctx, entry_id)]
    for entry_id in ids:
        jobs.enqueue(ctx, "generation", "process_grey_task", entry_id, True,
                     job_id=retrigger_job_id(entry_id))
    return ids


# ----------------------------------------------------------------------------- read

def get(ctx: Context, entry_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(fetch(tx, "grey_entries", "grey entry", entry_id))


def show(ctx: Context, entry_id) -> dict:
    entry = get(ctx, entry_id)
    return {**entry, "transitions": valid_transitions(entry), "automation": automation_next(entry),
            "history": history(ctx, entry_id)}


# What the automation may do next to an entry, from which state, and when (docs/architecture.md, "Grey
# queue"): `grey show` and the workstation's detail say it, so an entry no person can move says what it
# can become. Every move of the machine that only the system makes has its row (a test checks).
AUTOMATION_WHEN = {
    # (action,  from)            when
    ("process", "Pending"):    "when a worker takes its processing job",
    ("process", "Retrying"):   "its next attempt",
    ("resolve", "Processing"): "once 2 sources are found (a work item then generates the answer)",
    ("retry",   "Processing"): "if fewer than 2 sources are found",
    ("fail",    "Processing"): "if its last attempt finds fewer than 2 sources",
    ("fail",    "Retrying"):   "if its last attempt finds fewer than 2 sources",
    ("expire",  "Pending"):    "when its TTL runs out",
    ("expire",  "Retrying"):   "when its TTL runs out",
}
# The time each of those is due, where the entry says it.
_DUE = {"process": "next_attempt_at", "expire": "expires_at"}


def automation_next(entry: dict) -> list[dict]:
    """The automation's next moves from the entry's state, in the machine's order: action, state it
    reaches, when, and the time it is due (`at`, ISO) where known."""
    out = []
    for m in GREY.moves:
        when = AUTOMATION_WHEN.get((m.action, entry["state"]))
        if when is not None and entry["state"] in m.sources:
            at = entry.get(_DUE.get(m.action, ""))
            out.append({"action": m.action, "to": m.to, "when": when, "at": at,
                        **({"attempt": entry["attempts"] + 1, "of": entry["max_attempts"]}
                           if m.action == "process" else {})})
    return out


def valid_transitions(entry: dict) -> list[dict]:
    return [{"action": m.action, "to": m.to, "needs": list(m.needs)}
            for m in GREY.moves if entry["state"] in m.sources and m.who.description != "the system"]


def transitions(ctx: Context, entry_id) -> dict:
    entry = get(ctx, entry_id)
    return {"id": entry["id"], "state": entry["state"], "version": entry["version"],
            "next_states": GREY.next_states(entry["state"]), "actions": valid_transitions(entry),
            "automation": automation_next(entry)}


def history(ctx: Context, entry_id) -> list[dict]:
    with ctx.db.read() as tx:
        entry = fetch(tx, "grey_entries", "grey entry", entry_id)
        return [public_row(r) for r in tx.all(
            "SELECT id, action, from_state, to_state, actor, reason, created_at FROM grey_transitions "
            "WHERE entry_id = %s ORDER BY id", (entry["id"],))]


def list_entries(ctx: Context, state: str | None = None, assignee: str | None = None, text: str | None = None,
                 *, limit: int = 200, offset: int = 0) -> list[dict]:
    where, params = [], []
    if state:
        where.append("state = %s")
        params.append(one_state(state, STATES, "grey state"))
    if assignee:
        where.append("assignee = %s")
        params.append(limits.text(assignee, "an assignee", limits.QUERY))
    if text and limits.text(text, "a filter", limits.QUERY).strip():
        # The words, or else the text as typed: a % or _ in it is a character, not a pattern.
        where.append("(search @@ websearch_to_tsquery('english', %s) OR subject ILIKE %s OR detail ILIKE %s)")
        pattern = limits.literal_pattern(text.strip())
        params += [text, pattern, pattern]
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    sql = (f"SELECT id, subject, state, origin, assignee, attempts, max_attempts, expires_at, next_attempt_at, "
           f"created_at, updated_at, version FROM grey_entries {'WHERE ' + ' AND '.join(where) if where else ''} "
           f"ORDER BY (state = 'Escalated') DESC, id DESC LIMIT %s OFFSET %s")
    with ctx.db.read() as tx:
        return [public_row(r) for r in tx.all(sql, [*params, limit, offset])]

