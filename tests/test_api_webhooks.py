"""Webhooks (docs/architecture.md, "HTTP API") against a test receiver on this machine: the signature
over the body, the delivery id, retries with backoff, the delivery log, the pause of a hook that keeps
failing, and that a webhook never holds up nor fails the move that fired it."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from r2k.core.services.operations import webhooks
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json


class Receiver:
    """An HTTP server that records each POST (headers, body) and answers the next status of `answers`
    (the last one again once they run out), after `delay` seconds."""

    def __init__(self, answers=(200,), delay: float = 0.0):
        self.answers, self.delay, self.got = list(answers), delay, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.got.append({"headers": dict(self.headers), "body": body})
                time.sleep(outer.delay)
                status = outer.answers.pop(0) if len(outer.answers) > 1 else outer.answers[0]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(*answers, delay: float = 0.0) -> Receiver:
        made.append(Receiver(answers or (200,), delay))
        return made[-1]

    yield make
    for r in made:
        r.close()


def approve_one(ctx, people, text="Rotterdam has 14 loading docks."):
    c = candidates.add(ctx, people["root"], "How many docks?", text, "FACT")
    claims.claim(ctx, people["alice"], c["id"])
    return candidates.decide(ctx, people["alice"], c["id"], "approve")


def burst(ctx) -> None:
    """Run the generation queue's jobs in this process until it is empty (as tests/test_conflicts.py does)."""
    from r2k.core.adapters.jobs import QUEUES
    from r2k.workers import tasks
    from r2k.workers.main import R2KWorker

    tasks._ctx, tasks._pid = ctx, os.getpid()
    try:
        R2KWorker([QUEUES["generation"]], connection=ctx.redis).work(burst=True, logging_level="WARNING")
    finally:
        tasks._ctx = tasks._pid = None


def delivery_rows(ctx):
    with ctx.db.read() as tx:
        return tx.all("SELECT * FROM webhook_deliveries ORDER BY id")


def test_a_delivery_is_signed_over_its_body_with_the_hooks_secret_and_carries_its_delivery_id(ctx, people, receiver):
    r = receiver(200)
    hook = r2k_json("--as", "root", "webhooks", "add", r.url, "--events", "candidate.approved,answer.published")
    assert hook["state"] == "ACTIVE" and len(hook["secret"]) == 64
    assert "secret" not in r2k_json("--as", "root", "webhooks", "list")[0]
    decided = approve_one(ctx, people)
    webhooks._forget()
    burst(ctx)
    assert len(r.got) == 2  # the approval and the publication, nothing else
    for got in r.got:
        expected = "sha256=" + hmac.new(hook["secret"].encode(), got["body"], hashlib.sha256).hexdigest()
        assert hmac.compare_digest(got["headers"]["X-R2K-Signature"], expected)
        body = json.loads(got["body"])
        assert body["id"] == got["headers"]["X-R2K-Delivery"] and body["event"] == got["headers"]["X-R2K-Event"]
    by_event = {json.loads(g["body"])["event"]: json.loads(g["body"]) for g in r.got}
    assert by_event["candidate.approved"]["entity_id"] == decided["candidate"]["id"]
    assert by_event["answer.published"]["data"]["text"] == "Rotterdam has 14 loading docks."
    logged = r2k_json("--as", "root", "webhooks", "log", str(hook["id"]))
    assert [(e["status_code"], e["status"], e["attempt"]) for e in logged] == [(200, "delivered", 1)] * 2
    # a receiver that checks the signature with another secret, or over another body, refuses it
    forged = "sha256=" + hmac.new(b"not the secret", r.got[0]["body"], hashlib.sha256).hexdigest()
    assert not hmac.compare_digest(r.got[0]["headers"]["X-R2K-Signature"], forged)


def test_a_failed_attempt_is_retried_with_backoff_and_each_attempt_is_logged(ctx, people, receiver):
    r = receiver(503, 500, 200)
    hook = webhooks.add(ctx, people["root"], r.url, ["candidate.*"])
    approve_one(ctx, people)
    [pending] = [d for d in delivery_rows(ctx) if d["event"] == "candidate.approved"]
    first = webhooks.deliver(ctx, pending["id"])
    assert (first["status"], first["status_code"], first["retry_in"]) == ("pending", 503, webhooks.RETRY_IN[0])
    # the retry waits in RQ's scheduled registry for its backoff, as `r2k worker`'s scheduler runs it
    from rq.registry import ScheduledJobRegistry

    from r2k.core.adapters.jobs import queue

    scheduled = ScheduledJobRegistry(queue=queue(ctx.redis, "generation"))
    assert f"r2k-webhook-{pending['id']}-2" in scheduled.get_job_ids()
    second = webhooks.deliver(ctx, pending["id"])  # what the scheduled job does when due
    assert (second["status"], second["retry_in"]) == ("pending", webhooks.RETRY_IN[1])
    third = webhooks.deliver(ctx, pending["id"])
    assert third["status"] == "delivered" and third["attempt"] == 3
    assert webhooks.deliver(ctx, pending["id"])["status"] == "delivered"  # a late duplicate job sends nothing
    attempts = [g for g in r.got if json.loads(g["body"])["event"] == "candidate.approved"]
    assert [g["headers"]["X-R2K-Attempt"] for g in attempts] == ["1", "2", "3"]
    assert len({g["headers"]["X-R2K-Delivery"] for g in attempts}) == 1  # one delivery id: the receiver dedupes
    assert len({g["body"] for g in attempts}) == 1
    log = webhooks.delivery_log(ctx, people["root"], hook["id"])
    assert [(e["attempt"], e["status_code"]) for e in log if e["event"] == "candidate.approved"] == [
        (3, 200), (2, 500), (1, 503)]


def test_a_hook_that_keeps_failing_is_paused_with_a_notice_and_resumed_by_an_admin(ctx, people, receiver):
    r = receiver(500)
    hook = webhooks.add(ctx, people["root"], r.url, ["answer.published"])
    notices = ctx.redis.pubsub()
    from r2k.core.services.session import CHANNEL

    notices.subscribe(CHANNEL)
    for n in range(webhooks.PAUSE_AFTER):
        approve_one(ctx, people, f"Rotterdam has {10 + n} loading docks.")
    made = delivery_rows(ctx)
    assert len(made) == webhooks.PAUSE_AFTER
    for d in made:
        for _ in range(webhooks.ATTEMPTS):
            webhooks.deliver(ctx, d["id"])
    assert [d["status"] for d in delivery_rows(ctx)] == ["failed"] * webhooks.PAUSE_AFTER
    assert len(r.got) == webhooks.PAUSE_AFTER * webhooks.ATTEMPTS
    [listed] = webhooks.list_hooks(ctx, people["root"])
    assert listed["state"] == "PAUSED" and "HTTP 500" in listed["paused_reason"]
    said = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(b'"webhook"' in m for m in said):
        m = notices.get_message(timeout=0.5)
        if m and m["type"] == "message":
            said.append(m["data"])
    assert any(json.loads(m)["entity"] == "webhook" and json.loads(m)["state"] == "PAUSED" for m in said
               if b'"webhook"' in m)
    # paused: a new publication makes no delivery
    webhooks._forget()
    approve_one(ctx, people, "Rotterdam has 30 loading docks.")
    assert len(delivery_rows(ctx)) == webhooks.PAUSE_AFTER
    text = r2k("--as", "root", "webhooks", "list").stdout
    assert "PAUSED" in text
    resumed = r2k_json("--as", "root", "webhooks", "resume", str(hook["id"]))
    assert resumed["state"] == "ACTIVE" and resumed["failures"] == 0
    assert r2k("--json", "--as", "root", "webhooks", "resume", str(hook["id"])).returncode == 4
    approve_one(ctx, people, "Rotterdam has 31 loading docks.")
    assert len(delivery_rows(ctx)) == webhooks.PAUSE_AFTER + 1
    notices.close()


def test_a_webhook_never_holds_up_nor_fails_the_move_that_fired_it(ctx, people, receiver):
    slow = receiver(200, delay=5)
    webhooks.add(ctx, people["root"], slow.url, ["*"])
    webhooks.add(ctx, people["root"], "http://127.0.0.1:9/nobody-listens", ["*"])
    started = time.monotonic()
    decided = approve_one(ctx, people)
    assert time.monotonic() - started < 3 and decided["answer"]["status"] == "APPROVED"
    assert slow.got == []  # nothing was sent in the move's path: deliveries wait for a worker
    refused = webhooks.deliver(ctx, delivery_rows(ctx)[-1]["id"])
    assert refused["status"] == "pending" and "ConnectError" in refused["error"]


def test_webhooks_are_an_admins_and_bad_input_changes_nothing(ctx, people, receiver):
    r = receiver()
    denied = r2k("--json", "--as", "alice", "webhooks", "add", r.url, "--events", "*")
    assert denied.returncode == 7 and error_of(denied)["status"] == 403
    for url, events in [("ftp://example.org/x", "*"), (r.url, "candidate.exploded"), (r.url, ","),
                        ("http:///no-host", "*")]:
        bad = r2k("--json", "--as", "root", "webhooks", "add", url, "--events", events)
        assert bad.returncode == 6, bad.stderr
    assert "candidate.approved" in error_of(r2k("--json", "--as", "root", "webhooks", "add", r.url, "--events",
                                                "candidate.exploded"))["message"]
    assert r2k_json("--as", "root", "webhooks", "list") == []
    hook = r2k_json("--as", "root", "webhooks", "add", r.url, "--events", "task.*")
    gone = r2k_json("--as", "root", "webhooks", "remove", str(hook["id"]))
    assert gone["state"] == "REMOVED" and r2k_json("--as", "root", "webhooks", "list") == []
    assert r2k("--json", "--as", "root", "webhooks", "remove", str(hook["id"])).returncode == 3
    assert r2k("--json", "--as", "alice", "webhooks", "log").returncode == 7


def test_every_move_of_every_machine_has_an_event_name_and_the_names_are_distinct():
    from tests.test_engine import MACHINES

    names = webhooks.known_events()
    pairs = {(m.name, a) for m in MACHINES for a in m.actions}
    assert pairs <= set(names.values()) and len(names) == len(pairs | webhooks.RECORDED)
    assert {"candidate.approved", "answer.published", "answer.superseded", "task.submitted",
            "grey_entry.resolved", "conflict_flag.escalated"} <= set(names)
