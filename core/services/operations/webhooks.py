"""Webhooks (docs/architecture.md, "HTTP API"): chosen events POSTed to a URL, on RQ, at least once.

- A hook takes event names `ENTITY.DONE` (`candidate.approved`, `answer.published`, `task.submitted`),
  `ENTITY.*` or `*`. Every move of every machine has its name (`event_name`), so a new move is one
  more name, not a change here.
- After a move commits, the reactions table's last line (core/reactions.py) hands its events here:
  each event a live hook takes becomes a delivery row (its body fixed then, with a delivery id that
  a receiver deduplicates on) and an RQ job. Nothing here can fail or hold up the move: it is
  committed before, and a failure to queue is logged (the sweep finds pending deliveries again).
- A delivery is one POST of the body, signed `X-R2K-Signature: sha256=HEX`, the HMAC-SHA256 of the
  body's bytes under the hook's own secret (shown once, when the hook is added). A 2xx delivers it;
  anything else is an attempt logged and retried with backoff (RETRY_IN), up to ATTEMPTS tries.
- A hook whose last PAUSE_AFTER deliveries all failed is paused, with a live notice and a warning in
  the log; `r2k webhooks resume` takes it back. Rows are never deleted: a removed hook keeps its log.
"""
from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import logging
import pkgutil
import secrets
import threading
import time
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ... import machines as package
from ...adapters.postgres import jsonable, public_row
from ...domain import Actor, limits, parse_id
from ...errors import Conflict, Forbidden, InvalidInput, NotFound
from ...events import append, now
from ...machines import Machine
from .. import jobs
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...context import Context
    from ...engine import Event

log = logging.getLogger(__name__)

ATTEMPTS = 5  # tries of one delivery: the first and four retries
RETRY_IN = (10, 60, 300, 1800)  # seconds before each retry: the backoff
PAUSE_AFTER = 5  # deliveries in a row that failed every try: the hook is paused
TIMEOUT = 10.0  # seconds a receiver has to answer one POST
CACHED_FOR = 2.0  # seconds a process keeps the live hooks it read (a new hook takes events within this)
URL = 2_000
SIGNATURE = "X-R2K-Signature"
COLUMNS = ("id, url, events, created_by, created_at, paused_at, paused_reason, failures, removed_at, removed_by, "
           "version")

# Past forms of the machines' actions that are not the action + "d" or "ed".
PAST = {"reset": "reset", "withdraw": "withdrawn", "record_version": "version_recorded",
        "note_approval": "approval_noted", "pass_analysis": "analysis_passed", "flag_analysis": "analysis_flagged",
        "re_review": "re_reviewed", "source_added": "source_added", "ingested": "ingested", "generated": "generated",
        "ready": "ready", "generate": "generating", "retry": "retried", "classify": "classified", "fail": "failed", "submit": "submitted",
        "supersede": "superseded", "publish": "published", "dismiss": "dismissed"}
# Events that are no machine's move but have their row in the reactions table.
RECORDED = {("source_document", "ingested"), ("candidate", "source_added")}


def event_name(entity: str, action: str) -> str:
    """`candidate.approved` for the candidate machine's `approve`: what a hook subscribes to."""
    done = PAST.get(action) or (action + "d" if action.endswith("e") else action + "ed")
    return f"{entity}.{done}"


def known_events() -> dict[str, tuple[str, str]]:
    """Every event name a hook may take, and the (entity, action) it is."""
    pairs = {(m.name, a) for m in machines() for a in m.actions} | RECORDED
    return {event_name(e, a): (e, a) for e, a in sorted(pairs)}


def machines() -> list:
    """Every Machine of core/machines, found in its modules rather than listed, so a new machine's moves
    have their names at once."""
    found = {}
    for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, Machine):
                found[id(value)] = value
    return sorted(found.values(), key=lambda m: m.name)


def _events(given: list[str] | str) -> list[str]:
    names = given.split(",") if isinstance(given, str) else list(given or [])
    names = [n.strip() for n in names if n and n.strip()]
    if not names:
        raise InvalidInput("a webhook needs --events: names such as candidate.approved,answer.published, "
                           "ENTITY.* or *")
    known = known_events()
    entities = {e for e, _ in known.values()}
    for name in names:
        limits.text(name, "an event name", 100)
        if name == "*" or name in known or (name.endswith(".*") and name[:-2] in entities):
            continue
        raise InvalidInput(f"unknown event {name!r}: expected *, ENTITY.* ({', '.join(sorted(entities))}) or one "
                           f"of {', '.join(sorted(known))}")
    return sorted(set(names))


def _url(url: str) -> str:
    url = (limits.text(url, "a webhook URL", URL) or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"a webhook URL is http:// or https:// with a host, got {url[:80]!r}")
    return url


def _admin(by: Actor, what: str) -> None:
    if not (by.is_system or by.role == "admin"):
        raise Forbidden(f"{by.name} ({by.role}) may not {what}: only an admin may")


def _forget() -> None:
    _CACHE.clear()


def add(ctx: Context, by: Actor, url: str, events: list[str] | str, *, idempotency_key: str | None = None) -> dict:
    """A hook (an admin's). The result holds its secret, the only time it is shown."""
    _admin(by, "add webhooks")
    url, names = _url(url), _events(events)
    secret = secrets.token_hex(32)

    def work(tx):
        at = now()
        row = tx.one(f"INSERT INTO webhooks (url, events, secret, created_by, created_at) VALUES (%s, %s, %s, %s, %s) "
                     f"RETURNING {COLUMNS}", (url, names, secret, by.name, at))
        append(tx, tx.signer, "webhook", row["id"], "webhook_added", by.name,
               {"url": url, "events": names}, at=at)
        tx.after_commit(_forget)
        return {**_shown(row), "secret": secret}

    return in_unit_of_work(ctx, by, "webhooks.add", {"url": url, "events": names}, work,
                           idempotency_key=idempotency_key)


def _shown(row: dict) -> dict:
    state = "REMOVED" if row["removed_at"] else "PAUSED" if row["paused_at"] else "ACTIVE"
    return {**public_row(row), "state": state}


def list_hooks(ctx: Context, by: Actor, *, removed: bool = False) -> list[dict]:
    _admin(by, "list webhooks")
    where = "" if removed else "WHERE removed_at IS NULL"
    with ctx.db.read() as tx:
        return [_shown(r) for r in tx.all(f"SELECT {COLUMNS} FROM webhooks {where} ORDER BY id")]


def _change(ctx: Context, by: Actor, hook_id, op: str, what: str, idempotency_key: str | None, change) -> dict:
    _admin(by, f"{what} webhooks")
    hid = parse_id(hook_id, "webhook")

    def work(tx):
        row = tx.one(f"SELECT {COLUMNS} FROM webhooks WHERE id = %s FOR UPDATE", (hid,))
        if row is None or row["removed_at"] is not None:
            raise NotFound(f"no webhook {hid}" + (" (it was removed)" if row else ""))
        values = change(row)
        at = now()
        sets = {**values, "version": row["version"] + 1}
        done = tx.one(f"UPDATE webhooks SET {', '.join(f'{k} = %s' for k in sets)} WHERE id = %s RETURNING {COLUMNS}",
                      (*sets.values(), hid))
        append(tx, tx.signer, "webhook", hid, f"webhook_{op}", by.name, {"set": jsonable(sets)}, at=at)
        tx.after_commit(_forget)
        return _shown(done)

    return in_unit_of_work(ctx, by, f"webhooks.{op}", {"id": hid}, work, idempotency_key=idempotency_key)


def remove(ctx: Context, by: Actor, hook_id, *, idempotency_key: str | None = None) -> dict:
    """No more deliveries to it (its pending ones are skipped); its row and log stay, for audit."""
    return _change(ctx, by, hook_id, "removed", "remove", idempotency_key,
                   lambda row: {"removed_at": now(), "removed_by": by.name})


def resume(ctx: Context, by: Actor, hook_id, *, idempotency_key: str | None = None) -> dict:
    """A paused hook takes events again, its failures counted afresh; resuming a live one is a 409."""
    def change(row):
        if row["paused_at"] is None:
            raise Conflict(f"webhook {row['id']} is not paused")
        return {"paused_at": None, "paused_reason": None, "failures": 0}

    return _change(ctx, by, hook_id, "resumed", "resume", idempotency_key, change)


def delivery_log(ctx: Context, by: Actor, hook_id=None, *, limit: int = 50) -> list[dict]:
    """Each attempt, newest first (of one hook, when given): its delivery, event, try, HTTP status or error."""
    _admin(by, "read the webhook log")
    limit = limits.number(limit, "--limit", limits.LIST_LIMIT)
    where, params = ("WHERE d.webhook_id = %s", [parse_id(hook_id, "webhook")]) if hook_id is not None else ("", [])
    with ctx.db.read() as tx:
        return [public_row(r) for r in tx.all(
            "SELECT a.id, d.webhook_id, d.delivery_id, d.event, d.status, a.attempt, a.at, a.status_code, a.error, "
            f"a.duration_ms, d.next_attempt_at FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id "
            f"{where} ORDER BY a.id DESC LIMIT %s", [*params, limit])]


# ----------------------------------------------------------------------------- after a move

_CACHE: dict[str, tuple[float, list[dict]]] = {}
_CACHE_LOCK = threading.Lock()


def _live_hooks(ctx: Context) -> list[dict]:
    """The hooks that take events, as read at most CACHED_FOR seconds ago by this process: a move
    costs no query while there are none."""
    key = ctx.database_url
    held = _CACHE.get(key)
    if held is not None and time.monotonic() - held[0] < CACHED_FOR:
        return held[1]
    with _CACHE_LOCK:
        with ctx.db.read() as tx:
            hooks = tx.all("SELECT id, events FROM webhooks WHERE removed_at IS NULL AND paused_at IS NULL")
        _CACHE[key] = (time.monotonic(), hooks)
    return hooks


def _takes(hook: dict, entity: str, name: str) -> bool:
    return any(e == "*" or e == name or e == f"{entity}.*" for e in hook["events"])


def fire_later(ctx: Context, events: list[Event]) -> None:
    """After a commit: a delivery for each event a live hook takes, queued on RQ. Never raises (the
    move is committed; a delivery not queued now is queued by the sweep, `requeue_pending`)."""
    try:
        hooks = _live_hooks(ctx)
        if not hooks:
            return
        made = []
        with ctx.db.begin() as tx:
            for event in events:
                name = event_name(event.machine, event.action)
                for hook in hooks:
                    if not _takes(hook, event.machine, name):
                        continue
                    delivery_id = str(uuid.uuid4())
                    body = json.dumps(jsonable({
                        "id": delivery_id, "event": name, "entity": event.machine, "entity_id": event.aggregate_id,
                        "action": event.action, "from": event.from_state, "to": event.to_state,
                        "version": event.version, "actor": event.actor.name, "at": now(),
                        "data": public_row(event.row)}), sort_keys=True, separators=(",", ":"), default=str)
                    made.append(tx.one("INSERT INTO webhook_deliveries (delivery_id, webhook_id, event, body, "
                                       "created_at) VALUES (%s, %s, %s, %s, %s) RETURNING id",
                                       (delivery_id, hook["id"], name, body, now()))["id"])
        # One Redis round trip for all of them (a document's thousand candidates, each an event).
        jobs.enqueue_all(ctx, "generation", "deliver_webhook_task", [((pk,), f"r2k-webhook-{pk}-1") for pk in made])
    except Exception as exc:  # noqa: BLE001 - a webhook never fails the move that fired it
        log.warning("webhook deliveries for %d event(s) were not queued: %s", len(events), exc)


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: `sha256=` and the HMAC-SHA256 of the body under the hook's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(ctx: Context, delivery: int) -> dict:
    """One attempt at one delivery (`deliver_webhook_task`): POST, log the attempt, then delivered,
    a retry queued after its backoff, or failed (and the hook paused when its deliveries keep failing)."""
    import httpx

    with ctx.db.begin() as tx:
        row = tx.one("SELECT d.*, w.url, w.secret, w.paused_at, w.removed_at FROM webhook_deliveries d "
                     "JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = %s FOR UPDATE OF d", (int(delivery),))
        if row is None or row["status"] != "pending":
            return {"delivery": delivery, "status": row["status"] if row else "missing"}
        if row["removed_at"] is not None or row["paused_at"] is not None:
            tx.execute("UPDATE webhook_deliveries SET status = 'skipped' WHERE id = %s", (row["id"],))
            return {"delivery": delivery, "status": "skipped"}
    attempt = row["attempts"] + 1
    body = row["body"].encode()
    headers = {"Content-Type": "application/json", "User-Agent": "r2k-webhooks", "X-R2K-Event": row["event"],
               "X-R2K-Delivery": row["delivery_id"], "X-R2K-Attempt": str(attempt), SIGNATURE: sign(row["secret"], body)}
    started = time.monotonic()
    code, error = None, None
    try:
        response = httpx.post(row["url"], content=body, headers=headers, timeout=TIMEOUT, follow_redirects=False)
        code = response.status_code
        if not 200 <= code < 300:
            error = f"HTTP {code}"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    took = int((time.monotonic() - started) * 1000)
    delivered = error is None
    retry_in = None if delivered or attempt >= ATTEMPTS else RETRY_IN[min(attempt - 1, len(RETRY_IN) - 1)]
    status = "delivered" if delivered else "pending" if retry_in is not None else "failed"
    paused = None
    with ctx.db.begin() as tx:
        at = now()
        tx.execute("INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms) "
                   "VALUES (%s, %s, %s, %s, %s, %s)", (row["id"], attempt, at, code, error, took))
        tx.execute("UPDATE webhook_deliveries SET attempts = %s, status = %s, delivered_at = %s, "
                   "next_attempt_at = %s WHERE id = %s",
                   (attempt, status, at if delivered else None,
                    None if retry_in is None else at + _seconds(retry_in), row["id"]))
        if delivered:
            tx.execute("UPDATE webhooks SET failures = 0 WHERE id = %s AND failures <> 0", (row["webhook_id"],))
        elif status == "failed":
            hook = tx.one("UPDATE webhooks SET failures = failures + 1 WHERE id = %s RETURNING id, failures, paused_at",
                          (row["webhook_id"],))
            if hook["failures"] >= PAUSE_AFTER and hook["paused_at"] is None:
                paused = f"its last {hook['failures']} deliveries failed every try (the last: {error})"
                sets = {"paused_at": at, "paused_reason": paused}
                tx.execute("UPDATE webhooks SET paused_at = %s, paused_reason = %s, version = version + 1 "
                           "WHERE id = %s", (at, paused, hook["id"]))
                append(tx, tx.signer, "webhook", hook["id"], "webhook_paused", "system", {"set": jsonable(sets)}, at=at)
                tx.after_commit(_forget)
    if paused:
        log.warning("webhook %s paused: %s", row["webhook_id"], paused)
        ctx.notify("webhook", id=row["webhook_id"], action="pause", state="PAUSED")
    if retry_in is not None:
        jobs.enqueue_in(ctx, "generation", "deliver_webhook_task", retry_in, row["id"],
                        job_id=f"r2k-webhook-{row['id']}-{attempt + 1}")
    return {"delivery": row["id"], "delivery_id": row["delivery_id"], "attempt": attempt, "status": status,
            "status_code": code, "error": error, "retry_in": retry_in, "paused": paused is not None}


def _seconds(n: float):
    return timedelta(seconds=n)


def requeue_pending(ctx: Context, *, late: float = 120.0) -> list[int]:
    """Deliveries still pending well after they were due (their job lost with a Redis that lost data,
    or never queued): queued again. What the sweep runs."""
    with ctx.db.read() as tx:
        rows = tx.all("SELECT id, attempts FROM webhook_deliveries WHERE status = 'pending' AND "
                      "coalesce(next_attempt_at, created_at) < now() - make_interval(secs => %s) ORDER BY id LIMIT 500",
                      (late,))
    queued = []
    for r in rows:
        job_id = f"r2k-webhook-{r['id']}-{r['attempts'] + 1}"
        if not jobs.waiting(ctx, "generation", job_id):
            jobs.enqueue(ctx, "generation", "deliver_webhook_task", r["id"], job_id=job_id)
            queued.append(r["id"])
    return queued
