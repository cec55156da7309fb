"""Durable article tasks: a task is its typed, signed events; transitions are schema-checked and
idempotent; two real reviewers; the AI analysis gate on RQ; automatic publication; deprecation;
snapshots equal a full replay; `replay --repair`; a process killed mid-transition leaves nothing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from r2k.core.errors import Conflict, Forbidden, InvalidInput, ValidationStateError
from r2k.core.services import tasks
from tests.conftest import ROOT, error_of, r2k, r2k_json, redis_snapshot
from tests.test_registry import publish  # an answer published through the candidates' path

AGREES = """# Backups

Nightly database backups are kept for 30 days.

- Backups are stored in the Frankfurt region.
"""

GOES_BEYOND = """# Backups

Nightly database backups are kept for 30 days.

Backup tapes are couriered weekly to a vault in Lisbon by armoured truck.
"""


@pytest.fixture
def registry(ctx, people):
    return [publish(ctx, people, "How long are backups kept?", "Nightly database backups are kept for 30 days."),
            publish(ctx, people, "Where are backups stored?", "Backups are stored in the Frankfurt region.")]


def new_task(ctx, people, body=AGREES, author="vera", **kw):
    return tasks.create(ctx, people[author], "Backups", body, **kw)


def key() -> str:
    return f"k-{time.monotonic_ns()}"


def to(ctx, actor, task_id, state, metadata=None, **extra):
    request = {"new_state": state, "idempotency_key": key(), **extra}
    if metadata is not None:
        request["metadata"] = metadata
    return tasks.transition(ctx, actor, task_id, request)


def in_review(ctx, people, reviewers=("alice", "bob")):
    """A task in PEER_REVIEW with its reviewers, through the analysis (the registry agrees)."""
    task = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], task["id"])
    assert tasks.analyze(ctx, task["id"])["outcome"] == "PEER_REVIEW"
    return tasks.assign(ctx, people["vera"], task["id"], list(reviewers))


def counts(ctx, task_id) -> tuple:
    with ctx.db.read() as tx:
        row = tx.one("SELECT state, version FROM durable_tasks WHERE id = %s", (task_id,))
        n = tx.scalar("SELECT count(*) FROM events WHERE aggregate_type = 'task' AND aggregate_id = %s", (str(task_id),))
    return row["state"], row["version"], n


# ----------------------------------------------------------------------------- pure

@pytest.mark.parametrize("request_, field", [
    ({"new_state": "PEER_REVIEW"}, "idempotency_key is required"),
    ({"new_state": "LIMBO", "idempotency_key": "k"}, "new_state must be one of"),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"reviewer_ids": "bob"}},
     "metadata.reviewer_ids "),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"ai_confidence_score": 1.5}},
     "metadata.ai_confidence_score "),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"reviewers": ["bob"]}},
     "metadata.reviewers is not a known field"),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "", "metadata": {}}, "idempotency_key "),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"ai_confidence_score": float("nan")}},
     "metadata.ai_confidence_score must be a finite number, got nan"),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"ai_confidence_score": float("-inf")}},
     "metadata.ai_confidence_score must be a finite number, got -inf"),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"flagged_claims": [{"score": float("inf")}]}},
     r"metadata.flagged_claims\[0\].score is not a finite number \(inf\)"),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"reviewer_ids": ["ada", "bob", "ada"]}},
     "metadata.reviewer_ids lists 'ada' twice"),
    ({"new_state": "PEER_REVIEW", "idempotency_key": "k", "metadata": {"note": "a\x00"}},
     "metadata.note holds a NUL character"),
])
def test_a_malformed_request_is_a_400_naming_the_field(request_, field):
    from r2k.core.tasks_schema import check_request

    with pytest.raises(InvalidInput, match="invalid transition request: " + field.replace(".", r"\.")):
        check_request(request_)


def test_an_event_schema_number_is_a_finite_one():
    from r2k.core.tasks_schema import problems

    data = {"ai_confidence_score": 0.5, "flagged_claims": [{"claim": "c", "kind": "unsupported", "coverage": 0.1}],
            "supported": [], "claims": 1, "threshold": 0.8, "outcome": "RESOLUTION_REQUIRED", "judged_by": "rules"}
    payload = {"from": "AI_ANALYSIS", "to": "RESOLUTION_REQUIRED", "data": data, "set": {}}
    assert problems("event_AnalysisCompleted", payload) == []
    for where, value in [("ai_confidence_score", float("nan")), ("threshold", float("inf"))]:
        bad = {**payload, "data": {**data, where: value}}
        assert problems("event_AnalysisCompleted", bad) == [f"data.{where} must be a finite number, got {value!r}"]
    coverage = {**payload, "data": {**data, "flagged_claims": [{"claim": "c", "kind": "unsupported",
                                                                "coverage": float("nan")}]}}
    assert problems("event_AnalysisCompleted", coverage) == [
        "data.flagged_claims[0].coverage must be a finite number, got nan"]


def test_every_typed_event_has_a_valid_schema_that_refuses_a_stray_field():
    from r2k.core.machines.task import EVENT_OF
    from r2k.core.tasks_schema import problems, validator

    for type_ in set(EVENT_OF.values()):
        validator(f"event_{type_}")  # checked against the draft 2020-12 metaschema as it loads
        assert "stray is not a known field" in problems(f"event_{type_}", {"from": None, "to": "DRAFT", "data": {},
                                                                           "set": {}, "stray": 1})


def test_claims_are_the_sentences_and_bullets_with_content():
    text = "# Title\n\nOne two three. Four five six seven!\n\n- a bullet with words\n- ok\n\n```\nno code here\n```\n"
    assert tasks.split_claims(text) == ["One two three.", "Four five six seven!", "a bullet with words"]


def test_the_fold_from_the_first_event_is_the_projection():
    state: dict = {}
    at = "2026-12-01T10:00:00+00:00"
    for type_, data, actor in [
            ("TaskCreated", {"title": "T", "body": "B", "author": "vera"}, "vera"),
            ("SubmittedForAnalysis", {}, "vera"),
            ("AnalysisCompleted", {"ai_confidence_score": 1.0, "flagged_claims": [], "supported": [], "claims": 1,
                                   "threshold": 0.8, "outcome": "PEER_REVIEW", "judged_by": "rules"}, "system"),
            ("ReviewerAssigned", {"reviewer_ids": ["alice", "bob"]}, "vera"),
            ("ReviewApproved", {"reviewer": "alice", "approvals": 1}, "alice")]:
        state.update(tasks.fold(state, type_, data, actor, at))
    assert (state["state"], state["version"], [a["reviewer"] for a in state["approvals"]]) == ("PEER_REVIEW", 5, ["alice"])
    state.update(tasks.fold(state, "ReviewApproved", {"reviewer": "bob", "approvals": 2}, "bob", at))
    assert state["state"] == "APPROVED"


# ----------------------------------------------------------------------------- create, read

def test_create_list_show_events_and_export_from_the_command_line(ctx, people, registry, tmp_path):
    body = tmp_path / "a.md"
    body.write_text(AGREES)
    task = r2k_json("--as", "vera", "tasks", "create", "--title", "Backups", "--body-file", str(body))
    assert (task["state"], task["version"], task["created_by"], task["body"]) == ("DRAFT", 1, "vera", AGREES)
    tid = str(task["id"])
    assert [t["id"] for t in r2k_json("--as", "alice", "tasks", "list", "--state", "draft")] == [task["id"]]
    newer = tasks.create(ctx, people["vera"], "Newer", "")
    assert [t["id"] for t in r2k_json("--as", "alice", "tasks", "list", "--limit", "1")] == [newer["id"]]
    assert [t["id"] for t in r2k_json("--as", "alice", "tasks", "list", "--limit", "1", "--offset", "1")] == [task["id"]]
    shown = r2k_json("--as", "alice", "tasks", "show", tid)
    assert shown["next_states"] == ["AI_ANALYSIS"]
    (event,) = r2k_json("--as", "alice", "tasks", "events", tid)
    assert (event["type"], event["actor"], event["to"], event["signature"]) == ("TaskCreated", "vera", "DRAFT",
                                                                                "verified")
    assert "# Backups" in r2k("--as", "alice", "tasks", "export", tid).stdout
    result = r2k("--as", "vera", "tasks", "create", "--title", "  ", "--body-file", str(body))
    assert result.returncode == 6 and "title" in error_of(result)["message"]
    missing = r2k("--as", "vera", "tasks", "create", "--title", "X", "--body-file", str(tmp_path / "nope.md"))
    assert missing.returncode == 6 and "nope.md" in error_of(missing)["message"]
    assert r2k("--as", "vera", "tasks", "show", "99").returncode == 3


def test_a_task_is_its_typed_events(ctx, people, registry):
    task = in_review(ctx, people)
    types = [e["type"] for e in tasks.events(ctx, task["id"])]
    assert types == ["TaskCreated", "SubmittedForAnalysis", "AnalysisCompleted", "ReviewerAssigned"]
    with ctx.db.read() as tx:
        rebuilt, _ = tasks.rebuild(tx, task["id"], from_snapshot=False)
        row = tx.one("SELECT * FROM durable_tasks WHERE id = %s", (task["id"],))
    assert rebuilt == tasks.projection(row)


# ----------------------------------------------------------------------------- the transition contract

def test_schema_errors_name_the_field_and_change_nothing(ctx, people):
    task = new_task(ctx, people)
    before = counts(ctx, task["id"])
    with pytest.raises(InvalidInput, match=r"metadata\.reviewer_ids\[1\]"):
        tasks.transition(ctx, people["vera"], task["id"], {"new_state": "AI_ANALYSIS", "idempotency_key": "k1",
                                                          "metadata": {"reviewer_ids": ["alice", 7]}})
    result = r2k("--json", "--as", "vera", "tasks", "transition", str(task["id"]), "--to", "AI_ANALYSIS",
                 "--idempotency-key", "k2", "--metadata", '{"ai_confidence_score": "high"}')
    assert result.returncode == 6
    assert error_of(result)["message"].startswith("invalid transition request: metadata.ai_confidence_score")
    bad_json = r2k("--as", "vera", "tasks", "transition", str(task["id"]), "--to", "AI_ANALYSIS",
                   "--idempotency-key", "k3", "--metadata", "{oops")
    assert bad_json.returncode == 6 and "--metadata is not JSON" in error_of(bad_json)["message"]
    assert counts(ctx, task["id"]) == before


@pytest.mark.parametrize("score,words", [
    ("NaN", "NaN is not a number JSON allows"), ("Infinity", "Infinity is not a number JSON allows"),
    ("-Infinity", "-Infinity is not a number JSON allows"), ("1e999", "1e999 is out of range for a number")])
def test_a_confidence_score_that_is_not_a_finite_number_is_a_400(ctx, people, score, words):
    # Python's json reads NaN, Infinity and 1e999 (as inf), and NaN compares false with every bound,
    # so the schema's minimum and maximum alone let it through.
    task = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], task["id"])
    before, queues = counts(ctx, task["id"]), redis_snapshot(ctx.redis)
    result = r2k("--as", "root", "tasks", "transition", str(task["id"]), "--to", "PEER_REVIEW",
                 "--idempotency-key", "k-nan", "--metadata", f'{{"ai_confidence_score": {score}, "flagged_claims": []}}')
    assert result.returncode == 6, result.stderr
    assert error_of(result)["message"] == f"--metadata is not JSON: {words}"
    from r2k.core.domain import SYSTEM

    value = float(score.replace("Infinity", "inf"))
    with pytest.raises(InvalidInput, match="metadata.ai_confidence_score must be a finite number"):
        to(ctx, SYSTEM, task["id"], "PEER_REVIEW", {"ai_confidence_score": value, "flagged_claims": []})
    assert counts(ctx, task["id"]) == before and redis_snapshot(ctx.redis) == queues


def test_the_idempotency_key_is_mandatory_and_a_repeat_changes_nothing(ctx, people):
    task = new_task(ctx, people)
    tid = str(task["id"])
    missing = r2k("--as", "vera", "tasks", "transition", tid, "--to", "AI_ANALYSIS")
    assert missing.returncode == 6 and "idempotency_key is required" in error_of(missing)["message"]
    with pytest.raises(InvalidInput, match="idempotency_key is required"):
        tasks.transition(ctx, people["vera"], tid, {"new_state": "AI_ANALYSIS"})
    assert counts(ctx, task["id"]) == ("DRAFT", 1, 1)
    first = r2k_json("--as", "vera", "tasks", "transition", tid, "--to", "AI_ANALYSIS", "--idempotency-key", "K")
    assert (first["state"], first["version"]) == ("AI_ANALYSIS", 2)
    again = r2k_json("--as", "vera", "tasks", "transition", tid, "--to", "AI_ANALYSIS", "--idempotency-key", "K")
    assert again == first  # the first result, nothing changed
    assert counts(ctx, task["id"]) == ("AI_ANALYSIS", 2, 2)
    other = r2k("--as", "vera", "tasks", "transition", tid, "--to", "AI_ANALYSIS", "--idempotency-key", "K",
                "--metadata", '{"note": "another request"}')
    assert other.returncode == 4 and "different request" in error_of(other)["message"]
    assert counts(ctx, task["id"]) == ("AI_ANALYSIS", 2, 2)


def test_a_stale_expected_version_is_a_409(ctx, people):
    task = new_task(ctx, people)
    with pytest.raises(Conflict, match="at version 1, not 3"):
        to(ctx, people["vera"], task["id"], "AI_ANALYSIS", expected_version=3)
    result = r2k("--as", "vera", "tasks", "transition", str(task["id"]), "--to", "AI_ANALYSIS",
                 "--idempotency-key", "kv", "--expected-version", "2")
    assert result.returncode == 4
    assert counts(ctx, task["id"]) == ("DRAFT", 1, 1)
    assert to(ctx, people["vera"], task["id"], "AI_ANALYSIS", expected_version=1)["state"] == "AI_ANALYSIS"


def test_an_illegal_move_is_a_422_and_analysis_outcomes_are_the_systems(ctx, people):
    task = new_task(ctx, people)
    with pytest.raises(ValidationStateError, match="DRAFT.*it can move to AI_ANALYSIS"):
        to(ctx, people["vera"], task["id"], "PUBLISHED")
    tasks.submit(ctx, people["vera"], task["id"])
    with pytest.raises(Forbidden, match="only the system may"):
        to(ctx, people["root"], task["id"], "PEER_REVIEW", {"ai_confidence_score": 0.99, "flagged_claims": []})
    assert counts(ctx, task["id"]) == ("AI_ANALYSIS", 2, 2)


def test_each_event_is_checked_against_its_schema_before_commit(ctx, people):
    task = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], task["id"])
    from r2k.core.domain import SYSTEM

    # The system's own request, with a score the guard accepts but a flagged claim its schema refuses.
    with pytest.raises(InvalidInput, match=r"AnalysisCompleted event would not conform.*flagged_claims\[0\]"):
        to(ctx, SYSTEM, task["id"], "RESOLUTION_REQUIRED", {"ai_confidence_score": 0.2,
                                                            "flagged_claims": [{"claim": "x", "kind": "odd"}]})
    assert counts(ctx, task["id"]) == ("AI_ANALYSIS", 2, 2)


# ----------------------------------------------------------------------------- reviewers

def test_the_reviewer_rules(ctx, people, registry):
    task = in_review(ctx, people, reviewers=("alice",))
    tid = task["id"]
    with pytest.raises(InvalidInput, match="vera wrote task .*never reviews"):
        tasks.assign(ctx, people["vera"], tid, ["vera"])
    with pytest.raises(InvalidInput, match="'nobody' is not a known user"):
        tasks.assign(ctx, people["vera"], tid, ["nobody"])
    with pytest.raises(Forbidden, match="vera wrote task .*never reviews"):
        tasks.review(ctx, people["vera"], tid, "approve")
    with pytest.raises(Forbidden, match="bob is not assigned to review"):
        tasks.review(ctx, people["bob"], tid, "approve")
    with pytest.raises(ValidationStateError, match="at least 2 distinct reviewers' approvals, has 1"):
        to(ctx, people["alice"], tid, "APPROVED")  # a single reviewer never reaches APPROVED
    assert tasks.review(ctx, people["alice"], tid, "approve")["state"] == "PEER_REVIEW"
    with pytest.raises(Conflict, match="counts once"):
        tasks.review(ctx, people["alice"], tid, "approve")
    # One call naming two reviewer ids approves nothing: approvals are recorded, one per reviewer.
    before = counts(ctx, tid)
    with pytest.raises(Forbidden, match="never reviews"):
        to(ctx, people["vera"], tid, "APPROVED", {"reviewer_ids": ["alice", "bob"]})
    assert counts(ctx, tid) == before
    shown = tasks.get(ctx, tid)
    assert (shown["state"], [a["reviewer"] for a in shown["approvals"]]) == ("PEER_REVIEW", ["alice"])
    assert [d["decision"] for d in shown["decisions"]] == ["approve"]
    tasks.assign(ctx, people["vera"], tid, ["bob"])
    published = r2k_json("--as", "bob", "tasks", "review", str(tid), "--approve", "--reason", "checked")
    assert published["state"] == "PUBLISHED"  # APPROVED on the second distinct approval, published at once
    types = [e["type"] for e in tasks.events(ctx, tid)]
    assert types[-4:] == ["ReviewApproved", "ReviewerAssigned", "ReviewApproved", "Published"]
    decisions = published["decisions"]
    assert [(d["reviewer"], d["decision"]) for d in decisions] == [("alice", "approve"), ("bob", "approve")]
    assert all(d["at"] for d in decisions)


@pytest.mark.parametrize("reviewers", ["alice,alice", "alice,bob, alice", "bob,alice,alice "])
def test_a_reviewer_listed_twice_is_a_400_naming_them(ctx, people, registry, reviewers):
    task = in_review(ctx, people, reviewers=("bob",))
    before, queues = counts(ctx, task["id"]), redis_snapshot(ctx.redis)
    result = r2k("--as", "vera", "tasks", "assign", str(task["id"]), "--reviewers", reviewers)
    assert result.returncode == 6, result.stderr
    assert error_of(result)["message"] == "reviewer 'alice' is listed twice: each reviewer once"
    with pytest.raises(InvalidInput, match="reviewer 'alice' is listed twice"):
        to(ctx, people["vera"], task["id"], "PEER_REVIEW", {"reviewer_ids": ["alice", " alice"]})
    with pytest.raises(InvalidInput, match="metadata.reviewer_ids lists 'alice' twice"):
        to(ctx, people["vera"], task["id"], "PEER_REVIEW", {"reviewer_ids": ["alice", "alice"]})
    assert counts(ctx, task["id"]) == before and redis_snapshot(ctx.redis) == queues
    assert [r["name"] for r in tasks.get(ctx, task["id"])["reviewers"]] == ["bob"]


def test_a_rejection_needs_resolution_which_clears_the_approvals(ctx, people, registry, tmp_path):
    task = in_review(ctx, people)
    tid = str(task["id"])
    tasks.review(ctx, people["alice"], tid, "approve")
    no_reason = r2k("--as", "bob", "tasks", "review", tid, "--reject")
    assert no_reason.returncode == 6 and "reason" in error_of(no_reason)["message"]
    rejected = r2k_json("--as", "bob", "tasks", "review", tid, "--reject", "--reason", "cite the retention policy")
    assert rejected["state"] == "RESOLUTION_REQUIRED"
    revised = tmp_path / "b.md"
    revised.write_text(AGREES + "\nSee the retention policy.\n")
    resolved = r2k_json("--as", "vera", "tasks", "resolve", tid, "--body-file", str(revised), "--note", "cited it")
    assert (resolved["state"], resolved["approvals"], resolved["resolution_note"]) == ("PEER_REVIEW", [], "cited it")
    assert resolved["body"].endswith("See the retention policy.\n")
    assert tasks.review(ctx, people["alice"], tid, "approve")["state"] == "PEER_REVIEW"  # counted afresh
    assert tasks.review(ctx, people["bob"], tid, "approve")["state"] == "PUBLISHED"


# ----------------------------------------------------------------------------- the AI analysis gate

def test_an_article_the_registry_agrees_with_passes_to_peer_review(ctx, people, registry):
    task = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], task["id"])
    outcome = tasks.analyze(ctx, task["id"])
    assert outcome["outcome"] == "PEER_REVIEW"
    shown = tasks.get(ctx, task["id"])
    assert (shown["state"], shown["ai_confidence_score"], shown["flagged_claims"]) == ("PEER_REVIEW", 1.0, [])
    assert {s["answer_id"] for s in shown["sources"]} == {a["id"] for a in registry}
    assert tasks.analyze(ctx, task["id"])["outcome"] == "nothing to do"  # a retried job changes nothing


def test_an_article_that_goes_beyond_the_registry_needs_resolution(ctx, people, registry):
    task = new_task(ctx, people, body=GOES_BEYOND)
    tasks.submit(ctx, people["vera"], task["id"])
    assert tasks.analyze(ctx, task["id"])["outcome"] == "RESOLUTION_REQUIRED"
    shown = tasks.get(ctx, task["id"])
    assert shown["ai_confidence_score"] == 0.5
    (flag,) = shown["flagged_claims"]
    assert (flag["kind"], flag["claim"]) == ("unsupported", "Backup tapes are couriered weekly to a vault in Lisbon "
                                                            "by armoured truck.")


CONTRADICTS = """# Backups

Nightly database backups are kept for 90 days.

- Backups are stored in the Frankfurt region.
"""


def test_an_article_that_contradicts_the_registry_names_the_answer(ctx, people, registry):
    task = new_task(ctx, people, body=CONTRADICTS)
    r2k_json("--as", "vera", "tasks", "submit", str(task["id"]))
    assert tasks.analyze(ctx, task["id"])["outcome"] == "RESOLUTION_REQUIRED"
    shown = tasks.get(ctx, task["id"])
    (flag,) = shown["flagged_claims"]
    assert (flag["kind"], flag["claim"], flag["answer_id"]) == ("contradicted", "Nightly database backups are kept "
                                                                "for 90 days.", registry[0]["id"])
    assert flag["answer_text"] == "Nightly database backups are kept for 30 days."
    assert "30" in flag["why"] and "90" in flag["why"]
    assert shown["ai_confidence_score"] == 0.5
    (event,) = [e for e in tasks.events(ctx, task["id"]) if e["type"] == "AnalysisCompleted"]
    assert event["data"]["flagged_claims"] == shown["flagged_claims"]  # the score and flags are in the event


def test_an_empty_article_has_no_confidence(ctx, people, registry):
    task = new_task(ctx, people, body="# Nothing\n\n")
    tasks.submit(ctx, people["vera"], task["id"])
    assert tasks.analyze(ctx, task["id"])["outcome"] == "RESOLUTION_REQUIRED"
    assert tasks.get(ctx, task["id"])["ai_confidence_score"] == 0.0


def test_submitting_queues_the_analysis_which_a_real_worker_runs(ctx, people, registry):
    from tests.test_worker_tasks import burst_worker

    task = new_task(ctx, people)
    r2k_json("--as", "vera", "tasks", "submit", str(task["id"]))
    from r2k.core.adapters import jobs

    assert jobs.waiting(ctx.redis, "generation", tasks.analysis_job_id(task["id"], 2))
    burst_worker()
    assert tasks.get(ctx, task["id"])["state"] == "PEER_REVIEW"


def test_an_analysis_whose_job_was_lost_is_queued_again_by_the_sweep(ctx, people, registry, superuser):
    """Redis lost the job (a flush, a crash between the commit and the enqueue): nobody may move the
    task on by hand, so the sweep queues its analysis again, once, and a worker finishes it."""
    from r2k.core.adapters import jobs
    from r2k.core.services.operations import sweeps
    from tests.test_worker_tasks import burst_worker

    task = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], task["id"])
    ctx.redis.flushdb()
    from r2k.core.services.queue import queue_index

    queue_index.reconcile(ctx)
    assert sweeps.sweep_all(ctx)["tasks"] == {"requeued": []}  # just submitted: its run may be under way
    superuser("UPDATE durable_tasks SET updated_at = now() - interval '11 minutes' WHERE id = %s", (task["id"],))
    assert sweeps.sweep_all(ctx)["tasks"] == {"requeued": [task["id"]]}
    assert jobs.waiting(ctx.redis, "generation", tasks.analysis_job_id(task["id"], 2))
    assert sweeps.sweep_all(ctx)["tasks"] == {"requeued": []}  # waiting already: not queued twice
    burst_worker()
    assert tasks.get(ctx, task["id"])["state"] == "PEER_REVIEW"
    assert sweeps.sweep_all(ctx)["tasks"] == {"requeued": []}


def test_reviewers_assigned_while_the_analysis_runs_do_not_strand_it(ctx, people, registry, monkeypatch):
    task = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], task["id"])
    assess = tasks.assess

    def assigned_meanwhile(*args, **kwargs):  # the author assigns reviewers while the job is checking
        report = assess(*args, **kwargs)
        tasks.assign(ctx, people["vera"], task["id"], ["alice", "bob"])
        return report

    monkeypatch.setattr(tasks.analysis, "assess", assigned_meanwhile)  # analyze reads it there
    assert tasks.analyze(ctx, task["id"])["outcome"] == "PEER_REVIEW"
    shown = tasks.get(ctx, task["id"])
    assert (shown["state"], [r["name"] for r in shown["reviewers"]]) == ("PEER_REVIEW", ["alice", "bob"])


# ----------------------------------------------------------------------------- articles cite only current answers

def moved_on(ctx, people, answer: dict, how: str) -> str:
    """The registry moves `answer` on (superseded, disputed or retired); the status it has now."""
    from r2k.core.services.answers import registry as answers

    if how == "supersede":
        answers.supersede(ctx, people["bob"], answer["id"], "Nightly database backups are kept for 90 days.",
                          "the policy changed")
        return "SUPERSEDED"
    if how == "dispute":
        answers.dispute(ctx, people["bob"], answer["id"], "the retention policy is under review")
        return "DISPUTED"
    answers.retire(ctx, people["root"], answer["id"], "the policy was withdrawn")
    return "RETIRED"


@pytest.mark.parametrize("how", ["supersede", "dispute", "retire"])
def test_a_source_no_longer_current_sends_the_final_approval_to_resolution(ctx, people, registry, how):
    """Cited answers are checked at the final approval: one superseded, disputed or retired while the
    article was in review sends it to RESOLUTION_REQUIRED, naming the source, and nothing is published."""
    task = in_review(ctx, people)
    tid = task["id"]
    tasks.review(ctx, people["alice"], tid, "approve")
    status = moved_on(ctx, people, registry[0], how)
    result = r2k_json("--as", "bob", "tasks", "review", str(tid), "--approve")
    assert result["state"] == "RESOLUTION_REQUIRED" and result["rendered"] is None
    (flag,) = [f for f in result["flagged_claims"] if f["kind"] == "not_current"]
    assert flag["answer_id"] == registry[0]["id"]
    assert flag["claim"] == "Nightly database backups are kept for 30 days."
    assert f"registry answer {registry[0]['id']} is {status}" in flag["why"]
    last = tasks.events(ctx, tid)[-1]
    assert (last["type"], last["data"]["reviewer"]) == ("ReviewRejected", "bob")
    assert f"registry answer {registry[0]['id']} is {status}" in last["data"]["reason"]
    assert last["data"]["flagged_claims"] == result["flagged_claims"]
    assert [e["type"] for e in tasks.events(ctx, tid)].count("Published") == 0


def test_a_resolution_cites_the_answers_current_then(ctx, people, registry, tmp_path):
    """The author brings the article in line with the registry and resolves: its sources are what the
    registry says now, so the approvals publish it citing the new version only."""
    task = in_review(ctx, people)
    tid = task["id"]
    moved_on(ctx, people, registry[0], "supersede")
    assert tasks.review(ctx, people["alice"], tid, "approve")["state"] == "RESOLUTION_REQUIRED"
    newer = AGREES.replace("30 days", "90 days")
    resolved = tasks.resolve(ctx, people["vera"], tid, "the retention is 90 days now", newer)
    with ctx.db.read() as tx:
        current = tx.scalar("SELECT id FROM approved_answers WHERE supersedes_id = %s", (registry[0]["id"],))
    assert {s["answer_id"] for s in resolved["sources"]} == {current, registry[1]["id"]}
    tasks.review(ctx, people["alice"], tid, "approve")
    assert tasks.review(ctx, people["bob"], tid, "approve")["state"] == "PUBLISHED"


def test_an_answer_moved_on_while_the_analysis_runs_is_flagged(ctx, people, registry, monkeypatch):
    task = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], task["id"])
    assess = tasks.assess

    def retired_meanwhile(*args, **kwargs):  # the registry moves while the job checks the claims
        report = assess(*args, **kwargs)
        moved_on(ctx, people, registry[1], "retire")
        return report

    monkeypatch.setattr(tasks.analysis, "assess", retired_meanwhile)
    assert tasks.analyze(ctx, task["id"])["outcome"] == "RESOLUTION_REQUIRED"
    shown = tasks.get(ctx, task["id"])
    (flag,) = shown["flagged_claims"]
    assert (flag["kind"], flag["answer_id"]) == ("not_current", registry[1]["id"])
    assert f"registry answer {registry[1]['id']} is RETIRED" in flag["why"]
    assert shown["ai_confidence_score"] < 1.0  # a claim resting on a retired answer counts for nothing


def test_export_marks_every_source_with_its_status_and_the_title_once(ctx, people, registry):
    task = in_review(ctx, people)
    tasks.review(ctx, people["alice"], task["id"], "approve")
    tasks.review(ctx, people["bob"], task["id"], "approve")
    exported = r2k("--as", "alice", "tasks", "export", str(task["id"])).stdout
    assert exported.count("# Backups") == 1, exported  # the title "Backups" is the body's own heading
    assert exported.startswith("# Backups\n")
    assert f"Registry answer {registry[0]['id']}: How long are backups kept? (APPROVED)" in exported
    assert f"Registry answer {registry[1]['id']}: Where are backups stored? (APPROVED)" in exported
    moved_on(ctx, people, registry[0], "supersede")
    with ctx.db.read() as tx:
        newer = tx.scalar("SELECT id FROM approved_answers WHERE supersedes_id = %s", (registry[0]["id"],))
    exported = r2k("--as", "alice", "tasks", "export", str(task["id"])).stdout
    assert f"Registry answer {registry[0]['id']}: How long are backups kept? (SUPERSEDED by answer {newer})" in exported
    untitled = tasks.create(ctx, people["vera"], "Where backups are", "Backups are stored in the Frankfurt region.\n")
    assert tasks.export(ctx, untitled["id"]).startswith("# Where backups are\n\nBackups are stored")


# ----------------------------------------------------------------------------- publication, deprecation

def test_publication_is_automatic_and_export_renders_the_sources(ctx, people, registry):
    task = in_review(ctx, people)
    tasks.review(ctx, people["alice"], task["id"], "approve")
    assert tasks.review(ctx, people["bob"], task["id"], "approve")["state"] == "PUBLISHED"
    exported = r2k("--as", "alice", "tasks", "export", str(task["id"])).stdout
    assert "## Sources" in exported
    assert f"Registry answer {registry[0]['id']}: How long are backups kept?" in exported


def test_deprecation_by_decision_and_by_a_new_version(ctx, people, registry, tmp_path):
    first = in_review(ctx, people)
    tasks.review(ctx, people["alice"], first["id"], "approve")
    tasks.review(ctx, people["bob"], first["id"], "approve")
    with pytest.raises(ValidationStateError, match="only a PUBLISHED article"):
        new_task(ctx, people, supersedes=new_task(ctx, people)["id"])
    body = tmp_path / "v2.md"
    body.write_text(AGREES)
    second = r2k_json("--as", "vera", "tasks", "create", "--title", "Backups v2", "--body-file", str(body),
                      "--supersedes", str(first["id"]), "--version", "v2")
    assert (second["supersedes_id"], second["task_version"]) == (first["id"], "v2")
    tasks.submit(ctx, people["vera"], second["id"])  # the new version goes the whole way
    tasks.analyze(ctx, second["id"])
    tasks.assign(ctx, people["vera"], second["id"], ["alice", "bob"])
    tasks.review(ctx, people["alice"], second["id"], "approve")
    assert tasks.get(ctx, first["id"])["state"] == "PUBLISHED"  # until the new one is published
    tasks.review(ctx, people["bob"], second["id"], "approve")
    old = tasks.get(ctx, first["id"])
    assert (old["state"], old["superseded_by"], old["deprecation_reason"]) == (
        "DEPRECATED", second["id"], f"superseded by task {second['id']}")
    # A third by decision, with its reason; then nothing moves it, in the core or in SQL.
    third = tasks.get(ctx, second["id"])
    with pytest.raises(Forbidden, match="editorial board"):
        tasks.deprecate(ctx, people["alice"], third["id"], "outdated")
    gone = r2k_json("--as", "sam", "tasks", "deprecate", str(third["id"]), "--reason", "policy withdrawn")
    assert (gone["state"], gone["deprecation_reason"]) == ("DEPRECATED", "policy withdrawn")
    with pytest.raises(ValidationStateError, match="DEPRECATED is terminal and immutable"):
        to(ctx, people["root"], third["id"], "PUBLISHED")
    with pytest.raises(ValidationStateError):
        tasks.assign(ctx, people["root"], third["id"], ["sam"])
    import psycopg

    with pytest.raises(psycopg.Error, match="terminal and immutable"):
        with ctx.db.begin() as tx:
            tx.execute("UPDATE durable_tasks SET title = 'x' WHERE id = %s", (third["id"],))


# ----------------------------------------------------------------------------- snapshots, replay, recovery

def test_a_snapshot_and_the_later_events_equal_a_full_replay(ctx, people, registry, monkeypatch):
    from r2k.core.config import get_settings

    monkeypatch.setenv("R2K_TASK_SNAPSHOT_EVENTS", "3")
    get_settings.cache_clear()
    try:
        task = in_review(ctx, people)  # 4 events: a snapshot at 3
        tid = task["id"]
        tasks.review(ctx, people["alice"], tid, "approve")
        tasks.review(ctx, people["bob"], tid, "reject", "needs a source")
        tasks.resolve(ctx, people["vera"], tid, "added one", AGREES + "\nMore.\n")  # 7 events: snapshots 3, 6
        tasks.review(ctx, people["bob"], tid, "approve")
    finally:
        get_settings.cache_clear()
    with ctx.db.read() as tx:
        seqs = [r["seq"] for r in tx.all("SELECT seq FROM task_snapshots WHERE task_id = %s ORDER BY seq", (tid,))]
        from_snapshot, info = tasks.rebuild(tx, tid)
        full, full_info = tasks.rebuild(tx, tid, from_snapshot=False)
        row = tx.one("SELECT * FROM durable_tasks WHERE id = %s", (tid,))
    assert seqs == [3, 6]
    assert info == {"snapshot": 6, "events": 2} and full_info == {"snapshot": None, "events": 8}
    assert from_snapshot == full == tasks.projection(row)
    assert full["state"] == "PEER_REVIEW" and [a["reviewer"] for a in full["approvals"]] == ["bob"]


def test_replay_repair_rewrites_a_projection_damaged_in_sql(ctx, people, registry, superuser):
    task = in_review(ctx, people)
    other = new_task(ctx, people, body="# Second\n\nA second article.\n")
    tid = str(task["id"])
    superuser("UPDATE durable_tasks SET state = 'APPROVED', title = 'forged', reviewers = '[]' WHERE id = %s",
              (task["id"],))
    superuser("SET session_replication_role = replica")
    superuser("DELETE FROM durable_tasks WHERE id = %s", (other["id"],))
    superuser("SET session_replication_role = origin")
    verify = r2k("--as", "alice", "replay", "--verify")
    assert verify.returncode == 1 and f"task {tid}.state" in verify.stdout
    refused = r2k("--as", "alice", "replay", "--repair")
    assert refused.returncode == 7
    from r2k.core.services.operations import admin

    with pytest.raises(Forbidden, match="only an admin may"):  # the core refuses too, not only the CLI
        admin.replay_repair(ctx, people["alice"])
    assert r2k("--as", "alice", "replay", "--verify").returncode == 1  # nothing repaired
    repaired = r2k("--json", "--as", "root", "replay", "--repair")
    assert repaired.returncode == 0, repaired.stderr
    report = json.loads(repaired.stdout)
    changed = {(c["id"], c["column"]): c for c in report["changed"]}
    assert changed[(tid, "state")]["from"] == "APPROVED" and changed[(tid, "state")]["to"] == "PEER_REVIEW"
    assert changed[(tid, "title")]["to"] == "Backups"
    assert (str(other["id"]), None) in changed
    assert report["ok"] and report["left"] == []
    assert r2k("--as", "alice", "replay", "--verify").returncode == 0
    with ctx.db.read() as tx:
        rebuilt, _ = tasks.rebuild(tx, task["id"], from_snapshot=False)
        row = tx.one("SELECT * FROM durable_tasks WHERE id = %s", (task["id"],))
        trace = tx.one("SELECT actor, payload FROM events WHERE aggregate_type = 'replay_repair'")
    assert rebuilt == tasks.projection(row)
    assert trace["actor"] == "root" and len(trace["payload"]["changed"]) == len(report["changed"])
    assert tasks.get(ctx, other["id"])["title"] == "Backups"
    assert r2k("--as", "alice", "audit", "verify").returncode == 0


def test_replay_repair_takes_no_forged_event_for_the_truth(ctx, people, superuser):
    task = new_task(ctx, people)
    other = new_task(ctx, people, body="# Second\n\nA second article.\n")
    # An insider appends an event of their own (no valid hash or signature) that retitles the task, and
    # damages the other task's row in SQL.
    superuser("INSERT INTO events (aggregate_type, aggregate_id, seq, type, actor, payload, created_at, "
              "idempotency_key, prev_hash, hash, signature, key_id) SELECT 'task', %s, 2, 'TaskCreated', 'vera', "
              "%s::jsonb, now(), NULL, hash, 'forged', '\\x00', key_id FROM events "
              "WHERE aggregate_type = 'task' AND aggregate_id = %s AND seq = 1",
              (str(task["id"]), json.dumps({"set": {"title": "forged"}}), str(task["id"])))
    superuser("UPDATE durable_tasks SET title = 'damaged' WHERE id = %s", (other["id"],))
    repaired = r2k("--json", "--as", "root", "replay", "--repair")
    assert repaired.returncode == 1, repaired.stderr  # a difference is left
    report = json.loads(repaired.stdout)
    (left,) = report["left"]
    assert (left["id"], left["column"]) == (str(task["id"]), "title") and "do not verify" in left["why"]
    assert [(c["id"], c["column"]) for c in report["changed"]] == [(str(other["id"]), "title")]
    assert tasks.get(ctx, task["id"])["title"] == "Backups" and tasks.get(ctx, other["id"])["title"] == "Backups"


KILLED = """
import pathlib, sys, time
from r2k.core.bootstrap import bootstrap
from r2k.core.services import tasks
from r2k.core.services.people import users

ctx = bootstrap()
marker = pathlib.Path(sys.argv[2])


def stop_here():
    marker.touch()
    time.sleep(120)


tasks.writing.between_event_and_row = stop_here
tasks.transition(ctx, users.resolve(ctx, "vera"), int(sys.argv[1]),
                 {"new_state": "AI_ANALYSIS", "idempotency_key": "killed"})
"""


def test_a_process_killed_mid_transition_leaves_none_of_it(ctx, people, tmp_path):
    task = new_task(ctx, people)
    marker = tmp_path / "between"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(task["id"]), str(marker)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)  # its event is written, its row not yet
    child.wait(timeout=30)
    assert counts(ctx, task["id"]) == ("DRAFT", 1, 1)
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM idempotency_keys WHERE key = 'killed'") == 0
    # The same request again goes through, once.
    moved = tasks.transition(ctx, people["vera"], task["id"], {"new_state": "AI_ANALYSIS", "idempotency_key": "killed"})
    assert (moved["state"], moved["version"]) == ("AI_ANALYSIS", 2)
    assert counts(ctx, task["id"]) == ("AI_ANALYSIS", 2, 2)
    assert [e["signature"] for e in tasks.events(ctx, task["id"])] == ["verified", "verified"]


# ----------------------------------------------------------------------------- events tail

def test_events_tail_prints_json_lines_and_follows(ctx, people):
    first = new_task(ctx, people)
    tasks.submit(ctx, people["vera"], first["id"])
    tail = r2k("--json", "--as", "alice", "events", "tail", "--aggregate", "task", "-n", "5")
    assert tail.returncode == 0, tail.stderr
    lines = [json.loads(line) for line in tail.stdout.splitlines()]
    assert [(e["type"], e["aggregate_id"]) for e in lines] == [("TaskCreated", str(first["id"])),
                                                               ("SubmittedForAnalysis", str(first["id"]))]
    for bad in ("nan", "0", "soon"):
        refused = r2k("--as", "alice", "events", "tail", "--follow", "--interval", bad)
        assert refused.returncode == 6 and "--interval is 0.05–10 seconds" in error_of(refused)["message"]
    follow = subprocess.Popen([sys.executable, "-m", "r2k.app", "--as", "alice", "events", "tail", "--follow",
                               "--aggregate", "task", "-n", "0", "--interval", "0.1"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        import select

        # Until the tail has started, what is committed is already there when it looks first (not new):
        # a task every two seconds until one streams.
        made, ready = [], []
        deadline = time.monotonic() + 60
        while not ready and time.monotonic() < deadline:
            made.append(new_task(ctx, people)["id"])
            ready, _, _ = select.select([follow.stdout], [], [], 2)
        assert ready, "nothing streamed"
        event = json.loads(follow.stdout.readline())
        assert (event["type"], event["actor"]) == ("TaskCreated", "vera")
        assert int(event["aggregate_id"]) in made
    finally:
        follow.kill()
        follow.wait(timeout=10)


def test_the_demo_adds_three_articles_once(ctx):
    first = r2k("demo", "--no-tui")
    assert first.returncode == 0, first.stderr
    listed = {t["title"]: t for t in r2k_json("--as", "ada", "tasks", "list")}
    assert {title: t["state"] for title, t in listed.items()} == {
        "Backups at a glance": "PEER_REVIEW", "Backup retention, draft": "RESOLUTION_REQUIRED",
        "Where backups live": "PUBLISHED"}
    assert set(listed["Backups at a glance"]["reviewers"]) == {"ada", "ben"}
    kinds = {f["kind"] for f in tasks.get(ctx, listed["Backup retention, draft"]["id"])["flagged_claims"]}
    assert kinds == {"contradicted", "unsupported"}
    assert "## Sources" in r2k("--as", "ada", "tasks", "export", str(listed["Where backups live"]["id"])).stdout
    assert "articles:" in first.stdout
    r2k_json("demo", "--no-tui")
    assert len(r2k_json("--as", "ada", "tasks", "list")) == 3


# ----------------------------------------------------------------------------- the analysis with an LLM

def with_settings(ctx, **overrides):
    from r2k.core.bootstrap import bootstrap

    return bootstrap(ctx.settings.model_copy(update=overrides), pool_size=4)


def test_an_llm_judges_the_claims_the_rules_left_through_the_breaker(ctx, people, registry):
    from tests.llm_server import ChatServer

    task = new_task(ctx, people, body=GOES_BEYOND)
    tasks.submit(ctx, people["vera"], task["id"])
    with ChatServer(reply="1: SUPPORTED") as llm:
        judged = with_settings(ctx, llm_url=llm.url, llm_retries=0)
        assert tasks.analyze(judged, task["id"])["outcome"] == "PEER_REVIEW"
        judged.close()
    assert llm.calls == 1 and "Backup tapes are couriered weekly" in llm.prompts[0]
    shown = tasks.get(ctx, task["id"])
    assert (shown["ai_confidence_score"], shown["flagged_claims"]) == (0.95, [])  # (1.0 + 0.9) / 2
    assert shown["analysis"]["judged_by"].startswith("rules and the LLM")


def test_a_failing_llm_leaves_the_rules_verdict_and_counts_against_the_breaker(ctx, people, registry):
    from r2k.core.services.answering import generation
    from tests.llm_server import ChatServer

    task = new_task(ctx, people, body=GOES_BEYOND)
    tasks.submit(ctx, people["vera"], task["id"])
    with ChatServer(mode="error") as llm:
        failing = with_settings(ctx, llm_url=llm.url, llm_retries=0, breaker_threshold=1)
        assert tasks.analyze(failing, task["id"])["outcome"] == "RESOLUTION_REQUIRED"
        assert generation.breaker(failing).status()["state"] == "open"
        failing.close()
    shown = tasks.get(ctx, task["id"])
    assert shown["analysis"]["judged_by"] == "rules"
    assert any("LLM error" in note for note in shown["analysis"]["notes"])
    assert [f["kind"] for f in shown["flagged_claims"]] == ["unsupported"]


def test_the_threshold_is_a_setting(ctx, people, registry):
    body = "# Backups\n\nNightly backups are kept for 30 days in cold storage.\n"  # 5 of its 7 words stated
    first, second = new_task(ctx, people, body=body), new_task(ctx, people, body=body)
    for task in (first, second):
        tasks.submit(ctx, people["vera"], task["id"])
    assert tasks.analyze(ctx, first["id"])["outcome"] == "RESOLUTION_REQUIRED"  # 0.714 < 0.8, nothing flagged
    assert tasks.get(ctx, first["id"])["flagged_claims"] == []
    lenient = with_settings(ctx, task_confidence_threshold=0.7)
    assert tasks.analyze(lenient, second["id"])["outcome"] == "PEER_REVIEW"
    lenient.close()
    (event,) = [e for e in tasks.events(ctx, second["id"]) if e["type"] == "AnalysisCompleted"]
    assert (event["data"]["threshold"], event["data"]["ai_confidence_score"]) == (0.7, 0.714)


def test_two_reviewers_approving_at_once_publish_it_once(ctx, people, registry):
    from concurrent.futures import ThreadPoolExecutor

    task = in_review(ctx, people)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda who: tasks.review(ctx, people[who], task["id"], "approve"), ["alice", "bob"]))
    assert sorted(r["state"] for r in results) == ["PEER_REVIEW", "PUBLISHED"]  # the row lock orders them
    types = [e["type"] for e in tasks.events(ctx, task["id"])]
    assert types.count("ReviewApproved") == 2 and types.count("Published") == 1
    assert all(e["signature"] == "verified" for e in tasks.events(ctx, task["id"]))
