"""The claim path: take the oldest candidate of a Horn-type queue, or one named candidate, for review.

A claim pops an id (moving it in flight in the same Redis step), commits `PENDING → IN_REVIEW` with
one conditional statement, and only then settles the in-flight mark; a claimer that dies in between
leaves the id in flight, and the next sweep puts it back at the head of its queue.
"""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING

import psycopg

from ... import engine, notices
from ...adapters.postgres import Tx, public_row
from ...adapters.redis_queues import IndexLost, ValidationQueue
from ...domain import Actor, limits, parse_horn_type
from ...errors import Forbidden, NotFound, R2KError
from ...events import now
from ...machines.candidate import CANDIDATE
from ...outage import service_error
from ..common import parse_id
from ..unit_of_work import in_unit_of_work, keyed_request, saying_who
from ..validation import candidates, overlap
from . import candidate_views, queue_index
from .queue_index import IN_FLIGHT_GRACE, QUEUED, reconcile, reconcile_if_lost

if TYPE_CHECKING:
    from ...context import Context


def _claim_changes(ctx: Context, actor: Actor) -> dict:
    return {"claimed_by": actor.name,
            "lease_expires_at": now() + timedelta(seconds=ctx.settings.claim_lease_seconds)}


def _claim_action(row: dict) -> str:
    return "re_review" if row["state"] == "DISPUTED" else "claim"


def claim_next(ctx: Context, actor: Actor, horn_type: str, *, idempotency_key: str | None = None) -> dict:
    """Pop the oldest candidate of a partition and claim it (`queue claim`); 404 when empty.

    The claim is one conditional statement (the row and its event are written only if the row is
    still at the version known and its event chain still ends where known), so no row lock is held
    across round trips, and it runs outside a transaction and commits by itself. With an
    idempotency key (the workstation and the API always send one) the same statement inserts the
    key row with its response (engine.apply_if_unchanged, `kept`): one round trip to PostgreSQL,
    not five (BEGIN, the key row, the claim, the response, COMMIT). A key this user has used
    already fails that statement, writing nothing, and the claim goes the unit of work's way
    (`in_unit_of_work`), which returns the stored response, refuses another request's key (409), or starts
    an expired key's new window (docs/architecture.md, "Idempotency keys"). What the claim must
    know first comes with the pop from the read-ahead cache, or else from one read.
    """
    horn = parse_horn_type(horn_type)
    if not actor.holds(horn):
        raise Forbidden(f"{actor.name} ({actor.role}) holds no authority for {horn}: "
                        f"nothing was taken from the {horn} queue")
    q = queue_index.queue(ctx)
    args = {"horn_type": horn}
    keyed = None if idempotency_key is None else keyed_request(actor, "queue.claim", args, idempotency_key)

    def attempt(tx, row, kept):
        # Written, the move's reaction settles the in-flight id and tells the workstations, after
        # the commit and in one Redis step (`settle_claim`).
        try:
            moved = engine.apply_if_unchanged(tx, CANDIDATE, row, _claim_action(row), actor,
                                              changes=_claim_changes(ctx, actor), idempotency_key=idempotency_key,
                                              kept=kept)
        except psycopg.errors.UniqueViolation as exc:
            if kept is not None and exc.diag.constraint_name == "idempotency_keys_pkey":
                raise _KeyUsed() from None  # nothing was written: the unit of work's way, below
            raise
        if moved is None:
            return None
        return moved.outcome["response"] if kept is not None else public_row(moved.row)

    def work(tx, kept=None):
        # A queue requiring k > 1 reviews: ids this user reviewed already are set aside (in flight)
        # while the pop goes on, and go back to the head of the queue, in order, whatever happens.
        overlapping = overlap.reviews_for_claims(tx, horn) > 1
        aside: list[int] = []
        try:
            return take(tx, aside if overlapping else None, kept)
        finally:
            for candidate_id in reversed(aside):
                q.push_head(horn, candidate_id)
                q.done(horn, candidate_id)

    def take(tx, aside, kept):
        refill = False
        rebuilt = False
        while True:
            popped = q.pop(horn, skipping=actor.name)  # the oldest this user has not skipped, if any
            if popped is None:
                if q.rescue(horn, IN_FLIGHT_GRACE):
                    continue
                if not rebuilt and _partition_misses_rows(tx, q, horn):
                    # A push lost after its commit (Redis was away): rebuild from the truth now,
                    # rather than leave the candidates unreachable until a sweep that may never run.
                    reconcile(ctx, [horn])
                    rebuilt = True
                    continue
                raise NotFound(f"the {horn} queue is empty")
            candidate_id = popped.candidate_id
            if aside is not None and overlap.has_reviewed(tx, candidate_id, actor.name):
                aside.append(candidate_id)
                continue
            try:
                known = _read_ahead_row(tx, candidate_id, horn, popped.head)
                claimed = attempt(tx, known, kept) if known is not None else None
                if claimed is None:  # no read-ahead entry, or a stale one: read the row itself
                    row = engine.read(tx, CANDIDATE, candidate_id, missing_ok=True)
                    if row is not None and row["state"] in QUEUED and row["horn_type"] == horn:
                        claimed = attempt(tx, row, kept)
            except BaseException:
                q.push_head(horn, candidate_id)  # nothing committed: put it back where it was
                q.done(horn, candidate_id)
                raise
            if not refill and (popped.head is None or popped.cached < READ_AHEAD_LOW):
                refill = True
                tx.after_commit(lambda: refill_read_ahead(ctx, horn))
            if claimed is None:
                # A stale id (claimed or decided already), or the row moved between our read and
                # our write: whoever moved it owns it now (a release pushes it again). Drop it.
                q.done(horn, candidate_id)
                continue
            return claimed

    def run():
        if keyed is not None:
            try:
                with ctx.db.autocommit() as tx:
                    return work(tx, keyed)
            except _KeyUsed:  # a retry (or another request under this key): the id went back to the head
                return in_unit_of_work(ctx, actor, "queue.claim", args, work, idempotency_key=idempotency_key)
        with ctx.db.autocommit() as tx:
            return work(tx)

    try:
        return run()
    except IndexLost:
        # Redis lost its data (a restart, a flush) or missed a push after a commit, while this
        # workstation or command was running: rebuild the queues from PostgreSQL and pop again.
        reconcile_if_lost(ctx)
    return run()


class _KeyUsed(Exception):
    """A keyed claim's statement found the user's key row there already, and wrote nothing."""


def _partition_misses_rows(tx: Tx, q: ValidationQueue, horn: str) -> bool:
    """The partition's list is empty: does PostgreSQL hold a queued row that is not in flight?
    By ids, not counts: an id left in flight by a claim whose settle was lost must not hide a push
    lost at the same time. One short index read when the queue is truly empty."""
    return queue_index.misses_queued(tx, horn, q.in_flight(horn))


# The read-ahead: for the ids at the front of each queue, what a claim must know before it can
# sign its event (state, version, and the last seq and hash of the row's event chain), kept in
# Redis beside the queue, so a claim needs no read of its own. One claimer at a time refills it.
READ_AHEAD = 1024      # ids read ahead per refill


READ_AHEAD_LOW = 512   # refill when fewer entries than this are left


READ_AHEAD_TTL = 600   # seconds the entries live without a refill


def _read_ahead_row(tx: Tx, candidate_id: int, horn: str, entry: str | None) -> dict | None:
    try:
        state, version, seq, digest = (entry or "").split("|", 3)
        row = {"id": candidate_id, "horn_type": horn, "state": state, "version": int(version), "updated_at": None}
        head = (int(seq), digest)
    except ValueError:  # none, or not one of ours: read the row instead
        return None
    return engine.assume(tx, CANDIDATE, row, head) if state in QUEUED else None


def refill_read_ahead(ctx: Context, horn: str) -> int:
    """Read ahead the next READ_AHEAD ids of a partition (row and chain head in one snapshot).
    Best effort, after a claim has committed: a failure here only means later claims read."""
    try:
        return _refill(ctx, horn)
    except Exception as exc:  # noqa: BLE001 - the claim stands; say why the read-ahead did not
        logging.getLogger(__name__).warning("read-ahead of the %s queue failed: %s", horn, exc)
        return 0


def _refill(ctx: Context, horn: str) -> int:
    q = queue_index.queue(ctx)
    with q.refill_turn(horn, seconds=5) as mine:
        ids = q.front_unread(horn, READ_AHEAD) if mine else []  # those already read ahead stay as they are
        if not ids:
            return 0
        with ctx.db.read() as tx:
            rows = engine.read_heads(tx, CANDIDATE, ids, "t.id, t.state, t.version",
                                     "t.state IN ('PENDING', 'DISPUTED') AND t.horn_type = %s", (horn,))
        q.read_ahead(horn, {row["id"]: f"{row['state']}|{row['version']}|{seq}|{digest}"
                            for row, (seq, digest) in rows}, ttl=READ_AHEAD_TTL)
        return len(rows)


def claim(ctx: Context, actor: Actor, candidate_id: int, *, expected_version: int | None = None,
          idempotency_key: str | None = None) -> dict:
    """Claim one named candidate (`candidates claim ID`)."""
    def work(tx):
        row = engine.lock(tx, CANDIDATE, candidate_id)
        if row["state"] == "PENDING":
            overlap.refuse_reviewer(tx, row, actor)  # an independent review: not the same validator twice
        claimed = engine.apply(tx, CANDIDATE, row, _claim_action(row), actor, expected_version=expected_version,
                               changes=_claim_changes(ctx, actor), idempotency_key=idempotency_key).row
        # Taken by id, not popped: out of its queue's list after the commit.
        tx.after_commit(lambda: queue_index.queue(ctx).remove(row["horn_type"], row["id"]))
        return public_row(claimed)

    return in_unit_of_work(ctx, actor, "candidates.claim",
                           {"id": parse_id(candidate_id, "candidate"), "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)



# ----------------------------------------------------------------------------- the review loop

def settle_claim(ctx: Context, event) -> None:
    """After commit (reactions): the claimed id leaves the in-flight set and the workstations hear of
    it, in one Redis step that rides on this process's next pop when it comes within milliseconds
    (a claim is the hottest path there is: adapters/redis_queues.ClaimSettles)."""
    queue_index.queue(ctx).settle_claimed(event.row["horn_type"], event.aggregate_id,
                                          (notices.CHANNEL, notices.of(event)))


def next_for_review(ctx: Context, actor: Actor, horn_type: str, *, idempotency_key: str | None = None) -> dict | None:
    """Claim the oldest candidate of a queue and read it as a reviewer sees it; None when empty."""
    try:
        claimed = claim_next(ctx, actor, horn_type, idempotency_key=idempotency_key)
    except NotFound:
        return None
    return candidate_views.show(ctx, claimed["id"])


def resume_or_claim(ctx: Context, actor: Actor, horn_type: str, *, idempotency_key: str | None = None) -> dict:
    """Opening a queue: carry on with a claim this user already holds in it (leaving a queue keeps
    the claim), else claim the next. `resumed` says which."""
    mine = candidate_views.list_candidates(ctx, "IN_REVIEW", horn_type, limit=1, claimed_by=actor.name)
    if mine:
        return {"resumed": True, "shown": candidate_views.show(ctx, mine[0]["id"])}
    return {"resumed": False, "shown": next_for_review(ctx, actor, horn_type, idempotency_key=idempotency_key)}


def then_next(ctx: Context, actor: Actor, horn_type: str, key: str | None, done: dict) -> dict:
    """After a first step (a decision, a release, a skip): claim and read the next candidate of the
    same queue, returned as `done` (the first step's result) with `next` (None when the queue is
    empty) and `error`. Its failure is returned, not raised: the first step stands and must be
    reported as done."""
    try:
        shown = next_for_review(ctx, actor, horn_type, idempotency_key=f"{key}:next" if key else None)
        return {**done, "next": shown, "error": None}
    except R2KError as exc:
        return {**done, "next": None, "error": exc.as_dict()}
    except Exception as exc:  # whatever it was, the first step is made and must be said so
        translated = service_error(exc, ctx)
        error = translated.as_dict() if translated is not None else {
            "error": "InternalError", "status": 500, "message": f"{type(exc).__name__}: {exc}"}
        return {**done, "next": None, "error": error}


def decide_and_next(ctx: Context, actor: Actor, candidate_id, action: str, *, idempotency_key: str | None = None,
                    **fields) -> dict:
    """The validator's loop: decide a claimed candidate, then claim and read the next of its queue
    (`decided`, `next`: None when the queue is empty, `error` when the second step failed)."""
    decided = candidates.decide(ctx, actor, candidate_id, action, idempotency_key=idempotency_key, **fields)
    return then_next(ctx, actor, decided["candidate"]["horn_type"], idempotency_key, {"decided": decided})


def release_and_next(ctx: Context, actor: Actor, candidate_id, *, idempotency_key: str | None = None,
                     expected_version: int | None = None) -> dict:
    """Give a claim back and take the next candidate of its queue. The next is claimed first, so it is
    another one: the released candidate goes back to the head of the queue for someone else. A
    release refused after all (the claim moved meanwhile: its lease swept, say) gives the next back
    too, so a failed command leaves nothing claimed by it, and raises the release's error."""
    with ctx.db.read() as tx, saying_who(tx, actor):  # refused before anything is claimed, as the release would be
        row = engine.read(tx, CANDIDATE, candidate_id)
        engine.plan(CANDIDATE, row, "release", actor, expected_version=expected_version)
    shown = then_next(ctx, actor, row["horn_type"], idempotency_key, {})
    try:
        released = candidates.release(ctx, actor, candidate_id, expected_version=expected_version,
                                      idempotency_key=idempotency_key)
    except Exception:
        if shown["next"] is not None:
            _give_back(ctx, actor, shown["next"])
        raise
    return {"released": released, **shown}


def _give_back(ctx: Context, actor: Actor, claimed: dict) -> None:
    """Release a candidate this command claimed but cannot report (to the head of its queue). If that
    fails too, its lease runs out and the sweep gives it back: said in the log, not raised over the
    error the user must see."""
    try:
        candidates.release(ctx, actor, claimed["id"], expected_version=claimed.get("version"))
    except Exception as exc:  # noqa: BLE001 - the first failure is the one to raise
        logging.getLogger(__name__).warning("candidate %s, claimed by %s for a release that failed, was not "
                                            "given back (its lease will run out): %s", claimed["id"],
                                            actor.name, exc)


def held(ctx: Context, actor: Actor) -> list[dict]:
    """The claims this user holds now (leaving the workstation asks what to do with them)."""
    return candidate_views.list_candidates(ctx, "IN_REVIEW", claimed_by=actor.name, limit=limits.LIST_LIMIT[1])


def release_held(ctx: Context, actor: Actor) -> list[int]:
    """Give back every claim this user holds, each to the head of its queue; the ids released. A
    claim that moved meanwhile (its lease swept, decided elsewhere) is passed over."""
    released = []
    for row in held(ctx, actor):
        try:
            candidates.release(ctx, actor, row["id"], expected_version=row["version"])
        except R2KError as exc:
            if exc.status >= 500:  # a service down: said by the caller
                raise
            continue
        released.append(row["id"])
    return released
