"""Skip: a validator passes a claimed candidate by for themselves alone; it goes back to its place
(the head) for everyone else, and their own claims serve it again only when nothing else is queued."""
from __future__ import annotations

import threading
import time

import pytest

from r2k.core.adapters.redis_queues import skipped_key
from r2k.core.errors import Forbidden
from r2k.core.services.queue import candidate_views, claims, queue_index, skip
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json, redis_snapshot


def add(ctx, people, n, horn="FACT"):
    return [candidates.add(ctx, people["root"], f"Question {i}?", f"Fact number {i}.", horn)["id"] for i in range(n)]


def test_a_skipped_candidate_goes_back_to_the_head_for_others_and_is_passed_by_for_you(ctx, people):
    ids = add(ctx, people, 3)
    first = claims.claim_next(ctx, people["alice"], "FACT")
    assert first["id"] == ids[0]
    result = skip.skip(ctx, people["alice"], first["id"], then_next=True)
    assert result["skipped"]["state"] == "PENDING"
    assert result["next"]["id"] == ids[1]  # not the one skipped
    assert queue_index.queue(ctx).ids("FACT") == [ids[0], ids[2]]  # its place: the head, not the tail
    assert claims.claim_next(ctx, people["bob"], "FACT")["id"] == ids[0]  # others get it first
    assert ctx.redis.ttl(skipped_key("alice", "FACT")) > 0


def test_a_skip_lapses_after_r2k_skip_seconds_and_the_candidate_is_served_first_again(ctx, people, monkeypatch):
    monkeypatch.setattr(ctx.settings, "skip_seconds", 1)
    ids = add(ctx, people, 3)
    first = claims.claim_next(ctx, people["alice"], "FACT")
    skip.skip(ctx, people["alice"], first["id"])
    key = skipped_key("alice", "FACT")
    assert 0 < ctx.redis.pttl(key) <= 1000  # the setting, not the default's eight hours
    second = claims.claim_next(ctx, people["alice"], "FACT")
    assert second["id"] == ids[1]  # passed by while the skip holds
    candidates.decide(ctx, people["alice"], second["id"], "approve")
    # Redis drops the set when its time is up; from then on alice's claims follow the queue again.
    deadline = time.monotonic() + 10
    while ctx.redis.exists(key) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ctx.redis.exists(key), "the skip never lapsed"
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[0]


def test_the_skipped_candidate_comes_back_when_the_queue_has_nothing_else(ctx, people):
    ids = add(ctx, people, 2)
    a = claims.claim_next(ctx, people["alice"], "FACT")
    skip.skip(ctx, people["alice"], a["id"])
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[1]
    # Only the skipped one is left: it is served rather than nothing.
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[0]


def test_skip_with_nothing_else_serves_the_same_candidate_again(ctx, people):
    [only] = add(ctx, people, 1)
    claims.claim_next(ctx, people["alice"], "FACT")
    result = skip.skip(ctx, people["alice"], only, then_next=True)
    assert result["next"]["id"] == only and result["next"]["claimed_by"] == "alice"


def test_a_later_candidate_comes_before_the_skipped_one(ctx, people):
    [first] = add(ctx, people, 1)
    claims.claim_next(ctx, people["alice"], "FACT")
    skip.skip(ctx, people["alice"], first)
    later = candidates.add(ctx, people["root"], "Later?", "A later fact.", "FACT")["id"]
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == later


def test_skipping_someone_elses_claim_is_refused_and_changes_nothing(ctx, people):
    add(ctx, people, 2)
    c = claims.claim_next(ctx, people["bob"], "FACT")
    with ctx.db.read() as tx:
        before = tx.all("SELECT * FROM candidates ORDER BY id"), tx.scalar("SELECT count(*) FROM events")
    redis_before = redis_snapshot(ctx.redis)
    with pytest.raises(Forbidden):
        skip.skip(ctx, people["alice"], c["id"])
    with ctx.db.read() as tx:
        assert (tx.all("SELECT * FROM candidates ORDER BY id"), tx.scalar("SELECT count(*) FROM events")) == before
    assert redis_snapshot(ctx.redis) == redis_before
    result = r2k("--as", "alice", "candidates", "skip", str(c["id"]))
    assert (result.returncode, error_of(result)["status"]) == (7, 403)
    assert redis_snapshot(ctx.redis) == redis_before


def test_candidates_skip_on_the_command_line(ctx, people):
    ids = add(ctx, people, 2)
    c = claims.claim_next(ctx, people["alice"], "FACT")
    result = r2k_json("--as", "alice", "candidates", "skip", str(c["id"]), "--next")
    assert (result["skipped"]["id"], result["next"]["id"]) == (ids[0], ids[1])
    text = r2k("--as", "alice", "candidates", "release", str(ids[1]))
    assert text.returncode == 0
    # queue claim passes the skipped one by as well
    assert r2k_json("--as", "alice", "queue", "claim", "--horn-type", "FACT")["id"] == ids[1]
    out = r2k("--as", "alice", "candidates", "skip", str(ids[1]))
    assert f"Skipped candidate {ids[1]}" in out.stdout


def test_skips_under_concurrent_claims_lose_nothing_and_claim_nothing_twice(ctx, people):
    """Four validators claim a queue at once, each skipping every third candidate they get, until the
    queue is dry: every candidate ends claimed by exactly one of them, none lost."""
    from r2k.core.services.people import users

    for name in ("carol", "dave"):
        users.add(ctx, name, "validator", ["FACT"])
    actors = [people["alice"], people["bob"], users.resolve(ctx, "carol"), users.resolve(ctx, "dave")]
    ids = add(ctx, people, 200)
    kept: dict[str, list[int]] = {a.name: [] for a in actors}
    errors = []

    def work(actor):
        n = 0
        try:
            while True:
                try:
                    row = claims.claim_next(ctx, actor, "FACT")
                except Exception as exc:  # noqa: BLE001
                    if getattr(exc, "status", None) == 404:
                        return
                    raise
                n += 1
                if n % 3 == 0 and row["id"] not in queue_index.queue(ctx).skipped(actor.name, "FACT"):
                    skip.skip(ctx, actor, row["id"])
                    continue
                kept[actor.name].append(row["id"])
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(a,)) for a in actors]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == []
    claimed = sorted(i for held in kept.values() for i in held)
    assert claimed == ids  # every candidate once: none twice, none lost
    with ctx.db.read() as tx:
        rows = tx.all("SELECT id, state, claimed_by FROM candidates ORDER BY id")
    assert all(r["state"] == "IN_REVIEW" for r in rows)
    assert {r["id"]: r["claimed_by"] for r in rows} == {i: name for name, held in kept.items() for i in held}
    assert queue_index.queue(ctx).held("FACT") == 0


# ----------------------------------------------------------------------------- the review screen's s

async def test_s_skips_the_candidate_and_n_serves_it_again_only_when_nothing_else_is_left(ctx, people):
    from tests.test_tui_validation import open_review, seed_facts, showing
    from tests.tui import after, candidate_on, make_app

    ids = seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == ids[0]
        await pilot.press("s")
        await showing(pilot, screen, ids[1])
        said = await after(pilot, f"Skipped candidate {ids[0]}")
        assert "others get it first" in said
        assert queue_index.queue(ctx).ids("FACT") == [ids[0]]  # back at the head for others
        # Release the one on screen: n passes the skipped one by and serves the released one.
        await pilot.press("u")
        await after(pilot, f"Released candidate {ids[1]}")
        await pilot.press("n")
        await showing(pilot, screen, ids[1])
        # Skipping it too leaves nothing else: the oldest skipped comes back.
        await pilot.press("s")
        await showing(pilot, screen, ids[0])
        assert candidate_views.get(ctx, ids[0])["claimed_by"] == "alice"


# ----------------------------------------------------------------------------- release --next

@pytest.mark.parametrize("expected_version", [True, False], ids=["stale-version-409", "not-in-review-422"])
def test_a_release_that_fails_after_the_next_is_claimed_gives_the_next_back(ctx, people, monkeypatch,
                                                                            expected_version):
    """release --next claims the next first; if the release is then refused (the lease swept in
    between), the command fails with the release's error and leaves nothing claimed by it: the
    next goes back to the head of its queue."""
    from r2k.core.errors import Conflict, ValidationStateError

    ids = add(ctx, people, 3)
    mine = claims.claim_next(ctx, people["alice"], "FACT")
    assert mine["id"] == ids[0]
    take_next = claims.next_for_review

    def next_then_sweep(*args, **kwargs):
        shown = take_next(*args, **kwargs)
        with ctx.db.begin() as tx:  # the claim's lease runs out and the sweep gives it back
            tx.execute("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
                       (ids[0],))
        assert candidates.release_expired(ctx) == [ids[0]]
        return shown

    monkeypatch.setattr(claims, "next_for_review", next_then_sweep)
    with pytest.raises(Conflict if expected_version else ValidationStateError):
        claims.release_and_next(ctx, people["alice"], ids[0],
                                expected_version=mine["version"] if expected_version else None)
    assert candidate_views.list_candidates(ctx, "IN_REVIEW", claimed_by="alice") == []
    given_back = candidate_views.get(ctx, ids[1])
    assert (given_back["state"], given_back["claimed_by"]) == ("PENDING", None)
    assert queue_index.queue(ctx).ids("FACT")[:2] == [ids[1], ids[0]]  # both at the head, the next first
    assert claims.claim_next(ctx, people["bob"], "FACT")["id"] == ids[1]
