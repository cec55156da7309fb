"""What a task's events fold into (its projection) and replay from the newest snapshot."""
from __future__ import annotations

from datetime import timezone

from ...adapters.postgres import Tx
from ...machines.task import TASK

TABLE = "durable_tasks"
AGGREGATE = TASK.name
STATES = ("DRAFT", "AI_ANALYSIS", "PEER_REVIEW", "RESOLUTION_REQUIRED", "APPROVED", "PUBLISHED", "DEPRECATED")
TITLE = 500
BODY = 100_000


def fold(state: dict, type_: str, data: dict, actor: str, at: str) -> dict:
    """The columns one typed event changes in a task's projection `state` (which it does not modify).
    The whole projection is the fold of a task's events from `{}`; `version` counts them."""
    version = (state.get("version") or 0) + 1
    if type_ == "TaskCreated":
        return {"title": data["title"], "body": data["body"], "state": "DRAFT", "created_by": data["author"],
                "supersedes_id": data.get("supersedes_id"), "task_version": data.get("version"),
                "ai_confidence_score": None, "flagged_claims": [], "approvals": [], "reviewers": [],
                "decisions": [], "analysis": None, "sources": [], "rendered": None, "resolution_note": None,
                "deprecation_reason": None, "superseded_by": None, "published_at": None,
                "created_at": at, "updated_at": at, "version": version}
    changes: dict = {"updated_at": at, "version": version}
    if type_ == "SubmittedForAnalysis":
        changes["state"] = "AI_ANALYSIS"
    elif type_ == "AnalysisCompleted":
        changes.update(state=data["outcome"], ai_confidence_score=data["ai_confidence_score"],
                       flagged_claims=data["flagged_claims"],
                       analysis={"claims": data["claims"], "supported": data["supported"],
                                 "threshold": data["threshold"], "judged_by": data["judged_by"],
                                 "notes": data.get("notes") or [], "at": at},
                       sources=sources_of(data["supported"]))
    elif type_ == "ReviewerAssigned":
        known = {r["name"] for r in state.get("reviewers") or []}
        changes["reviewers"] = [*(state.get("reviewers") or []),
                                *({"name": n, "assigned_by": actor, "at": at} for n in data["reviewer_ids"]
                                  if n not in known)]
    elif type_ == "ReviewApproved":
        approvals = [*(state.get("approvals") or []), {"reviewer": data["reviewer"], "at": at}]
        changes.update(approvals=approvals,
                       decisions=[*(state.get("decisions") or []),
                                  {"reviewer": data["reviewer"], "decision": "approve", "reason": data.get("reason"),
                                   "at": at}],
                       state="APPROVED" if len({a["reviewer"] for a in approvals}) >= 2 else state.get("state"))
    elif type_ == "ReviewRejected":
        changes.update(state="RESOLUTION_REQUIRED",
                       decisions=[*(state.get("decisions") or []),
                                  {"reviewer": data["reviewer"], "decision": "reject", "reason": data["reason"],
                                   "at": at}])
        if data.get("flagged_claims") is not None:  # the approval's check of the sources found these
            changes["flagged_claims"] = data["flagged_claims"]
    elif type_ == "ResolutionSubmitted":
        changes.update(state="PEER_REVIEW", approvals=[], resolution_note=data["note"])
        if data.get("body") is not None:
            changes["body"] = data["body"]
        if data.get("supported") is not None:  # the claims' answers in the registry as it was then
            changes["sources"] = sources_of(data["supported"])
        if data.get("version") is not None:
            changes["task_version"] = data["version"]
    elif type_ == "Published":
        changes.update(state="PUBLISHED", rendered=data["rendered"], sources=data["sources"], published_at=at)
    elif type_ == "Deprecated":
        changes.update(state="DEPRECATED", deprecation_reason=data["reason"],
                       superseded_by=data.get("superseded_by"))
    else:
        raise ValueError(f"unknown task event type {type_!r}")
    return changes


def sources_of(supported: list[dict]) -> list[dict]:
    """The registry answers an article's supported claims rest on, each once, in order, with the
    claims each supports (so a source found no longer current names them)."""
    seen: dict[int, dict] = {}
    for s in supported:
        if s.get("answer_id") is None:
            continue
        source = seen.setdefault(s["answer_id"], {"answer_id": s["answer_id"], "question": s.get("question"),
                                                  "claims": []})
        source["claims"].append(s["claim"])
    return list(seen.values())


def at_text(value) -> str:
    return value.astimezone(timezone.utc).isoformat()


def rebuild(tx: Tx, task_id: int, *, from_snapshot: bool = True) -> tuple[dict, dict]:
    """A task's projection folded from its events: from its newest snapshot (when asked and there is
    one) plus the events after it. Returns (projection, {"snapshot": seq or None, "events": n})."""
    state: dict = {}
    after = 0
    if from_snapshot:
        snap = tx.one("SELECT seq, state FROM task_snapshots WHERE task_id = %s ORDER BY seq DESC LIMIT 1", (task_id,))
        if snap is not None:
            state, after = dict(snap["state"]), snap["seq"]
    rows = tx.all("SELECT type, actor, created_at, payload->'data' AS data FROM events WHERE aggregate_type = %s "
                  "AND aggregate_id = %s AND seq > %s ORDER BY seq", (AGGREGATE, str(task_id), after))
    for r in rows:
        state.update(fold(state, r["type"], r["data"], r["actor"], at_text(r["created_at"])))
    if state:
        state["id"] = task_id
    return state, {"snapshot": after or None, "events": len(rows)}
