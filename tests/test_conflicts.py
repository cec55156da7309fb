"""Conflicts: contradictions found by meaning between approved answers (their subjects, stored in
PostgreSQL at publish), flagged once per pair, a dismissed pair not flagged again unless a text
changes; escalate (both answers DISPUTED, their candidates to re-review) and dismiss (a reason) as
commands with their exit codes; settling the dispute closes the flag (docs/architecture.md, "Conflicts")."""
from __future__ import annotations

import pytest

from r2k.core.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    ValidationStateError,
)
from r2k.core.services.answers import registry
from r2k.core.services.contradictions import conflicts
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json


def publish(ctx, people, question, text, horn="FACT"):
    candidates.add(ctx, people["root"], question, text, horn)
    claimed = claims.claim_next(ctx, people["alice"], horn)
    return candidates.approve(ctx, people["alice"], claimed["id"])["answer"]


def flags(ctx) -> list[dict]:
    with ctx.db.read() as tx:
        return tx.all("SELECT * FROM conflict_flags ORDER BY id")


def status_of(ctx, answer_id) -> str:
    with ctx.db.read() as tx:
        return tx.one("SELECT status FROM approved_answers WHERE id = %s", (answer_id,))["status"]


@pytest.fixture
def pair(ctx, people):
    """Two answers on backup retention, asked differently, that disagree; one on another subject."""
    a = publish(ctx, people, "How long are nightly backups kept?", "Nightly backups of Quay WMS are kept for 30 days.")
    b = publish(ctx, people, "What is established about backup retention?",
                "Nightly backups of Quay WMS are kept for 14 days.")
    publish(ctx, people, "What is established about printer toner?", "Toner cartridges are replaced every 7 days.")
    found = conflicts.detect(ctx, b["id"])
    assert len(found["flags"]) == 1
    return a, b, conflicts.show(ctx, found["flags"][0])


def test_answers_get_their_subjects_when_published(ctx, people):
    a = publish(ctx, people, "How long are nightly backups kept?", "Nightly backups are kept for 30 days.")
    with ctx.db.read() as tx:
        stored = [r["subject"] for r in tx.all("SELECT subject FROM answer_subjects WHERE answer_id = %s "
                                               "ORDER BY rank", (a["id"],))]
    assert stored and "backup" in stored


def test_answers_on_one_subject_asked_differently_are_flagged_once(ctx, people, pair):
    a, b, flag = pair
    assert (flag["answer_id"], flag["other_answer_id"], flag["status"], flag["kind"]) == (a["id"], b["id"], "OPEN",
                                                                                         "quantity")
    assert flag["detail"].startswith("30 days vs 14 days") and flag["subject"] == "backup"
    assert flag["highlights"] == {"answer": ["30 days"], "other": ["14 days"]}
    assert flag["answer"]["text"] == a["text"] and flag["other"]["text"] == b["text"]
    for _ in range(3):  # however often detection runs, from either side
        assert conflicts.detect(ctx, a["id"])["flags"] == [] and conflicts.detect(ctx, b["id"])["flags"] == []
    assert len(flags(ctx)) == 1


def test_an_answer_worded_otherwise_sharing_no_subject_is_compared_by_meaning_and_flagged(ctx, people):
    """Two answers contradicting each other in their own words share no subject and are not very alike
    (cosine 0.57 with the shipped model): detection still compares them, among the nearest in meaning."""
    from r2k.core.services.search import embeddings

    if embeddings.status(ctx)["retrieval"] != "hybrid":
        pytest.skip("this PostgreSQL has no pgvector")
    a = publish(ctx, people, "What is deadlock_timeout by default?", "deadlock_timeout is one second by default.")
    b = publish(ctx, people, "How long does the server wait on a lock?",
                "The server waits 10 seconds on a lock before it checks for a deadlock.")
    publish(ctx, people, "Where is the canteen?", "The canteen is on the second floor of building C.")
    with ctx.db.read() as tx:
        assert not tx.one("SELECT 1 FROM answer_subjects x JOIN answer_subjects y USING (subject) "
                          "WHERE x.answer_id = %s AND y.answer_id = %s", (a["id"], b["id"]))  # no subject shared
    found = conflicts.detect(ctx, b["id"])
    [flag] = [conflicts.show(ctx, f) for f in found["flags"]]
    assert (flag["answer_id"], flag["other_answer_id"], flag["kind"]) == (a["id"], b["id"], "quantity")
    assert flag["detail"].startswith("one second vs 10 seconds")


def test_the_detection_job_runs_after_publish(ctx, people):
    """The reaction queues detect_contradictions_task; a worker on the graph queue runs it."""
    import os

    from r2k.core.adapters.jobs import QUEUES
    from r2k.workers import tasks
    from r2k.workers.main import R2KWorker

    publish(ctx, people, "What is established about the Rotterdam warehouse?", "The Rotterdam warehouse has 14 loading docks.")
    publish(ctx, people, "How many docks does Rotterdam have?", "The Rotterdam warehouse has 12 loading docks.")
    tasks._ctx, tasks._pid = ctx, os.getpid()
    try:
        R2KWorker([QUEUES["graph"]], connection=ctx.redis).work(burst=True, logging_level="WARNING")
    finally:
        tasks._ctx = tasks._pid = None
    [flag] = flags(ctx)
    assert flag["detail"] == "14 loading docks vs 12 loading docks" and flag["status"] == "OPEN"


def test_a_dismissed_pair_is_not_flagged_again_unless_an_answer_changes(ctx, people, pair):
    a, _b, flag = pair
    out = r2k_json("--as", "alice", "conflicts", "dismiss", str(flag["id"]), "--reason", "different backup sets")
    assert (out["status"], out["dismissed_reason"], out["decided_by"]) == ("DISMISSED", "different backup sets", "alice")
    assert conflicts.detect(ctx, a["id"])["flags"] == []
    # a new version with the same text (reaffirmed): the texts judged consistent are not flagged again
    same = registry.supersede(ctx, people["alice"], a["id"], a["text"], "reaffirmed")
    assert conflicts.detect(ctx, same["id"])["flags"] == []
    # a new version that changes the text is compared afresh
    changed = registry.supersede(ctx, people["alice"], same["id"], "Nightly backups of Quay WMS are kept for 21 days.",
                                 "retention changed")
    [again] = conflicts.detect(ctx, changed["id"])["flags"]
    assert conflicts.show(ctx, again)["detail"].startswith("14 days vs 21 days")
    assert [f["status"] for f in flags(ctx)] == ["DISMISSED", "OPEN"]


def test_dismiss_needs_a_reason_and_changes_nothing_without_one(ctx, people, pair):
    flag = pair[2]
    for args in ([], ["--reason", "   "]):
        result = r2k("--as", "alice", "conflicts", "dismiss", str(flag["id"]), *args)
        assert result.returncode == 6 and "requires reason" in error_of(result)["message"]
    assert flags(ctx)[0]["status"] == "OPEN" and flags(ctx)[0]["version"] == 1


def test_escalate_makes_both_answers_disputed_and_sends_their_candidates_to_re_review(ctx, people, pair):
    a, b, flag = pair
    out = r2k_json("--as", "sam", "conflicts", "escalate", str(flag["id"]), "--reason", "ask IT which is right",
                   "--expected-version", "1")
    assert (out["status"], out["version"], sorted(out["disputed"])) == ("ESCALATED", 2, [a["id"], b["id"]])
    assert status_of(ctx, a["id"]) == status_of(ctx, b["id"]) == "DISPUTED"
    with ctx.db.read() as tx:
        states = [r["state"] for r in tx.all("SELECT state FROM candidates WHERE id = ANY(%s) ORDER BY id",
                                             ([a["candidate_id"], b["candidate_id"]],))]
        reason = tx.one("SELECT reason FROM approved_answers WHERE id = %s", (a["id"],))["reason"]
    assert states == ["DISPUTED", "DISPUTED"]
    assert reason.startswith(f"conflict {flag['id']}: 30 days vs 14 days") and "ask IT" in reason
    # at the head of the FACT queue: the next claim is a disputed candidate
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] in (a["candidate_id"], b["candidate_id"])
    history = conflicts.show(ctx, flag["id"])["history"]
    assert [(h["action"], h["actor"], h["to"]) for h in history] == [("detect", "system", "OPEN"),
                                                                     ("escalate", "sam", "ESCALATED")]


def test_escalate_and_dismiss_refuse_bad_input_with_their_exit_codes(ctx, people, pair):
    flag = pair[2]
    cases = [
        (["--as", "alice", "conflicts", "escalate", "999"], 3, "no conflict flag 999"),
        (["--as", "alice", "conflicts", "escalate", "x1"], 6, ""),
        (["--as", "alice", "conflicts", "escalate", str(flag["id"]), "--expected-version", "7"], 4, "version 1, not 7"),
        (["--as", "vera", "conflicts", "escalate", str(flag["id"])], 7, "a validator with authority for both"),
        (["--as", "vera", "conflicts", "dismiss", str(flag["id"]), "--reason", "fine"], 7, ""),
        (["--as", "nobody", "conflicts", "list"], 7, ""),
        (["--as", "alice", "conflicts", "list", "--status", "WEIRD"], 6, "unknown conflict status"),
    ]
    for args, code, said in cases:
        result = r2k(*args)
        assert result.returncode == code, (args, result.stderr)
        assert said in error_of(result)["message"]
    assert flags(ctx)[0]["status"] == "OPEN" and flags(ctx)[0]["version"] == 1  # nothing changed
    assert r2k("--as", "alice", "conflicts", "escalate", str(flag["id"])).returncode == 0
    again = r2k("--as", "alice", "conflicts", "escalate", str(flag["id"]))
    assert again.returncode == 5 and "ESCALATED" in error_of(again)["message"]
    late = r2k("--as", "alice", "conflicts", "dismiss", str(flag["id"]), "--reason", "too late")
    assert late.returncode == 5


def test_a_repeated_escalate_with_its_key_applies_once(ctx, people, pair):
    flag = pair[2]
    first = conflicts.escalate(ctx, people["alice"], flag["id"], idempotency_key="esc-1")
    second = conflicts.escalate(ctx, people["alice"], flag["id"], idempotency_key="esc-1")
    assert first == second and first["version"] == 2
    with pytest.raises(Conflict):
        conflicts.dismiss(ctx, people["alice"], flag["id"], "other request", idempotency_key="esc-1")


def test_the_core_enforces_who_decides(ctx, people, pair):
    flag = pair[2]
    with pytest.raises(Forbidden):
        conflicts.escalate(ctx, people["vera"], flag["id"])
    with pytest.raises(InvalidInput):
        conflicts.dismiss(ctx, people["bob"], flag["id"], "")
    with pytest.raises(NotFound):
        conflicts.show(ctx, 4242)
    assert conflicts.dismiss(ctx, people["bob"], flag["id"], "both hold")["status"] == "DISMISSED"  # holds FACT
    with pytest.raises(ValidationStateError):
        conflicts.escalate(ctx, people["root"], flag["id"])


def test_settling_the_dispute_by_re_review_closes_the_flag(ctx, people, pair):
    _a, _b, flag = pair
    conflicts.escalate(ctx, people["alice"], flag["id"])
    first = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.revise(ctx, people["alice"], first["id"], "Nightly backups of Quay WMS are kept for 30 days.")
    assert conflicts.show(ctx, flag["id"])["status"] == "ESCALATED"  # the other answer is still disputed
    second = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.reject(ctx, people["alice"], second["id"], "the 14 days were an old policy")
    settled = conflicts.show(ctx, flag["id"])
    assert settled["status"] == "CLOSED" and settled["reason"].startswith("dispute settled: answer")
    assert [h["action"] for h in settled["history"]] == ["detect", "escalate", "close"]


def test_an_open_flag_closes_when_one_of_its_answers_is_retired(ctx, people, pair):
    _a, b, flag = pair
    registry.retire(ctx, people["alice"], b["id"], "withdrawn")
    closed = conflicts.show(ctx, flag["id"])
    assert closed["status"] == "CLOSED" and closed["reason"] == f"answer {b['id']} was retired"
    assert conflicts.list_flags(ctx) == [] and conflicts.list_flags(ctx, "CLOSED")[0]["id"] == flag["id"]


def test_conflicts_list_and_show_on_the_command_line(ctx, people, pair):
    a, b, flag = pair
    listed = r2k_json("--as", "bob", "conflicts", "list")
    assert [(f["id"], f["status"], f["answer_id"], f["other_answer_id"]) for f in listed] == [
        (flag["id"], "OPEN", a["id"], b["id"])]
    text = r2k("--as", "bob", "conflicts", "show", str(flag["id"])).stdout
    assert f"Conflict {flag['id']}  OPEN" in text and "Disagree: 30 days vs 14 days" in text and a["text"] in text


def test_an_llm_that_fails_leaves_the_rules_flags_and_goes_through_the_breaker(ctx, people):
    """With an LLM configured it judges the pairs the rules left; failing, it counts on the shared
    breaker, and detection still flags what the rules found."""
    from r2k.core.adapters.breaker import KEY
    from r2k.core.bootstrap import bootstrap
    from tests.llm_server import ChatServer

    a = publish(ctx, people, "How long are nightly backups kept?", "Nightly backups are kept for 30 days.")
    publish(ctx, people, "What is established about backup retention?", "Nightly backups are kept for 14 days.")
    publish(ctx, people, "Where are nightly backups stored?", "Nightly backups are stored in the Hamburg vault.")
    with ChatServer(mode="error") as llm:
        judged = bootstrap(ctx.settings.model_copy(update={"llm_url": llm.url, "llm_retries": 0}), pool_size=2)
        try:
            found = conflicts.detect(judged, a["id"])
        finally:
            judged.close()
        assert len(found["flags"]) == 1 and llm.calls >= 1  # the rules' flag, and the LLM asked about the rest
    assert int(ctx.redis.hget(KEY, "failures") or 0) >= 1


def test_every_move_of_a_flag_is_a_signed_event_that_replays(ctx, people, pair):
    a, b, flag = pair
    conflicts.escalate(ctx, people["sam"], flag["id"])
    registry.retire(ctx, people["root"], a["id"], "wrong")
    registry.retire(ctx, people["root"], b["id"], "wrong too")
    assert conflicts.show(ctx, flag["id"])["status"] == "CLOSED"
    replayed = r2k("--json", "replay", "--verify", "--as", "root")
    assert replayed.returncode == 0, replayed.stdout
    verified = r2k("audit", "verify", "--as", "root")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_with_an_llm_configured_it_judges_the_pairs_the_rules_left(ctx, people):
    from r2k.core.bootstrap import bootstrap
    from tests.llm_server import ChatServer

    def judge(prompt: str) -> str:
        return "CONTRADICTS: Hamburg vs Dublin" if "Hamburg" in prompt and "Dublin" in prompt else "CONSISTENT"

    a = publish(ctx, people, "Where are nightly backups stored?", "Nightly backups are stored in the Hamburg vault.")
    publish(ctx, people, "What is established about backup storage?", "Nightly backups are kept off site in Dublin.")
    publish(ctx, people, "Who checks nightly backups?", "The IT Manager checks the nightly backups.")
    with ChatServer(reply=judge) as llm:
        judged = bootstrap(ctx.settings.model_copy(update={"llm_url": llm.url}), pool_size=2)
        try:
            [flag_id] = conflicts.detect(judged, a["id"])["flags"]
            assert conflicts.detect(judged, a["id"])["flags"] == []  # once, however often
        finally:
            judged.close()
        assert llm.calls >= 2 and "Statement 1:" in llm.prompts[0]
    flag = conflicts.show(ctx, flag_id)
    assert (flag["kind"], flag["judge"], flag["detail"]) == ("judged", "llm", "Hamburg vs Dublin")
    assert flag["highlights"] == {"answer": ["Hamburg"], "other": ["Dublin"]}
