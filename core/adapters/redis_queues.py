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

import contextlib
import os
import threading
import time
import uuid
from typing import Iterator, NamedTuple

from redis.exceptions import ConnectionError, LockError, NoScriptError, TimeoutError

PREFIX = "raw_to_knowledge:val_queue:"
GENERATION_QUEUE = "raw_to_knowledge_generation"
GRAPH_QUEUE = "raw_to_knowledge_graph"
# The reconcile mark: set by every reconcile; gone when Redis lost its data, or dropped when a step
# after a commit failed (the queues may miss a push). A pop finds it gone and has them rebuilt.
EPOCH_KEY = "raw_to_knowledge:queue_epoch"

# Pop the oldest id into flight, with its read-ahead entry ('' if none) and how many entries are left;
# nothing when the reconcile mark is gone (Redis lost data, or a push after a commit failed).
# With KEYS[5], the claimer's skipped ids (a sorted set scored by skip time): the oldest listed id
# not in it, else (every listed id skipped) the one skipped longest ago. Only the first
# |skipped| + 1 listed ids can all be skipped, so that many are looked at, and the id is taken from
# where it lies (LREM): the others keep their order.
_POP = """
if redis.call('EXISTS', KEYS[4]) == 0 then return -1 end
local id
local skipping = KEYS[5] and redis.call('ZCARD', KEYS[5]) or 0
if skipping > 0 then
  local front = redis.call('LRANGE', KEYS[1], 0, skipping)
  local first, first_at
  for i = 1, #front do
    local at = redis.call('ZSCORE', KEYS[5], front[i])
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

# Settle a popped id and tell the workstations, in one round trip.
_SETTLE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
"""

# Return ids stuck in flight (popped before ARGV[1]) to the head of the queue.
_RESCUE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for i = #ids, 1, -1 do
  redis.call('ZREM', KEYS[2], ids[i])
  redis.call('LPUSH', KEYS[1], ids[i])
end
return ids
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


class ValidationQueue:
    def __init__(self, redis):
        self.redis = redis
        self._pop = redis.register_script(_POP)
        self._settle = redis.register_script(_SETTLE)
        self._rescue = redis.register_script(_RESCUE)
        self._line = ClaimLine(redis)

    def close(self) -> None:
        self._line.close()

    def push_tail(self, horn_type: str, candidate_id: int) -> None:
        self.redis.rpush(queue_key(horn_type), candidate_id)

    def push_head(self, horn_type: str, candidate_id: int) -> None:
        self.redis.lpush(queue_key(horn_type), candidate_id)

    def pop(self, horn_type: str, skipping: str | None = None) -> Popped | None:
        """The oldest id, now in flight until `done` (or a rescue after a crash), with its read-ahead
        entry; None when the partition is empty; IndexLost, popping nothing, when the reconcile mark
        is gone. `skipping` names a user: the oldest id they have not skipped, if there is one."""
        keys = [queue_key(horn_type), inflight_key(horn_type), heads_key(horn_type), EPOCH_KEY]
        if skipping is not None:
            keys.append(skipped_key(skipping, horn_type))
        value = self._line.run(self._pop, keys, [time.time()])
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
        pipe = self.redis.pipeline(transaction=False)
        pipe.lrem(queue_key(horn_type), 0, candidate_id)
        pipe.hdel(heads_key(horn_type), candidate_id)
        pipe.execute()

    def front(self, horn_type: str, count: int) -> list[int]:
        """The next `count` ids of the partition, oldest first."""
        return [int(i) for i in self.redis.lrange(queue_key(horn_type), 0, count - 1)]

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

    def done(self, horn_type: str, candidate_id: int, publish: tuple[str, str] | None = None) -> None:
        """Settle an id popped by `pop`; `publish` (channel, message) goes out in the same round trip."""
        if publish is None:
            self.redis.zrem(inflight_key(horn_type), candidate_id)
            return
        self._line.run(self._settle, [inflight_key(horn_type)], [candidate_id, *publish])

    def rescue(self, horn_type: str, older_than: float) -> list[int]:
        """Return ids popped more than `older_than` seconds ago and never settled to the head."""
        ids = self._rescue(keys=[queue_key(horn_type), inflight_key(horn_type)], args=[time.time() - older_than])
        return [int(i) for i in ids]

    def length(self, horn_type: str) -> int:
        return self.redis.llen(queue_key(horn_type))

    def held(self, horn_type: str) -> int:
        """Ids the partition holds: listed, or popped and not yet settled."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.llen(queue_key(horn_type))
        pipe.zcard(inflight_key(horn_type))
        return sum(pipe.execute())

    def ids(self, horn_type: str) -> list[int]:
        return [int(i) for i in self.redis.lrange(queue_key(horn_type), 0, -1)]

    def in_flight(self, horn_type: str) -> set[int]:
        return {int(i) for i in self.redis.zrange(inflight_key(horn_type), 0, -1)}

    def held_ids(self, horn_type: str) -> set[int]:
        """The ids the partition holds, listed or in flight, read in one step."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.lrange(queue_key(horn_type), 0, -1)
        pipe.zrange(inflight_key(horn_type), 0, -1)
        listed, flying = pipe.execute()
        return {int(i) for i in listed} | {int(i) for i in flying}

    def rebuild(self, horn_type: str, ids: list[int], chunk: int = 5000) -> None:
        """Replace the partition with `ids` in order, atomically (a reader sees old or new, never half)."""
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
