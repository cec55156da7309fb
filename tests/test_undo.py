"""Undo: a validator takes back their last decision within R2K_UNDO_SECONDS, while nothing downstream
has used it; nothing is erased, nothing leaves a terminal state, every step is a signed event."""
from __future__ import annotations

import pytest

from r2k.core.errors import Conflict, Forbidden, NotFound
from r2k.core.services.answering import workitems
from r2k.core.services.answers import registry
from r2k.core.services.queue import candidate_views, claims, queue_index, undo
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json, redis_snapshot

TABLES = ("candidates", "approved_answers", "work_items", "validation_records", "events")


def world(ctx) -> dict:
    """Every row that undo could touch, and Redis: a refused undo leaves all of it as it was."""
    with ctx.db.read() as tx:
        rows = {t: tx.all(f"SELECT * FROM {t} ORDER BY id") for t in TABLES}
    return {**rows, "redis": redis_snapshot(ctx.redis)}


def claimed_one(ctx, people, text="The dock has fourteen bays.", who="alice"):
    candidates.add(ctx, people["root"], "How many bays has the dock?", text, "FACT", "handbook, section 2")
    return claims.claim_next(ctx, people[who], "FACT")


def decide(ctx, people, action, who="alice"):
    c = claimed_one(ctx, people, who=who)
    fields = {"approve": {}, "revise": {"text": "The dock has fifteen bays."},
              "reject": {"reason": "wrong count"}, "escalate": {"reason": "needs the site plan"}}[action]
    return c, candidates.decide(ctx, people[who], c["id"], action, **fields)


def audit_ok():
    verify = r2k("--json", "audit", "verify", "--as", "root")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    replay = r2k_json("replay", "--verify", "--as", "root")
    assert replay["ok"] is True, replay["differences"]


@pytest.mark.parametrize("action", ["approve", "revise"])
def test_undoing_a_publication_retires_the_answer_and_gives_back_a_new_candidate(ctx, people, action):
    c, decided = decide(ctx, people, action)
    result = undo.undo(ctx, people["alice"])
    retired, made = result["undone"]["retired"], result["candidate"]
    assert (retired["id"], retired["status"], retired["reason"]) == (decided["answer"]["id"], "RETIRED", "undone")
    assert result["undone"]["candidate"]["state"] == decided["candidate"]["state"]  # the old one keeps its state
    # The new candidate: linked, the same content as before the decision, claimed by alice with a fresh lease.
    assert (made["origin"], made["undo_of"], made["state"], made["claimed_by"]) == ("undo", c["id"], "IN_REVIEW", "alice")
    assert (made["question"], made["text"], made["horn_type"], made["source_refs"]) == (
        c["question"], "The dock has fourteen bays.", "FACT", c["source_refs"])
    assert made["lease_expires_at"] is not None
    assert [h["action"] for h in candidate_views.history(ctx, made["id"])] == ["extract", "claim"]
    assert registry.search(ctx, "bays") == []  # retired: out of search
    # Nothing of it sits in the queue: it is claimed.
    assert made["id"] not in claims.queue_index.queue(ctx).ids("FACT")
    # It decides like any other.
    again = candidates.approve(ctx, people["alice"], made["id"])
    assert again["answer"]["status"] == "APPROVED"
    audit_ok()


def test_undoing_a_rejection_leaves_it_rejected_and_gives_back_a_new_candidate(ctx, people):
    c, _ = decide(ctx, people, "reject")
    result = r2k_json("--as", "alice", "candidates", "undo", str(c["id"]))
    assert result["undone"]["candidate"]["state"] == "REJECTED"
    assert "retired" not in result["undone"] and "work_item" not in result["undone"]
    made = result["candidate"]
    assert (made["undo_of"], made["state"], made["claimed_by"], made["text"]) == (
        c["id"], "IN_REVIEW", "alice", c["text"])
    audit_ok()


def test_undoing_an_escalation_closes_its_work_item_and_the_escalated_candidate(ctx, people):
    c, decided = decide(ctx, people, "escalate")
    result = undo.undo(ctx, people["alice"], c["id"])
    item = result["undone"]["work_item"]
    assert (item["id"], item["state"], item["reason"]) == (decided["work_item"]["id"], "CLOSED", "undone")
    assert result["undone"]["candidate"]["state"] == "CLOSED"
    assert result["candidate"]["undo_of"] == c["id"] and result["candidate"]["claimed_by"] == "alice"
    with ctx.db.read() as tx:
        events = [r["type"] for r in tx.all("SELECT type FROM events WHERE aggregate_type = 'work_item' "
                                             "ORDER BY seq")]
    assert events == ["create", "close"]
    audit_ok()


def test_the_cli_says_what_undo_did(ctx, people):
    c, decided = decide(ctx, people, "approve")
    out = r2k("--as", "alice", "candidates", "undo", str(c["id"]))
    assert out.returncode == 0, out.stderr
    assert f"Undid your approve of candidate {c['id']}" in out.stdout
    assert f"Answer {decided['answer']['id']} is RETIRED (reason: undone)." in out.stdout
    assert "is claimed by you: decide it again." in out.stdout


def test_undo_twice_undoes_the_decision_before(ctx, people):
    first, _ = decide(ctx, people, "reject")
    second, _ = decide(ctx, people, "approve")
    assert undo.undo(ctx, people["alice"])["undone"]["candidate"]["id"] == second["id"]
    assert undo.undo(ctx, people["alice"])["undone"]["candidate"]["id"] == first["id"]
    with pytest.raises(NotFound, match="nothing to undo"):
        undo.undo(ctx, people["alice"])


# ----------------------------------------------------------------------------- refusals change nothing

def refused(ctx, call, error, words):
    before = world(ctx)
    with pytest.raises(error) as caught:
        call()
    assert words in caught.value.message, caught.value.message
    assert world(ctx) == before
    return caught.value


def test_past_the_window_undo_says_to_dispute_from_the_registry(ctx, people, monkeypatch):
    c, decided = decide(ctx, people, "approve")
    monkeypatch.setattr(ctx.settings, "undo_seconds", 0.0)
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Conflict,
            f"past the 0 s undo window: dispute it from the registry instead (answer {decided['answer']['id']})")
    # The command line says so too, with its exit code (409: 4), under the window it reads.
    monkeypatch.setenv("R2K_UNDO_SECONDS", "0")
    result = r2k("--as", "alice", "candidates", "undo", str(c["id"]))
    assert result.returncode == 4
    assert "dispute it from the registry instead" in error_of(result)["message"]


def test_someone_elses_decision_is_a_403(ctx, people):
    c, _ = decide(ctx, people, "approve", who="bob")
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Forbidden,
            "bob made it, and only the validator who decided may undo it")
    result = r2k("--as", "alice", "candidates", "undo", str(c["id"]))
    assert (result.returncode, error_of(result)["status"]) == (7, 403)


def test_nothing_to_undo_is_a_404(ctx, people):
    refused(ctx, lambda: undo.undo(ctx, people["alice"]), NotFound, "nothing to undo")
    c = claimed_one(ctx, people)
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), NotFound,
            f"nothing to undo: candidate {c['id']} has not been decided")
    refused(ctx, lambda: undo.undo(ctx, people["alice"], 999), NotFound, "no candidate 999")
    result = r2k("--as", "alice", "candidates", "undo", "999")
    assert (result.returncode, error_of(result)["status"]) == (3, 404)


def test_an_undone_decision_is_not_undone_again(ctx, people):
    c, _ = decide(ctx, people, "approve")
    made = undo.undo(ctx, people["alice"], c["id"])["candidate"]
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), NotFound,
            f"was undone already (candidate {made['id']})")


def test_only_the_last_decision_is_undone(ctx, people):
    first, _ = decide(ctx, people, "approve")
    second, _ = decide(ctx, people, "reject")
    refused(ctx, lambda: undo.undo(ctx, people["alice"], first["id"]), Conflict,
            f"not your last decision (candidate {second['id']} is)")


def test_a_disputed_answer_is_used_downstream(ctx, people):
    c, decided = decide(ctx, people, "approve")
    registry.dispute(ctx, people["bob"], decided["answer"]["id"], "the count changed")
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Conflict,
            f"answer {decided['answer']['id']}, which your approve published, is DISPUTED now: bob moved it (dispute)")
    result = r2k("--as", "alice", "candidates", "undo", str(c["id"]))
    assert (result.returncode, error_of(result)["status"]) == (4, 409)


def test_a_superseded_answer_is_used_downstream(ctx, people):
    c, decided = decide(ctx, people, "revise")
    registry.supersede(ctx, people["bob"], decided["answer"]["id"], "Sixteen bays.", "rebuilt")
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Conflict,
            f"answer {decided['answer']['id']}, which your revise published, is SUPERSEDED now: bob moved it")


def test_a_work_item_no_longer_new_is_used_downstream(ctx, people):
    c, decided = decide(ctx, people, "escalate")
    with ctx.db.begin() as tx:  # the generation job picked it up
        from r2k.core import engine
        from r2k.core.domain import SYSTEM
        from r2k.core.machines.work_item import WORK_ITEM

        engine.apply(tx, WORK_ITEM, decided["work_item"]["id"], "generate", SYSTEM)
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Conflict,
            f"work item {decided['work_item']['id']}, which your escalation opened, is GENERATING now: "
            f"the generation worker took it up (generate)")
    assert workitems.get(ctx, decided["work_item"]["id"])["state"] == "GENERATING"


def test_a_work_item_someone_closed_names_them(ctx, people):
    c, decided = decide(ctx, people, "escalate")
    workitems.close(ctx, people["sam"], decided["work_item"]["id"], reason="asked the site lead")
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Conflict,
            f"work item {decided['work_item']['id']}, which your escalation opened, is CLOSED now: "
            f"sam moved it (close)")


def test_a_re_review_decision_is_not_undone(ctx, people):
    c, decided = decide(ctx, people, "approve")
    registry.dispute(ctx, people["bob"], decided["answer"]["id"], "the count changed")
    again = claims.claim_next(ctx, people["alice"], "FACT")
    assert again["id"] == c["id"]
    candidates.approve(ctx, people["alice"], c["id"])
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Conflict, "settled the dispute")


# ----------------------------------------------------------------------------- the review screen's z

async def test_z_undoes_your_last_decision_and_shows_the_candidate_again_at_once(ctx, people):
    from tests.test_tui_validation import open_review, seed_facts, showing
    from tests.tui import after, candidate_on, make_app, text_of

    ids = seed_facts(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        await pilot.press("a")
        await showing(pilot, screen, ids[1])
        await pilot.press("z")
        said = await after(pilot, "Undid your approve")
        made = candidate_views.list_candidates(ctx, "IN_REVIEW", "FACT", claimed_by="alice")
        [new] = [c for c in made if c["id"] not in ids]
        assert candidate_on(screen) == new["id"]
        assert "A plain fact number 1." in text_of(app, "#answer-text")
        assert f"back as candidate {new['id']}, claimed by you" in said
        assert f"Candidate {ids[1]} went back to the head of its queue" in said
        # The claim that was on screen is back at the head, for anyone.
        assert candidate_views.get(ctx, ids[1])["state"] == "PENDING"
        assert queue_index.queue(ctx).ids("FACT")[0] == ids[1]
        with ctx.db.read() as tx:
            assert tx.scalar("SELECT status FROM approved_answers WHERE candidate_id = %s", (ids[0],)) == "RETIRED"


async def test_z_past_the_window_says_to_dispute_from_the_registry(ctx, people, monkeypatch):
    from tests.test_tui_validation import open_review, seed_facts, showing
    from tests.tui import after, candidate_on, make_app

    ids = seed_facts(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        await pilot.press("a")
        await showing(pilot, screen, ids[1])
        monkeypatch.setattr(ctx.settings, "undo_seconds", 0.0)
        before = world(ctx)
        await pilot.press("z")
        said = await after(pilot, "Nothing was undone")
        assert "dispute it from the registry instead" in said and "G opens the registry" in said
        assert candidate_on(screen) == ids[1]  # still deciding the one on screen
        await pilot.pause()
        assert world(ctx) == before


def test_a_generated_candidates_decision_belongs_to_its_work_item(ctx, people):
    from r2k.core.domain import SYSTEM

    item = workitems.create(ctx, people["sam"], "How many bays has the dock?", horn_type="FACT")
    with ctx.db.begin() as tx:
        candidates.create_candidate(tx, SYSTEM, "How many bays has the dock?", "Fourteen bays [1].", "FACT", [],
                                    origin="generated", work_item_id=item["id"])
    c = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.approve(ctx, people["alice"], c["id"])
    refused(ctx, lambda: undo.undo(ctx, people["alice"], c["id"]), Conflict,
            f"was generated for work item {item['id']}")


def test_two_undos_at_once_undo_once(ctx, people):
    import threading

    c, _ = decide(ctx, people, "approve")
    outcomes, barrier = [], threading.Barrier(2)

    def attempt():
        barrier.wait()
        try:
            outcomes.append(undo.undo(ctx, people["alice"], c["id"])["candidate"]["id"])
        except (NotFound, Conflict) as exc:
            outcomes.append(exc.status)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(outcomes) == 2 and outcomes.count(404) == 1  # one made a candidate, the other was told it is done
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM candidates WHERE undo_of = %s", (c["id"],)) == 1
        assert tx.scalar("SELECT count(*) FROM approved_answers WHERE status = 'RETIRED'") == 1


async def test_z_after_the_worker_used_the_work_item_says_what_used_it(ctx, people):
    """Not "someone else got there first": the generation worker took the work item up, and the
    message says so, in the workstation and on the command line."""
    from r2k.core.services.answering import generation
    from tests.test_tui_validation import open_review, seed_facts
    from tests.tui import after, make_app

    seed_facts(ctx, people)
    c, decided = decide(ctx, people, "escalate")
    item = decided["work_item"]["id"]
    generation.generate_answer(ctx, item)  # what the worker's job runs: nothing grounds it, so it escalates
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        before = world(ctx)
        await pilot.press("z")
        said = await after(pilot, "Nothing was undone")
        assert (f"work item {item}, which your escalation opened, is ESCALATED now: the generation worker "
                f"took it up (generate, escalate)") in said
        assert "someone else" not in said.lower()
        await pilot.pause()
        assert world(ctx) == before
    result = r2k("--as", "alice", "candidates", "undo", str(c["id"]))
    assert result.returncode == 4 and "the generation worker took it up" in error_of(result)["message"]
