"""A circuit breaker shared by every worker through Redis: the LLM's, and the embeddings endpoint's
(a key of its own, so one endpoint failing never opens the other's circuit).

closed: calls go through; `threshold` consecutive failures open it.
open: calls are refused until `cooldown` seconds have passed; then exactly one caller wins the
probe lease (SET NX with an expiry, so a probe that dies frees it) and is let through.
The probe's success closes the breaker; its failure opens it again for another cool-down.
Each step is one Lua script, so concurrent workers see one consistent state.
"""
from __future__ import annotations

import time

KEY = "raw_to_knowledge:llm_breaker"
PROBE = "raw_to_knowledge:llm_breaker:probe"

# returns {decision, state}: decision is "call", "probe" or "refuse"
_ALLOW = """
local state = redis.call('HGET', KEYS[1], 'state') or 'closed'
if state == 'closed' then return {'call', state} end
local opened = tonumber(redis.call('HGET', KEYS[1], 'opened_at') or '0')
if tonumber(ARGV[1]) - opened < tonumber(ARGV[2]) then return {'refuse', state} end
if redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[4]) then
  redis.call('HSET', KEYS[1], 'state', 'half_open')
  return {'probe', 'half_open'}
end
return {'refuse', state}
"""

_FAILURE = """
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local state = redis.call('HGET', KEYS[1], 'state') or 'closed'
if state ~= 'closed' or failures >= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', ARGV[1], 'last_error', ARGV[3])
  redis.call('DEL', KEYS[2])
  return 'open'
end
redis.call('HSET', KEYS[1], 'last_error', ARGV[3])
return state
"""

_SUCCESS = """
redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', 0)
redis.call('DEL', KEYS[2])
return 'closed'
"""


class CircuitBreaker:
    def __init__(self, redis, threshold: int = 5, cooldown: float = 30.0, probe_timeout: float = 120.0,
                 key: str = KEY):
        self.redis = redis
        self.key, self.probe_key = key, (PROBE if key == KEY else f"{key}:probe")
        self.threshold = max(1, int(threshold))
        self.cooldown = float(cooldown)
        self.probe_timeout = probe_timeout
        self._allow = redis.register_script(_ALLOW)
        self._failure = redis.register_script(_FAILURE)
        self._success = redis.register_script(_SUCCESS)

    def allow(self, who: str = "worker") -> str:
        """'call' (closed), 'probe' (the one trial call after the cool-down) or 'refuse' (open)."""
        decision, _ = self._allow(keys=[self.key, self.probe_key],
                                  args=[time.time(), self.cooldown, who, int(self.probe_timeout * 1000)])
        return decision.decode() if isinstance(decision, bytes) else decision

    def record_failure(self, detail: str) -> str:
        state = self._failure(keys=[self.key, self.probe_key], args=[time.time(), self.threshold, detail[:300]])
        return state.decode() if isinstance(state, bytes) else state

    def record_success(self) -> None:
        self._success(keys=[self.key, self.probe_key])

    def status(self) -> dict:
        raw = {k.decode(): v.decode() for k, v in self.redis.hgetall(self.key).items()}
        state = raw.get("state", "closed")
        opened = float(raw.get("opened_at", 0) or 0)
        if state == "open" and time.time() - opened >= self.cooldown:
            state_shown = "open (probe due)"
        else:
            state_shown = state
        return {"state": state, "shown": state_shown, "failures": int(raw.get("failures", 0) or 0),
                "threshold": self.threshold, "cooldown": self.cooldown,
                "opened_at": opened or None, "last_error": raw.get("last_error")}

    def reset(self) -> None:
        self.redis.delete(self.key, self.probe_key)
