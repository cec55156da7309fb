"""The Redis index of the validation queues and its upkeep (docs/architecture.md, "Queues").

PostgreSQL is the truth and Redis the index: one FIFO list per Horn type of the candidates that sit
`PENDING` or `DISPUTED`, rebuilt from PostgreSQL whenever Redis lost data or missed a push
(`reconcile`, `reconcile_if_lost`, `repair_queues`), and the ids a dead claimer left in flight
returned to the head of their queue (`sweep_in_flight`).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ...adapters.redis_queues import EPOCH_KEY, ValidationQueue, queue_key
from ...domain import HORN_TYPES
from ..answering import generation

if TYPE_CHECKING:
    from ...context import Context


QUEUED = ("PENDING", "DISPUTED")  # the states that sit in a Horn queue


IN_FLIGHT_GRACE = 60.0  # seconds an id may stay popped-but-uncommitted before a sweep returns it


def queue(ctx: Context) -> ValidationQueue:
    return ctx.validation_queue


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


def push_tail(ctx: Context, event) -> None:
    """After commit (reactions): a candidate entered PENDING; it joins the tail of its queue."""
    queue(ctx).push_tail(event.row["horn_type"], event.aggregate_id)


def push_tail_all(ctx: Context, events: list) -> None:
    """`push_tail` for many candidates (one document's), in one round trip."""
    queue(ctx).push_tail_all([(event.row["horn_type"], event.aggregate_id) for event in events])


def pull(ctx: Context, event) -> None:
    """After commit (reactions): a queued candidate left its queue by a move no claim made (withdrawn);
    its id and read-ahead entry go (a claim would drop it anyway, as it drops every id no longer
    PENDING, but the queue's length would count it until then)."""
    queue(ctx).remove(event.row["horn_type"], event.aggregate_id)


def pull_all(ctx: Context, events: list) -> None:
    """`pull` for many candidates, in one round trip."""
    queue(ctx).remove_all([(event.row["horn_type"], event.aggregate_id) for event in events])


def move_horn(ctx: Context, event) -> None:
    """After commit (reactions): a waiting candidate was refined; when its Horn type changed, it leaves
    the old partition for the tail of the new one in one Redis step (the event's `before` says the old)."""
    before = (event.fields.get("before") or {}).get("horn_type")
    if before and before != event.row["horn_type"]:
        queue(ctx).move(before, event.row["horn_type"], event.aggregate_id)


def push_head(ctx: Context, event) -> None:
    """After commit (reactions): a candidate went back (released, disputed); it goes to the head."""
    queue(ctx).push_head(event.row["horn_type"], event.aggregate_id)


REBUILD_SECONDS = 60  # the longest one rebuild may hold the others back (1,000,000 ids take about 2 s)


def reconcile_if_lost(ctx: Context) -> bool:
    """At start-up, and when a claim finds the reconcile mark gone: when Redis has lost its data
    (or missed a push) since the last reconcile, rebuild the queues and re-enqueue the work items
    it held. One EXISTS when nothing was lost."""
    if ctx.redis.exists(EPOCH_KEY):
        return False

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


def misses_queued(tx, horn: str, held, settle: float | None = None) -> bool:
    """Does PostgreSQL hold a row queued in `horn` (given `settle`, queued more than that many seconds
    ago) whose id is not in `held`? An anti join against the ids as one array, hashed, so a million
    queued rows and as many held ids cost one scan, where `NOT (id = ANY(ids))` compared every row
    with every id (a sweep over 1,000,000 candidates ran for many minutes, each sweep starting
    another once its lock had lapsed; bench/review.py times it). Planned for its array every time: a
    plan made once without it (a prepared statement's) loops over the array for every row again."""
    settled = "" if settle is None else "AND c.updated_at < now() - make_interval(secs => %s) "
    return bool(tx.scalar(
        "SELECT EXISTS (SELECT 1 FROM candidates c WHERE c.horn_type = %s AND c.state IN ('PENDING', 'DISPUTED') "
        f"{settled}AND NOT EXISTS (SELECT 1 FROM unnest(%s::bigint[]) AS held(id) WHERE held.id = c.id))",
        (horn, *(() if settle is None else (settle,)), list(held)), prepare=False))


# The repair check's watermark (docs/architecture.md, "Queues"): the PostgreSQL time up to which every
# queued row is known to be held by its partition. Each sweep looks only at the rows queued since
# (REPAIR_OVERLAP earlier, for a commit that landed late) and moves it on when its check is done, so
# a sweep that dies midway leaves it where it was and the next one looks again. It lapses after
# REPAIR_FULL_SECONDS (and is gone when Redis lost its data): a full comparison of every id then
# starts (`FullRepair`), set at the time it froze the partitions from, and the lapse counts again
# from when it ends.
REPAIR_MARK = "raw_to_knowledge:queue_repair_mark"
REPAIR_OVERLAP = 60.0
REPAIR_FULL_SECONDS = 3600
LOOKUP_LIMIT = 256  # changed ids of a partition looked up one by one near the ends of its list; more: the ends read
REPAIR_BUDGET = 0.5  # seconds of a full comparison a sweep takes on: with its last step, under a tenth of its interval


def repair_queues(ctx: Context, settle: float = QUEUE_SETTLE, budget: float = REPAIR_BUDGET) -> list[str]:
    """Rebuild the partitions that miss ids PostgreSQL has queued, and name them.

    A push that failed after its commit while Redis was unreachable leaves the reconcile mark in
    place (it could not be dropped either), so only a comparison finds it. It costs what changed
    since the last sweep (`REPAIR_MARK`): the rows queued (entered or moved in a queue) since then,
    by an index of the queued rows by `updated_at` (migration 0024), each looked up in Redis
    (`ValidationQueue.not_held`). Without the mark, a full comparison of every id starts
    (`FullRepair`); it goes on for `budget` seconds a sweep, from where the last one left it, until
    it is done. An id Redis lacks counts as lost only if PostgreSQL, read again after Redis, still
    has it queued as it was (a claim in between takes it from both).
    """
    raw = ctx.redis.get(REPAIR_MARK)
    with ctx.db.read() as tx:
        upto = float(tx.scalar("SELECT extract(epoch FROM now()) - %s", (settle,)))
    full = FullRepair(ctx)
    if raw is None:
        full.start(upto)  # it compares every row queued up to `upto`; the mark covers what comes after
        ctx.redis.set(REPAIR_MARK, repr(upto), ex=REPAIR_FULL_SECONDS)
        lost = []
    else:
        lost = _repair_since(ctx, float(raw) - REPAIR_OVERLAP, upto)
    if lost:
        logging.getLogger(__name__).warning("the %s queue(s) missed queued candidates: rebuilt", ", ".join(lost))
        reconcile(ctx, lost)
    if raw is not None:  # only once the check is done
        ctx.redis.set(REPAIR_MARK, repr(upto), keepttl=True)
    if full.running():
        found = full.resume(budget)
        lost += [horn for horn in found if horn not in lost]
        if not full.running():  # done: the lapse counts from the last full comparison
            ctx.redis.expire(REPAIR_MARK, REPAIR_FULL_SECONDS)
    return lost


def _repair_since(ctx: Context, since: float, upto: float) -> list[str]:
    q = queue(ctx)
    window = (since, upto)
    with ctx.db.read() as tx:
        rows = tx.all("SELECT horn_type, id FROM candidates WHERE state IN ('PENDING', 'DISPUTED') "
                      "AND updated_at > to_timestamp(%s) AND updated_at <= to_timestamp(%s)", window)
    changed: dict[str, list[int]] = {}
    for row in rows:
        changed.setdefault(row["horn_type"], []).append(row["id"])
    lost = []
    for horn, ids in changed.items():
        missing = q.not_held(horn, ids) if len(ids) <= LOOKUP_LIMIT else q.not_held_near_ends(horn, ids)
        if missing and _still_queued(ctx, horn, missing, upto):
            lost.append(horn)
    return lost


def _still_queued(ctx: Context, horn: str, ids, upto: float) -> bool:
    """Still queued as it was, read after Redis: lost indeed."""
    with ctx.db.read() as tx:
        return bool(tx.scalar("SELECT EXISTS (SELECT 1 FROM candidates WHERE id = ANY(%s) AND horn_type = %s AND "
                              "state IN ('PENDING', 'DISPUTED') AND updated_at <= to_timestamp(%s))",
                              (sorted(ids), horn, upto)))


class FullRepair:
    """The comparison of every queued id with its partition, in steps a sweep can afford, across as
    many sweeps as it needs; its place is in Redis (`PASS`), so a sweep that dies midway, or
    another process's next sweep, goes on from the last step done.

    It starts by freezing every partition (`ValidationQueue.freeze`: its list and in-flight ids,
    copied in one step after PostgreSQL's time `upto` was read). Then, in steps:
    1. *sort*: a page of a frozen copy is taken off its head and its ids put in buckets by id range
       (`BUCKET` ids wide), in one MULTI, so a step is done whole or not at all;
    2. *compare*: one id range at a time, every Horn type at once, PostgreSQL's rows queued in it
       since before `upto` and unchanged since (so queued when the copy was made) against the
       bucket's ids; a Horn type with one missing is rebuilt and compared no further;
    3. *recount*: one (Horn type, state) of the picker's counts counted afresh (`recount`), a
       sweep's share of its own (it scans that state's index entries: the one step that grows with
       the queue, 10,000,000 PENDING rows in about half a second).
    Nothing is ever shipped to PostgreSQL as one array, and no reply holds more than a page or a
    bucket. Redis holds about one more copy of the queues while it runs.
    """

    PASS = "raw_to_knowledge:queue_repair_pass"
    PAGE = 50_000
    BUCKET = 100_000

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.redis = ctx.redis

    @staticmethod
    def copy_key(horn: str) -> str:
        return f"{queue_key(horn)}:repair"

    @staticmethod
    def bucket_key(horn: str, bucket: int) -> str:
        return f"{queue_key(horn)}:repair:{bucket}"

    def running(self) -> bool:
        return bool(self.redis.exists(self.PASS))

    def start(self, upto: float) -> None:
        self.discard()
        q = queue(self.ctx)
        for horn in HORN_TYPES:
            q.freeze(horn, self.copy_key(horn), REPAIR_FULL_SECONDS)
        self.redis.hset(self.PASS, mapping={"upto": repr(upto), "phase": "sort", "sorting": 0, "bucket": 0,
                                            "rebuilt": ""})
        self.redis.expire(self.PASS, REPAIR_FULL_SECONDS)

    def discard(self) -> None:
        keys = [self.PASS, *(self.copy_key(h) for h in HORN_TYPES)]
        keys += self.redis.scan_iter(match=self.bucket_key("*", "*"), count=1000)  # what a dead one left
        self.redis.delete(*keys)

    def resume(self, budget: float) -> list[str]:
        """Steps until `budget` seconds are spent (at least one) or the comparison is done; the
        Horn types found short, rebuilt."""
        deadline = time.monotonic() + budget
        lost: list[str] = []
        steps = 0
        while self.running():
            state = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
                     for k, v in self.redis.hgetall(self.PASS).items()}
            if state["phase"] == "sort":
                self._sort(state)
            elif state["phase"] == "compare":
                lost += self._compare(state)
            elif steps:
                break  # a recount scans one (Horn type, state) whole: a sweep's share of its own
            else:
                self._recount(state)
            steps += 1
            if time.monotonic() >= deadline:
                break
        return lost

    def _sort(self, state: dict) -> None:
        index = int(state["sorting"])
        if index >= len(HORN_TYPES):
            with self.ctx.db.read() as tx:
                last = tx.scalar("SELECT coalesce(max(id), 0) FROM candidates")
            self.redis.hset(self.PASS, mapping={"phase": "compare", "last": last})
            return
        horn = HORN_TYPES[index]
        page = self.redis.lrange(self.copy_key(horn), 0, self.PAGE - 1)
        buckets: dict[int, list[bytes]] = {}
        for raw in page:
            buckets.setdefault(int(raw) // self.BUCKET, []).append(raw)
        pipe = self.redis.pipeline(transaction=True)
        for bucket, ids in buckets.items():  # one entry per page and bucket: its ids, comma-joined
            pipe.rpush(self.bucket_key(horn, bucket), b",".join(ids))
            pipe.expire(self.bucket_key(horn, bucket), REPAIR_FULL_SECONDS)
        if len(page) < self.PAGE:
            pipe.delete(self.copy_key(horn))
            pipe.hset(self.PASS, "sorting", index + 1)
        else:
            pipe.ltrim(self.copy_key(horn), self.PAGE, -1)
        pipe.execute()

    def _compare(self, state: dict) -> list[str]:
        bucket, last, upto = int(state["bucket"]), int(state["last"]), float(state["upto"])
        if bucket > last // self.BUCKET:
            self.redis.hset(self.PASS, "phase", "recount")
            return []
        rebuilt = set(filter(None, state["rebuilt"].split(",")))
        horns = [h for h in HORN_TYPES if h not in rebuilt]
        pipe = self.redis.pipeline(transaction=False)
        for horn in horns:
            pipe.lrange(self.bucket_key(horn, bucket), 0, -1)
        held = {horn: {i for entry in entries for i in entry.split(b",")} for horn, entries in zip(horns, pipe.execute())}
        with self.ctx.db.read() as tx:  # each Horn type's ids as one string: 100,000 rows parse slowly
            rows = tx.all("SELECT horn_type, string_agg(id::text, ',') AS ids FROM candidates WHERE id >= %s AND "
                          "id < %s AND state IN ('PENDING', 'DISPUTED') AND updated_at <= to_timestamp(%s) "
                          "GROUP BY horn_type", (bucket * self.BUCKET, (bucket + 1) * self.BUCKET, upto))
        lost = sorted(r["horn_type"] for r in rows if r["horn_type"] in held
                      and not held[r["horn_type"]].issuperset(r["ids"].encode().split(b",")))
        if lost:
            logging.getLogger(__name__).warning("the %s queue(s) missed queued candidates: rebuilt", ", ".join(lost))
            reconcile(self.ctx, lost)
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(*(self.bucket_key(h, bucket) for h in HORN_TYPES))
        pipe.hset(self.PASS, mapping={"bucket": bucket + 1, "rebuilt": ",".join(sorted(rebuilt | set(lost)))})
        pipe.execute()
        return lost


    COUNTED = tuple((h, s) for h in HORN_TYPES for s in ("PENDING", "IN_REVIEW", "DISPUTED"))  # the picker's

    def _recount(self, state: dict) -> None:
        index = int(state.get("counting", 0))
        if index >= len(self.COUNTED):
            self.discard()  # done
            return
        horn, counted = self.COUNTED[index]
        drift = recount(self.ctx, horn, counted)
        if drift:
            logging.getLogger(__name__).warning("the count of %s %s was off by %d: repaired", horn, counted, drift)
        self.redis.hset(self.PASS, "counting", index + 1)


def counts(tx) -> dict[tuple[str, str], int]:
    """(Horn type, state) -> how many candidates: `queue_counts`' stripes summed (migration 0028)."""
    return {(r["horn_type"], r["state"]): int(r["n"]) for r in tx.all(
        "SELECT horn_type, state, sum(n) AS n FROM queue_counts GROUP BY horn_type, state")}


def recount(ctx: Context, horn: str, state: str) -> int:
    """Count one (Horn type, state) afresh and add what `queue_counts` is off by to its stripe 0; the
    drift found (0 when none). The count and the stripes are read in one snapshot, in which every
    committed move has its count with it, so their difference is the drift alone, and adding it
    later is right whatever moves commit meanwhile (a count read again after it sees it added: a
    recount done twice adds it once). The read is a query of its own, so it may run in parallel.
    A drift has no cause in r2k (every move counts in its own transaction); this repairs one made
    outside it (rows changed with the triggers off, as a restore in replica mode does).
    First the stripes of backends that have ended are folded into stripe 0, in one transaction (the
    sum stays what it was), so a count keeps a row per live backend, not one per connection ever made;
    a new backend given an ended one's pid meanwhile waits on the row or writes a new one."""
    with ctx.db.begin() as tx:
        tx.execute("SELECT r2k_fold_queue_counts(%s, %s)", (horn, state))
    with ctx.db.read() as tx:
        drift = int(tx.scalar(
            "SELECT (SELECT count(*) FROM candidates WHERE horn_type = %(h)s AND state = %(s)s) "
            "  - (SELECT coalesce(sum(n), 0) FROM queue_counts WHERE horn_type = %(h)s AND state = %(s)s)",
            {"h": horn, "s": state}))
    if drift:
        with ctx.db.begin() as tx:
            tx.execute("INSERT INTO queue_counts (horn_type, state, stripe, n) VALUES (%s, %s, 0, %s) "
                       "ON CONFLICT (horn_type, state, stripe) DO UPDATE SET n = queue_counts.n + EXCLUDED.n",
                       (horn, state, drift))
    return drift
