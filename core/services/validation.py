"""Candidate validation (DESIGN §5.1, §7): create, claim, decide, release; the Horn-type queues.

PostgreSQL is the truth and Redis the index: every state change commits first, and the queue push
or pub/sub notice runs after the commit (`tx.after_commit`). A claim pops an id (moving it in flight
in the same Redis step), commits `PENDING → IN_REVIEW` with one conditional statement, and only
then settles the in-flight mark; a claimer that dies in between leaves the id in flight, and the
next sweep puts it back at the head of its queue.
"""
from __future__ import annotations

import itertools
import logging
import time
from datetime import timedelta

from .. import engine, limits
from ..adapters.postgres import Tx, public_row
from ..adapters.redis_queues import EPOCH_KEY, IndexLost, ValidationQueue
from ..context import CHANNEL, Context, notice
from ..domain import HORN_TYPES, SYSTEM, Actor, parse_horn_type
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..events import now
from ..machines.candidate import CANDIDATE
from . import event_history, fetch, mutate, parse_id

QUEUED = ("PENDING", "DISPUTED")  # the states that sit in a Horn queue
IN_FLIGHT_GRACE = 60.0  # seconds an id may stay popped-but-uncommitted before a sweep returns it

_last_rank = 0.0
_counter = itertools.count()


def tail_rank() -> float:
    """Queue order for a push at the tail: microseconds since the epoch, strictly increasing."""
    global _last_rank
    _last_rank = max(_last_rank + 1, time.time() * 1e6)
    return _last_rank


def head_rank() -> float:
    """Queue order for a push at the head: later pushes sort first, as LPUSH does."""
    return -tail_rank()


def queue(ctx: Context) -> ValidationQueue:
    return ctx.validation_queue


# ----------------------------------------------------------------------------- create

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


# ----------------------------------------------------------------------------- claim

def _claim_changes(ctx: Context, actor: Actor) -> dict:
    return {"claimed_by": actor.name,
            "lease_expires_at": now() + timedelta(seconds=ctx.settings.claim_lease_seconds)}


def _claim_action(row: dict) -> str:
    return "re_review" if row["state"] == "DISPUTED" else "claim"


def claim_next(ctx: Context, actor: Actor, horn_type: str, *, idempotency_key: str | None = None) -> dict:
    """Pop the oldest candidate of a partition and claim it (`queue claim`); 404 when empty.

    The claim is one conditional statement (the row and its event are written only if the row is
    still at the version known and its event chain still ends where known), so no row lock is held
    across round trips; without an idempotency key it also runs outside a transaction and commits
    by itself. What it must know first comes with the pop from the read-ahead cache, or else from
    one read.
    """
    horn = parse_horn_type(horn_type)
    if not actor.holds(horn):
        raise Forbidden(f"{actor.name} ({actor.role}) holds no authority for {horn}: "
                        f"nothing was taken from the {horn} queue")
    q = queue(ctx)

    def attempt(tx, row):
        return engine.apply_if_unchanged(tx, CANDIDATE, row, _claim_action(row), actor,
                                         changes=_claim_changes(ctx, actor), idempotency_key=idempotency_key)

    def work(tx):
        refill = False
        rebuilt = False
        while True:
            popped = q.pop(horn)
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
            try:
                known = _read_ahead_row(tx, candidate_id, horn, popped.head)
                claimed = attempt(tx, known) if known is not None else None
                if claimed is None:  # no read-ahead entry, or a stale one: read the row itself
                    row = engine.read(tx, CANDIDATE, candidate_id, missing_ok=True)
                    if row is not None and row["state"] in QUEUED and row["horn_type"] == horn:
                        claimed = attempt(tx, row)
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
            tx.after_commit(lambda: q.done(horn, candidate_id, publish=(CHANNEL, _notice(claimed, "claim"))))
            return public_row(claimed)

    def run():
        if idempotency_key is None:
            with ctx.db.autocommit() as tx:
                return work(tx)
        return mutate(ctx, actor, "queue.claim", {"horn_type": horn}, work, idempotency_key=idempotency_key)

    try:
        return run()
    except IndexLost:
        # Redis lost its data (a restart, a flush) or missed a push after a commit, while this
        # workstation or command was running: rebuild the queues from PostgreSQL and pop again.
        reconcile_if_lost(ctx)
    return run()


def _partition_misses_rows(tx: Tx, q: ValidationQueue, horn: str) -> bool:
    """The partition's list is empty: does PostgreSQL hold more queued rows than it has in flight?
    Counted only up to what is in flight, so an empty queue costs one short index read."""
    held = q.held(horn)
    queued = tx.scalar("SELECT count(*) FROM (SELECT 1 FROM candidates WHERE horn_type = %s "
                       "AND state IN ('PENDING', 'DISPUTED') LIMIT %s) t", (horn, held + 1))
    return queued > held


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
    q = queue(ctx)
    with q.refill_turn(horn, seconds=5) as mine:
        ids = q.front(horn, READ_AHEAD) if mine else []
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
        claimed = engine.apply(tx, CANDIDATE, row, _claim_action(row), actor, expected_version=expected_version,
                               changes=_claim_changes(ctx, actor), idempotency_key=idempotency_key)
        tx.after_commit(lambda: (queue(ctx).remove(row["horn_type"], row["id"]), _notify(ctx, claimed, "claim")))
        return public_row(claimed)

    return mutate(ctx, actor, "candidates.claim",
                  {"id": parse_id(candidate_id, "candidate"), "expected_version": expected_version},
                  work, idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- decide

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
        tx.after_commit(lambda: _notify(ctx, decided, action))
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
    tx.after_commit(lambda: (queue(ctx).push_head(released["horn_type"], released["id"]),
                             _notify(ctx, released, "release")))
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
    q = queue(ctx)
    push = q.push_head if head else q.push_tail
    tx.after_commit(lambda: push(row["horn_type"], row["id"]))


def _notice(row: dict, action: str) -> str:
    return notice("candidate", action=action, id=row["id"], horn_type=row["horn_type"], state=row["state"],
                  actor=row.get("claimed_by"))


def _notify(ctx: Context, row: dict, action: str) -> None:
    ctx.notify("candidate", action=action, id=row["id"], horn_type=row["horn_type"], state=row["state"],
               actor=row.get("claimed_by"))


# ----------------------------------------------------------------------------- read

def get(ctx: Context, candidate_id) -> dict:
    with ctx.db.read() as tx:
        return public_row(fetch(tx, "candidates", "candidate", candidate_id))


def show(ctx: Context, candidate_id) -> dict:
    """The candidate with its source passages, its answer and its history, for review."""
    with ctx.db.read() as tx:
        row = fetch(tx, "candidates", "candidate", candidate_id)
        cid = row["id"]
        sources = []
        for ref in row["source_refs"] or []:
            doc_id = ref.get("document_id")
            if doc_id is None:
                sources.append({**ref, "passage": None})
                continue
            span = ref.get("span") or [0, 0]
            doc = tx.one("SELECT title, path, substr(content, greatest(1, %s - 300), %s + 600) AS excerpt, "
                         "greatest(0, %s - 300) AS excerpt_start, length(content) AS length "
                         "FROM source_documents WHERE id = %s",
                         (span[0] + 1, span[1] - span[0], span[0], doc_id))
            if doc:
                start = span[0] - doc["excerpt_start"]
                excerpt, match = _whole_lines(doc["excerpt"], [start, start + span[1] - span[0]],
                                             cut_before=doc["excerpt_start"] > 0,
                                             cut_after=doc["excerpt_start"] + len(doc["excerpt"]) < doc["length"])
                sources.append({**ref, "title": doc["title"], "excerpt": excerpt, "match": match})
        answer = current_answer(tx, cid)
        history_rows = event_history(tx, "candidate", cid)
    return {**public_row(row), "sources": sources, "answer": public_row(answer), "history": history_rows}


def _whole_lines(excerpt: str, match: list[int], *, cut_before: bool, cut_after: bool) -> tuple[str, list[int]]:
    """An excerpt cut out of a document by characters, trimmed so that it opens and closes on
    whole lines (else whole words) and never mid-word; the match moves with it, never cut."""
    start, end = match
    if cut_before:
        head = excerpt[:start]
        brk = head.find("\n")
        brk = brk if brk >= 0 else head.find(" ")
        drop = brk + 1 if brk >= 0 else 0
        excerpt, start, end = excerpt[drop:], start - drop, end - drop
    if cut_after:
        tail = excerpt[end:]
        brk = tail.rfind("\n")
        brk = brk if brk >= 0 else tail.rfind(" ")
        if brk >= 0:
            excerpt = excerpt[:end + brk]
    return excerpt, [start, end]


def history(ctx: Context, candidate_id) -> list[dict]:
    with ctx.db.read() as tx:
        return event_history(tx, "candidate", fetch(tx, "candidates", "candidate", candidate_id)["id"])


def list_candidates(ctx: Context, state: str | None = None, horn_type: str | None = None, *, limit: int = 100,
                    offset: int = 0, claimed_by: str | None = None) -> list[dict]:
    where, params = [], []
    if state:
        state = state.strip().upper()
        if state not in CANDIDATE.states:
            raise InvalidInput(f"unknown candidate state {state!r}: expected one of {', '.join(sorted(CANDIDATE.states))}")
        where.append("state = %s")
        params.append(state)
    if horn_type:
        where.append("horn_type = %s")
        params.append(parse_horn_type(horn_type))
    if claimed_by:
        where.append("claimed_by = %s")
        params.append(limits.text(claimed_by, "a user name", limits.QUERY))
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    sql = (f"SELECT id, question, text, horn_type, state, origin, claimed_by, lease_expires_at, version, created_at "
           f"FROM candidates {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY id LIMIT %s OFFSET %s")
    with ctx.db.read() as tx:
        return [public_row(r) for r in tx.all(sql, [*params, limit, offset])]



# ----------------------------------------------------------------------------- queues

def queue_stats(ctx: Context) -> list[dict]:
    """Per Horn type: pending, in review, disputed awaiting re-review, oldest pending age; and how
    many ids the Redis partition holds (`queued`), rebuilt first if Redis lost them."""
    reconcile_if_lost(ctx)
    with ctx.db.read() as tx:
        rows = {r["horn_type"]: r for r in tx.all(
            "SELECT h AS horn_type, "
            " (SELECT count(*) FROM candidates WHERE horn_type = h AND state = 'PENDING') AS pending, "
            " (SELECT count(*) FROM candidates WHERE horn_type = h AND state = 'IN_REVIEW') AS in_review, "
            " (SELECT count(*) FROM candidates WHERE horn_type = h AND state = 'DISPUTED') AS disputed, "
            " (SELECT min(created_at) FROM candidates WHERE horn_type = h AND state = 'PENDING') AS oldest "
            "FROM unnest(%s::text[]) AS h", (list(HORN_TYPES),))}
    at = now()
    q = queue(ctx)
    out = []
    for horn in HORN_TYPES:
        r = rows[horn]
        oldest = r["oldest"]
        out.append({"horn_type": horn, "pending": r["pending"], "in_review": r["in_review"],
                    "disputed": r["disputed"], "queued": q.length(horn),
                    "oldest_pending_age_seconds": round((at - oldest).total_seconds()) if oldest else None})
    return out


def reconcile(ctx: Context, horn_types: tuple[str, ...] | list[str] = HORN_TYPES) -> list[dict]:
    """Rebuild every partition (or those named) from PostgreSQL's queued rows, in their original order."""
    q = queue(ctx)
    out = []
    for horn in horn_types:
        with ctx.db.read() as tx:
            ids = [r["id"] for r in tx.all(
                "SELECT id FROM candidates WHERE horn_type = %s AND state IN ('PENDING', 'DISPUTED') "
                "ORDER BY queue_rank, id", (horn,))]
        before = q.length(horn)
        q.rebuild(horn, ids)
        out.append({"horn_type": horn, "queued": len(ids), "was": before})
    ctx.redis.set(EPOCH_KEY, time.time())
    ctx.notify("queue", action="reconcile")
    return out


REBUILD_SECONDS = 60  # the longest one rebuild may hold the others back (1,000,000 ids take about 2 s)


def reconcile_if_lost(ctx: Context) -> bool:
    """At start-up, and when a claim finds the reconcile mark gone: when Redis has lost its data
    (or missed a push) since the last reconcile, rebuild the queues and re-enqueue the work items
    it held. One EXISTS when nothing was lost."""
    if ctx.redis.exists(EPOCH_KEY):
        return False
    from . import generation

    # Every workstation and worker notices a flush at once: one rebuilds, the others wait for it.
    with queue(ctx).rebuild_turn(REBUILD_SECONDS):
        if ctx.redis.exists(EPOCH_KEY):
            return False  # rebuilt while we waited
        reconcile(ctx)
        generation.recover(ctx)
    return True


def sweep_in_flight(ctx: Context, grace: float = IN_FLIGHT_GRACE) -> dict:
    """Ids popped more than `grace` seconds ago and never committed (their claimer died) go back
    to the head of their queue; a claim reads PostgreSQL, so a stale one is simply skipped later."""
    q = queue(ctx)
    rescued = {h: q.rescue(h, grace) for h in HORN_TYPES}
    return {h: ids for h, ids in rescued.items() if ids}


QUEUE_SETTLE = 5.0  # seconds a push may take to follow its commit before a missing id counts as lost


def repair_queues(ctx: Context, settle: float = QUEUE_SETTLE) -> list[str]:
    """Rebuild the partitions that miss ids PostgreSQL has queued, and name them.

    A push that failed after its commit while Redis was unreachable leaves the reconcile mark in
    place (it could not be dropped either), so only a comparison finds it: what each partition
    holds (listed or in flight), read first, against the rows queued in PostgreSQL more than
    `settle` seconds ago, read second. Claims in between only make Redis look fuller, so a
    partition is rebuilt only when something is really missing. Counting every queued row, which
    the index answers alone, comes first; the timed count runs only when that one falls short.
    """
    q = queue(ctx)
    held = {h: q.held(h) for h in HORN_TYPES}
    with ctx.db.read() as tx:
        queued = {r["horn_type"]: r["n"] for r in tx.all(
            "SELECT horn_type, count(*) AS n FROM candidates WHERE state IN ('PENDING', 'DISPUTED') "
            "GROUP BY horn_type")}
        short = [h for h in HORN_TYPES if queued.get(h, 0) > held[h]]
        if not short:
            return []
        settled = {r["horn_type"]: r["n"] for r in tx.all(
            "SELECT horn_type, count(*) AS n FROM candidates WHERE state IN ('PENDING', 'DISPUTED') "
            "AND horn_type = ANY(%s) AND updated_at < now() - make_interval(secs => %s) GROUP BY horn_type",
            (short, settle))}
    lost = [h for h in short if settled.get(h, 0) > held[h]]
    if lost:
        logging.getLogger(__name__).warning("the %s queue(s) missed queued candidates: rebuilt", ", ".join(lost))
        reconcile(ctx, lost)
    return lost


def sweep(ctx: Context) -> dict:
    """Release expired claims, return ids stuck in flight, rebuild partitions that miss ids."""
    return {"released": release_expired(ctx), "rescued": sweep_in_flight(ctx), "rebuilt": repair_queues(ctx)}
