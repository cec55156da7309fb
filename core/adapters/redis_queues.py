"""The validation queue in Redis: one FIFO list per Horn type, an index over PostgreSQL.

A pop moves the id into the partition's in-flight set (a sorted set scored by pop time) in the
same Lua step, so a claimer killed between the pop and its commit loses nothing: whatever stays
in flight too long is returned to the head of its queue by the next sweep.

Beside each partition, a small read-ahead cache (a hash, `…:{HORN_TYPE}:heads`) holds what a claim
must know before it can sign its event (the row's state and version, its chain's last seq and
hash) for the ids at the front of the queue, so the claim is one Redis step and one PostgreSQL
statement. It is only a hint: the claim writes only if the row is still at the cached version and
its chain still ends at the cached hash; a missing or stale entry costs the claim one read.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import NamedTuple

from redis.exceptions import ConnectionError, LockError, NoScriptError, TimeoutError

PREFIX = "raw_to_knowledge:val_queue:"
GENERATION_QUEUE = "raw_to_knowledge_generation"
GRAPH_QUEUE = "raw_to_knowledge_graph"
# The reconcile mark: set by every reconcile; gone when Redis lost its data, or dropped when a step
# after a commit failed (the queues may miss a push). A pop finds it gone and has them rebuilt.
EPOCH_KEY = "raw_to_knowledge:queue_epoch"

# First, the claims this process committed since its last pop are settled (ARGV[3] of them: each
# id leaves its partition's in-flight set, KEYS[5…], and its notice goes out: ARGV id, channel,
# message), so a claimer that claims again at once pays one round trip per claim fewer.
# Then pop the oldest id into flight, with its read-ahead entry ('' if none) and how many entries
# are left; nothing when the reconcile mark is gone (Redis lost data, or a push after a commit failed).
# With ARGV[2] = 1, the last key is the claimer's skipped ids (a sorted set scored by skip time):
# the oldest listed id not in it, else (every listed id skipped) the one skipped longest ago. Only
# the first |skipped| + 1 listed ids can all be skipped, so that many are looked at, and the id is
# taken from where it lies (LREM): the others keep their order.
_POP = """
local settles = tonumber(ARGV[3])
for i = 1, settles do
  redis.call('ZREM', KEYS[4 + i], ARGV[1 + 3 * i])
  redis.call('PUBLISH', ARGV[2 + 3 * i], ARGV[3 + 3 * i])
end
if redis.call('EXISTS', KEYS[4]) == 0 then return -1 end
local id
local skipped = ARGV[2] == '1' and KEYS[5 + settles]
local skipping = skipped and redis.call('ZCARD', skipped) or 0
if skipping > 0 then
  local front = redis.call('LRANGE', KEYS[1], 0, skipping)
  local first, first_at
  for i = 1, #front do
    local at = redis.call('ZSCORE', skipped, front[i])
    if not at then
      id = front[i]
      break
    end
    at = tonumber(at)
    if not first_at or at < first_at then first, first_at = front[i], at end
  end
  id = id or first
  if id then
    if id == front[1] then redis.call('LPOP', KEYS[1]) else redis.call('LREM', KEYS[1], 1, id) end
  end
end
if not id then id = redis.call('LPOP', KEYS[1]) end
if not id then return false end
redis.call('ZADD', KEYS[2], ARGV[1], id)
local head = redis.call('HGET', KEYS[3], id)
if head then redis.call('HDEL', KEYS[3], id) else head = '' end
return {id, head, redis.call('HLEN', KEYS[3])}
"""

# Settle claimed ids and tell the workstations, in one round trip: for each, its in-flight set
# (KEYS[i]) and its id, channel and message (ARGV[3i-2 … 3i]).
_SETTLE = """
for i = 1, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[3 * i - 2])
  redis.call('PUBLISH', ARGV[3 * i - 1], ARGV[3 * i])
end
return 1
"""

# How long a committed claim's settle waits to go out with this process's next pop, at most.
SETTLE_WAIT = 0.05

# Return ids stuck in flight (popped before ARGV[1]) to the head of the queue.
_RESCUE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for i = #ids, 1, -1 do
  redis.call('ZREM', KEYS[2], ids[i])
  redis.call('LPUSH', KEYS[1], ids[i])
end
return ids
"""


# Of the ids given (ARGV[2…]), those the partition holds neither in flight (KEYS[2]) nor listed
# (KEYS[1]) among the ARGV[1] entries at each end of its list: an id queued lately lies near one
# end, pushed back to the head (a release, a dispute) or to the tail (a new or re-reviewed one).
# Each lookup is bounded so, never a walk of the whole list: what is not found near an end is
# returned, and the caller compares it with the partition's ids read once. For the queue sweep's
# repair check (core/services/queue/queue_index.py).
_NOT_NEAR = """
local missing = {}
local near = tonumber(ARGV[1])
for i = 2, #ARGV do
  local id = ARGV[i]
  if not redis.call('ZSCORE', KEYS[2], id)
     and not redis.call('LPOS', KEYS[1], id, 'MAXLEN', near)
     and not redis.call('LPOS', KEYS[1], id, 'RANK', -1, 'MAXLEN', near) then
    missing[#missing + 1] = id
  end
end
return missing
"""


# A frozen copy (KEYS[3]) of a partition's list (KEYS[1]) with its in-flight ids (KEYS[2]) after it,
# made in one step (COPY is a copy of the list's nodes, not a walk of its ids), lasting ARGV[1]
# seconds: it is read in pages at leisure while claims go on, where reading the live list in pages
# would skip the ids a pop shifted across a page's edge. For the queue sweep's repair check.
_FREEZE = """
redis.call('DEL', KEYS[3])
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('COPY', KEYS[1], KEYS[3]) end
local flying = redis.call('ZRANGE', KEYS[2], 0, -1)
for i = 1, #flying, 5000 do
  redis.call('RPUSH', KEYS[3], unpack(flying, i, math.min(i + 4999, #flying)))
end
redis.call('EXPIRE', KEYS[3], ARGV[1])
return redis.call('LLEN', KEYS[3])
"""


# A candidate's Horn type changed while it waited (an accepted LLM proposal, core/services/answering/refine.py):
# out of its old partition's list and read-ahead (KEYS[1], KEYS[2]), onto the tail of the new one's
# (KEYS[3]) unless listed there already, in one step, so no pop sees it in both lists or in neither
# list. An id a claimer popped meanwhile is in flight in the old partition: its claim finds the row
# moved on (another version, another Horn type) and drops it, and it is claimable from the new list.
_MOVE = """
redis.call('LREM', KEYS[1], 0, ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if not redis.call('LPOS', KEYS[3], ARGV[1]) then redis.call('RPUSH', KEYS[3], ARGV[1]) end
return 1
"""


def queue_key(horn_type: str) -> str:
    return f"{PREFIX}{horn_type}"


def inflight_key(horn_type: str) -> str:
    return f"{PREFIX}{horn_type}:inflight"


def heads_key(horn_type: str) -> str:
    return f"{PREFIX}{horn_type}:heads"


SKIPPED_PREFIX = "raw_to_knowledge:skipped:"


def skipped_key(user: str, horn_type: str) -> str:
    """The ids a validator skipped in a partition: passed by for them alone (a sorted set
    scored by skip time, with a TTL)."""
    return f"{SKIPPED_PREFIX}{user}:{horn_type}"


def _runs(pushes: list[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    """(Horn type, ids) pairs as runs of one Horn type, in order: one RPUSH a run."""
    runs: list[tuple[str, list[int]]] = []
    for horn_type, candidate_id in pushes:
        if runs and runs[-1][0] == horn_type:
            runs[-1][1].append(candidate_id)
        else:
            runs.append((horn_type, [candidate_id]))
    return runs


class IndexLost(Exception):
    """The queues may no longer hold what PostgreSQL says they should: rebuild them first."""


class Popped(NamedTuple):
    candidate_id: int
    head: str | None  # the read-ahead entry, if the id had one
    cached: int       # read-ahead entries left for the partition


class ClaimLine:
    """A Redis connection of its own for the two scripts on every claim's path (pop and settle).

    Through the client, each call also pays a pool checkout, a pid check, and retry and metrics
    wrappers: about 80 µs of the claimer's CPU per claim, a fifth of it (bench/claim.py). The line
    is shared by the process's threads under a lock, made anew after a fork (an RQ work horse),
    and, like the client, reconnects after a dropped connection and reloads a flushed script. (A
    pop whose reply was lost with the connection leaves its id in flight: the sweep returns it.)
    """

    def __init__(self, redis):
        self._redis = redis
        self._lock = threading.Lock()
        self._conn = None
        self._pid = None

    def run(self, script, keys: list, args: list):
        with self._lock:
            try:
                return self._evalsha(script, keys, args)
            except (ConnectionError, TimeoutError):  # the connection dropped: one new try
                self._conn.disconnect()
            except NoScriptError:  # the script cache was flushed
                pass
            self._redis.script_load(script.script)  # a restarted Redis has forgotten it too
            return self._evalsha(script, keys, args)

    def _evalsha(self, script, keys: list, args: list):
        if self._pid != os.getpid():
            pool = self._redis.connection_pool
            self._conn, self._pid = pool.connection_class(**pool.connection_kwargs), os.getpid()
        self._conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)  # connects if need be
        return self._conn.read_response()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.disconnect()


Settle = tuple[str, int, str, str]  # in-flight key, id, notice channel, notice message


class ClaimSettles:
    """Committed claims whose settle (the id leaves its in-flight set, the notice goes out) has not
    reached Redis yet.

    A settle waits up to `wait` (SETTLE_WAIT) to go out in the same script as this process's next
    pop: a claimer that claims again at once pays one round trip per claim fewer (bench/claim.py).
    A thread sends whatever waited longer, so a workstation that claims and then reads hears of it
    within milliseconds all the same. Within the process the order stays as if each settle went
    out at its commit: every queue step that reads or changes in-flight ids or the lists, and every
    notice, sends the waiting ones of all the process's contexts first. A process killed in that
    window leaves its ids in flight, as a crash between a commit and its settle always could: the
    sweep returns them to the head, and a claim drops an id whose row has moved on
    (docs/architecture.md, "Queues").
    """

    IDLE = 30.0  # seconds without a settle before the thread ends (a new settle starts it again)

    def __init__(self, send: Callable[[list[Settle]], None], wait: float = SETTLE_WAIT):
        self._send = send
        self.wait = wait
        self._closed = False
        self._forget()
        _SETTLING.add(self)

    def _forget(self) -> None:
        """Start empty (at creation, and in a forked child: the parent sends its own settles)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._waiting: list[Settle] = []
        self._since = 0.0  # when the oldest waiting settle was added (monotonic)
        self._thread: threading.Thread | None = None
        self._idle = False  # the thread waits for `_wake`: the next settle must wake it

    def add(self, settle: Settle) -> None:
        self._wait_for_sending([settle])

    def take(self) -> list[Settle]:
        """The waiting settles, now the caller's to send."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        return waiting

    def put_back(self, waiting: list[Settle]) -> None:
        """Settles a failed step took: they go out once more, first (twice is harmless)."""
        if waiting:
            self._wait_for_sending(waiting, first=True)

    def _wait_for_sending(self, settles: list[Settle], first: bool = False) -> None:
        with self._lock:
            if not self._waiting:
                self._since = time.monotonic()
            if first:
                self._waiting[:0] = settles
            else:
                self._waiting.extend(settles)
            closed = self._closed
            if not closed and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="r2k claim settles", daemon=True)
                self._thread.start()
            wake, self._idle = self._idle, False
        if closed:  # a command ending: nothing would send them later
            self.flush()
        elif wake:
            self._wake.set()

    def flush(self) -> None:
        waiting = self.take()
        if not waiting:
            return
        try:
            self._send(waiting)
        except Exception as exc:  # noqa: BLE001 - the claims stand; their ids stay in flight until the sweep
            logging.getLogger(__name__).warning(
                "%d claim settle(s) did not reach Redis (the sweep returns their ids; their notices are lost): %s",
                len(waiting), exc)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.flush()
        self._wake.set()  # the thread sees the close and ends

    def _run(self) -> None:
        # Woken only from idle: while settles keep coming (a claimer in a loop) it sleeps to the
        # oldest one's deadline and looks again, so a claim costs the thread no wake-up of its own
        # (with its GIL hand-offs, that was most of what a busy claimer spent in the kernel).
        quiet = False  # it has looked once and found nothing waiting
        while True:
            with self._lock:
                if self._closed:
                    self._thread = None
                    return
                since = self._since if self._waiting else None
                if since is None and quiet:
                    self._idle = True
            if since is not None:
                quiet = False
                left = since + self.wait - time.monotonic()
                if left > 0:
                    time.sleep(left)  # a pop may take them in the meantime
                else:
                    self.flush()
            elif not quiet:
                time.sleep(self.wait)  # a claimer in a loop settles again within milliseconds
                quiet = True
            else:
                woken = self._wake.wait(self.IDLE)
                self._wake.clear()
                quiet = False
                with self._lock:
                    self._idle = False
                    if not woken and not self._waiting:
                        self._thread = None
                        return


# Every ClaimSettles of the process: flushed at exit, emptied in a forked child.
_SETTLING: weakref.WeakSet[ClaimSettles] = weakref.WeakSet()


def send_all_settles() -> None:
    """Every waiting settle of the process, now: at exit, and for whoever must see Redis as the
    commits so far left it (a snapshot of it, say)."""
    for settles in list(_SETTLING):
        settles.flush()


def _forget_settles_in_child() -> None:
    for settles in list(_SETTLING):
        settles._forget()


atexit.register(send_all_settles)
os.register_at_fork(after_in_child=_forget_settles_in_child)


PAGE = 10_000  # ids a page of a partition read in steps holds: Redis serves it in about a millisecond


class ValidationQueue:
    def __init__(self, redis):
        self.redis = redis
        self._pop = redis.register_script(_POP)
        self._settle = redis.register_script(_SETTLE)
        self._rescue = redis.register_script(_RESCUE)
        self._move = redis.register_script(_MOVE)
        self._not_near = redis.register_script(_NOT_NEAR)
        self._freeze = redis.register_script(_FREEZE)
        self._line = ClaimLine(redis)
        self._settles = ClaimSettles(self._send_settles)

    def close(self) -> None:
        self._settles.close()
        self._line.close()

    def _send_settles(self, waiting: list[Settle]) -> None:
        self._line.run(self._settle, [key for key, *_ in waiting], [v for _, *rest in waiting for v in rest])

    def settle_claimed(self, horn_type: str, candidate_id: int, publish: tuple[str, str]) -> None:
        """A claim of a popped id committed: its id leaves flight and `publish` (channel, message)
        goes out, with this process's next pop or within SETTLE_WAIT (ClaimSettles)."""
        self._settles.add((inflight_key(horn_type), candidate_id, *publish))

    def push_tail(self, horn_type: str, candidate_id: int) -> None:
        send_all_settles()
        self.redis.rpush(queue_key(horn_type), candidate_id)

    def push_tail_all(self, pushes: list[tuple[str, int]]) -> None:
        """`push_tail` for many (Horn type, id) in order, in one round trip."""
        send_all_settles()
        pipe = self.redis.pipeline(transaction=False)
        for horn_type, ids in _runs(pushes):
            pipe.rpush(queue_key(horn_type), *ids)
        pipe.execute()

    def push_head(self, horn_type: str, candidate_id: int) -> None:
        send_all_settles()
        self.redis.lpush(queue_key(horn_type), candidate_id)

    def pop(self, horn_type: str, skipping: str | None = None) -> Popped | None:
        """The oldest id, now in flight until `done` (or a rescue after a crash), with its read-ahead
        entry; None when the partition is empty; IndexLost, popping nothing, when the reconcile mark
        is gone. `skipping` names a user: the oldest id they have not skipped, if there is one."""
        settles = self._settles.take()  # they go first, in the same script
        keys = [queue_key(horn_type), inflight_key(horn_type), heads_key(horn_type), EPOCH_KEY,
                *(key for key, *_ in settles)]
        args = [time.time(), "0" if skipping is None else "1", len(settles), *(v for _, *rest in settles for v in rest)]
        if skipping is not None:
            keys.append(skipped_key(skipping, horn_type))
        try:
            value = self._line.run(self._pop, keys, args)
        except BaseException:
            self._settles.put_back(settles)  # they may not have run: once more (twice is harmless)
            raise
        if value == -1:
            raise IndexLost(horn_type)
        if value is None:
            return None
        candidate_id, head, cached = value
        return Popped(int(candidate_id), head.decode() if head else None, int(cached))

    def skip(self, user: str, horn_type: str, candidate_id: int, ttl: int) -> None:
        """Pass an id by for `user`: their pops serve it only when nothing else is listed (then the
        one skipped longest ago first). The set lives `ttl` seconds after the last skip."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.zadd(skipped_key(user, horn_type), {str(candidate_id): time.time()})
        pipe.expire(skipped_key(user, horn_type), ttl)
        pipe.execute()

    def unskip(self, user: str, horn_type: str, candidate_id: int) -> None:
        self.redis.zrem(skipped_key(user, horn_type), candidate_id)

    def skipped(self, user: str, horn_type: str) -> set[int]:
        return {int(i) for i in self.redis.zrange(skipped_key(user, horn_type), 0, -1)}

    def remove(self, horn_type: str, candidate_id: int) -> None:
        """Take an id out of its partition (claimed by name), with its read-ahead entry."""
        send_all_settles()
        pipe = self.redis.pipeline(transaction=False)
        pipe.lrem(queue_key(horn_type), 0, candidate_id)
        pipe.hdel(heads_key(horn_type), candidate_id)
        pipe.execute()

    def move(self, old_horn: str, new_horn: str, candidate_id: int) -> None:
        """A waiting id's Horn type changed: from its old partition to the tail of the new one, in one
        step (_MOVE)."""
        send_all_settles()
        self._move(keys=[queue_key(old_horn), heads_key(old_horn), queue_key(new_horn)], args=[candidate_id])

    def remove_all(self, removals: list[tuple[str, int]]) -> None:
        """`remove` for many (Horn type, id), in one round trip."""
        send_all_settles()
        pipe = self.redis.pipeline(transaction=False)
        for horn_type, candidate_id in removals:
            pipe.lrem(queue_key(horn_type), 0, candidate_id)
            pipe.hdel(heads_key(horn_type), candidate_id)
        pipe.execute()

    def front_unread(self, horn_type: str, count: int) -> list[int]:
        """Of the next `count` ids, those with no read-ahead entry yet (one round trip)."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.lrange(queue_key(horn_type), 0, count - 1)
        pipe.hkeys(heads_key(horn_type))
        listed, cached = pipe.execute()
        cached = set(cached)
        return [int(i) for i in listed if i not in cached]

    def read_ahead(self, horn_type: str, heads: dict[int, str], ttl: int) -> None:
        """Store read-ahead entries; the whole cache lapses after `ttl` seconds without a refill,
        so entries of ids that left the queue some other way do not linger."""
        if not heads:
            return
        pipe = self.redis.pipeline(transaction=False)
        pipe.hset(heads_key(horn_type), mapping=heads)
        pipe.expire(heads_key(horn_type), ttl)
        pipe.execute()

    @contextlib.contextmanager
    def refill_turn(self, horn_type: str, seconds: float) -> Iterator[bool]:
        """Yields True to one caller at a time per partition (for at most `seconds`): whose turn
        it is to refill the read-ahead; the others go on without waiting."""
        lock = self.redis.lock(f"{heads_key(horn_type)}:refill", timeout=seconds, blocking=False)
        if not lock.acquire():
            yield False
            return
        try:
            yield True
        finally:
            with contextlib.suppress(LockError):  # it outlived `seconds`: someone else's turn now
                lock.release()

    @contextlib.contextmanager
    def rebuild_turn(self, seconds: float) -> Iterator[None]:
        """One rebuild of the queues at a time: wait up to `seconds` for another to end, then go
        ahead anyway (a rebuild is safe to repeat); a turn lapses after `seconds` if its holder died."""
        lock = self.redis.lock(f"{EPOCH_KEY}:rebuild", timeout=seconds)
        held = lock.acquire(blocking_timeout=seconds)
        try:
            yield
        finally:
            if held:
                with contextlib.suppress(LockError):  # it outlived `seconds`
                    lock.release()

    def done(self, horn_type: str, candidate_id: int) -> None:
        """Settle, at once, an id popped by `pop` and not claimed (put back, or stale)."""
        self.redis.zrem(inflight_key(horn_type), candidate_id)

    def rescue(self, horn_type: str, older_than: float) -> list[int]:
        """Return ids popped more than `older_than` seconds ago and never settled to the head."""
        send_all_settles()
        ids = self._rescue(keys=[queue_key(horn_type), inflight_key(horn_type)], args=[time.time() - older_than])
        return [int(i) for i in ids]

    def length(self, horn_type: str) -> int:
        return self.redis.llen(queue_key(horn_type))

    def held(self, horn_type: str) -> int:
        """Ids the partition holds: listed, or popped and not yet settled."""
        send_all_settles()
        pipe = self.redis.pipeline(transaction=True)
        pipe.llen(queue_key(horn_type))
        pipe.zcard(inflight_key(horn_type))
        return sum(pipe.execute())

    def ids(self, horn_type: str) -> list[int]:
        send_all_settles()
        return [int(i) for i in self.redis.lrange(queue_key(horn_type), 0, -1)]

    def in_flight(self, horn_type: str) -> set[int]:
        send_all_settles()
        return {int(i) for i in self.redis.zrange(inflight_key(horn_type), 0, -1)}

    def held_ids(self, horn_type: str) -> set[int]:
        """The ids the partition holds, listed or in flight, read in one step."""
        send_all_settles()
        pipe = self.redis.pipeline(transaction=True)
        pipe.lrange(queue_key(horn_type), 0, -1)
        pipe.zrange(inflight_key(horn_type), 0, -1)
        listed, flying = pipe.execute()
        return {int(i) for i in listed} | {int(i) for i in flying}

    def not_held(self, horn_type: str, ids: list[int], near: int = 5000) -> set[int]:
        """Of `ids`, those the partition holds neither listed nor in flight. First in one bounded
        step (_NOT_NEAR: in flight, or among the `near` entries at either end of the list); only
        if some are not found there, the partition's frozen copy read in pages for them."""
        send_all_settles()
        if not ids:
            return set()
        far = {int(i) for i in self._not_near(keys=[queue_key(horn_type), inflight_key(horn_type)],
                                              args=[near, *ids])}
        return self.not_in_copy(horn_type, far) if far else far

    def not_held_near_ends(self, horn_type: str, ids: list[int], near: int = 5000,
                           page: int = PAGE) -> set[int]:
        """`not_held` for many ids (more than one Lua step should look up one by one): the ends of
        the list read in pages, each as long as `ids` plus `near` (an id pushed since lies within
        that many entries of the end it went to: only later pushes to that end come after it), with
        the ids in flight; only those not found there are looked for in the frozen copy."""
        send_all_settles()
        wanted = set(ids)
        if not wanted:
            return wanted
        wanted -= self.in_flight(horn_type)
        reach = len(ids) + near
        for start in range(0, reach, page):
            stop = min(start + page, reach) - 1
            pipe = self.redis.pipeline(transaction=False)
            pipe.lrange(queue_key(horn_type), start, stop)
            pipe.lrange(queue_key(horn_type), -stop - 1, -start - 1)
            head, tail = pipe.execute()
            wanted -= {int(i) for i in head} | {int(i) for i in tail}
            if not wanted or len(head) < stop - start + 1:
                break  # all found, or the list is shorter than the reach: both ends read whole
        wanted -= self.in_flight(horn_type)  # popped while the ends were read
        return self.not_in_copy(horn_type, wanted) if wanted else wanted

    def freeze(self, horn_type: str, key: str, ttl: int) -> int:
        """Copy the partition (listed, then in flight) to `key` in one step (_FREEZE); its length."""
        send_all_settles()
        return int(self._freeze(keys=[queue_key(horn_type), inflight_key(horn_type), key], args=[ttl]))

    def not_in_copy(self, horn_type: str, ids: set[int], page: int = PAGE) -> set[int]:
        """Of `ids`, those a frozen copy of the partition lacks, read in pages of `page` (Redis
        never serves the whole list in one reply, which held every claim back for seconds at
        10,000,000 ids); a claim in between is on the copy's in-flight side."""
        key = f"{queue_key(horn_type)}:copy:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        missing = set(ids)
        try:
            size = self.freeze(horn_type, key, 600)
            for start in range(0, size, page):
                missing -= {int(i) for i in self.redis.lrange(key, start, start + page - 1)}
                if not missing:
                    break
        finally:
            self.redis.delete(key)
        return missing

    def rebuild(self, horn_type: str, ids: list[int], chunk: int = 5000) -> None:
        """Replace the partition with `ids` in order, atomically (a reader sees old or new, never half)."""
        send_all_settles()
        # A key of its own: two rebuilds at once (claims that each found a partition short) must not
        # fill, or rename away, each other's list. Each is a whole snapshot; the last one stands.
        temp = f"{queue_key(horn_type)}:rebuild:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        pipe = self.redis.pipeline(transaction=False)
        pipe.delete(temp)
        for start in range(0, len(ids), chunk):
            pipe.rpush(temp, *ids[start:start + chunk])
        pipe.execute()
        pipe = self.redis.pipeline(transaction=True)
        if ids:
            pipe.rename(temp, queue_key(horn_type))
        else:
            pipe.delete(queue_key(horn_type))
        pipe.delete(inflight_key(horn_type), heads_key(horn_type))
        pipe.execute()
