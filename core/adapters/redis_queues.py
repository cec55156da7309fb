"""The validation queue in Redis (DESIGN §7): one FIFO list per Horn type, an index over PostgreSQL.

A pop moves the id into the partition's in-flight set (a sorted set scored by pop time) in the
same Lua step, so a claimer killed between the pop and its commit loses nothing: whatever stays
in flight too long is returned to the head of its queue by the next sweep.
"""
from __future__ import annotations

import time

PREFIX = "raw_to_knowledge:val_queue:"
GENERATION_QUEUE = "raw_to_knowledge_generation"
GRAPH_QUEUE = "raw_to_knowledge_graph"

_POP = """
local id = redis.call('LPOP', KEYS[1])
if id then redis.call('ZADD', KEYS[2], ARGV[1], id) end
return id
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


class ValidationQueue:
    def __init__(self, redis):
        self.redis = redis
        self._pop = redis.register_script(_POP)
        self._settle = redis.register_script(_SETTLE)
        self._rescue = redis.register_script(_RESCUE)

    def push_tail(self, horn_type: str, candidate_id: int) -> None:
        self.redis.rpush(queue_key(horn_type), candidate_id)

    def push_head(self, horn_type: str, candidate_id: int) -> None:
        self.redis.lpush(queue_key(horn_type), candidate_id)

    def pop(self, horn_type: str) -> int | None:
        """The oldest id, now in flight until `done` (or a rescue after a crash)."""
        value = self._pop(keys=[queue_key(horn_type), inflight_key(horn_type)], args=[time.time()])
        return int(value) if value is not None else None

    def done(self, horn_type: str, candidate_id: int, publish: tuple[str, str] | None = None) -> None:
        """Settle an id popped by `pop`; `publish` (channel, message) goes out in the same round trip."""
        if publish is None:
            self.redis.zrem(inflight_key(horn_type), candidate_id)
            return
        self._settle(keys=[inflight_key(horn_type)], args=[candidate_id, *publish])

    def rescue(self, horn_type: str, older_than: float) -> list[int]:
        """Return ids popped more than `older_than` seconds ago and never settled to the head."""
        ids = self._rescue(keys=[queue_key(horn_type), inflight_key(horn_type)], args=[time.time() - older_than])
        return [int(i) for i in ids]

    def length(self, horn_type: str) -> int:
        return self.redis.llen(queue_key(horn_type))

    def ids(self, horn_type: str) -> list[int]:
        return [int(i) for i in self.redis.lrange(queue_key(horn_type), 0, -1)]

    def rebuild(self, horn_type: str, ids: list[int], chunk: int = 5000) -> None:
        """Replace the partition with `ids` in order, atomically (a reader sees old or new, never half)."""
        temp = f"{queue_key(horn_type)}:rebuild"
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
        pipe.delete(inflight_key(horn_type))
        pipe.execute()
