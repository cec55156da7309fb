"""The generation pipeline: retrieve sources, call the LLM behind the shared circuit breaker (or the
built-in extractive generator), store a GeneratedCandidate, classify it and put it PENDING in its
Horn queue. What follows each move (the candidate's queue push, a grey entry for `no_content`, live
notices) is in the reactions table (core/reactions.py).

`generate_answer` is idempotent: the work item's state and the (work item, attempt) unique key
decide what a retried or duplicated job redoes, so a job retried after a crash never makes a
second GeneratedCandidate.
"""
from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.breaker import CircuitBreaker
from ...adapters.embeddings import EmbeddingsError
from ...adapters.llm import ChatClient, Generation, LLMError, build_prompt
from ...domain import SYSTEM, limits
from ...events import now
from ...knowledge.classify import classify
from ...machines.work_item import CIRCUIT_OPEN, LLM_ERROR, NO_CONTENT, WORK_ITEM
from .. import jobs
from ..search.extractive import extractive, grounding, sentences, supports, undecided  # noqa: F401 - grounding: this module's API too
from ..search.retrieval import retrieve
from ..validation import candidates
from . import workitems

if TYPE_CHECKING:
    from ...context import Context

# A GENERATING item untouched this long lost its worker. RQ re-runs a dead worker's job within about
# half a minute (workers/main.py, HEARTBEAT_TTL); the sweep catches the rest (a lost Redis) after a
# minute. A run that is only slow (an LLM taking its time) is not run twice: it holds its lock.
STALE_GENERATING = timedelta(seconds=60)
log = logging.getLogger(__name__)


def breaker(ctx: Context) -> CircuitBreaker:
    s = ctx.settings
    return CircuitBreaker(ctx.redis, s.breaker_threshold, s.breaker_cooldown, probe_timeout=s.llm_timeout * 4)


def breaker_status(ctx: Context) -> dict:
    status = breaker(ctx).status()
    status["url"] = ctx.settings.llm_url or "built-in extractive generator"
    return status


# ----------------------------------------------------------------------------- the task

GENERATION_LOCKS = 72731002  # advisory-lock namespace: one live run per work item


def generate_answer(ctx: Context, work_item_id: int, *, llm: ChatClient | None = None) -> dict:
    """The body of `generate_answer_task`. Returns what happened, for the job's result.

    A duplicate job (RQ may deliver one twice; recovery re-enqueues) must not call the LLM a
    second time while a run is alive. The run holds a session-level advisory lock, which
    PostgreSQL releases by itself when a killed worker's connection drops, so recovery after a
    crash is never blocked by a lock nobody holds.
    """
    with ctx.db.connection() as conn:
        got = conn.execute("SELECT pg_try_advisory_lock(%s, %s) AS got",
                           (GENERATION_LOCKS, int(work_item_id))).fetchone()["got"]
        if not got:
            return {"work_item": work_item_id, "outcome": "already being generated"}
        try:
            return _generate(ctx, int(work_item_id), llm)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (GENERATION_LOCKS, int(work_item_id)))


def _generate(ctx: Context, work_item_id: int, llm: ChatClient | None) -> dict:
    with ctx.db.begin() as tx:
        item = engine.lock(tx, WORK_ITEM, work_item_id)
        if item["state"] == "NEW":
            item = engine.apply(tx, WORK_ITEM, item, "generate", SYSTEM,
                                changes={"attempts": item["attempts"] + 1}).row
        elif item["state"] != "GENERATING":
            return {"work_item": item["id"], "outcome": "nothing to do", "state": item["state"]}
    attempt = item["attempts"]
    question = item["question"]
    rework_reason = item["reason"] if _was_reworked(ctx, item) else None

    # What is asked: the question together with why the validator escalated it. A reason that asks
    # something ("Which version is in use?") must be answered; one that only remarks ("needs the site
    # plan") falls back to the question alone when, with its words, nothing grounds an answer. The
    # escalated candidate's own passage never grounds the answer, nor does a source that only says
    # the matter is undecided (docs/architecture.md, "Retrieval and generation").
    reason = item.get("escalation_reason")
    escalated = _escalated_candidate(ctx, item)
    leave_out = _own_source(escalated)
    asks = [" ".join(part for part in (question, reason) if part)]
    if reason and not undecided(reason):
        asks.append(question)
    for asked in asks:
        sources = grounding(asked, retrieve(ctx, asked, leave_out=leave_out))
        if len(sources) >= 2:
            break
    if len(sources) < 2:
        return _escalate(ctx, item, NO_CONTENT, sources=len(sources))

    prompt = build_prompt(question, sources, rework_reason, item.get("escalation_reason"))
    if ctx.settings.llm_url:
        cb = breaker(ctx)
        decision = cb.allow(f"work_item:{item['id']}")
        if decision == "refuse":
            return _escalate(ctx, item, CIRCUIT_OPEN, sources=len(sources))
        try:
            generation = (llm or ctx.llm).complete(prompt)
        except LLMError as exc:
            cb.record_failure(exc.detail)
            return _escalate(ctx, item, LLM_ERROR.format(detail=exc.detail), sources=len(sources))
        cb.record_success()
    else:
        generation = extractive(asked, sources, meaning=meaning(ctx))

    generation = _storable(generation)
    too_long = limits.too_long("an answer", limits.ANSWER, len(generation.text.strip()))
    if too_long:
        # Cut short, it could read as a whole answer: it goes back to a person instead.
        return _escalate(ctx, item, f"the generated answer is too long: {too_long}", sources=len(sources))
    # Classified from its own text. One that leaves the matter open, says nothing, or gives the
    # escalated candidate's text back answers nothing the sources settle: no content, never a FACT.
    horn = classify(generation.text)
    if horn == "OPEN_ISSUE" or not generation.text.strip() or _echoes(generation.text, escalated):
        return _escalate(ctx, item, NO_CONTENT, sources=len(sources))
    return _store(ctx, item, attempt, prompt, sources, generation, horn)


def _storable(generation: Generation) -> Generation:
    """What a model wrote, as PostgreSQL can store it: no NUL, no lone surrogate, a short model name."""
    return Generation(text=limits.scrub(str(generation.text)),
                      model=limits.clip(limits.scrub(str(generation.model)), 200))


def _was_reworked(ctx: Context, item: dict) -> bool:
    return item["attempts"] > 1 and bool(item["reason"])


def _escalate(ctx: Context, item: dict, reason: str, *, sources: int) -> dict:
    with ctx.db.begin() as tx:
        current = engine.lock(tx, WORK_ITEM, item["id"])
        if current["state"] != "GENERATING" or current["attempts"] != item["attempts"]:
            return {"work_item": item["id"], "outcome": "superseded by another run", "state": current["state"]}
        # A `no_content` escalation opens a grey entry for the question (reactions).
        engine.apply(tx, WORK_ITEM, current, "escalate", SYSTEM, fields={"reason": reason},
                     changes={"reason": reason, "source_count": sources})
    return {"work_item": item["id"], "outcome": "escalated", "reason": reason, "state": "ESCALATED"}


def meaning(ctx: Context):
    """How near in meaning each text is to the question (cosines), by the configured embedder; None
    when it fails (the extractive answer is then composed by the question's words alone)."""
    def near(question: str, texts: list[str]) -> list[float] | None:
        try:
            vectors = ctx.embeddings.embedder.embed([question, *texts])
        except EmbeddingsError as exc:
            log.warning("an answer composed by its words only (the embeddings endpoint: %s)", exc.detail)
            return None
        asked = vectors[0]
        return [sum(a * b for a, b in zip(asked, v)) for v in vectors[1:]]
    return near


def _escalated_candidate(ctx: Context, item: dict) -> dict | None:
    """The candidate whose escalation opened the item (its text and sources), None for one made by hand."""
    if item.get("candidate_id") is None:
        return None
    with ctx.db.read() as tx:
        return tx.one("SELECT id, text, source_refs FROM candidates WHERE id = %s", (item["candidate_id"],))


def _plain(text: str) -> str:
    """Text compared as words: citations ([1]) and case and spacing set aside."""
    return " ".join(re.sub(r"\[\d+\]", " ", text or "").lower().split())


def _own_source(escalated: dict | None):
    """What retrieval leaves out for an escalated candidate: its own passages (the spans of its
    sources, in their documents) and any passage or answer holding its text."""
    if escalated is None:
        return None
    own = _plain(escalated["text"])
    spans = [(r.get("document_id"), r["span"][0], r["span"][1]) for r in escalated.get("source_refs") or []
             if isinstance(r, dict) and r.get("document_id") is not None and len(r.get("span") or []) == 2]

    def leave_out(row: dict) -> bool:
        if row["kind"] == "passage" and any(doc == row["document_id"] and row["span_start"] < end
                                            and start < row["span_end"] for doc, start, end in spans):
            return True
        return bool(own) and own in _plain(row["text"])

    return leave_out


def _echoes(text: str, escalated: dict | None) -> bool:
    """The generated text gives the escalated candidate's own text back: each of its sentences is one
    of the candidate's (citations aside)."""
    if escalated is None:
        return False
    own = _plain(escalated["text"])
    said = [_plain(p) for p in sentences(text)]
    return bool(own) and all(p and p in own for p in said)


def _store(ctx: Context, item: dict, attempt: int, prompt: str, sources: list[dict], generation, horn: str) -> dict:
    refs = [{"document_id": s["document_id"], "title": s["title"], "span": [s["span_start"], s["span_end"]]}
            if s["kind"] == "passage" else {"answer_id": s["id"], "title": s["title"]} for s in sources]
    with ctx.db.begin() as tx:
        current = engine.lock(tx, WORK_ITEM, item["id"])
        if current["state"] != "GENERATING" or current["attempts"] != attempt:
            return {"work_item": item["id"], "outcome": "superseded by another run", "state": current["state"]}
        stored = tx.one("SELECT * FROM generated_candidates WHERE work_item_id = %s AND attempt = %s",
                        (item["id"], attempt))
        if stored is None:
            stored = engine.record(tx, "generated_candidate", "generated_candidates", {
                "work_item_id": item["id"], "attempt": attempt, "state": "PENDING_VALIDATION",
                "text": generation.text, "horn_type": horn, "prompt": prompt, "sources": [
                    {k: v for k, v in s.items() if k != "text"} | {"text": s["text"][:2000]} for s in sources],
                "model": generation.model}, SYSTEM, event_type="generated").row
        current = engine.apply(tx, WORK_ITEM, current, "generated", SYSTEM,
                               changes={"source_count": len(sources)}).row
        current = engine.apply(tx, WORK_ITEM, current, "classify", SYSTEM).row
        # PENDING in its Horn queue: pushed after the commit (reactions).
        candidate = candidates.create_candidate(tx, SYSTEM, item["question"], generation.text, horn, refs,
                                                origin="generated", work_item_id=item["id"])
        engine.update(tx, "generated_candidate", "generated_candidates", stored["id"],
                      {"candidate_id": candidate["id"], "state": "READY_FOR_REVIEW"}, SYSTEM,
                      event_type="classified")
        engine.apply(tx, WORK_ITEM, current, "ready", SYSTEM, changes={"horn_type": horn})
    return {"work_item": item["id"], "outcome": "generated", "candidate": candidate["id"], "horn_type": horn,
            "model": generation.model, "sources": len(sources)}


# ----------------------------------------------------------------------------- recovery

def recover(ctx: Context, *, stale_after: timedelta = STALE_GENERATING) -> dict:
    """Re-enqueue what a lost worker or a lost Redis left behind: every NEW item whose job is not
    waiting in the queue, and GENERATING items untouched for `stale_after` (their job died).
    Generation is idempotent, so a duplicate job for a live run does no harm; a NEW item's job
    still waiting is left alone, or every sweep would queue another behind it while no worker runs."""
    with ctx.db.read() as tx:
        rows = tx.all("SELECT id, state FROM work_items WHERE state = 'NEW' "
                      "OR (state = 'GENERATING' AND updated_at < %s) ORDER BY id", (now() - stale_after,))
    requeued = []
    for row in rows:
        if row["state"] == "NEW" and jobs.waiting(ctx, "generation", workitems.generation_job_id(row["id"])):
            continue
        # A GENERATING item's job died in its worker after waiting its turn once: ahead of the backlog.
        workitems.enqueue_generation(ctx, row["id"], at_front=row["state"] == "GENERATING")
        requeued.append(row["id"])
    return {"requeued": requeued}
