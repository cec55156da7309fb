"""Conflicts: approved answers that contradict each other, found by meaning and turned into disputes
(docs/architecture.md, "Conflicts").

- An answer's subjects (core/knowledge/subjects.py) are written beside it when it is published (a reaction),
  in PostgreSQL, the truth; the graph mirrors them as Subject nodes.
- `detect(ctx, answer_id)` (RQ `detect_contradictions_task`, enqueued after each publish) compares
  an APPROVED answer with the other APPROVED answers sharing a subject: the rules of
  core/knowledge/contradictions.py, then, when an LLM is configured, the LLM as judge of the pairs the rules
  left, through the shared circuit breaker. A pair is flagged once however often detection runs
  (one row per pair); a pair whose texts were dismissed together is not flagged again unless one
  of the texts changes (their SHA-256 is kept on the flag).
- `escalate` makes both answers DISPUTED (their candidates go to the head of their queues for
  re-review, by the answer's own dispute reaction); `dismiss` needs a reason. Settling the dispute
  closes the flag: once neither answer is DISPUTED any more (each superseded or retired by its
  re-review), or when an answer of an open flag is superseded or retired anyway.
- `neighbours(ctx, answer_id)`: an answer's neighbourhood in the graph, for the registry detail.
"""
from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

from psycopg.types.json import Jsonb

from ... import engine
from ...adapters.breaker import CircuitBreaker
from ...adapters.graph import GraphUnavailable
from ...adapters.llm import LLMError
from ...adapters.postgres import Tx, public_row
from ...domain import SYSTEM, Actor, limits
from ...engine import Event
from ...errors import ServiceUnavailable, ValidationStateError
from ...knowledge.contradictions import Finding, compare
from ...knowledge.subjects import subjects_of
from ...machines.answer import ANSWER
from ...machines.conflict import CONFLICT, SOURCE_CHANGED
from ..common import event_history, fetch, parse_id, refusal, status_filter
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...context import Context

log = logging.getLogger(__name__)

STATUSES = ("OPEN", "ESCALATED", "DISMISSED", "CLOSED")
# Answers compared by meaning besides those sharing a subject: the nearest, if at least this alike
# (cosine). Two answers contradicting each other in their own words share few of them: with the shipped
# model their cosine was 0.26 to 0.62 on the real pairs sharing no subject (bench/contradictions.py
# prints it), each among the other's 12 nearest, while nine in ten unrelated answers are below 0.21.
# 0.75 met none of them. The rules keep precision; the 20 nearest bound the cost.
NEAREST_COMPARED = 20
NEAR_MEANING = 0.25
MAX_COMPARED = 200   # answers compared per detection (those sharing the most subjects first)
MAX_JUDGED = 5       # pairs the LLM judges per detection


def text_hash(text: str) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- reactions (core/reactions.py)

def record_subjects(tx: Tx, event: Event) -> None:
    """An answer was published: its subjects are written beside it, in the same transaction."""
    answer = event.row
    rows = [(answer["id"], subject[:200], rank)
            for rank, subject in enumerate(subjects_of(answer["question"], answer["text"]))]
    if rows:
        tx.execute("INSERT INTO answer_subjects (answer_id, subject, rank) SELECT * FROM unnest("
                   "%s::bigint[], %s::text[], %s::smallint[]) ON CONFLICT DO NOTHING",
                   ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))


def settle_with_answer(tx: Tx, event: Event) -> dict | None:
    """An answer was superseded or retired: its flags close once the dispute is settled, i.e. when
    neither of a flag's answers is still DISPUTED (an escalated flag waits for both re-reviews), and
    at once for a flag still OPEN (its answer is no longer current)."""
    answer_id = event.aggregate_id
    flags = tx.all("SELECT f.*, a.status AS a_status, b.status AS b_status FROM conflict_flags f "
                   "JOIN approved_answers a ON a.id = f.answer_id LEFT JOIN approved_answers b ON b.id = f.other_answer_id "
                   "WHERE (f.answer_id = %s OR f.other_answer_id = %s) AND f.status IN ('OPEN', 'ESCALATED') "
                   "ORDER BY f.id FOR UPDATE OF f", (answer_id, answer_id))
    closed = []
    for flag in flags:
        statuses = (flag.pop("a_status"), flag.pop("b_status"))
        if flag["status"] == "ESCALATED" and "DISPUTED" in statuses:
            continue
        how = "superseded" if event.action == "supersede" else "retired"
        reason = (f"dispute settled: answer {answer_id} was {how}" if flag["status"] == "ESCALATED"
                  else f"answer {answer_id} was {how}")
        row = engine.lock(tx, CONFLICT, flag["id"])
        closed.append(engine.apply(tx, CONFLICT, row, "close", SYSTEM, fields={"reason": reason},
                                   changes={"reason": reason}).row["id"])
    return {"closed_flags": closed} if closed else None


def answers_of(flag: dict) -> list[int]:
    """The answers a flag names: two that contradict each other, or one whose source changed."""
    return [a for a in (flag["answer_id"], flag["other_answer_id"]) if a is not None]


def dispute_answers(tx: Tx, event: Event) -> dict:
    """A flag was escalated: its answers (both of a pair, the one whose source changed) become
    DISPUTED (an answer already DISPUTED stays so), as the system's conflict detection; each
    answer's dispute reaction sends its candidate to the head of its queue for re-review."""
    flag = event.row
    why = f"conflict {flag['id']}: {flag['detail']}"
    if event.fields.get("reason"):
        why += f" ({event.fields['reason']})"
    why = why[:limits.REASON]
    disputed = []
    for answer_id in answers_of(flag):
        answer = engine.lock(tx, ANSWER, answer_id)
        if answer["status"] == "APPROVED":
            engine.apply(tx, ANSWER, answer, "dispute", SYSTEM, fields={"reason": why, "conflict": flag["id"],
                                                                      "escalated_by": event.actor.name},
                         changes={"reason": why})
            disputed.append(answer_id)
    return {"disputed": disputed}


# ----------------------------------------------------------------------------- detection

def _subjects(tx: Tx, answer: dict) -> list[str]:
    rows = tx.all("SELECT subject FROM answer_subjects WHERE answer_id = %s ORDER BY rank", (answer["id"],))
    return [r["subject"] for r in rows]


def _near_in_meaning(ctx: Context, tx: Tx, me: dict, seen: set[int], subjects: list[str]) -> list[dict]:
    """The APPROVED answers nearest in meaning to `me` (its vector against theirs, through the HNSW
    index), at least NEAR_MEANING alike, that share no subject with it: an answer worded otherwise
    ("the server's default port is 5433") is compared too. None without pgvector or a vector."""
    recorded = ctx.embeddings.recorded(tx) if ctx.embeddings is not None else None
    if recorded is None or recorded.dimension is None:
        return []
    d = int(recorded.dimension)
    rows = tx.all(
        f"WITH mine AS (SELECT embedding::vector({d}) AS v FROM answer_vectors WHERE answer_id = %s), "
        f"near AS (SELECT n.answer_id, n.embedding::vector({d}) <=> mine.v AS distance FROM answer_vectors n, mine "
        f"         WHERE n.answer_id <> %s ORDER BY n.embedding::vector({d}) <=> mine.v LIMIT %s) "
        "SELECT a.id, a.question, a.text, a.horn_type, 1 - near.distance AS similarity FROM near "
        "JOIN approved_answers a ON a.id = near.answer_id AND a.status = 'APPROVED' "
        "WHERE 1 - near.distance >= %s ORDER BY near.distance, a.id",
        (me["id"], me["id"], NEAREST_COMPARED, NEAR_MEANING))
    subject = (subjects or ["meaning"])[0]
    return [{**{k: r[k] for k in ("id", "question", "text", "horn_type")}, "shared": [subject]}
            for r in rows if r["id"] not in seen]


def _judge(ctx: Context, pairs: list[tuple[dict, dict]]) -> dict[tuple[int, int], Finding]:
    """The LLM's verdict on pairs the rules left, through the shared breaker; nothing when the
    breaker is open or the LLM fails (the rules' flags stand either way)."""
    if not ctx.settings.llm_url or not pairs:
        return {}

    s = ctx.settings
    breaker = CircuitBreaker(ctx.redis, s.breaker_threshold, s.breaker_cooldown, probe_timeout=s.llm_timeout * 4)
    found: dict[tuple[int, int], Finding] = {}
    for first, second in pairs[:MAX_JUDGED]:
        if breaker.allow("conflicts") == "refuse":
            break
        prompt = ("Do these two statements from a company handbook contradict each other (both cannot be "
                  "true at once)? Reply with one line: 'CONTRADICTS: <the words that disagree>' or "
                  f"'CONSISTENT'.\n\nStatement 1: {first['text'][:1500]}\nStatement 2: {second['text'][:1500]}")
        try:
            reply = ctx.llm.complete(prompt).text.strip()
        except LLMError as exc:
            breaker.record_failure(exc.detail)
            continue
        breaker.record_success()
        head = reply.splitlines()[0] if reply else ""
        if head.upper().startswith("CONTRADICT"):
            said = (head.split(":", 1)[1].strip() if ":" in head else "") or "the LLM judged them contradictory"
            named = [w.strip(" '\"") for w in said.split(" vs ")] if " vs " in said else []
            found[(first["id"], second["id"])] = Finding(  # the words it named, where each text has them
                "judged", said[:200], tuple(w for w in named if w and w in first["text"]),
                tuple(w for w in named if w and w in second["text"]))
    return found


def detect(ctx: Context, answer_id) -> dict:
    """Compare an APPROVED answer with the other APPROVED answers that share a subject with it, and
    flag each contradicting pair once. Returns the flags opened and how many answers were compared."""
    answer_id = parse_id(answer_id, "answer")
    with ctx.db.read() as tx:
        me = tx.one("SELECT id, question, text, status, horn_type FROM approved_answers WHERE id = %s", (answer_id,))
        if me is None or me["status"] != "APPROVED":
            return {"answer": answer_id, "flags": [], "compared": 0}
        subjects = _subjects(tx, me) or subjects_of(me["question"], me["text"])
        others = tx.all(
            "SELECT a.id, a.question, a.text, a.horn_type, array_agg(s.subject ORDER BY s.rank) AS shared "
            "FROM answer_subjects s JOIN approved_answers a ON a.id = s.answer_id "
            "WHERE s.subject = ANY(%s) AND a.id <> %s AND a.status = 'APPROVED' "
            "GROUP BY a.id ORDER BY count(*) DESC, a.id LIMIT %s", (subjects, answer_id, MAX_COMPARED))
        others += _near_in_meaning(ctx, tx, me, {r["id"] for r in others}, subjects)
        known = {(r["answer_id"], r["other_answer_id"]) for r in tx.all(
            "SELECT answer_id, other_answer_id FROM conflict_flags WHERE answer_id = %s OR other_answer_id = %s",
            (answer_id, answer_id))}
        my_hash = text_hash(me["text"])
        dismissed = {(r["answer_hash"], r["other_hash"]) for r in tx.all(
            "SELECT answer_hash, other_hash FROM conflict_flags WHERE status = 'DISMISSED' "
            "AND (answer_hash = %s OR other_hash = %s)", (my_hash, my_hash))}
    flagged: list[int | None] = []  # None: flagged meanwhile, or an answer no longer APPROVED
    left: list[tuple[dict, dict, str]] = []  # pairs the rules found consistent, for the LLM
    for other in others:
        first, second = sorted((me, other), key=lambda r: r["id"])  # one pair, one wording
        if (first["id"], second["id"]) in known:
            continue
        hashes = (text_hash(first["text"]), text_hash(second["text"]))
        if hashes in dismissed or hashes[::-1] in dismissed:
            continue  # these very texts were judged consistent by a person
        finding = compare(first["text"], second["text"])
        if finding:  # flagged at once: a slow or failing LLM after this never holds the rules' flags back
            flagged.append(_open(ctx, first, second, other["shared"][0], finding))
        else:
            left.append((first, second, other["shared"][0]))
    judged = _judge(ctx, [(first, second) for first, second, _ in left])
    flagged += [_open(ctx, first, second, subject, judged[(first["id"], second["id"])])
                for first, second, subject in left if (first["id"], second["id"]) in judged]
    flagged = [flag for flag in flagged if flag is not None]
    return {"answer": answer_id, "flags": flagged, "compared": len(others)}


def _open(ctx: Context, first: dict, second: dict, subject: str, finding: Finding) -> int | None:
    with ctx.db.begin() as tx:
        # one detection at a time per pair: the second waits, then sees the first one's flag
        tx.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"conflict:{first['id']}:{second['id']}",))
        if tx.one("SELECT 1 FROM conflict_flags WHERE answer_id = %s AND other_answer_id = %s",
                  (first["id"], second["id"])):
            return None
        current = tx.all("SELECT id FROM approved_answers WHERE id = ANY(%s) AND status = 'APPROVED'",
                         ([first["id"], second["id"]],))
        if len(current) != 2:
            return None
        return engine.create(tx, CONFLICT, SYSTEM, {
            "answer_id": first["id"], "other_answer_id": second["id"], "subject": subject[:200],
            "detail": finding.detail[:500], "kind": finding.kind,
            "judge": "llm" if finding.kind == "judged" else "rules",
            "highlights": Jsonb({"answer": list(finding.words_a), "other": list(finding.words_b)}),
            "horn_types": sorted({first["horn_type"], second["horn_type"]}),
            "answer_hash": text_hash(first["text"]), "other_hash": text_hash(second["text"])},
            action="detect").row["id"]


# ----------------------------------------------------------------------------- a source that changed

def flag_source_changed(tx: Tx, changed: dict[int, str | None], document: dict) -> list[int]:
    """A document ingested again no longer states what some candidates stated (`changed`: candidate
    id -> the statement as it now reads, or None when it is gone): each current answer published
    from them (the newest of its supersede chain, APPROVED or DISPUTED) gets a flag of kind
    `source_changed` naming it, for re-review; one already flagged so and still open is left as it
    is. The flags opened, in the caller's transaction."""
    if not changed:
        return []
    answers = tx.all(
        "WITH RECURSIVE chain AS (SELECT id, candidate_id AS origin FROM approved_answers WHERE candidate_id = ANY(%s) "
        "UNION SELECT n.id, c.origin FROM approved_answers n JOIN chain c ON n.supersedes_id = c.id) "
        "SELECT DISTINCT ON (a.id) a.id, a.question, a.text, a.horn_type, c.origin FROM chain c "
        "JOIN approved_answers a ON a.id = c.id WHERE a.status IN ('APPROVED', 'DISPUTED') "
        "AND NOT EXISTS (SELECT 1 FROM conflict_flags f WHERE f.answer_id = a.id AND f.kind = %s "
        "AND f.status IN ('OPEN', 'ESCALATED')) ORDER BY a.id", (sorted(changed), SOURCE_CHANGED))
    opened = []
    for answer in answers:
        now_reads = changed[answer["origin"]]
        how = "changed" if now_reads is not None else "is gone"
        detail = f"its source statement in {document['path']} {how} (document {document['id']})"
        opened.append(engine.create(tx, CONFLICT, SYSTEM, {
            "answer_id": answer["id"], "other_answer_id": None, "subject": limits.clip(answer["question"], 200),
            "detail": limits.clip(detail, 500), "kind": SOURCE_CHANGED, "judge": "ingest",
            "highlights": Jsonb({"answer": [], "other": []}), "horn_types": [answer["horn_type"]],
            "answer_hash": text_hash(answer["text"]), "other_hash": None, "source_document_id": document["id"],
            "source_text": now_reads}, action="detect").row["id"])
    return opened


# ----------------------------------------------------------------------------- commands

def escalate(ctx: Context, actor: Actor, flag_id, reason: str | None = None, *,
             expected_version: int | None = None, idempotency_key: str | None = None) -> dict:
    """Turn an open flag into a dispute: both answers DISPUTED, their candidates to re-review."""
    limits.text(reason, "a reason", limits.REASON)
    reason = (reason or "").strip() or None

    def work(tx):
        flag = engine.lock(tx, CONFLICT, parse_id(flag_id, "conflict flag"))
        engine.plan(CONFLICT, flag, "escalate", actor, {"reason": reason}, expected_version)
        gone = tx.all("SELECT id, status FROM approved_answers WHERE id = ANY(%s) AND status NOT IN "
                      "('APPROVED', 'DISPUTED') ORDER BY id", (answers_of(flag),))
        if gone:
            raise ValidationStateError("conflict_flag", flag["id"], flag["status"], "escalate",
                                       f"answer {gone[0]['id']} is {gone[0]['status']}")
        moved = engine.apply(tx, CONFLICT, flag, "escalate", actor, fields={"reason": reason},
                             changes={"reason": reason, "decided_by": actor.name}, idempotency_key=idempotency_key)
        return {**public_row(moved.row), "disputed": moved.outcome.get("disputed", [])}

    return in_unit_of_work(ctx, actor, "conflicts.escalate", {"id": str(flag_id), "reason": reason,
                                                              "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


def dismiss(ctx: Context, actor: Actor, flag_id, reason: str, *, expected_version: int | None = None,
            idempotency_key: str | None = None) -> dict:
    """Judge a flag a false alarm, with a reason; the pair is not flagged again unless a text changes."""
    limits.text(reason, "a reason", limits.REASON)
    reason = (reason or "").strip()

    def work(tx):
        flag = engine.lock(tx, CONFLICT, parse_id(flag_id, "conflict flag"))
        return public_row(engine.apply(tx, CONFLICT, flag, "dismiss", actor, fields={"reason": reason or None},
                                       changes={"dismissed_reason": reason, "decided_by": actor.name},
                                       expected_version=expected_version, idempotency_key=idempotency_key).row)

    return in_unit_of_work(ctx, actor, "conflicts.dismiss", {"id": str(flag_id), "reason": reason,
                                                             "expected_version": expected_version},
                           work, idempotency_key=idempotency_key)


# ----------------------------------------------------------------------------- read

_LISTED = ("SELECT f.*, a.question AS answer_question, a.status AS answer_status, "
           "b.question AS other_question, b.status AS other_status FROM conflict_flags f "
           "JOIN approved_answers a ON a.id = f.answer_id LEFT JOIN approved_answers b ON b.id = f.other_answer_id ")


def list_flags(ctx: Context, status: str | None = None, *, limit: int = 200, offset: int = 0) -> list[dict]:
    """Flags, newest first; OPEN only unless `status` (comma-separated, or ALL) says otherwise."""
    statuses = status_filter(status, STATUSES, "OPEN", "conflict status")
    limit = limits.number(limit, "--limit", limits.SEARCH_LIMIT)
    offset = limits.number(offset, "--offset", limits.OFFSET)
    with ctx.db.read() as tx:
        rows = tx.all(_LISTED + "WHERE f.status = ANY(%s) ORDER BY f.id DESC LIMIT %s OFFSET %s",
                      (statuses, limit, offset))
    return [public_row(r) for r in rows]


def show(ctx: Context, flag_id) -> dict:
    """A flag with both answers in full, the disagreeing words of each, and its history."""
    with ctx.db.read() as tx:
        flag = fetch(tx, "conflict_flags", "conflict flag", flag_id)
        answers = {r["id"]: public_row(r) for r in tx.all(
            "SELECT id, question, text, status, horn_type, version FROM approved_answers WHERE id = ANY(%s)",
            (answers_of(flag),))}
        history = event_history(tx, "conflict_flag", flag["id"])
    return {**public_row(flag), "answer": answers.get(flag["answer_id"]), "other": answers.get(flag["other_answer_id"]),
            "history": history}


def refusal_for(actor: Actor, flag: dict, action: str):
    """Why `actor` may not `action` (escalate, dismiss) this flag now, or None (for the screen's keys)."""
    return refusal(CONFLICT, action, flag, actor)


# ----------------------------------------------------------------------------- the graph around an answer

def neighbours(ctx: Context, answer_id) -> dict:
    """An answer's neighbours in the graph: its sources, its subjects and the other answers on them,
    its supersede chain, and its conflicts (PostgreSQL, the truth, for those). When the graph cannot
    be reached, the embedded one is followed once (started again on its socket if it died, as the
    sweep does) and asked again; when it still cannot, `graph` says why and the graph's parts are
    empty: a registry view never fails on it."""
    found = _neighbours(ctx, answer_id)
    if found["graph"].startswith("down:") and not ctx.settings.graph_url:
        try:
            ctx.reconnect("graph")
        except (ServiceUnavailable, GraphUnavailable, ConnectionError, OSError) as exc:
            found["graph"] = f"down: {str(exc)[:120] or type(exc).__name__}"
            return found
        found = _neighbours(ctx, answer_id)
    return found


def _neighbours(ctx: Context, answer_id) -> dict:
    with ctx.db.read() as tx:
        answer = fetch(tx, "approved_answers", "answer", answer_id)
        conflicts = [public_row(r) for r in tx.all(
            "SELECT id, status, kind, detail, CASE WHEN answer_id = %(id)s THEN other_answer_id ELSE answer_id END "
            "AS other_answer_id FROM conflict_flags WHERE answer_id = %(id)s OR other_answer_id = %(id)s "
            "ORDER BY id DESC LIMIT 20", {"id": answer["id"]})]
    updated = answer["updated_at"].timestamp()  # as graph_sync writes it: the row's epoch seconds
    out = {"answer": answer["id"], "graph": "up", "sources": [], "subjects": [], "chain": [], "conflicts": conflicts}
    try:
        graph = ctx.graph
        node = graph.run("MATCH (a:Answer {id: $id}) RETURN a.version AS version, a.updated AS updated", id=answer["id"])
        if not node or node[0]["version"] != answer["version"] or node[0]["updated"] is None \
                or abs(float(node[0]["updated"]) - updated) > 0.001:
            # Not mirrored yet, or mirrored from another row (a graph left from an older registry)
            out["graph"] = "behind: this answer is not in the graph yet (the sweep catches it up)"
            return out
        out["sources"] = [{"id": r["id"], "title": r["title"]} for r in graph.run(
            "MATCH (a:Answer {id: $id})-[:CITES]->(d:Source) RETURN d.id AS id, d.title AS title ORDER BY id LIMIT 20",
            id=answer["id"])]
        subjects: dict[str, list] = {}
        for r in graph.run("MATCH (a:Answer {id: $id})-[:ABOUT]->(s:Subject) "
                           "OPTIONAL MATCH (s)<-[:ABOUT]-(b:Answer) WHERE b.id <> $id "
                           "RETURN s.name AS subject, b.id AS other, b.status AS status, b.title AS title "
                           "ORDER BY subject, other LIMIT 200", id=answer["id"]):
            others = subjects.setdefault(r["subject"], [])
            if r["other"] is not None and len(others) < 10:
                others.append({"id": r["other"], "status": r["status"], "title": r["title"]})
        out["subjects"] = [{"name": name, "answers": others} for name, others in subjects.items()]
        older = graph.run("MATCH (a:Answer {id: $id})-[:SUPERSEDES*1..20]->(o:Answer) "
                          "RETURN DISTINCT o.id AS id, o.status AS status ORDER BY id", id=answer["id"])
        newer = graph.run("MATCH (n:Answer)-[:SUPERSEDES*1..20]->(a:Answer {id: $id}) "
                          "RETURN DISTINCT n.id AS id, n.status AS status ORDER BY id", id=answer["id"])
        out["chain"] = [{"id": r["id"], "status": r["status"], "relation": "supersedes"} for r in older] + \
                       [{"id": r["id"], "status": r["status"], "relation": "superseded by"} for r in newer]
    except (GraphUnavailable, ServiceUnavailable, ConnectionError, OSError) as exc:
        out.update(graph=f"down: {str(exc)[:120] or type(exc).__name__}", sources=[], subjects=[], chain=[])
    return out
