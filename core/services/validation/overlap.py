"""Overlap: k independent, blind reviews per candidate, adjudication of disagreement (docs/architecture.md,
"Overlap").

A queue's setting (`r2k queue config HORN --reviews K`, an admin) says how many validators must
decide each of its candidates; without one a queue takes one, and nothing here runs. Under k > 1:

- a decision short of the k-th is a `review` move: the decision is kept as a review (open), the
  claim ends and the candidate goes back to the tail of its queue; the validator who reviewed it
  can claim it no more while the round is open;
- the k-th decision closes the round: when every review has the same action (and, for revise, the
  same text, whitespace aside) it is the decision itself, made through the approve, revise or
  reject move with every reaction it has (publication, records); otherwise a `disagree` move
  sends the candidate to ADJUDICATION, where a specialist sees every review side by side and
  decides it, by choosing one of them or with their own decision;
- no reviewer sees another's decision: the review events' reasons and texts are left out of what a
  reader of the candidate is shown (candidate_views.show) while its round is open.
"""
from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM, Actor, limits, parse_horn_type
from ...engine import Event
from ...errors import Conflict, Forbidden, InvalidInput, NotFound
from ...events import now
from ...machines.candidate import CANDIDATE
from ..common import parse_id
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...context import Context

MAX_REVIEWS = 9
DECISIONS = ("approve", "revise", "reject")


# ----------------------------------------------------------------------------- the queue's setting

def parse_reviews(value) -> int:
    """`--reviews K`: a whole number from 1 to MAX_REVIEWS, else a 400 that says so."""
    text = str(value).strip() if value is not None else ""
    if not text.isdigit() or not 1 <= int(text) <= MAX_REVIEWS:
        raise InvalidInput(f"--reviews must be a whole number from 1 to {MAX_REVIEWS}, not {str(value)[:40]!r}")
    return int(text)


def may_configure(actor: Actor) -> None:
    if actor.role != "admin":
        raise Forbidden(f"{actor.name} ({actor.role}) may not configure a queue: only an admin may")


def reviews_required(tx: Tx, horn_type: str) -> int:
    """k for a queue now: its newest setting, 1 without one."""
    k = tx.scalar("SELECT reviews FROM queue_settings WHERE horn_type = %s ORDER BY id DESC LIMIT 1", (horn_type,))
    return int(k) if k is not None else 1


_SEEN: dict[str, tuple[int, float]] = {}  # Horn type -> (k, when read): the claim path's copy
SEEN_SECONDS = 2.0


def reviews_for_claims(tx: Tx, horn_type: str) -> int:
    """k as the claim path reads it: at most SEEN_SECONDS old, so a claim (the hottest path there
    is) costs no more round trips than it did. A copy a moment stale does no harm: the decision
    reads k afresh under the row's lock and refuses a reviewer's second review (409), and the
    unique index on open reviews holds it in the database."""
    seen = _SEEN.get(horn_type)
    if seen is not None and time.monotonic() - seen[1] < SEEN_SECONDS:
        return seen[0]
    k = reviews_required(tx, horn_type)
    _SEEN[horn_type] = (k, time.monotonic())
    return k


def configure(ctx: Context, actor: Actor, horn_type: str, reviews, *, idempotency_key: str | None = None) -> dict:
    """A queue's new setting (an admin): a row and its signed event; the value in force already is a
    400, so a repeat makes no empty version. Candidates already waiting follow it from their next
    decision on (an open round closes when it has the k now in force)."""
    may_configure(actor)
    horn = parse_horn_type(horn_type)
    k = parse_reviews(reviews)

    def work(tx: Tx) -> dict:
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('queue_settings:' || %s))", (horn,))
        if reviews_required(tx, horn) == k:
            raise InvalidInput(f"the {horn} queue already requires {k} review{'s' if k > 1 else ''} per candidate")
        event = engine.record(tx, "queue_settings", "queue_settings",
                              {"horn_type": horn, "reviews": k, "author": actor.name}, actor, event_type="configure")
        tx.after_commit(lambda: _SEEN.pop(horn, None))  # this process's claims read it at once
        return public_row(event.row)

    return in_unit_of_work(ctx, actor, "queue.config", {"horn_type": horn, "reviews": k}, work,
                           idempotency_key=idempotency_key)


def settings(ctx: Context, horn_type: str) -> dict:
    horn = parse_horn_type(horn_type)
    with ctx.db.read() as tx:
        row = tx.one("SELECT * FROM queue_settings WHERE horn_type = %s ORDER BY id DESC LIMIT 1", (horn,))
    return {"horn_type": horn, "reviews": row["reviews"] if row else 1, "set_by": row["author"] if row else None,
            "set_at": row["created_at"].isoformat() if row else None}


# ----------------------------------------------------------------------------- reviews

def open_reviews(tx: Tx, candidate_id: int) -> list[dict]:
    return tx.all("SELECT * FROM candidate_reviews WHERE candidate_id = %s AND status = 'open' ORDER BY id",
                  (candidate_id,))


def has_reviewed(tx: Tx, candidate_id: int, actor_name: str) -> bool:
    """Whether this validator holds an open review of the candidate (so may not claim it again)."""
    return bool(tx.scalar("SELECT EXISTS (SELECT 1 FROM candidate_reviews WHERE candidate_id = %s AND actor = %s "
                          "AND status = 'open')", (candidate_id, actor_name)))


def refuse_reviewer(tx: Tx, row: dict, actor: Actor) -> None:
    if has_reviewed(tx, row["id"], actor.name):
        raise Conflict(f"you reviewed candidate {row['id']} already: another validator decides it next "
                       f"(its queue requires independent reviews)")


def _same(a: dict, b: dict) -> bool:
    if a["action"] != b["action"]:
        return False
    if a["action"] == "revise":
        return " ".join((a["revised_text"] or "").split()) == " ".join((b["revised_text"] or "").split())
    return True


def agree(reviews: list[dict]) -> bool:
    """k decisions agree: the same action, and for revise the same text (whitespace aside)."""
    return all(_same(reviews[0], r) for r in reviews[1:])


def _round(tx: Tx, candidate_id: int) -> int:
    """The round the candidate's open reviews belong to (a new one after the last closed)."""
    return int(tx.scalar("SELECT coalesce(max(round) FILTER (WHERE status = 'open'), max(round) + 1, 1) "
                         "FROM candidate_reviews WHERE candidate_id = %s AND status <> 'undone'", (candidate_id,)))


def _insert_review(tx: Tx, actor: Actor, candidate_id: int, action: str, text: str | None, reason: str | None,
                   status: str) -> dict:
    at = now()
    return engine.record(tx, "candidate_review", "candidate_reviews", {
        "candidate_id": candidate_id, "round": _round(tx, candidate_id), "actor": actor.name, "action": action,
        "revised_text": text.strip() if action == "revise" and text else None, "reason": reason,
        "status": status, "closed_at": at if status != "open" else None}, actor, event_type="review").row


def _close_round(tx: Tx, candidate_id: int, status: str) -> list[dict]:
    """The round's open reviews closed (`agreed`, `disagreed`, `void`), by the system, an event each."""
    return [engine.update(tx, "candidate_review", "candidate_reviews", row, {"status": status, "closed_at": now()},
                          SYSTEM, event_type=f"review_{status}").row
            for row in open_reviews(tx, candidate_id)]


def decide(tx: Tx, actor: Actor, row: dict, action: str, text: str | None, reason: str | None,
           k: int, rank: float, idempotency_key: str | None = None) -> Event | None:
    """A decision on a claimed candidate of a queue requiring k > 1 reviews, its move's checks made
    (candidates.decide): the `review` or `disagree` move's event, or None when the decision closes an
    agreeing round and is to be made as it is (its review kept, the round closed `agreed`).
    A re-review of a disputed answer is one decision, as ever: it is not asked here."""
    refuse_reviewer(tx, row, actor)
    earlier = open_reviews(tx, row["id"])
    fields = {"decision": action, "revised_text": text, "reason": reason}
    changes = {"claimed_by": None, "lease_expires_at": None}
    if len(earlier) + 1 < k:  # back to the tail of its queue (`rank`), for the next validator
        return engine.apply(tx, CANDIDATE, row, "review", actor, fields=fields, changes={**changes, "queue_rank": rank},
                            idempotency_key=idempotency_key)
    mine = {"action": action, "revised_text": text.strip() if text else None}
    if agree([*earlier, mine]):
        _insert_review(tx, actor, row["id"], action, text, reason, "agreed")  # in the round, then closing it
        _close_round(tx, row["id"], "agreed")
        return None
    return engine.apply(tx, CANDIDATE, row, "disagree", actor, fields=fields, changes=changes,
                        idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- reactions (core/reactions.py)

def record_review(tx: Tx, event: Event) -> dict:
    """A `review` keeps the decision as an open review; a `disagree` keeps it and closes the round
    `disagreed` with the others (their candidate awaits adjudication)."""
    f = event.fields
    if event.action == "disagree":  # in the round, then closing it
        made = _insert_review(tx, event.actor, event.aggregate_id, f["decision"], f.get("revised_text"),
                              f.get("reason"), "disagreed")
        _close_round(tx, event.aggregate_id, "disagreed")
    else:
        made = _insert_review(tx, event.actor, event.aggregate_id, f["decision"], f.get("revised_text"),
                              f.get("reason"), "open")
    return {"review": made}


def void_open(tx: Tx, event: Event) -> None:
    """A candidate escalated or withdrawn while its round was open, or decided once its queue's k was
    lowered to 1: its open reviews count no more (an agreeing round is closed already)."""
    _close_round(tx, event.aggregate_id, "void")


# ----------------------------------------------------------------------------- adjudication

def may_adjudicate(actor: Actor) -> None:
    if actor.role not in ("specialist", "admin"):
        raise Forbidden(f"{actor.name} ({actor.role}) may not adjudicate: only a specialist or an admin may")


def _last_disagreed(tx: Tx, candidate_id: int) -> list[dict]:
    return tx.all("SELECT * FROM candidate_reviews WHERE candidate_id = %s AND status = 'disagreed' AND round = "
                  "(SELECT max(round) FROM candidate_reviews WHERE candidate_id = %s AND status = 'disagreed') "
                  "ORDER BY id", (candidate_id, candidate_id))


def adjudication(ctx: Context, actor: Actor, candidate_id) -> dict:
    """A candidate awaiting adjudication with every review of its round side by side (a specialist)."""
    may_adjudicate(actor)
    cid = parse_id(candidate_id, "candidate")
    with ctx.db.read() as tx:
        row = engine.read(tx, CANDIDATE, cid)
        reviews = _last_disagreed(tx, cid)
    if not reviews:
        raise NotFound(f"candidate {cid} has no disagreement to adjudicate")
    return {"candidate": public_row(row), "reviews": [public_row(r) for r in reviews]}


def list_adjudications(ctx: Context, actor: Actor, *, limit: int = 100) -> list[dict]:
    may_adjudicate(actor)
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    with ctx.db.read() as tx:
        rows = tx.all("SELECT c.id, c.horn_type, c.question, c.version, c.updated_at, "
                      "(SELECT string_agg(r.actor || ': ' || r.action, ', ' ORDER BY r.id) FROM candidate_reviews r "
                      " WHERE r.candidate_id = c.id AND r.status = 'disagreed') AS reviews "
                      "FROM candidates c WHERE c.state = 'ADJUDICATION' ORDER BY c.updated_at, c.id LIMIT %s", (limit,))
    return [public_row(r) for r in rows]


def adjudicate(ctx: Context, actor: Actor, candidate_id, *, choose=None, action: str | None = None,
               text: str | None = None, reason: str | None = None, expected_version: int | None = None,
               idempotency_key: str | None = None) -> dict:
    """Decide a candidate in ADJUDICATION (a specialist): `choose` one of its reviews (by id), or
    make one's own decision (`action` approve, revise with `text`, reject with `reason`). The move is
    the approve, revise or reject from ADJUDICATION: its reactions publish or retire as ever."""
    may_adjudicate(actor)
    cid = parse_id(candidate_id, "candidate")
    if (choose is None) == (action is None):
        raise InvalidInput("adjudicate by choosing one review (--choose REVIEW_ID) or with your own decision "
                           "(--action approve|revise|reject), one of the two")
    chosen_id = parse_id(choose, "review") if choose is not None else None
    if action is not None and action not in DECISIONS:
        raise InvalidInput(f"unknown decision {action!r}: expected approve, revise or reject")
    limits.text(text, "an answer", limits.ANSWER)
    limits.text(reason, "a reason", limits.REASON)

    def work(tx: Tx) -> dict:
        row = engine.lock(tx, CANDIDATE, cid)
        reviews = _last_disagreed(tx, cid) if row["state"] == "ADJUDICATION" else []
        decided_action, decided_text, decided_reason = action, text, reason
        if chosen_id is not None:
            chosen = next((r for r in reviews if r["id"] == chosen_id), None)
            if chosen is None and row["state"] == "ADJUDICATION":
                raise InvalidInput(f"review {chosen_id} is not one of candidate {cid}'s: choose one of "
                                   f"{', '.join(str(r['id']) for r in reviews)}")
            if chosen is not None:
                decided_action, decided_text = chosen["action"], chosen["revised_text"]
                decided_reason = reason or chosen["reason"] or f"adjudicated: {chosen['actor']}'s review chosen"
        decided_action = decided_action or "approve"
        fields = {"revised_text": decided_text if decided_action == "revise" else None,
                  "reason": decided_reason, "review": chosen_id}
        engine.plan(CANDIDATE, row, decided_action, actor, {k: v for k, v in fields.items() if v is not None},
                    expected_version)
        changes = {"claimed_by": None, "lease_expires_at": None}
        if decided_action == "revise":
            changes["text"] = decided_text.strip()
        decided = engine.apply(tx, CANDIDATE, row, decided_action, actor, fields=fields, changes=changes,
                               expected_version=expected_version, idempotency_key=idempotency_key)
        return {"candidate": public_row(decided.row), "chosen": chosen_id,
                **{k: public_row(v) for k, v in decided.outcome.items()}}

    return in_unit_of_work(ctx, actor, "candidates.adjudicate",
                           {"id": cid, "choose": chosen_id, "action": action, "text": text, "reason": reason,
                            "expected_version": expected_version}, work, idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- undo of an open review

def last_open_review(tx: Tx, actor: Actor) -> dict | None:
    return tx.one("SELECT * FROM candidate_reviews WHERE actor = %s AND status <> 'undone' ORDER BY id DESC LIMIT 1",
                  (actor.name,))


def undo_review(ctx: Context, tx: Tx, actor: Actor, review: dict) -> dict:
    """Take back an open review: the review is undone and the candidate, still waiting in its queue,
    is claimed again by its reviewer (`unreview`, whose reaction takes its id out of the queue), with
    a fresh lease. Refused (409) once another
    validator claimed it or past the undo window."""
    cid = review["candidate_id"]
    row = engine.lock(tx, CANDIDATE, cid)
    age = (now() - review["created_at"]).total_seconds()
    if age > ctx.settings.undo_seconds:
        raise Conflict(f"your review of candidate {cid} was {int(age)} s ago, past the "
                       f"{ctx.settings.undo_seconds:g} s undo window")
    if row["state"] != "PENDING":
        raise Conflict(f"candidate {cid} moved on since your review (it is {row['state']} now, claimed by "
                       f"{row['claimed_by'] or 'nobody'}): your review stands")
    engine.update(tx, "candidate_review", "candidate_reviews", review, {"status": "undone", "closed_at": now()},
                  actor, event_type="review_undone")
    claimed = engine.apply(tx, CANDIDATE, row, "unreview", actor, fields={"review": review["id"]}, changes={
        "claimed_by": actor.name,
        "lease_expires_at": now() + timedelta(seconds=ctx.settings.claim_lease_seconds)}).row
    return {"undone": {"action": "review", "decision": review["action"], "review": review["id"]},
            "candidate": public_row(claimed)}
