"""The AI analysis gate: an article's claims, each checked for support against the registry
(retrieval, then the LLM when one is configured)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ... import engine
from ...adapters.llm import LLMError
from ...adapters.postgres import Tx
from ...domain import SYSTEM
from ...knowledge.contradictions import compare
from ...machines.task import TASK
from ..answering.generation import breaker
from ..search import retrieval
from ..unit_of_work import in_unit_of_work
from .fold import sources_of
from .reactions import analysis_job_id
from .sources import not_current
from .writing import row_for_update, write

if TYPE_CHECKING:
    from ...context import Context


def analyze(ctx: Context, task_id: int) -> dict:
    """The analysis job: the article's claims checked against the registry (and the graph); the score
    and flagged claims stored by AnalysisCompleted, which moves it to PEER_REVIEW or RESOLUTION_REQUIRED.
    The answers the claims rest on are checked again as it commits (`_current_only`): one superseded,
    disputed or retired meanwhile is a flagged claim naming it.
    Run again (a retried job) it changes nothing: the task is no longer in AI_ANALYSIS. Reviewers
    assigned while it ran do not void it: in AI_ANALYSIS nothing else moves and the body cannot
    change, and no task comes back to AI_ANALYSIS once it has left."""
    with ctx.db.read() as tx:
        row = engine.read(tx, TASK, task_id)
    if row["state"] != "AI_ANALYSIS":
        return {"task": task_id, "outcome": "nothing to do", "state": row["state"]}
    threshold = ctx.settings.task_confidence_threshold
    report = assess(ctx, row["body"] or "", title=row["title"])

    def work(tx: Tx) -> dict:
        current = row_for_update(tx, task_id)
        if current["state"] != "AI_ANALYSIS" or current["body"] != row["body"]:
            return {"task": task_id, "outcome": "moved meanwhile", "state": current["state"]}
        checked = _current_only(tx, report)
        passes = checked["ai_confidence_score"] >= threshold and not checked["flagged_claims"]
        target = "PEER_REVIEW" if passes else "RESOLUTION_REQUIRED"
        data = {**checked, "threshold": threshold, "outcome": target}
        action = "pass_analysis" if passes else "flag_analysis"
        moved = write(tx, SYSTEM, current, action, data,
                       fields={"ai_confidence_score": data["ai_confidence_score"],
                               "flagged_claims": data["flagged_claims"], "threshold": threshold},
                       key=analysis_job_id(task_id, row["version"]))
        return {"task": task_id, "outcome": target, "state": moved["state"],
                "ai_confidence_score": data["ai_confidence_score"], "flagged": len(data["flagged_claims"])}

    return in_unit_of_work(ctx, SYSTEM, "tasks.analysis", {"id": task_id, "version": row["version"]}, work,
                           idempotency_key=analysis_job_id(task_id, row["version"]))


def _current_only(tx: Tx, report: dict) -> dict:
    """The analysis as it is committed: a supported claim whose answer moved on since it was read
    (superseded, disputed, retired) is flagged instead, naming it, and counts for nothing in the score;
    the answers left are held until the commit."""
    flags = not_current(tx, sources_of(report["supported"]), lock=True)
    if not flags:
        return report
    gone = {f["answer_id"] for f in flags}
    supported = [c for c in report["supported"] if c["answer_id"] not in gone]
    score = round(sum(min(1.0, c["coverage"]) for c in supported) / report["claims"], 3) if report["claims"] else 0.0
    return {**report, "supported": supported, "flagged_claims": report["flagged_claims"] + flags,
            "ai_confidence_score": score}


SUPPORT = 0.6          # a claim is supported by an answer holding this share of its content words


LLM_SUPPORT = 0.9      # what a claim the LLM judged supported counts for in the score


MAX_CLAIMS = 200


_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")


_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


_MARKS = re.compile(r"[*_`]+")


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", _MARKS.sub("", _LINK.sub(r"\1", text))).strip()


def split_claims(markdown: str) -> list[str]:
    """The claims of a Markdown article: each sentence of its paragraphs and bullets that has content
    (three words or more); headings, tables, code and blank lines say nothing to check."""
    text = _FENCE.sub("", markdown or "")
    blocks: list[str] = []
    paragraph: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|", ">")) or set(stripped) <= set("-=*_ "):
            if paragraph:
                blocks.append(" ".join(paragraph))
                paragraph = []
            if stripped.startswith(">"):
                blocks.append(stripped.lstrip("> "))
            continue
        if _BULLET.match(line):
            if paragraph:
                blocks.append(" ".join(paragraph))
                paragraph = []
            blocks.append(_BULLET.sub("", line, count=1))
            continue
        paragraph.append(stripped)
    if paragraph:
        blocks.append(" ".join(paragraph))
    claims = []
    for block in blocks:
        for sentence in _SENTENCE.split(_plain(block)):
            sentence = sentence.strip()
            if len(re.findall(r"[^\W\d_]{2,}", sentence)) >= 3:
                claims.append(sentence)
    return claims[:MAX_CLAIMS]


# A claim's registry answers: those retrieval finds for it by its words and by its meaning
# (core/services/search/retrieval.py), plus the graph's neighbours of the best; each with how many of the
# claim's terms it has (`matched` of `total`), the most first.
_MATCHED = (
    "WITH c AS (SELECT coalesce(array_agg(DISTINCT lexeme), '{}') AS lex FROM unnest(to_tsvector('english', %(claim)s))) "
    "SELECT a.id, a.question, a.text, cardinality(c.lex) AS total, "
    "       (SELECT count(*) FROM unnest(a.search) t WHERE t.lexeme = ANY(c.lex)) AS matched "
    "  FROM approved_answers a, c WHERE a.status = 'APPROVED' AND a.id = ANY(%(ids)s)")


MATCHES = 8


def _matches(tx, claim: str, extra: list[int]) -> list[dict]:
    _, ranked = retrieval.rank(tx, claim, passages=False)
    ids = [c.row["id"] for c in ranked]
    found = {r["id"]: r for r in tx.all(_MATCHED, {"claim": claim, "ids": ids + [i for i in extra if i not in ids]})}
    fused = {answer_id: n for n, answer_id in enumerate(ids)}
    rows = sorted(found.values(), key=lambda r: (-r["matched"], fused.get(r["id"], len(fused)), r["id"]))
    return rows[:MATCHES]


def _neighbours(ctx: Context, answer_ids: list[int], notes: list[str]) -> list[int]:
    """Answers the graph puts on the same subject as these (for contradictions and support)."""
    if not answer_ids:
        return []
    try:
        rows = ctx.graph.run("MATCH (a:Answer)-[:ABOUT]->(s:Subject)<-[:ABOUT]-(b:Answer) WHERE a.id IN $ids "
                             "AND b.status = 'APPROVED' RETURN DISTINCT b.id AS id", ids=answer_ids[:20])
    except Exception as exc:  # noqa: BLE001 - the graph is a projection: the registry still answers
        note = f"graph not consulted: {type(exc).__name__}"
        if note not in notes:
            notes.append(note)
        return []
    return [int(r["id"]) for r in rows if r.get("id") is not None]


def _contradiction(claim: str, answer_text: str) -> str | None:
    """Why `claim` contradicts a registry answer (core/knowledge/contradictions.py, the rules conflict detection
    uses), or None."""
    finding = compare(claim, answer_text)
    return f"{finding.kind}: {finding.detail}" if finding else None


def _verdict(claim: str, best: list[dict]) -> tuple[str, dict]:
    """A claim judged against its best-matching APPROVED answers (`_matches`): contradicted (with the
    answer), supported (by the best one, holding SUPPORT of its words) or unsupported."""
    contradicted = None
    for b in best:
        why = _contradiction(claim, b["text"])
        if why:
            contradicted = (b, why)
            break
    top = best[0] if best else None
    coverage = round(top["matched"] / top["total"], 3) if top and top["total"] else 0.0
    if contradicted:
        b, why = contradicted
        return "contradicted", {"claim": claim, "kind": "contradicted", "answer_id": b["id"],
                                "answer_text": b["text"][:2000], "why": str(why)[:500], "coverage": coverage}
    if top and top["matched"] >= 2 and coverage >= SUPPORT:
        return "supported", {"claim": claim, "answer_id": top["id"], "question": top["question"][:300],
                             "coverage": coverage}
    return "unsupported", {"claim": claim, "kind": "unsupported",
                           "answer_id": top["id"] if top and top["matched"] else None,
                           "answer_text": None, "why": "no registry answer states it", "coverage": coverage}


def support_in(tx: Tx, body: str) -> dict:
    """The rules' check of an article's claims against the APPROVED answers, in `tx` (no graph, no
    LLM): `supported` (each claim with its answer) and `flagged`."""
    out: dict[str, list] = {"supported": [], "flagged": []}
    for claim in split_claims(body):
        kind, judged = _verdict(claim, _matches(tx, claim, []))
        out["supported" if kind == "supported" else "flagged"].append(judged)
    return out


def assess(ctx: Context, body: str, *, title: str = "") -> dict:
    """Each claim of an article looked up in the registry (its answers by words and by meaning) and the
    graph: the confidence score (the mean over claims of how much of each its answer states, 0 for a
    flagged one), the claims it supports with their
    answers, and the flagged ones (unsupported; contradicted, with the answer). Deterministic; with an
    LLM configured it judges the claims the rules could not settle, through the shared breaker."""
    claims = split_claims(body)
    notes: list[str] = []
    supported, flagged, open_claims = [], [], []
    with ctx.db.read() as tx:
        for claim in claims:
            best = _matches(tx, claim, [])
            extra = _neighbours(ctx, [b["id"] for b in best[:3] if b["matched"]], notes)
            if extra:
                best = _matches(tx, claim, extra)
            kind, judged = _verdict(claim, best)
            {"contradicted": flagged, "supported": supported, "unsupported": open_claims}[kind].append(judged)
    judged_by = "rules"
    if open_claims and ctx.settings.llm_url:
        judged_by = _llm_judges(ctx, open_claims, supported, notes)
    flagged += [c for c in open_claims if c["kind"] == "unsupported"] + [c for c in open_claims if c["kind"] == "contradicted"]
    # A supported claim counts by how much of it its answer states (coverage, at least SUPPORT; one
    # the LLM judged supported counts LLM_SUPPORT); a flagged one counts 0.
    score = round(sum(min(1.0, c["coverage"]) for c in supported) / len(claims), 3) if claims else 0.0
    if not claims:
        notes.append("the article states no claim to check")
    return {"ai_confidence_score": score, "flagged_claims": flagged, "supported": supported, "claims": len(claims),
            "judged_by": judged_by, "notes": notes}


def _llm_judges(ctx: Context, open_claims: list[dict], supported: list[dict], notes: list[str]) -> str:
    """The LLM, behind the shared breaker, says which unsettled claims the registry answer nearest
    each one supports; what it supports moves to `supported`. Any failure leaves the rules' verdict."""
    with ctx.db.read() as tx:
        texts = {r["id"]: r for r in tx.all("SELECT id, question, text FROM approved_answers WHERE id = ANY(%s)",
                                            ([c["answer_id"] for c in open_claims if c["answer_id"]],))}
    asked = [c for c in open_claims if c["answer_id"] in texts]
    if not asked:
        return "rules"
    cb = breaker(ctx)
    if cb.allow("task-analysis") == "refuse":
        notes.append("LLM circuit open: judged by the rules")
        return "rules"
    prompt = ("For each numbered claim, answer on its own line `N: SUPPORTED` when the registry answer given "
              "with it states the claim, else `N: UNSUPPORTED`.\n\n" + "\n\n".join(
                  f"{n}. Claim: {c['claim']}\n   Registry answer {c['answer_id']}: {texts[c['answer_id']]['text'][:1500]}"
                  for n, c in enumerate(asked, 1)))
    try:
        reply = ctx.llm.complete(prompt).text
    except LLMError as exc:
        cb.record_failure(exc.detail)
        notes.append(f"LLM error ({exc.detail[:100]}): judged by the rules")
        return "rules"
    cb.record_success()
    verdicts = {int(n): v.upper() for n, v in re.findall(r"(?m)^\s*(\d+)\s*[:.)-]\s*(SUPPORTED|UNSUPPORTED)", reply, re.I)}
    for n, claim in enumerate(asked, 1):
        if verdicts.get(n) == "SUPPORTED":
            open_claims.remove(claim)
            supported.append({"claim": claim["claim"], "answer_id": claim["answer_id"],
                              "question": texts[claim["answer_id"]]["question"][:300],
                              "coverage": max(claim["coverage"], LLM_SUPPORT), "judged": "llm"})
    return f"rules and the LLM ({ctx.settings.llm_model})"
