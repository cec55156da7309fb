"""A claim under an idempotency key (the workstation and the API always send one): its key row, its
claim, its signed event and its stored response are one statement (claims.claim_next), and every
promise of the unit of work holds: a retry returns the first response and claims nothing more, the
key with another request is a 409, a failed claim stores nothing, an expired key starts anew, and
an id popped for a claim that wrote nothing goes back to the head of its queue."""
from __future__ import annotations

import threading

import pytest

from r2k.core.errors import Conflict, InvalidInput, NotFound
from r2k.core.services.queue import claims, queue_index

from .test_validation import add_many


def key_row(ctx, actor: str, key: str) -> dict | None:
    with ctx.db.read() as tx:
        return tx.one("SELECT * FROM idempotency_keys WHERE actor = %s AND key = %s", (actor, key))


def claim_events(ctx, key: str) -> list[dict]:
    with ctx.db.read() as tx:
        return tx.all("SELECT aggregate_id, type, actor, idempotency_key, signature FROM events "
                      "WHERE type = 'claim' AND idempotency_key = %s", (key,))


def queued(ctx, horn: str = "FACT") -> list[int]:
    return queue_index.queue(ctx).ids(horn)


def test_a_keyed_claim_stores_its_response_with_its_signed_event_and_a_retry_returns_it(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    first = claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-1")
    assert first["id"] == ids[0] and first["state"] == "IN_REVIEW" and first["claimed_by"] == "alice"
    stored = key_row(ctx, "alice", "k-1")
    assert stored is not None and stored["response"] == first  # what the caller got is what is kept
    assert "search" not in first
    [event] = claim_events(ctx, "k-1")
    assert event["aggregate_id"] == str(ids[0]) and event["actor"] == "alice" and event["signature"]

    again = claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-1")
    assert again == first  # the same response, exactly
    assert len(claim_events(ctx, "k-1")) == 1
    assert queued(ctx) == ids[1:]  # nothing more claimed, and the queue's order is as it was
    assert queue_index.queue(ctx).in_flight("FACT") == set()


def test_the_same_key_for_another_request_is_a_409_that_claims_nothing(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 2)
    rule = add_many(ctx, people["root"], "RULE", 2, prefix="R")
    claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-2")
    with pytest.raises(Conflict, match="different request"):
        claims.claim_next(ctx, people["alice"], "RULE", idempotency_key="k-2")
    assert queued(ctx, "RULE") == rule  # the id popped for it went back to the head
    assert queue_index.queue(ctx).in_flight("RULE") == set()
    assert queued(ctx, "FACT") == ids[1:]
    assert len(claim_events(ctx, "k-2")) == 1


def test_a_key_is_each_users_own_on_the_one_statement_path(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 2)
    mine = claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="shared")
    theirs = claims.claim_next(ctx, people["bob"], "FACT", idempotency_key="shared")
    assert (mine["id"], theirs["id"]) == tuple(ids) and theirs["claimed_by"] == "bob"


def test_a_failed_keyed_claim_stores_nothing_and_may_be_retried(ctx, people):
    with pytest.raises(NotFound):
        claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-3")
    assert key_row(ctx, "alice", "k-3") is None
    [cid] = add_many(ctx, people["root"], "FACT", 1)
    assert claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-3")["id"] == cid


@pytest.mark.parametrize("bad", ["", "   ", "k" * 201])
def test_a_bad_key_is_a_400_before_anything_is_popped(ctx, people, bad):
    ids = add_many(ctx, people["root"], "FACT", 2)
    with pytest.raises(InvalidInput, match="idempotency key is 1–200 characters"):
        claims.claim_next(ctx, people["alice"], "FACT", idempotency_key=bad)
    assert queued(ctx) == ids and queue_index.queue(ctx).in_flight("FACT") == set()
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM candidates WHERE state = 'IN_REVIEW'") == 0


def test_an_expired_key_claims_anew(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 2)
    first = claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-4")
    with ctx.db.begin() as tx:
        tx.execute("UPDATE idempotency_keys SET created_at = created_at - interval '25 hours' "
                   "WHERE actor = 'alice' AND key = 'k-4'")
    second = claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-4")
    assert (first["id"], second["id"]) == tuple(ids)
    assert key_row(ctx, "alice", "k-4")["response"]["id"] == ids[1]


def test_two_requests_under_one_key_at_once_claim_once_and_answer_alike(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 4)
    results, errors = [], []
    start = threading.Barrier(2)

    def claim():
        start.wait()
        try:
            results.append(claims.claim_next(ctx, people["alice"], "FACT", idempotency_key="k-5"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(results) == 2 and results[0] == results[1]
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM candidates WHERE state = 'IN_REVIEW'") == 1
    assert len(claim_events(ctx, "k-5")) == 1
    claimed = results[0]["id"]
    assert sorted(queued(ctx)) == sorted(set(ids) - {claimed})  # nothing lost, nothing doubled
    assert queue_index.queue(ctx).in_flight("FACT") == set()
