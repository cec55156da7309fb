"""Extraction refined by an LLM (core/services/answering/refine.py): a proposal applied on a real RQ worker
against the test LLM server, the deterministic candidate kept on every kind of failure, nothing at
all without an LLM; and, in the fast tier, the reply's checks alone."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from r2k.core.adapters import jobs
from r2k.core.adapters.redis_queues import queue_key
from r2k.core.config import Settings, get_settings
from r2k.core.errors import InvalidInput, NotFound
from r2k.core.knowledge import proposals
from r2k.core.knowledge.proposals import Asked
from r2k.core.services.answering import generation, refine
from r2k.core.services.documents import ingest
from r2k.core.services.operations import admin
from r2k.core.services.queue import claims
from tests.llm_server import ChatServer
from tests.test_generation import run_worker, with_settings

DOC = """# Site handbook

## Forklift keys

Forklift keys are kept in the office safe overnight.

## Visitors

Visitors must sign in at the reception desk.

## Loading bays

Forklifts must never carry people on the forks.
"""
KEYS = "Forklift keys are kept in the office safe overnight."
STATEMENT = re.compile(r"^\[(\d+)\] (?:\((.*?)\) )?(.*)$", re.MULTILINE)


def statements_of(prompt: str) -> list[tuple[int, str, str]]:
    return [(int(n), heading or "", text) for n, heading, text in STATEMENT.findall(prompt)]


def llm_reply(edit, wrap=lambda entries: {"statements": entries}):
    """A reply function for the test server: `edit` makes each statement's entry."""
    def reply(prompt: str) -> str:
        return json.dumps(wrap([edit(n, heading, text) for n, heading, text in statements_of(prompt)]))
    return reply


def keys_as_rule(n: int, heading: str, text: str) -> dict:
    """The accepted proposal of the tests: the keys statement gets a question and a Horn type of the
    LLM's (RULE: it reads as an instruction), the others stay as extraction made them."""
    if text == KEYS:
        return {"n": n, "question": "Where are forklift keys kept overnight?", "claim": text, "horn_type": "RULE"}
    return {"n": n, "question": QUESTIONS[text], "claim": text, "horn_type": HORNS[text]}


QUESTIONS = {"Visitors must sign in at the reception desk.": "Must visitors sign in at the reception desk?",
             "Forklifts must never carry people on the forks.": "May forklifts carry people on the forks?"}
HORNS = {"Visitors must sign in at the reception desk.": "RULE",
         "Forklifts must never carry people on the forks.": "CONSTRAINT"}
# What extraction makes of DOC, LLM or not (core/knowledge/questions.py, horn.py).
DETERMINISTIC = [("Where are forklift keys kept?", KEYS, "FACT"),
                 *((QUESTIONS[text], text, HORNS[text]) for text in QUESTIONS)]


@pytest.fixture
def llm_context(ctx):
    """Contexts on the same services with an LLM configured (settings overridden); closed after."""
    made = []

    def make(url: str, **overrides):
        made.append(with_settings(ctx, llm_url=url, **overrides))
        return made[-1]

    yield make
    for context in made:
        context.close()


def ingested(context, people, tmp_path, text: str = DOC) -> int:
    (tmp_path / "site.md").write_text(text)
    summary = ingest.ingest(context, people["root"], [tmp_path / "site.md"])
    return summary["document_ids"][0]


def rows(ctx) -> list[dict]:
    with ctx.db.read() as tx:
        return tx.all("SELECT id, state, version, question, text, horn_type, claimed_by, queue_rank "
                      "FROM candidates ORDER BY id")


def refine_events(ctx) -> list[dict]:
    with ctx.db.read() as tx:
        return tx.all("SELECT aggregate_id, actor, payload FROM events WHERE aggregate_type = 'candidate' "
                      "AND type = 'refine' ORDER BY id")


def listed(ctx) -> dict[str, list[int]]:
    return {h: [int(i) for i in ctx.redis.lrange(queue_key(h), 0, -1)] for h in ("FACT", "RULE", "CONSTRAINT")}


def made(found: list[dict]) -> list[tuple]:
    return [(r["question"], r["text"], r["horn_type"]) for r in found]


def claim_all(ctx, actor, horn: str) -> list[int]:
    got = []
    while True:
        try:
            got.append(claims.claim_next(ctx, actor, horn)["id"])
        except NotFound:
            return got


# ----------------------------------------------------------------------------- a proposal applied

def test_a_proposal_is_applied_on_a_worker_and_the_candidate_moves_to_its_new_queue(ctx, people, llm_context, tmp_path):
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        document = ingested(llm_context(llm.url), people, tmp_path)
        assert jobs.job(ctx.redis, refine.job_id(document)).func_name == jobs.TASKS["refine_candidates_task"]
        before = rows(ctx)
        assert made(before) == DETERMINISTIC  # ingest's own output, as without an LLM
        assert listed(ctx) == {"FACT": [1], "RULE": [2], "CONSTRAINT": [3]}
        assert llm.calls == 0  # nothing asked inside `ingest`: the worker asks
        run_worker({"R2K_LLM_URL": llm.url})
        assert llm.calls == 1  # the document's three statements in one prompt
        assert [text for _, _, text in statements_of(llm.prompts[0])] == [r["text"] for r in before]
        assert "[1] (Forklift keys) Forklift keys are kept" in llm.prompts[0]
    after = rows(ctx)
    keys = after[0]
    assert (keys["question"], keys["text"], keys["horn_type"], keys["state"]) == (
        "Where are forklift keys kept overnight?", KEYS, "RULE", "PENDING")
    assert keys["version"] == before[0]["version"] + 1
    assert after[1:] == before[1:]  # the same proposal as extraction's: nothing moved
    (event,) = refine_events(ctx)
    assert (event["aggregate_id"], event["actor"]) == ("1", "system")
    assert event["payload"]["from"] == event["payload"]["to"] == "PENDING"
    assert event["payload"]["fields"]["before"] == {"question": before[0]["question"], "text": KEYS, "horn_type": "FACT"}
    assert event["payload"]["fields"]["model"] == "test-model-1"
    assert event["payload"]["set"]["horn_type"] == "RULE"
    # Out of the FACT list, at the tail of RULE's, and claimed once.
    assert listed(ctx) == {"FACT": [], "RULE": [2, 1], "CONSTRAINT": [3]}
    assert claim_all(ctx, people["bob"], "FACT") == []
    assert claim_all(ctx, people["alice"], "RULE") == [2, 1]
    assert rows(ctx)[0]["claimed_by"] == "alice"
    assert admin.replay(ctx)["ok"]  # the row is what its events say


def test_a_queue_rebuilt_after_a_refinement_keeps_it_in_its_new_queue_once(ctx, people, llm_context, tmp_path):
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path)
        assert refine.refine_document(context, document)["refined"] == 1
    from r2k.core.services.queue import queue_index

    queue_index.reconcile(ctx)
    assert listed(ctx) == {"FACT": [], "RULE": [2, 1], "CONSTRAINT": [3]}
    assert claim_all(ctx, people["alice"], "RULE") == [2, 1]


def test_an_id_in_flight_in_the_old_queue_when_the_proposal_lands_is_dropped_and_taken_once(
        ctx, people, llm_context, tmp_path):
    """A claimer pops the keys candidate from FACT and dies before its claim; the refinement commits
    meanwhile; the sweep returns the id to FACT's head, where bob's claim finds the row moved on and
    drops it: it is claimed once, from RULE."""
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path)
        q = ctx.validation_queue
        assert q.pop("FACT").candidate_id == 1
        assert refine.refine_document(context, document)["refined"] == 1
    assert listed(ctx) == {"FACT": [], "RULE": [2, 1], "CONSTRAINT": [3]}
    assert q.rescue("FACT", 0) == [1]
    assert claim_all(ctx, people["bob"], "FACT") == []  # the stale FACT id is dropped, not claimed
    assert claim_all(ctx, people["alice"], "RULE") == [2, 1]
    assert rows(ctx)[0]["state"] == "IN_REVIEW"


# ----------------------------------------------------------------------------- the fallbacks

def keep_all(ctx, result: dict, reason: str, count: int, before: list[dict], lists: dict) -> None:
    assert result["kept"] == {reason: count}, result
    assert result["refined"] == 0
    assert rows(ctx) == before
    assert refine_events(ctx) == []
    assert listed(ctx) == lists


@pytest.mark.parametrize("reply, reason", [
    ("Sure! Here are the questions you asked for.", "invalid_json"),
    ('{"statements": [1, 2, 3]', "invalid_json"),
    (llm_reply(lambda n, h, t: {**keys_as_rule(n, h, t), "horn_type": "HEURISTIC"}), "schema"),
    (llm_reply(lambda n, h, t: {**keys_as_rule(n, h, t), "confidence": 0.9}), "schema"),
    (llm_reply(lambda n, h, t: {**keys_as_rule(n, h, t), "question": "   "}), "schema"),
    (llm_reply(lambda n, h, t: {**keys_as_rule(n, h, t), "question": "Where " + "is it " * 60 + "?"}), "schema"),
    (llm_reply(keys_as_rule, wrap=lambda entries: {"statements": entries[:2]}), "schema"),
], ids=["prose", "truncated", "unknown-horn-type", "extra-key", "empty-question", "over-long-question", "wrong-count"])
def test_a_reply_that_is_no_valid_proposal_keeps_every_deterministic_candidate(
        ctx, people, llm_context, tmp_path, reply, reason):
    with ChatServer(reply=reply) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path)
        before, lists = rows(ctx), listed(ctx)
        result = refine.refine_document(context, document)
        assert llm.calls == 1
    keep_all(ctx, result, reason, 3, before, lists)
    assert generation.breaker(ctx).status()["state"] == "closed"  # the endpoint answered: no outage


def test_an_http_error_keeps_the_candidates_and_counts_towards_the_breaker(ctx, people, llm_context, tmp_path):
    with ChatServer(mode="error") as llm:
        context = llm_context(llm.url, llm_retries=0)
        document = ingested(context, people, tmp_path)
        before, lists = rows(ctx), listed(ctx)
        result = refine.refine_document(context, document)
        assert llm.calls == 1
    keep_all(ctx, result, "llm_error", 3, before, lists)
    assert generation.breaker(ctx).status()["failures"] == 1


def test_an_llm_that_hangs_past_the_timeout_keeps_the_candidates(ctx, people, llm_context, tmp_path):
    with ChatServer(mode="hang") as llm:
        context = llm_context(llm.url, llm_timeout=0.5, llm_retries=0)
        document = ingested(context, people, tmp_path)
        before, lists = rows(ctx), listed(ctx)
        result = refine.refine_document(context, document)
    keep_all(ctx, result, "llm_error", 3, before, lists)
    assert generation.breaker(ctx).status()["last_error"] == "timeout"


def test_an_open_breaker_keeps_the_candidates_without_a_call(ctx, people, llm_context, tmp_path):
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        context = llm_context(llm.url, breaker_threshold=1, breaker_cooldown=3600)
        document = ingested(context, people, tmp_path)
        generation.breaker(context).record_failure("down earlier")
        before, lists = rows(ctx), listed(ctx)
        result = refine.refine_document(context, document)
        assert llm.calls == 0
    keep_all(ctx, result, "circuit_open", 3, before, lists)


def test_an_unsupported_claim_keeps_its_candidate_and_the_others_are_refined(ctx, people, llm_context, tmp_path):
    def invents(n, heading, text):
        entry = keys_as_rule(n, heading, text)
        if text == KEYS:  # a number and a place the statement never says
            return {**entry, "claim": "Forklift keys are kept in safe 4 at the gatehouse."}
        if "never" in text:  # the prohibition's "never" dropped: an order, not the statement
            return {**entry, "claim": "Forklifts must carry people on the forks.", "question": "Must forklifts carry people?"}
        return {**entry, "question": "Where do visitors sign in?"}

    with ChatServer(reply=llm_reply(invents)) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path)
        before, lists = rows(ctx), listed(ctx)
        result = refine.refine_document(context, document)
    assert (result["kept"], result["refined"]) == ({"unsupported": 2}, 1)
    after = rows(ctx)
    assert after[0] == before[0] and after[2] == before[2]
    assert after[1]["question"] == "Where do visitors sign in?"
    assert [e["aggregate_id"] for e in refine_events(ctx)] == ["2"]
    assert listed(ctx) == lists  # no Horn type changed


def test_two_statements_never_get_one_question(ctx, people, llm_context, tmp_path):
    """A question another candidate of the document asks now (the keys one's, offered to the forklift
    prohibition), or one proposed for two statements saying different things (both visitors' rules):
    the first keeps it, the other keeps its own."""
    vest = "Visitors must wear a high-visibility vest in the yard."
    shared = "What must visitors do on site?"

    def one_question(n, heading, text):
        if text == KEYS:  # its own question kept, a Horn type of the LLM's
            return {"n": n, "question": DETERMINISTIC[0][0], "claim": text, "horn_type": "RULE"}
        if "never" in text:
            return {"n": n, "question": DETERMINISTIC[0][0], "claim": text, "horn_type": "CONSTRAINT"}
        return {"n": n, "question": shared, "claim": text, "horn_type": "RULE"}

    with ChatServer(reply=llm_reply(one_question)) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path, DOC + f"\n## Yard\n\n{vest}\n")
        before = rows(ctx)
        assert before[3]["text"] == vest
        result = refine.refine_document(context, document)
    assert (result["refined"], result["kept"]) == (2, {"unsupported": 2})
    after = rows(ctx)
    assert [r["question"] for r in after] == [before[0]["question"], shared, before[2]["question"], before[3]["question"]]
    assert after[0]["horn_type"] == "RULE" and after[2:] == before[2:]


def test_a_candidate_claimed_while_the_llm_thinks_is_left_to_its_validator(ctx, people, llm_context, tmp_path):
    """The claim lands between the statements' read and the proposal's arrival: the claim wins."""
    claimed = {}

    def claim_first(prompt: str) -> str:
        claimed.update(claims.claim(ctx, people["bob"], 1))  # bob takes the keys candidate meanwhile
        return llm_reply(keys_as_rule)(prompt)

    with ChatServer(reply=claim_first) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path)
        before = rows(ctx)
        result = refine.refine_document(context, document)
        assert llm.calls == 1
    assert result["kept"] == {"moved": 1}
    keys = rows(ctx)[0]
    assert (keys["state"], keys["claimed_by"], keys["version"]) == ("IN_REVIEW", "bob", claimed["version"])
    assert (keys["question"], keys["text"], keys["horn_type"]) == (before[0]["question"], KEYS, "FACT")
    assert refine_events(ctx) == []
    assert listed(ctx)["RULE"] == [2] and 1 not in listed(ctx)["FACT"]


def test_a_candidate_a_validator_has_reviewed_under_overlap_keeps_the_words_they_judged(
        ctx, people, llm_context, tmp_path):
    from r2k.core.services.validation import candidates, overlap

    overlap.configure(ctx, people["root"], "FACT", 2)  # two blind reviews per FACT candidate
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path)
        reviewed = claims.claim_next(ctx, people["bob"], "FACT")
        candidates.decide(ctx, people["bob"], reviewed["id"], "approve")  # one review of two: back in the queue
        before = rows(ctx)
        assert before[0]["state"] == "PENDING" and before[0]["claimed_by"] is None
        result = refine.refine_document(context, document)
    assert [t for _, _, t in statements_of(llm.prompts[0])] == list(QUESTIONS)  # the keys statement not asked
    assert result["refined"] == 0 and refine_events(ctx) == []
    assert rows(ctx)[0] == before[0]


def test_a_second_run_asks_nothing_for_a_refined_candidate(ctx, people, llm_context, tmp_path):
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        context = llm_context(llm.url)
        document = ingested(context, people, tmp_path)
        assert refine.refine_document(context, document)["refined"] == 1
        again = refine.refine_document(context, document)  # a retried job
        assert [t for _, _, t in statements_of(llm.prompts[1])] == list(QUESTIONS)
    assert (again["refined"], again["same"]) == (0, 2)
    assert len(refine_events(ctx)) == 1


def test_a_job_past_its_budget_leaves_the_rest_of_the_document_to_a_job_of_its_own(ctx, people, llm_context, tmp_path):
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        context = llm_context(llm.url, llm_extraction_batch=1)
        document = ingested(context, people, tmp_path)
        first = refine.refine_document(context, document, budget=0)  # one batch, then the budget is gone
        assert (first["asked"], first["refined"], first["continued"]) == (1, 1, 1)
        job = jobs.job(ctx.redis, refine.job_id(document, 1))
        assert (job.func_name, job.args) == (jobs.TASKS["refine_candidates_task"], [document, 1])
        rest = refine.refine_document(context, document, *job.args[1:])  # what the worker runs
        assert (rest["asked"], rest["same"], "continued" in rest) == (2, 2, False)
        assert [t for p in llm.prompts for _, _, t in statements_of(p)] == [KEYS, *QUESTIONS]
    assert len(refine_events(ctx)) == 1


# ----------------------------------------------------------------------------- no LLM

def test_without_an_llm_nothing_is_enqueued_and_ingest_is_as_ever(ctx, people, tmp_path):
    summary = ingest.ingest(ctx, people["root"], [_write(tmp_path, DOC)])
    assert summary["candidates"] == {"FACT": 1, "RULE": 1, "CONSTRAINT": 1, "PROCEDURE": 0, "OPEN_ISSUE": 0}
    assert made(rows(ctx)) == DETERMINISTIC
    assert jobs.depth(ctx.redis)["generation"] == 0
    assert refine.refine_document(ctx, summary["document_ids"][0])["outcome"] == "no LLM configured"
    assert refine_events(ctx) == []


def test_with_extraction_off_an_llm_refines_nothing(ctx, people, llm_context, tmp_path):
    with ChatServer(reply=llm_reply(keys_as_rule)) as llm:
        off = llm_context(llm.url, llm_extraction=False)
        document = ingested(off, people, tmp_path)
        assert jobs.depth(ctx.redis)["generation"] == 0
        assert refine.refine_document(off, document)["outcome"] == "no LLM configured"
        assert llm.calls == 0
    assert made(rows(ctx)) == DETERMINISTIC


def _write(folder, text: str):
    (folder / "site.md").write_text(text)
    return folder / "site.md"


# ----------------------------------------------------------------------------- the checks alone (fast)

ASKED = [Asked(1, KEYS, "Site handbook › Forklift keys"),
         Asked(2, "Visitors must sign in at the reception desk.", "Site handbook › Visitors")]


def reply_of(*entries: dict, **extra) -> str:
    return json.dumps({"statements": list(entries), **extra})


GOOD = ({"n": 1, "question": "Where are forklift keys kept overnight?", "claim": KEYS, "horn_type": "RULE"},
        {"n": 2, "question": "Where do visitors sign in?", "claim": "Visitors must sign in at reception.",
         "horn_type": "RULE"})


def test_a_valid_reply_gives_each_candidate_its_proposal():
    got = refine.check_reply(reply_of(*GOOD), ASKED)
    assert got == {1: {"question": "Where are forklift keys kept overnight?", "claim": KEYS, "horn_type": "RULE",
                       "why_not": None},
                   2: {"question": "Where do visitors sign in?", "claim": "Visitors must sign in at reception.",
                       "horn_type": "RULE", "why_not": None}}
    fenced = "```json\n" + reply_of(*reversed(GOOD)) + "\n```"  # in any order, in a fence
    assert refine.check_reply(fenced, ASKED) == got


@pytest.mark.parametrize("reply, reason, says", [
    ("Here you go: " + reply_of(*GOOD), "invalid_json", "Expecting value"),
    (reply_of(*GOOD) + reply_of(*GOOD), "invalid_json", "Extra data"),
    ('{"statements": [{"n": NaN}]}', "invalid_json", "NaN is not JSON"),
    ("[]", "schema", "is not of type 'object'"),
    (reply_of(*GOOD, note="x"), "schema", "Additional properties"),
    (reply_of({**GOOD[0], "horn_type": "fact"}, GOOD[1]), "schema", "statements[0].horn_type"),
    (reply_of({**GOOD[0], "why": "because"}, GOOD[1]), "schema", "Additional properties"),
    (reply_of({**GOOD[0], "claim": " \n "}, GOOD[1]), "schema", "statements[0].claim: must not be blank"),
    (reply_of({**GOOD[0], "question": "Where are the keys kept."}, GOOD[1]), "schema", "question: must end with a question mark"),
    (reply_of({**GOOD[0], "question": "W" * 300 + "?"}, GOOD[1]), "schema", "longer than 300 characters"),
    (reply_of({k: v for k, v in GOOD[0].items() if k != "claim"}, GOOD[1]), "schema", "'claim' is a required"),
    (reply_of(GOOD[0]), "schema", "2 statement(s) asked"),
    (reply_of(GOOD[0], {**GOOD[1], "n": 1}), "schema", "numbers [1, 1]"),
    (reply_of(GOOD[0], {**GOOD[1], "n": 3}), "schema", "numbers [1, 3]"),
    (reply_of(GOOD[0], {**GOOD[1], "n": "2"}), "schema", "is not of type 'integer'"),
])
def test_a_reply_that_breaks_the_schema_is_rejected_whole_with_why(reply, reason, says):
    with pytest.raises(refine.Rejected) as caught:
        refine.check_reply(reply, ASKED)
    assert caught.value.reason == reason and says in caught.value.detail, caught.value.detail


@pytest.mark.parametrize("question, claim, says", [
    ("Where are forklift keys kept?", "Forklift keys are kept in safe 4.", "words the statement does not: 4"),
    ("Where are forklift keys kept?", "Forklift keys are locked in the office safe.", "locked"),
    ("Where are forklift keys kept?", "Forklift keys are never kept in the office safe.", "negations"),
    ("Why?", KEYS, "shares no word"),
])
def test_a_claim_or_question_the_statement_does_not_support_is_refused(question, claim, says):
    entries = ({"n": 1, "question": question, "claim": claim, "horn_type": "FACT"}, GOOD[1])
    got = refine.check_reply(reply_of(*entries), ASKED)
    assert says in (got[1]["why_not"] or "") and got[2]["why_not"] is None


def test_support_allows_the_statements_words_and_its_heading_reworded():
    statement = "Forklifts must never carry people on the forks."
    assert proposals.unsupported("Forklifts never carry a person on their forks.", statement) == ["person"]
    assert proposals.unsupported("Loading bay forklifts must never carry people.", statement, "Loading bays") == []
    assert proposals.unsupported("Never people on a forklift's forks.", statement) == []  # a plural "s" aside
    assert proposals.negations("Forklifts can't carry people; never on the forks.") == 2
    assert proposals.why_not("Can forklifts carry people?", "Forklifts must carry people.", statement) == \
        "the claim does not keep the statement's negations"


def test_the_prompt_numbers_each_statement_with_its_heading_on_one_line():
    text = proposals.prompt("Site\nhandbook", [Asked(7, "Line one\nline two.", "A › B"), Asked(8, "Plain.")])
    assert text.splitlines() == ["Document: Site handbook", "", "Statements:", "[1] (A › B) Line one line two.",
                                 "[2] Plain.", "", "Reply with the JSON object for these 2 statements."]
    assert statements_of(text) == [(1, "A › B", "Line one line two."), (2, "", "Plain.")]


@pytest.mark.parametrize("name, value, says", [
    ("R2K_LLM_EXTRACTION", "maybe", "R2K_LLM_EXTRACTION is true or false"),
    ("R2K_EMBEDDED_TCP", "sometimes", "R2K_EMBEDDED_TCP is true or false"),
    ("R2K_LLM_EXTRACTION_BATCH", "0", "R2K_LLM_EXTRACTION_BATCH is a whole number of statements, 1–50"),
    ("R2K_LLM_EXTRACTION_BATCH", "51", "1–50; got '51'"),
])
def test_extraction_settings_out_of_range_are_refused_in_one_line(monkeypatch, name, value, says):
    monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        with pytest.raises(InvalidInput) as caught:
            get_settings()
    finally:
        monkeypatch.delenv(name)
        get_settings.cache_clear()
    assert says in caught.value.message and "\n" not in caught.value.message


def test_extraction_by_llm_is_on_by_default_and_batches_eight_statements():
    defaults = Settings.model_fields
    assert (defaults["llm_extraction"].default, defaults["llm_extraction_batch"].default) == (True, 8)


PURE = settings(max_examples=200, deadline=None, derandomize=True, database=None)
STATEMENTS = [KEYS, "Visitors must sign in at the reception desk.", "Forklifts must never carry people on the forks.",
              "Backups are kept for 30 days in region eu-2."]


@PURE
@given(which=st.sampled_from(STATEMENTS), data=st.data())
def test_a_claim_of_the_statements_own_words_in_any_order_is_supported(which, data):
    words = re.findall(r"[\w-]+", which)
    picked = data.draw(st.lists(st.sampled_from(words), min_size=1, max_size=12), label="words")
    claim = " ".join(w for w in picked if w.lower() not in ("never", "not"))
    if "never" in which:
        claim += " never"
    assert proposals.unsupported(claim, which) == []
    assert proposals.why_not(f"What about {words[0]}?", claim, which) is None


@PURE
@given(which=st.sampled_from(STATEMENTS), number=st.integers(min_value=31, max_value=10**6),
       at=st.integers(min_value=0, max_value=20))
def test_a_claim_with_a_number_the_statement_lacks_is_not_supported(which, number, at):
    words = which.split()
    claim = " ".join([*words[:at], str(number), *words[at:]])
    assert proposals.unsupported(claim, which) == [str(number)]
    assert "words the statement does not" in proposals.why_not(f"What about {words[0]}?", claim, which)
