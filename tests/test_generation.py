"""The generation pipeline on real RQ workers against a real local chat-completions server
: success, no_content, LLM errors, the shared circuit breaker, crashes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest

from r2k.core.adapters import jobs
from r2k.core.adapters.breaker import CircuitBreaker
from r2k.core.bootstrap import bootstrap
from r2k.core.context import Context
from r2k.core.errors import InvalidInput, ValidationStateError
from r2k.core.knowledge.classify import classify
from r2k.core.services.answering import generation, workitems
from r2k.core.services.documents import ingest
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, error_of, r2k, r2k_json
from tests.llm_server import ChatServer

SOURCES = {
    "retention.md": "# Backup policy\n\n## Backup retention\n\nNightly database backups are kept for thirty days "
                    "in the Frankfurt region.\n",
    "restore.md": "# Restore drills\n\n## Restore test\n\nThe monthly restore test reads nightly database backups "
                  "kept in Frankfurt and proves they restore.\n",
    "platform.md": "# Platform\n\n## Storage\n\nDatabase backups run nightly at two and are kept encrypted.\n",
}
QUESTION = "How long are nightly database backups kept?"


@pytest.fixture
def corpus(ctx, people, tmp_path):
    for name, text in SOURCES.items():
        (tmp_path / name).write_text(text)
    ingest.ingest(ctx, people["root"], [tmp_path])
    with ctx.db.begin() as tx:  # keep the Horn queues to the generated candidates of each test
        tx.execute("UPDATE candidates SET state = 'REJECTED'")
    ctx.redis.flushdb()
    return tmp_path


def with_settings(ctx: Context, **overrides) -> Context:
    return bootstrap(ctx.settings.model_copy(update=overrides), pool_size=4)


def run_worker(env: dict | None = None, processes: int = 1, timeout: float = 120) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    result = subprocess.run([sys.executable, "-m", "r2k.app", "worker", "--burst", "--queues", "generation",
                             "--processes", str(processes)], cwd=ROOT, env=full, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def item_of(ctx, item_id) -> dict:
    return workitems.get(ctx, item_id)


@pytest.mark.compat
def test_success_end_to_end_through_a_real_worker(ctx, people, corpus):
    with ChatServer() as llm:
        item = workitems.create(ctx, people["sam"], QUESTION)
        assert jobs.depth(ctx.redis)["generation"] >= 1  # enqueued automatically
        run_worker({"R2K_LLM_URL": llm.url, "R2K_LLM_MODEL": "test-model-1"})
        assert llm.calls == 1
    shown = workitems.show(ctx, item["id"])
    assert shown["state"] == "READY_FOR_REVIEW"
    assert [h["to"] for h in shown["history"]] == ["NEW", "GENERATING", "PENDING_VALIDATION", "IN_CLASSIFICATION",
                                                   "READY_FOR_REVIEW"]
    (gen,) = shown["generated"]
    assert gen["model"] == "test-model-1" and "[1]" in gen["text"]
    assert "[1] (" in gen["prompt"] and "[2] (" in gen["prompt"] and "citing them" in gen["prompt"]
    assert llm.prompts == [gen["prompt"]]
    assert len(gen["sources"]) >= 2
    candidate = claims.claim_next(ctx, people["alice"], gen["horn_type"])
    assert (candidate["work_item_id"], candidate["origin"]) == (item["id"], "generated")
    candidates.approve(ctx, people["alice"], candidate["id"])
    assert item_of(ctx, item["id"])["state"] == "CLOSED"
    assert [h["to"] for h in workitems.show(ctx, item["id"])["history"]][-2:] == ["VALIDATED", "CLOSED"]


def test_escalated_candidate_is_closed_when_its_generated_answer_is_approved(ctx, people, corpus):
    candidates.add(ctx, people["root"], QUESTION, "Is it thirty days or fourteen?", "OPEN_ISSUE")
    original = claims.claim_next(ctx, people["vera"], "OPEN_ISSUE")
    item = candidates.escalate(ctx, people["vera"], original["id"], "needs an answer")["work_item"]
    outcome = generation.generate_answer(ctx, item["id"])  # the built-in extractive generator
    assert outcome["outcome"] == "generated" and outcome["horn_type"] != "OPEN_ISSUE"
    gen = workitems.show(ctx, item["id"])["generated"][0]
    assert gen["model"] == "extractive" and "[1]" in gen["text"]
    candidate = claims.claim_next(ctx, people["root"], outcome["horn_type"])
    candidates.revise(ctx, people["root"], candidate["id"], "Nightly database backups are kept for thirty days.")
    assert candidate_views.get(ctx, original["id"])["state"] == "CLOSED"
    assert item_of(ctx, item["id"])["state"] == "CLOSED"


def test_fewer_than_two_sources_escalates_with_exactly_no_content(ctx, people, corpus):
    item = workitems.create(ctx, people["sam"], "Which colour are the forklifts painted?")
    run_worker()
    done = item_of(ctx, item["id"])
    assert (done["state"], done["reason"], done["source_count"]) == ("ESCALATED", "no_content", 0)
    from r2k.core.services.grey_entries import grey

    entries = grey.list_entries(ctx)
    assert any(e["subject"] == "Which colour are the forklifts painted?" for e in entries)


def test_llm_error_escalates_with_its_detail(ctx, people, corpus):
    with ChatServer(mode="error") as llm:
        item = workitems.create(ctx, people["sam"], QUESTION)
        run_worker({"R2K_LLM_URL": llm.url, "R2K_LLM_RETRIES": "1"})
        assert llm.calls == 2  # one try and one bounded retry
    done = item_of(ctx, item["id"])
    assert (done["state"], done["reason"]) == ("ESCALATED", "LLM error: HTTP 500")


def test_a_hanging_llm_times_out_and_escalates(ctx, people, corpus):
    with ChatServer(mode="hang") as llm:
        item = workitems.create(ctx, people["sam"], QUESTION)
        slow = with_settings(ctx, llm_url=llm.url, llm_timeout=0.5, llm_retries=0)
        outcome = generation.generate_answer(slow, item["id"])
        slow.close()
    assert outcome["reason"] == "LLM error: timeout"
    assert item_of(ctx, item["id"])["reason"] == "LLM error: timeout"


def test_the_breaker_opens_across_two_worker_processes(ctx, people, corpus):
    with ChatServer(mode="error") as llm:
        items = [workitems.create(ctx, people["sam"], QUESTION) for _ in range(8)]
        run_worker({"R2K_LLM_URL": llm.url, "R2K_LLM_RETRIES": "0", "R2K_BREAKER_THRESHOLD": "2",
                    "R2K_BREAKER_COOLDOWN": "300"}, processes=2)
        calls = llm.calls
    reasons = [item_of(ctx, i["id"])["reason"] for i in items]
    assert all(r in ("LLM error: HTTP 500", "LLM circuit open") for r in reasons), reasons
    assert reasons.count("LLM error: HTTP 500") == calls
    assert 2 <= calls <= 3  # the threshold, plus at most one call already in flight in the other process
    assert reasons.count("LLM circuit open") == 8 - calls
    assert generation.breaker(with_settings(ctx, breaker_threshold=2)).status()["state"] == "open"
    status = {row["name"]: row for row in r2k_json("services", "status")}
    assert status["llm"]["answers"] is False and "circuit open" in status["llm"]["detail"]


PROBER = """
import json, sys, time
from r2k.core.bootstrap import bootstrap
from r2k.core.adapters.breaker import CircuitBreaker
ctx = bootstrap()
cb = CircuitBreaker(ctx.redis, threshold=1, cooldown=0.5)
start = float(sys.argv[1])
while time.time() < start:
    time.sleep(0.001)
print(json.dumps([cb.allow(f"p{sys.argv[2]}") for _ in range(5)]))
"""


def test_after_the_cool_down_exactly_one_probe_goes_through_then_success_closes(ctx):
    cb = CircuitBreaker(ctx.redis, threshold=1, cooldown=0.5)
    assert cb.allow() == "call"
    assert cb.record_failure("HTTP 500") == "open"
    assert cb.allow() == "refuse"
    time.sleep(0.6)
    start = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, "-c", PROBER, str(start), str(i)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for i in range(6)]
    decisions = [d for p in procs for d in json.loads(p.communicate(timeout=60)[0])]
    assert decisions.count("probe") == 1 and decisions.count("call") == 0
    assert cb.status()["state"] == "half_open"
    cb.record_success()
    assert cb.status()["state"] == "closed" and cb.allow() == "call"


def test_a_failed_probe_opens_the_breaker_again(ctx):
    cb = CircuitBreaker(ctx.redis, threshold=3, cooldown=0.2)
    for _ in range(3):
        cb.record_failure("x")
    time.sleep(0.25)
    assert cb.allow() == "probe"
    assert cb.record_failure("still down") == "open"
    assert cb.allow() == "refuse"


def test_the_breaker_closes_after_a_successful_probe_in_the_pipeline(ctx, people, corpus):
    with ChatServer() as llm:
        # The breaker's state lives in Redis, its cooldown in each caller's settings: a caller whose
        # cooldown is an hour finds it open, one whose cooldown is zero finds that time up (no sleep
        # to race a loaded machine).
        held = with_settings(ctx, llm_url=llm.url, breaker_threshold=1, breaker_cooldown=3600, llm_retries=0)
        cb = generation.breaker(held)
        cb.record_failure("earlier outage")
        first = workitems.create(ctx, people["sam"], QUESTION)
        assert generation.generate_answer(held, first["id"])["reason"] == "LLM circuit open"
        assert llm.calls == 0  # not called while open
        elapsed = with_settings(ctx, llm_url=llm.url, breaker_threshold=1, breaker_cooldown=0, llm_retries=0)
        second = workitems.create(ctx, people["sam"], QUESTION)
        assert generation.generate_answer(elapsed, second["id"])["outcome"] == "generated"
        assert cb.status()["state"] == "closed" and llm.calls == 1
        held.close()
        elapsed.close()


def test_a_worker_killed_mid_job_leaves_nothing_stuck_and_nothing_twice(ctx, people, corpus):
    with ChatServer(mode="hang") as llm:
        item = workitems.create(ctx, people["sam"], QUESTION)
        env = {**os.environ, "R2K_LLM_URL": llm.url, "R2K_LLM_TIMEOUT": "120"}
        worker = subprocess.Popen([sys.executable, "-m", "r2k.app", "worker", "--queues", "generation"], cwd=ROOT,
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        deadline = time.time() + 60
        while llm.calls == 0 and time.time() < deadline:
            time.sleep(0.1)
        assert llm.calls == 1 and item_of(ctx, item["id"])["state"] == "GENERATING"
        os.killpg(worker.pid, signal.SIGKILL)  # the worker, its work horse and its scheduler
        worker.wait(timeout=10)
        llm.mode = "answer"
        # What the scheduled sweep does once the item has gone untouched too long:
        assert generation.recover(ctx, stale_after=timedelta(0))["requeued"] == [item["id"]]
        jobs.enqueue(ctx.redis, "generation", "generate_answer_task", item["id"])  # a duplicate
        run_worker({"R2K_LLM_URL": llm.url})
    shown = workitems.show(ctx, item["id"])
    assert shown["state"] == "READY_FOR_REVIEW"
    assert len(shown["generated"]) == 1
    assert queue_index.queue(ctx).length(shown["generated"][0]["horn_type"]) == 1


def test_sweeps_while_no_worker_runs_queue_a_new_items_job_once(ctx, people):
    item = workitems.create(ctx, people["sam"], QUESTION)
    generation_queue = jobs.queue(ctx.redis, "generation")
    for _ in range(3):  # a workstation sweeping every interval, with no worker to take the job
        assert generation.recover(ctx)["requeued"] == []
    assert generation_queue.get_job_ids() == [f"generate-{item['id']}"]
    # A worker popped the id and died before running it (rq #1716): the next sweep queues it again.
    ctx.redis.lrem(generation_queue.key, 0, f"generate-{item['id']}")
    assert generation.recover(ctx)["requeued"] == [item["id"]]
    assert generation_queue.get_job_ids() == [f"generate-{item['id']}"]


def test_a_dead_workers_job_goes_back_at_the_front_of_the_queue(ctx, people):
    """A job whose worker died is requeued ahead of the backlog: it waited once already, and at the
    back of a long queue (the chaos soak's 1,400 jobs) it ran a minute or more after the sweep."""
    from r2k.core import engine
    from r2k.core.domain import SYSTEM
    from r2k.core.machines.work_item import WORK_ITEM

    items = [workitems.create(ctx, people["sam"], QUESTION) for _ in range(3)]
    generation_queue = jobs.queue(ctx.redis, "generation")
    dead = items[0]["id"]
    ctx.redis.lrem(generation_queue.key, 0, f"generate-{dead}")  # a worker took it, started, and died
    with ctx.db.begin() as tx:
        row = tx.one("SELECT * FROM work_items WHERE id = %s", (dead,))
        engine.apply(tx, WORK_ITEM, row, "generate", SYSTEM)
    assert generation.recover(ctx, stale_after=timedelta(0))["requeued"] == [dead]
    assert generation_queue.get_job_ids() == [f"generate-{dead}"] + [f"generate-{i['id']}" for i in items[1:]]


def test_a_lost_redis_leaves_no_work_item_orphaned(ctx, people, corpus):
    items = [workitems.create(ctx, people["sam"], QUESTION) for _ in range(2)]
    ctx.redis.flushall()
    assert jobs.depth(ctx.redis)["generation"] == 0
    result = r2k_json("--as", "root", "queue", "reconcile")
    assert sorted(result["work_items"]["requeued"]) == [i["id"] for i in items]
    run_worker()
    assert [item_of(ctx, i["id"])["state"] for i in items] == ["READY_FOR_REVIEW"] * 2


def test_reject_then_rework_regenerates_with_the_reason_in_the_prompt(ctx, people, corpus):
    item = workitems.create(ctx, people["sam"], QUESTION)
    generation.generate_answer(ctx, item["id"])
    horn = workitems.show(ctx, item["id"])["generated"][0]["horn_type"]
    candidate = claims.claim_next(ctx, people["root"], horn)
    candidates.reject(ctx, people["root"], candidate["id"], "cite the retention policy")
    assert item_of(ctx, item["id"])["state"] == "NEEDS_REWORK"
    reworked = r2k_json("--as", "sam", "workitems", "rework", str(item["id"]), "--reason", "cite the retention policy")
    assert reworked["state"] == "GENERATING"
    generation.generate_answer(ctx, item["id"])
    shown = workitems.show(ctx, item["id"])
    assert [g["attempt"] for g in shown["generated"]] == [1, 2]
    assert "cite the retention policy" in shown["generated"][1]["prompt"]
    assert shown["state"] == "READY_FOR_REVIEW"


def test_workitem_commands_and_their_errors(ctx, people, corpus):
    created = r2k_json("--as", "sam", "workitems", "create", "--question", QUESTION)
    assert created["state"] == "NEW"
    result = r2k("--as", "sam", "workitems", "rework", str(created["id"]), "--reason", "x")
    assert result.returncode == 5 and "NEW" in error_of(result)["message"]
    assert r2k("--as", "sam", "workitems", "create", "--question", " ").returncode == 6
    assert r2k("--as", "sam", "workitems", "show", "777").returncode == 3
    assert r2k("--as", "sam", "workitems", "list", "--state", "DONE").returncode == 6
    listed = r2k_json("--as", "sam", "workitems", "list", "--state", "new")
    assert [i["id"] for i in listed] == [created["id"]]
    closed = r2k_json("--as", "sam", "workitems", "close", str(created["id"]))
    assert closed["state"] == "CLOSED"
    result = r2k("--as", "sam", "workitems", "generate", str(created["id"]))
    assert result.returncode == 5
    # A validator holds no authority over an item without a Horn type: a 403, which names no state.
    result = r2k("--as", "alice", "workitems", "generate", str(created["id"]))
    assert result.returncode == 7 and "CLOSED" not in error_of(result)["message"]
    with pytest.raises(InvalidInput):
        workitems.get(ctx, "seven")
    with pytest.raises(ValidationStateError):
        workitems.close(ctx, people["sam"], created["id"])


def test_a_duplicate_job_does_not_call_the_llm_while_a_run_is_alive(ctx, people, corpus):
    from r2k.core.services.answering.generation import GENERATION_LOCKS

    item = workitems.create(ctx, people["sam"], QUESTION)
    with ChatServer() as llm:
        live = with_settings(ctx, llm_url=llm.url)
        with live.db.connection() as conn:  # another worker's run holds the item
            conn.execute("SELECT pg_advisory_lock(%s, %s)", (GENERATION_LOCKS, item["id"]))
            assert generation.generate_answer(live, item["id"])["outcome"] == "already being generated"
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (GENERATION_LOCKS, item["id"]))
        assert llm.calls == 0 and item_of(ctx, item["id"])["state"] == "NEW"
        assert generation.generate_answer(live, item["id"])["outcome"] == "generated"
        live.close()


# ----------------------------------------------------------------------------- escalations get an answer to what was asked

DEMO_CORPUS = ROOT / "core" / "demo" / "corpus"


@pytest.fixture
def handbook(ctx, people):
    """The demo's handbook, ingested: its candidates as extraction made them."""
    ingest.ingest(ctx, people["root"], [DEMO_CORPUS])


def escalated(ctx, people, who: str, words: str, horn: str, reason: str) -> tuple[dict, dict]:
    """The candidate of the handbook whose text has `words`, claimed by `who` and escalated with
    `reason`: the candidate and the work item its escalation opened."""
    with ctx.db.read() as tx:
        row = tx.one("SELECT * FROM candidates WHERE text LIKE %s AND horn_type = %s ORDER BY id LIMIT 1",
                     (f"%{words}%", horn))
    claims.claim(ctx, people[who], row["id"])
    return row, candidates.escalate(ctx, people[who], row["id"], reason)["work_item"]


def pending_texts(ctx) -> list[str]:
    with ctx.db.read() as tx:
        return [r["text"] for r in tx.all("SELECT text FROM candidates WHERE origin = 'generated'")]


def test_an_escalated_open_issue_never_comes_back_as_a_fact_with_its_own_text(ctx, people, handbook):
    """The open issue's own passage ("It is not yet decided…") answers nothing: nothing else in the
    handbook settles it, so the work item escalates `no_content`, and no candidate is made."""
    issue, item = escalated(ctx, people, "vera", "telematics units", "OPEN_ISSUE", "needs a decision")
    outcome = generation.generate_answer(ctx, item["id"])
    assert (outcome["outcome"], outcome["reason"]) == ("escalated", "no_content"), outcome
    done = item_of(ctx, item["id"])
    assert (done["state"], done["reason"]) == ("ESCALATED", "no_content")
    assert pending_texts(ctx) == [] and workitems.show(ctx, item["id"])["generated"] == []


def test_an_escalation_that_asks_a_new_question_is_not_answered_with_the_original_text(ctx, people, handbook):
    """The validator asked which version of the WMS is in use: no document says, so `no_content`,
    never the original text with citations added."""
    original, item = escalated(ctx, people, "alice", "Warehouse stock is managed in Quay WMS", "FACT",
                               "Which version of the WMS is in use?")
    outcome = generation.generate_answer(ctx, item["id"])
    assert (outcome["outcome"], outcome["reason"]) == ("escalated", "no_content"), outcome
    assert not any("Warehouse stock is managed" in text for text in pending_texts(ctx))


def test_an_escalation_reason_the_sources_answer_is_answered_from_them(ctx, people, handbook):
    """What the validator asked is answered, from sources other than the candidate's own passage,
    and the generated candidate is classified from its own text."""
    original, item = escalated(ctx, people, "alice", "Warehouse stock is managed in Quay WMS", "FACT",
                               "What availability target do Quay WMS and Convoy TMS have?")
    outcome = generation.generate_answer(ctx, item["id"])
    assert outcome["outcome"] == "generated", outcome
    (gen,) = workitems.show(ctx, item["id"])["generated"]
    assert "99.9 percent" in gen["text"] and "Warehouse stock is managed" not in gen["text"]
    own = original["source_refs"][0]
    assert not any(s.get("document_id") == own["document_id"] and s["span_start"] < own["span"][1]
                   and own["span"][0] < s["span_end"] for s in gen["sources"])  # its own passage is no source
    assert gen["horn_type"] == outcome["horn_type"] == classify(gen["text"])
    assert "Why a validator escalated it: What availability target" in gen["prompt"]


def test_the_work_items_list_shows_the_escalation_reason(ctx, people, handbook):
    _, item = escalated(ctx, people, "alice", "Warehouse stock is managed in Quay WMS", "FACT",
                        "Which version of the WMS is in use?")
    (listed,) = r2k_json("--as", "sam", "workitems", "list")
    assert (listed["reason"], listed["escalation_reason"]) == (None, "Which version of the WMS is in use?")
    header, row = r2k("--as", "sam", "workitems", "list").stdout.splitlines()
    assert "ESCALATION_REASON" in header and "Which version of the WMS is in use?" in row
    generation.generate_answer(ctx, item["id"])
    (listed,) = r2k_json("--as", "sam", "workitems", "list")
    assert (listed["reason"], listed["escalation_reason"]) == ("no_content", "Which version of the WMS is in use?")
