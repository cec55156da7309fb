"""Overlap: k independent, blind reviews per candidate; agreement publishes, disagreement goes to a
specialist's adjudication; agreement figures (docs/architecture.md, "Overlap")."""
from __future__ import annotations

import json

import pytest

from r2k.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from r2k.core.services.operations import agreement, event_stream
from r2k.core.services.people import users
from r2k.core.services.queue import candidate_views, claims, queue_index, skip, undo
from r2k.core.services.validation import candidates, overlap
from tests.conftest import error_of, r2k, r2k_json

# ----------------------------------------------------------------------------- the statistic (pure)

def krippendorff_2011_units():
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers (A-D)
    by 12 units, nominal values, `None` missing. The paper gives alpha = 0.743."""
    n = None
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3]
    c = [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]
    return [[v for v in unit if v is not None] for unit in zip(a, b, c, d)]


def test_alpha_matches_krippendorffs_worked_example():
    assert round(agreement.alpha(krippendorff_2011_units()), 3) == 0.743


def test_alpha_and_percent_of_a_hand_worked_pair():
    # Units [a, a], [r, r], [a, r]: coincidences o_aa = 2, o_rr = 2, o_ar = o_ra = 1; n_a = n_r = 3,
    # n = 6; alpha = 1 - (n - 1) * 2 / (2 * 3 * 3) = 1 - 10/18 = 0.444; 2 pairs of 3 agree: 66.7 %.
    units = [["approve", "approve"], ["reject", "reject"], ["approve", "reject"]]
    assert round(agreement.alpha(units), 3) == 0.444
    assert round(agreement.percent(units), 1) == 66.7
    assert agreement.alpha([["approve", "approve"]]) is None  # one category: no expected disagreement
    assert agreement.percent([["approve"]]) is None          # no pair
    assert agreement.alpha([["approve", "reject"]]) == 0.0    # (1 - 1 * 2 / 2)


def test_reviews_agree_only_on_the_same_action_and_text():
    assert overlap.agree([{"action": "approve", "revised_text": None}, {"action": "approve", "revised_text": None}])
    assert not overlap.agree([{"action": "approve", "revised_text": None}, {"action": "reject", "revised_text": None}])
    assert overlap.agree([{"action": "revise", "revised_text": "Dock  4\nis open."},
                          {"action": "revise", "revised_text": "Dock 4 is open."}])
    assert not overlap.agree([{"action": "revise", "revised_text": "Dock 4 is open."},
                              {"action": "revise", "revised_text": "Dock 5 is open."}])


@pytest.mark.parametrize("value", ["0", "abc", "10", "-1", "", None, "2.5"])
def test_bad_review_counts_are_refused(value):
    with pytest.raises(InvalidInput, match="--reviews must be a whole number from 1 to 9"):
        overlap.parse_reviews(value)


def test_the_dashboard_pane_names_pairs_for_an_admin_only_terminal_safe_and_the_most_rounds_first():
    from r2k.app.screens.dashboard import agreement_lines

    queues = [{"horn_type": "FACT", "units": 9, "alpha": 0.5, "percent": 75.0}]
    pairs = [{"pair": ["ann", "bo"], "units": 2, "alpha": None, "percent": 50.0},
             {"pair": ["al\x1b]0;x\x07", "bo"], "units": 5, "alpha": 0.444, "percent": 66.7},
             {"pair": ["ann", "cy"], "units": 1, "alpha": None, "percent": 100.0},
             {"pair": ["bo", "cy"], "units": 3, "alpha": 1.0, "percent": 100.0}]
    anyone = str(agreement_lines({"adjudication": 2, "days": 30, "queues": queues}))
    assert "FACT" in anyone and "75 %" in anyone and "bo" not in anyone  # no validator named
    admin = str(agreement_lines({"adjudication": 2, "days": 30, "queues": queues, "pairs": pairs})).splitlines()
    shown = [line.split()[0:3] for line in admin[2:5]]
    assert shown == [["al\\x1b]0;x\\x07", "·", "bo"], ["bo", "·", "cy"], ["ann", "·", "bo"]]
    assert "\x1b" not in "\n".join(admin)
    assert admin[5] == "… 1 more pair: r2k stats agreement"


# ----------------------------------------------------------------------------- with the services

@pytest.fixture
def team(ctx, people):
    users.add(ctx, "carol", "validator", ["FACT"])
    overlap.configure(ctx, people["root"], "FACT", 2)
    return {**people, "carol": users.resolve(ctx, "carol")}


def add(ctx, team, question="Is dock 4 open?", text="Dock 4 is open."):
    return candidates.add(ctx, team["root"], question, text, "FACT")["id"]


def state(ctx, cid):
    return candidate_views.get(ctx, cid)["state"]


def reviews(superuser, cid):
    return superuser("SELECT actor, action, status, round FROM candidate_reviews WHERE candidate_id = %s ORDER BY id",
                     (cid,))



def test_two_agreeing_reviews_publish_and_the_first_returns_to_the_queue(ctx, team, superuser):
    cid = add(ctx, team)
    assert claims.claim_next(ctx, team["alice"], "FACT")["id"] == cid
    first = candidates.approve(ctx, team["alice"], cid, idempotency_key="alice-1")
    assert first["candidate"]["state"] == "PENDING" and first["review"]["status"] == "open"
    assert "answer" not in first
    # A retry with the same key is the same review, once; the review's event carries the key.
    assert candidates.approve(ctx, team["alice"], cid, idempotency_key="alice-1") == first
    assert superuser("SELECT type FROM events WHERE idempotency_key = 'alice-1'") == [{"type": "review"}]
    assert len(reviews(superuser, cid)) == 1
    assert superuser("SELECT count(*) AS n FROM approved_answers")[0]["n"] == 0
    with pytest.raises(NotFound):  # alice reviewed it: her claims pass it by, and it stays queued
        claims.claim_next(ctx, team["alice"], "FACT")
    assert queue_index.queue(ctx).length("FACT") == 1
    assert claims.claim_next(ctx, team["bob"], "FACT")["id"] == cid
    second = candidates.approve(ctx, team["bob"], cid)
    assert second["candidate"]["state"] == "APPROVED" and second["answer"]["text"] == "Dock 4 is open."
    assert [(r["actor"], r["status"]) for r in reviews(superuser, cid)] == [("alice", "agreed"), ("bob", "agreed")]
    kinds = [e["type"] for e in superuser("SELECT type FROM events WHERE aggregate_type = 'candidate' "
                                          "AND aggregate_id = %s ORDER BY seq", (str(cid),))]
    assert kinds == ["extract", "claim", "review", "claim", "approve"]
    assert r2k("--as", "root", "replay", "--verify").returncode == 0
    # The reviews and the setting are folded from their events too: a row changed behind them shows.
    superuser("UPDATE candidate_reviews SET action = 'reject' WHERE actor = 'alice'")
    superuser("UPDATE queue_settings SET reviews = 3")
    tampered = r2k("--as", "root", "replay", "--verify")
    assert tampered.returncode == 1
    assert "candidate_review 1.action: events say 'approve', table has 'reject'" in tampered.stdout
    assert "queue_settings 1.reviews: events say 2, table has 3" in tampered.stdout


def test_disagreement_goes_to_adjudication_with_both_decisions_side_by_side(ctx, team, superuser):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    claims.claim_next(ctx, team["bob"], "FACT")
    said = candidates.revise(ctx, team["bob"], cid, "Dock 4 is open on weekdays.")
    assert said["candidate"]["state"] == "ADJUDICATION" and "answer" not in said
    assert [(r["actor"], r["action"], r["status"]) for r in reviews(superuser, cid)] == [
        ("alice", "approve", "disagreed"), ("bob", "revise", "disagreed")]
    with pytest.raises(Forbidden):
        overlap.adjudication(ctx, team["alice"], cid)
    side = r2k_json("--as", "sam", "candidates", "adjudication", str(cid))
    assert [(r["actor"], r["action"], r["revised_text"]) for r in side["reviews"]] == [
        ("alice", "approve", None), ("bob", "revise", "Dock 4 is open on weekdays.")]
    text = r2k("--as", "sam", "candidates", "adjudication", str(cid)).stdout
    assert "alice: approve" in text and "bob: revise" in text and "open on weekdays" in text
    listed = r2k_json("--as", "sam", "candidates", "adjudications")
    assert [row["id"] for row in listed] == [cid]
    # A validator may not decide it; the specialist chooses bob's review, which publishes.
    with pytest.raises(Forbidden):
        overlap.adjudicate(ctx, team["alice"], cid, action="approve")
    with pytest.raises(Forbidden, match="only a specialist or an admin may"):
        candidates.approve(ctx, team["bob"], cid)
    bob_review = side["reviews"][1]["id"]
    done = r2k_json("--as", "sam", "candidates", "adjudicate", str(cid), "--choose", str(bob_review))
    assert done["candidate"]["state"] == "REVISED" and done["answer"]["text"] == "Dock 4 is open on weekdays."
    assert done["chosen"] == bob_review
    record = superuser("SELECT actor, action, from_state FROM validation_records WHERE candidate_id = %s", (cid,))
    assert record == [{"actor": "sam", "action": "revise", "from_state": "ADJUDICATION"}]
    with pytest.raises(Conflict, match="settled a disagreement between reviewers"):
        undo.undo(ctx, team["sam"])
    assert state(ctx, cid) == "REVISED"
    assert r2k("--as", "root", "replay", "--verify").returncode == 0


def test_the_specialist_may_write_their_own_decision_and_bad_choices_change_nothing(ctx, team, superuser):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    claims.claim_next(ctx, team["bob"], "FACT")
    candidates.reject(ctx, team["bob"], cid, "not stated by the source")
    version = candidate_views.get(ctx, cid)["version"]
    for kwargs, error in [({"choose": 999}, InvalidInput), ({}, InvalidInput),
                          ({"choose": 1, "action": "approve"}, InvalidInput), ({"action": "publish"}, InvalidInput),
                          ({"action": "revise"}, InvalidInput)]:
        with pytest.raises(error):
            overlap.adjudicate(ctx, team["sam"], cid, **kwargs)
    assert candidate_views.get(ctx, cid)["version"] == version and state(ctx, cid) == "ADJUDICATION"
    done = overlap.adjudicate(ctx, team["sam"], cid, action="revise", text="Dock 4 opens at 06:00.")
    assert done["candidate"]["state"] == "REVISED" and done["answer"]["text"] == "Dock 4 opens at 06:00."


def test_the_second_reviewer_sees_no_earlier_decision(ctx, team):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.revise(ctx, team["alice"], cid, "Dock 4 is open, SECRETWORDING.")
    shown = claims.next_for_review(ctx, team["bob"], "FACT")  # what the review screen reads
    assert shown["id"] == cid and "SECRETWORDING" not in json.dumps(shown, default=str)
    assert [h["action"] for h in shown["history"]] == ["extract", "claim", "review", "claim"]
    assert all(h["revised_text"] is None and h["reason"] is None for h in shown["history"])
    cli = r2k("--json", "--as", "bob", "candidates", "show", str(cid))
    assert cli.returncode == 0, cli.stderr
    i = cli.stdout.find("SECRETWORDING")
    assert i < 0, cli.stdout[max(0, i - 300):i + 50]


def test_the_same_validator_cannot_review_twice(ctx, team, superuser):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    with pytest.raises(Conflict, match="reviewed candidate .* already"):
        claims.claim(ctx, team["alice"], cid)
    with pytest.raises(NotFound):
        claims.claim_next(ctx, team["alice"], "FACT")
    assert state(ctx, cid) == "PENDING" and queue_index.queue(ctx).length("FACT") == 1
    # With another candidate behind it, alice gets that one; hers stays first in line for the others.
    other = add(ctx, team, "Is dock 5 open?", "Dock 5 is open.")
    assert claims.claim_next(ctx, team["alice"], "FACT")["id"] == other
    assert claims.claim_next(ctx, team["bob"], "FACT")["id"] == cid


def test_queue_config_authority_and_bad_input_change_nothing(ctx, people, superuser):
    before = superuser("SELECT count(*) AS n FROM queue_settings")[0]["n"]
    events = superuser("SELECT count(*) AS n FROM events")[0]["n"]
    cases = [(["--as", "alice", "queue", "config", "FACT", "--reviews", "2"], 403, "only an admin may"),
             (["--as", "root", "queue", "config", "FACT", "--reviews", "0"], 400, "--reviews must be a whole number"),
             (["--as", "root", "queue", "config", "FACT", "--reviews", "abc"], 400, "--reviews must be a whole number"),
             (["--as", "root", "queue", "config", "FACTS", "--reviews", "2"], 400, "unknown Horn type 'FACTS'"),
             (["--as", "root", "queue", "config", "FACT", "--reviews", "1"], 400, "already requires 1 review")]
    for args, status, message in cases:
        result = r2k(*args)
        assert result.returncode != 0, args
        err = error_of(result)
        assert err["status"] == status and message in err["message"], (args, err)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert superuser("SELECT count(*) AS n FROM queue_settings")[0]["n"] == before
    assert superuser("SELECT count(*) AS n FROM events")[0]["n"] == events
    assert r2k_json("--as", "alice", "queue", "config", "FACT")["reviews"] == 1
    assert r2k_json("--as", "root", "queue", "config", "FACT", "--reviews", "2")["reviews"] == 2
    assert "requires 2 reviews" in r2k("--as", "bob", "queue", "config", "FACT").stdout


def test_undo_of_a_first_review_gives_the_claim_back(ctx, team, superuser):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    taken = undo.undo(ctx, team["alice"])
    assert taken["undone"]["action"] == "review" and taken["candidate"]["id"] == cid
    assert taken["candidate"]["state"] == "IN_REVIEW" and taken["candidate"]["claimed_by"] == "alice"
    assert queue_index.queue(ctx).length("FACT") == 0
    assert [r["status"] for r in reviews(superuser, cid)] == ["undone"]
    # She decides again; once bob has claimed it, her review can no longer be taken back.
    candidates.reject(ctx, team["alice"], cid, "not stated")
    claims.claim_next(ctx, team["bob"], "FACT")
    with pytest.raises(Conflict, match="moved on since your review"):
        undo.undo(ctx, team["alice"])
    assert [r["status"] for r in reviews(superuser, cid)] == ["undone", "open"]
    candidates.reject(ctx, team["bob"], cid, "not stated either")
    assert state(ctx, cid) == "REJECTED"


def test_skip_release_and_a_lost_lease_keep_the_review_and_the_candidate(ctx, team, superuser):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    claims.claim_next(ctx, team["bob"], "FACT")
    skip.skip(ctx, team["bob"], cid)
    assert state(ctx, cid) == "PENDING"
    assert claims.claim_next(ctx, team["carol"], "FACT")["id"] == cid
    candidates.release(ctx, team["carol"], cid)
    assert claims.claim_next(ctx, team["carol"], "FACT")["id"] == cid
    # carol's workstation dies mid-review: the lease runs out and the sweep gives it back.
    superuser("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (cid,))
    assert candidates.release_expired(ctx) == [cid]
    assert state(ctx, cid) == "PENDING" and queue_index.queue(ctx).length("FACT") == 1
    assert [r["status"] for r in reviews(superuser, cid)] == ["open"]
    with pytest.raises(NotFound):
        claims.claim_next(ctx, team["alice"], "FACT")
    assert claims.claim_next(ctx, team["bob"], "FACT")["id"] == cid
    assert candidates.approve(ctx, team["bob"], cid)["candidate"]["state"] == "APPROVED"
    assert queue_index.queue(ctx).held("FACT") == 0


def test_escalation_voids_the_open_reviews_and_k1_queues_are_untouched(ctx, team, superuser):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    claims.claim_next(ctx, team["bob"], "FACT")
    assert candidates.escalate(ctx, team["bob"], cid, "needs the site plan")["candidate"]["state"] == "ESCALATED"
    assert [r["status"] for r in reviews(superuser, cid)] == ["void"]
    rule = candidates.add(ctx, team["root"], "Must visitors sign in?", "Visitors must sign in.", "RULE")["id"]
    claims.claim_next(ctx, team["alice"], "RULE")
    assert candidates.approve(ctx, team["alice"], rule)["candidate"]["state"] == "APPROVED"
    assert reviews(superuser, rule) == []


def test_stats_agreement_per_queue_and_pair(ctx, team, superuser):
    """Three rounds of alice and bob: both approve, both reject, approve against reject (the
    hand-worked pair above: alpha 0.444, 66.7 %)."""
    for question, (first, second) in [("Is dock 1 open?", ("approve", "approve")),
                                       ("Is dock 2 open?", ("reject", "reject")),
                                       ("Is dock 3 open?", ("approve", "reject"))]:
        cid = add(ctx, team, question, question.replace("Is ", "").rstrip("?") + ".")
        for who, action in (("alice", first), ("bob", second)):
            assert claims.claim_next(ctx, team[who], "FACT")["id"] == cid
            candidates.decide(ctx, team[who], cid, action, reason="no" if action == "reject" else None)
    found = r2k_json("--as", "root", "stats", "agreement", "--horn", "FACT", "--days", "1")
    assert found["units"] == 3 and found["alpha"] == 0.444 and found["percent"] == 66.667
    assert found["queues"] == [{"horn_type": "FACT", "units": 3, "alpha": 0.444, "percent": 66.667}]
    assert found["pairs"] == [{"pair": ["alice", "bob"], "units": 3, "alpha": 0.444, "percent": 66.667}]
    text = r2k("--as", "root", "stats", "agreement").stdout
    assert "alpha 0.444" in text and "alice · bob" in text
    empty = r2k_json("--as", "root", "stats", "agreement", "--until", "2020-01-01", "--since", "2019-01-01")
    assert empty["units"] == 0 and empty["alpha"] is None
    for args, status in [(["--as", "alice", "stats", "agreement"], 403),
                         (["--as", "root", "stats", "agreement", "--days", "x"], 400),
                         (["--as", "root", "stats", "agreement", "--since", "yesterday"], 400),
                         (["--as", "root", "stats", "agreement", "--days", "2", "--since", "1d"], 400),
                         (["--as", "root", "stats", "agreement", "--horn", "NOPE"], 400),
                         (["--as", "root", "stats", "--days", "2"], 400)]:
        result = r2k(*args)
        assert result.returncode != 0 and error_of(result)["status"] == status, (args, result.stderr)


def test_a_claimer_crash_between_claim_and_decision_loses_nothing(ctx, team, superuser):
    """k = 2, a validator claims and dies (no decision): the lease sweep gives the candidate back,
    and two other reviews still publish it once."""
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    claims.claim_next(ctx, team["bob"], "FACT")
    superuser("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (cid,))
    with pytest.raises(Conflict, match="expired"):
        candidates.approve(ctx, team["bob"], cid)
    candidates.release_expired(ctx)
    assert claims.claim_next(ctx, team["carol"], "FACT")["id"] == cid
    candidates.approve(ctx, team["carol"], cid)
    assert superuser("SELECT count(*) AS n FROM approved_answers WHERE candidate_id = %s", (cid,))[0]["n"] == 1
    assert queue_index.queue(ctx).held("FACT") == 0


def test_lowering_k_to_one_lets_the_next_decision_stand_and_voids_the_open_review(ctx, team, superuser):
    cid = add(ctx, team)
    claims.claim_next(ctx, team["alice"], "FACT")
    candidates.approve(ctx, team["alice"], cid)
    overlap.configure(ctx, team["root"], "FACT", 1)
    claims.claim_next(ctx, team["bob"], "FACT")
    assert candidates.reject(ctx, team["bob"], cid, "not stated")["candidate"]["state"] == "REJECTED"
    assert [r["status"] for r in reviews(superuser, cid)] == ["void"]
    # Raised again, the claim path sees it at once in this process (its copy is dropped on commit).
    overlap.configure(ctx, team["root"], "FACT", 3)
    other = add(ctx, team, "Is dock 6 open?", "Dock 6 is open.")
    for who in ("alice", "bob"):
        assert claims.claim_next(ctx, team[who], "FACT")["id"] == other
        assert candidates.approve(ctx, team[who], other)["candidate"]["state"] == "PENDING"
    with pytest.raises(NotFound):
        claims.claim_next(ctx, team["bob"], "FACT")
    claims.claim_next(ctx, team["carol"], "FACT")
    assert candidates.approve(ctx, team["carol"], other)["candidate"]["state"] == "APPROVED"


async def test_the_review_screen_loop_under_overlap_is_blind(ctx, team):
    """alice's review loop passes her reviewed candidate to the next validator; bob's review screen
    shows it without her decision, and his agreeing approval publishes it."""
    from r2k.app.screens.review import ReviewScreen
    from r2k.core.bootstrap import bootstrap
    from tests.test_tui_validation import open_review, showing
    from tests.tui import candidate_on, make_app, message, rendered, wait_for

    first = add(ctx, team)
    second = add(ctx, team, "Is dock 5 open?", "Dock 5 is open.")
    app = make_app(bootstrap(ctx.settings, pool_size=4), "alice")  # each workstation its own (it closes them)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == first
        await pilot.press("a")
        await showing(pilot, screen, second)  # her reviewed candidate is passed by: the next is claimed
        assert "your review is recorded" in message(app)
    claims.release_held(ctx, team["alice"])
    candidates.revise(ctx, team["carol"], claims.claim_next(ctx, team["carol"], "FACT")["id"],
                      "Dock 5 is open, SECRETWORDING.")  # carol reviews the second one
    app = make_app(bootstrap(ctx.settings, pool_size=4), "bob")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == first
        await pilot.press("a")
        await showing(pilot, screen, second)
        assert "answer 1 published" in message(app)
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review screen")
        whole = " ".join(rendered(w) for w in app.screen.query("Static"))
        assert "review" in whole and "SECRETWORDING" not in whole
    assert state(ctx, first) == "APPROVED"


def test_the_event_stream_withholds_a_reviews_decision_from_other_validators(ctx, team):
    cid = add(ctx, team, text="Dock 4 is open from 6 to 22.")
    claimed = claims.claim_next(ctx, team["alice"], "FACT")
    candidates.decide(ctx, team["alice"], claimed["id"], "revise", text="Dock 4 is open from 7 to 21.")

    def tail(user: str) -> list[dict]:
        result = r2k("--as", user, "events", "tail", "--lines", "50")
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    def about_the_review(events: list[dict]) -> list[dict]:
        return [e for e in events if (e["aggregate_type"] == "candidate" and e["type"] == "review"
                                      and e["aggregate_id"] == str(cid)) or e["aggregate_type"] == "candidate_review"]

    bobs = about_the_review(tail("bob"))
    assert bobs and all(e["payload"] == {"withheld": event_stream.WITHHELD} for e in bobs)
    assert "7 to 21" not in json.dumps(tail("bob"))  # nowhere in what bob reads
    sams = about_the_review(tail("sam"))  # a specialist adjudicates: the decision is theirs to read
    assert [e["id"] for e in sams] == [e["id"] for e in bobs] and "7 to 21" in json.dumps(sams)
