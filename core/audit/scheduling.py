"""When a checkpoint is written: after commits (looked at most once per CHECK_INTERVAL in a
process, in a thread of its own) and by the sweep; a refusal is logged and looked at again later."""
from __future__ import annotations

import atexit
import logging
import threading
import time

from .writing import is_due, write_checkpoint

log = logging.getLogger("r2k.core.audit")

CHECK_INTERVAL = 1.0      # seconds: a process looks whether a checkpoint is due at most this often

_state_lock = threading.Lock()
_last_check: float | None = None
_refused_until = 0.0


def checkpoint_if_due(ctx) -> dict | None:
    """Write a checkpoint when one is due (the sweep, and after commits); never raises: the
    events are committed either way, and a failure here is logged and retried at the next check."""
    global _refused_until
    if time.monotonic() < _refused_until:
        return None
    try:
        with ctx.db.read() as tx:  # one short query: most looks find none due
            last = tx.one("SELECT watermark FROM audit_checkpoints ORDER BY number DESC LIMIT 1")
            if not is_due(tx, ctx.settings, last["watermark"] if last else 0):
                return None
        outcome = write_checkpoint(ctx, db=ctx.checkpoint_db)
    except Exception as exc:  # noqa: BLE001 - see above
        log.error("the audit checkpoint failed: %s: %s", type(exc).__name__, exc)
        return {"error": str(exc)}
    if outcome.refused:
        shown = outcome.refused[:5]  # the first few say what is wrong; thousands would drown the log
        more = len(outcome.refused) - len(shown)
        log.error("no audit checkpoint written: %s%s", "; ".join(shown),
                  f"; and {more} more (r2k audit verify lists them all)" if more else "")
        # Damage is not going away by itself: look again after a checkpoint interval, not every second.
        _refused_until = time.monotonic() + float(ctx.settings.checkpoint_seconds)
    return outcome.as_dict()


_pending: threading.Thread | None = None


def after_commit(ctx, count: int) -> None:
    """Database.on_events_committed: `count` events were committed. Looks whether a checkpoint is
    due at most once per CHECK_INTERVAL in a process (the first look at once, so a single command
    checkpoints when due); the claim's fast path pays a clock read, not a query. The look, and the
    checkpoint it may write (half a second at 100,000 chains), run in a thread of their own, so the
    change that crossed the threshold returns at once; a command waits for it before it exits
    (`wait_pending`)."""
    global _last_check, _pending
    now = time.monotonic()
    with _state_lock:
        if _last_check is not None and now - _last_check < CHECK_INTERVAL:
            return
        if _pending is not None and _pending.is_alive():
            return
        _last_check = now
        _pending = threading.Thread(target=checkpoint_if_due, args=(ctx,), name="r2k audit checkpoint", daemon=True)
        _pending.start()


def wait_pending(timeout: float = 30.0) -> None:
    """Let a checkpoint started after this process's last commit finish (a command about to exit)."""
    with _state_lock:
        pending = _pending
    if pending is not None:
        pending.join(timeout)


# Any process that ends normally lets its checkpoint finish first: cut short in the middle of the
# file's line, it would leave a torn line (which the next writer cuts off, but the copy is lost).
atexit.register(wait_pending, 10.0)
