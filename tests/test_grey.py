"""The grey queue: triage transitions with their request requirements and
history, TTL expiry, automated retries, resolution when sources arrive, recovery after a dead worker."""
from __future__ import annotations

from datetime import timedelta

import pytest

from r2k.core.errors import Forbidden, InvalidInput, ValidationStateError
from r2k.core.events import now
from r2k.core.machines.grey import GREY
from r2k.core.services.documents import ingest
from r2k.core.services.grey_entries import grey
from tests.conftest import error_of, r2k, r2k_json


def new_entry(ctx, people, subject="Who owns the yard cameras?", **kw):
    return grey.add(ctx, people["sam"], subject, "raised during the audit", **kw)


def states_of(ctx, entry_id) -> list[tuple]:
    return [(h["action"], h["from_state"], h["to_state"], h["actor"], h["reason"]) for h in grey.history(ctx, entry_id)]


def taken_by_a_worker(ctx, entry_id):
    """The entry's queued job leaves the queue, as when a worker takes it (tests call process() themselves)."""
    from r2k.core.adapters import jobs

    ctx.redis.lrem(jobs.queue(ctx.redis, "generation").key, 0, grey.processing_job_id(entry_id))


def force_state(ctx, entry_id, state, **columns):
    """Put an entry in a state the automation reaches (Processing, Failed …), through the engine."""
    from r2k.core import engine
    from r2k.core.domain import SYSTEM

    path = {"Processing": ["process"], "Retrying": ["process", "retry"], "Failed": ["process", "fail"]}[state]
    with ctx.db.begin() as tx:
        for action in path:
            engine.apply(tx, GREY, entry_id, action, SYSTEM, changes=columns)


@pytest.mark.compat
def test_triage_walk_with_history(ctx, people):
    entry = r2k_json("--as", "sam", "grey", "add", "--subject", "Who owns the yard cameras?", "--ttl", "3600",
                     "--max-attempts", "3")
    assert (entry["state"], entry["ttl_seconds"], entry["max_attempts"]) == ("Pending", 3600, 3)
    eid = str(entry["id"])
    assert r2k_json("--as", "sam", "grey", "transitions", eid)["next_states"] == ["Dismissed", "Expired",
                                                                                  "Processing", "UnderReview"]
    assigned = r2k_json("--as", "sam", "grey", "assign", eid, "--assignee", "sam", "--notes", "taking it")
    assert (assigned["state"], assigned["assignee"], assigned["notes"]) == ("UnderReview", "sam", "taking it")
    assert r2k_json("--as", "sam", "grey", "escalate", eid, "--reason", "security relevant")["state"] == "Escalated"
    assert r2k_json("--as", "root", "grey", "deescalate", eid)["state"] == "UnderReview"
    rejected = r2k_json("--as", "sam", "grey", "reject", eid, "--reason", "not actionable")
    assert (rejected["state"], rejected["rejected_by"]) == ("Rejected", "sam")  # who acts is who rejected
    assert r2k_json("--as", "sam", "grey", "reopen", eid, "--reason", "new evidence")["state"] == "Pending"
    assert r2k_json("--as", "sam", "grey", "dismiss", eid, "--reason", "duplicate")["state"] == "Dismissed"
    assert r2k_json("--as", "sam", "grey", "reopen", eid)["state"] == "Pending"  # from Dismissed, no reason needed
    r2k_json("--as", "sam", "grey", "assign", eid, "--assignee", "root")
    assert r2k_json("--as", "sam", "grey", "unassign", eid)["assignee"] is None
    r2k_json("--as", "sam", "grey", "assign", eid, "--assignee", "sam")
    resolved = r2k_json("--as", "sam", "grey", "resolve", eid, "--resolution", "facilities owns them")
    assert (resolved["state"], resolved["resolution"]) == ("Resolved", "facilities owns them")
    history = r2k_json("--as", "sam", "grey", "history", eid)
    assert [(h["from_state"], h["to_state"]) for h in history] == [
        (None, "Pending"), ("Pending", "UnderReview"), ("UnderReview", "Escalated"), ("Escalated", "UnderReview"),
        ("UnderReview", "Rejected"), ("Rejected", "Pending"), ("Pending", "Dismissed"), ("Dismissed", "Pending"),
        ("Pending", "UnderReview"), ("UnderReview", "Pending"), ("Pending", "UnderReview"),
        ("UnderReview", "Resolved")]
    assert history[2]["reason"] == "security relevant" and history[2]["actor"] == "sam"
    assert history[3]["actor"] == "root"
    assert r2k_json("--as", "sam", "grey", "transitions", eid)["next_states"] == []  # terminal


@pytest.mark.parametrize("setup,args,code,words", [
    ([], ["assign", "{id}", "--assignee", "  "], 6, "assignee"),
    ([], ["assign", "{id}", "--assignee", "ghost"], 6, "not a known user"),
    ([("assign", {"assignee": "sam"})], ["escalate", "{id}", "--reason", " "], 6, "reason"),
    ([("assign", {"assignee": "sam"})], ["reject", "{id}", "--reason", "x", "--by", "mallory"], 6,
     "unrecognized arguments: --by"),
    ([("assign", {"assignee": "sam"}), ("reject", {"reason": "x", "rejected_by": "sam"})],
     ["reopen", "{id}"], 6, "reason"),
    ([], ["escalate", "{id}", "--reason", "why"], 5, "Pending"),
    ([], ["resolve", "{id}"], 5, "Pending"),
    ([], ["deescalate", "{id}"], 5, "Pending"),
    ([("dismiss", {})], ["assign", "{id}", "--assignee", "sam"], 5, "Dismissed"),
])
def test_bad_moves_and_missing_requirements_change_nothing(ctx, people, setup, args, code, words):
    entry = new_entry(ctx, people)
    for action, fields in setup:
        grey.transition(ctx, people["sam"], entry["id"], action, **fields)
    before = (grey.get(ctx, entry["id"]), grey.history(ctx, entry["id"]))
    result = r2k("--as", "sam", "grey", *[a.format(id=entry["id"]) for a in args])
    assert result.returncode == code, result.stderr
    assert words in error_of(result)["message"]
    assert (grey.get(ctx, entry["id"]), grey.history(ctx, entry["id"])) == before


def test_rejected_by_is_the_acting_user_whatever_a_caller_passes(ctx, people):
    entry = new_entry(ctx, people)
    grey.transition(ctx, people["sam"], entry["id"], "assign", assignee="sam")
    rejected = grey.transition(ctx, people["root"], entry["id"], "reject", reason="noise", rejected_by="mallory")
    assert rejected["rejected_by"] == "root"
    assert grey.history(ctx, entry["id"])[-1]["actor"] == "root"


def test_validators_do_not_triage(ctx, people):
    entry = new_entry(ctx, people)
    with pytest.raises(Forbidden):
        grey.transition(ctx, people["alice"], entry["id"], "dismiss")
    assert grey.get(ctx, entry["id"])["state"] == "Pending"


def test_add_input_is_checked(ctx, people):
    for args, words in [(["--subject", " "], "subject"), (["--subject", "S", "--ttl", "0"], "ttl"),
                        (["--subject", "S", "--max-attempts", "0"], "max-attempts")]:
        result = r2k("--as", "sam", "grey", "add", *args)
        assert result.returncode == 6 and words in error_of(result)["message"]
    assert grey.list_entries(ctx) == []


def test_list_filters(ctx, people):
    a = new_entry(ctx, people, "Who owns the yard cameras?")
    b = new_entry(ctx, people, "Are night pickers insured?")
    grey.transition(ctx, people["sam"], b["id"], "assign", assignee="sam")
    assert [e["id"] for e in r2k_json("--as", "sam", "grey", "list", "--assignee", "sam")] == [b["id"]]
    assert [e["id"] for e in r2k_json("--as", "sam", "grey", "list", "--state", "pending")] == [a["id"]]
    assert [e["id"] for e in r2k_json("--as", "sam", "grey", "list", "--text", "cameras")] == [a["id"]]
    assert r2k("--as", "sam", "grey", "list", "--state", "Limbo").returncode == 6


def test_ttl_expiry_by_the_sweep(ctx, people):
    pending = new_entry(ctx, people, ttl_seconds=1)
    retrying = new_entry(ctx, people, "Second unknown", ttl_seconds=1)
    force_state(ctx, retrying["id"], "Retrying")
    fresh = new_entry(ctx, people, "Third unknown")
    with ctx.db.begin() as tx:
        tx.execute("UPDATE grey_entries SET expires_at = now() - interval '1 second' WHERE id IN (%s, %s)",
                   (pending["id"], retrying["id"]))
    swept = grey.sweep(ctx)
    assert sorted(swept["expired"]) == [pending["id"], retrying["id"]]
    assert grey.get(ctx, pending["id"])["state"] == "Expired"
    assert grey.get(ctx, retrying["id"])["state"] == "Expired"
    assert grey.get(ctx, fresh["id"])["state"] == "Pending"
    assert states_of(ctx, pending["id"])[-1][:4] == ("expire", "Pending", "Expired", "system")


def test_retries_with_backoff_until_failed(ctx, people):
    entry = new_entry(ctx, people, "Which insurer covers the drones?", max_attempts=3)
    outcomes = []
    for _ in range(3):
        outcomes.append(grey.process(ctx, entry["id"], force=True)["outcome"])
    assert outcomes == ["retrying", "retrying", "failed"]
    done = grey.get(ctx, entry["id"])
    assert (done["state"], done["attempts"]) == ("Failed", 3)
    waits = [h[4] for h in states_of(ctx, entry["id"]) if h[0] == "retry"]
    assert waits == ["found 0 source(s); retry in 30s", "found 0 source(s); retry in 60s"]
    assert grey.process(ctx, entry["id"])["outcome"] == "nothing to do"
    reset = grey.transition(ctx, people["sam"], entry["id"], "reset")
    assert (reset["state"], reset["attempts"]) == ("Pending", 0)


def test_a_retry_is_not_taken_before_it_is_due(ctx, people):
    entry = new_entry(ctx, people, "Which insurer covers the drones?")
    taken_by_a_worker(ctx, entry["id"])
    assert grey.process(ctx, entry["id"])["outcome"] == "retrying"
    assert grey.process(ctx, entry["id"])["outcome"] == "nothing to do"  # backoff not over
    with ctx.db.begin() as tx:
        tx.execute("UPDATE grey_entries SET next_attempt_at = now() - interval '1 second' WHERE id = %s",
                   (entry["id"],))
    assert entry["id"] in grey.sweep(ctx)["requeued"]


def test_new_sources_resolve_an_entry_and_open_a_work_item(ctx, people, tmp_path):
    entry = new_entry(ctx, people, "drone insurance policy")
    taken_by_a_worker(ctx, entry["id"])
    assert grey.process(ctx, entry["id"], force=True)["outcome"] == "retrying"
    (tmp_path / "drones.md").write_text(
        "# Drone operations\n\n## Drone insurance\n\nThe drone insurance policy is held with Northsea Mutual.\n\n"
        "## Drone claims\n\nClaims under the drone insurance policy go to the finance desk.\n")
    ingest.ingest(ctx, people["root"], [tmp_path])
    from r2k.core.adapters import jobs

    queued = ctx.redis.lrange(jobs.queue(ctx.redis, "generation").key, 0, -1)
    assert any(b"retrigger" in job_id for job_id in queued)  # ingest re-triggered processing at once
    result = grey.process(ctx, entry["id"], force=True)
    assert result["outcome"] == "resolved" and result["sources"] >= 2
    resolved = grey.get(ctx, entry["id"])
    assert resolved["state"] == "Resolved" and resolved["work_item_id"] is not None
    from r2k.core.services.answering import workitems

    assert workitems.get(ctx, resolved["work_item_id"])["question"] == \
        "What do the sources say about drone insurance policy?"


def test_documents_ingested_while_no_worker_runs_retrigger_an_entry_once(ctx, people, tmp_path):
    entry = new_entry(ctx, people, "drone insurance policy")
    from r2k.core.adapters import jobs

    def new_document(n):
        (tmp_path / f"drones{n}.md").write_text(f"# Drones {n}\n\n## Insurance\n\nThe drone insurance policy "
                                               f"number {n} is held with Northsea Mutual.\n")
        ingest.ingest(ctx, people["root"], [tmp_path / f"drones{n}.md"])

    waiting = jobs.queue(ctx.redis, "generation")
    for n in range(3):  # its job from creation still waits, and will see these documents when it runs
        new_document(n)
    assert waiting.get_job_ids() == [grey.processing_job_id(entry["id"])]
    taken_by_a_worker(ctx, entry["id"])  # a worker looked before the next documents came: too few sources
    force_state(ctx, entry["id"], "Retrying", next_attempt_at=now() - timedelta(seconds=1))
    for n in range(3, 6):
        new_document(n)
    assert waiting.get_job_ids() == [grey.retrigger_job_id(entry["id"])]
    # Its retry is due: the sweep sees the retrigger waiting.
    assert entry["id"] not in grey.sweep(ctx)["requeued"]
    assert waiting.get_job_ids() == [grey.retrigger_job_id(entry["id"])]


def test_sweeps_while_no_worker_runs_queue_an_entry_once(ctx, people):
    entry = new_entry(ctx, people, "Who repaints the yard lines?")
    with ctx.db.begin() as tx:  # untouched for over a minute: a sweep makes sure it will be processed
        tx.execute("UPDATE grey_entries SET created_at = now() - interval '2 minutes' WHERE id = %s", (entry["id"],))
    from r2k.core.adapters import jobs

    waiting = jobs.queue(ctx.redis, "generation")
    for _ in range(3):  # its job from creation still waits: no copy queued behind it
        assert entry["id"] not in grey.sweep(ctx)["requeued"]
    assert waiting.get_job_ids() == [grey.processing_job_id(entry["id"])]
    taken_by_a_worker(ctx, entry["id"])  # taken, and lost with its worker before it ran
    assert entry["id"] in grey.sweep(ctx)["requeued"]
    assert waiting.get_job_ids() == [grey.processing_job_id(entry["id"])]


def test_an_entry_left_processing_by_a_dead_worker_is_recovered(ctx, people):
    backlog = new_entry(ctx, people, "Who orders the spare filters?")  # its job waits in the queue
    entry = new_entry(ctx, people, "Who signs the lease renewal?")
    taken_by_a_worker(ctx, entry["id"])  # the worker that then died
    force_state(ctx, entry["id"], "Processing", attempts=1)
    assert entry["id"] not in grey.sweep(ctx)["requeued"]  # a live worker may still be on it
    with ctx.db.begin() as tx:
        tx.execute("UPDATE grey_entries SET updated_at = now() - interval '11 minutes' WHERE id = %s", (entry["id"],))
    assert entry["id"] in grey.sweep(ctx)["requeued"]
    # It waited its turn once already: requeued ahead of the backlog, not behind it.
    from r2k.core.adapters import jobs

    assert jobs.queue(ctx.redis, "generation").get_job_ids()[0] == grey.processing_job_id(entry["id"])
    assert grey.processing_job_id(backlog["id"]) in jobs.queue(ctx.redis, "generation").get_job_ids()
    result = grey.process(ctx, entry["id"])
    assert result["outcome"] == "retrying"
    assert grey.get(ctx, entry["id"])["attempts"] == 1  # the dead worker's attempt is finished, not repeated


def test_escalation_publishes_a_notice(ctx, people):
    entry = new_entry(ctx, people)
    grey.transition(ctx, people["sam"], entry["id"], "assign", assignee="sam")
    pubsub = ctx.redis.pubsub(ignore_subscribe_messages=True)
    from r2k.core.notices import CHANNEL

    pubsub.subscribe(CHANNEL)
    pubsub.get_message(timeout=1)
    grey.transition(ctx, people["sam"], entry["id"], "escalate", reason="looks like a breach")
    import json
    import time

    deadline = time.time() + 5
    notice = None
    while time.time() < deadline and notice is None:
        message = pubsub.get_message(timeout=0.5)
        if message and message["type"] == "message":
            data = json.loads(message["data"])
            if data.get("entity") == "grey_entry" and data.get("action") == "escalate":
                notice = data
    pubsub.close()
    assert (notice["id"], notice["state"], notice["actor"]) == (entry["id"], "Escalated", "sam")
    assert grey.get(ctx, entry["id"])["reason"] == "looks like a breach"  # what a screen reads next


def test_bad_ids(ctx, people):
    assert r2k("--as", "sam", "grey", "show", "x").returncode == 6
    assert r2k("--as", "sam", "grey", "show", "404").returncode == 3
    with pytest.raises(InvalidInput):
        grey.transition(ctx, people["sam"], 1, "teleport")
    with pytest.raises(ValidationStateError):
        entry = new_entry(ctx, people)
        grey.transition(ctx, people["sam"], entry["id"], "reset")


def test_a_running_worker_sweeps_on_schedule(ctx, people):
    """`r2k worker` (not burst) runs the sweep as scheduled RQ work: expired entries expire and an
    expired claim goes back to its queue, with nobody calling anything."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from r2k.core.services.queue import candidate_views, claims, queue_index
    from r2k.core.services.validation import candidates
    from tests.conftest import ROOT

    entry = new_entry(ctx, people, "Who repaints the dock lines?")
    candidates.add(ctx, people["root"], "Q?", "A plain fact.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    with ctx.db.begin() as tx:
        tx.execute("UPDATE grey_entries SET expires_at = now() - interval '1 second' WHERE id = %s", (entry["id"],))
        tx.execute("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
                   (claimed["id"],))
    worker = subprocess.Popen([sys.executable, "-m", "r2k.app", "worker"], cwd=ROOT, start_new_session=True,
                              env={**os.environ, "R2K_SWEEP_INTERVAL": "1"}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and (grey.get(ctx, entry["id"])["state"] != "Expired"
                                          or candidate_views.get(ctx, claimed["id"])["state"] != "PENDING"):
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)
    assert grey.get(ctx, entry["id"])["state"] == "Expired"
    assert candidate_views.get(ctx, claimed["id"])["state"] == "PENDING"
    assert queue_index.queue(ctx).ids("FACT") == [claimed["id"]]


# --------------------------------------------------------------------------- who works an entry

def queued_jobs(ctx) -> list[str]:
    from r2k.core.adapters import jobs

    return [job_id.decode() for job_id in ctx.redis.lrange(jobs.queue(ctx.redis, "generation").key, 0, -1)]


def test_an_entry_added_for_review_is_never_the_automations_while_a_worker_runs(ctx, people):
    """A specialist adds an unknown for their own review while a worker runs: it stays theirs, and the one
    they leave to the automation is worked (then waits out its backoff in Retrying, saying when)."""
    from tests.test_worker_tasks import burst_worker

    mine = grey.add(ctx, people["sam"], "Who calibrates the dock scales?", assignee="sam")
    left = new_entry(ctx, people, "Which insurer covers the drones?")
    assert (mine["state"], mine["assignee"]) == ("UnderReview", "sam")
    assert [(h[0], h[1], h[2], h[3]) for h in states_of(ctx, mine["id"])] == [
        ("add", None, "Pending", "sam"), ("assign", "Pending", "UnderReview", "sam")]
    assert queued_jobs(ctx) == [grey.processing_job_id(left["id"])]  # no job for the entry sam reviews

    burst_worker()
    assert grey.get(ctx, mine["id"])["state"] == "UnderReview"
    retrying = grey.show(ctx, left["id"])
    assert retrying["state"] == "Retrying" and retrying["transitions"] == []  # no move of a person's
    assert [(m["action"], m["to"]) for m in retrying["automation"]] == [
        ("process", "Processing"), ("fail", "Failed"), ("expire", "Expired")]
    due = retrying["automation"][0]
    assert due["at"] == retrying["next_attempt_at"] and (due["attempt"], due["of"]) == (2, 5)
    assert retrying["automation"][2]["at"] == retrying["expires_at"]
    assert r2k_json("--as", "sam", "grey", "transitions", str(left["id"]))["automation"] == retrying["automation"]


def test_grey_add_assign_me_from_the_command_line(ctx, people):
    added = r2k_json("--as", "sam", "grey", "add", "--subject", "Who calibrates the dock scales?", "--assign-me")
    assert (added["state"], added["assignee"]) == ("UnderReview", "sam")
    for_root = r2k_json("--as", "sam", "grey", "add", "--subject", "Who signs the waste log?", "--assignee", "root")
    assert (for_root["state"], for_root["assignee"]) == ("UnderReview", "root")
    assert queued_jobs(ctx) == []
    left = r2k_json("--as", "alice", "grey", "add", "--subject", "Are night pickers insured?")
    assert (left["state"], left["assignee"]) == ("Pending", None)  # a validator's: left to the automation
    assert queued_jobs(ctx) == [grey.processing_job_id(left["id"])]


@pytest.mark.parametrize("args,code,words", [
    (["--as", "alice", "grey", "add", "--subject", "S", "--assign-me"], 7, "specialist"),  # validators do not triage
    (["--as", "sam", "grey", "add", "--subject", "S", "--assignee", "ghost"], 6, "not a known user"),
    (["--as", "sam", "grey", "add", "--subject", "S", "--assign-me", "--assignee", "root"], 6, "not allowed with"),
])
def test_an_add_for_review_that_cannot_be_made_adds_nothing(ctx, people, args, code, words):
    result = r2k(*args)
    assert result.returncode == code, result.stderr
    assert words in error_of(result)["message"]
    assert grey.list_entries(ctx) == [] and queued_jobs(ctx) == []
