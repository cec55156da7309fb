"""Durable article task. State is the projection of the task's events."""
from . import NEW, WHO, Machine, move

CONFIDENCE_THRESHOLD = 0.8


def analysis_passes(row: dict, fields: dict) -> str | None:
    score = fields.get("ai_confidence_score")
    if score is None or score < CONFIDENCE_THRESHOLD:
        return f"AI confidence {score} is below the threshold {CONFIDENCE_THRESHOLD}"
    if fields.get("flagged_claims"):
        return "the analysis flagged claims: resolution is required first"
    return None


def analysis_fails(row: dict, fields: dict) -> str | None:
    return None if analysis_passes(row, fields) else "the analysis passed: move to PEER_REVIEW"


def two_reviewers(row: dict, fields: dict) -> str | None:
    reviewers = {a.get("reviewer") for a in (row.get("approvals") or [])}
    reviewers |= set(fields.get("reviewer_ids") or [])
    if len(reviewers) < 2:
        return f"approval needs at least 2 distinct reviewers, has {len(reviewers)}"
    return None


TASK = Machine("task", "durable_tasks", "state", [
    # action           from                   to                     who           needs / guard
    move("create",        NEW,                  "DRAFT",               WHO.ANY_USER, needs=("title",)),
    move("submit",        "DRAFT",              "AI_ANALYSIS",         WHO.ANY_USER),
    move("pass_analysis", "AI_ANALYSIS",        "PEER_REVIEW",         WHO.ANY_USER, guard=analysis_passes),
    move("flag_analysis", "AI_ANALYSIS",        "RESOLUTION_REQUIRED", WHO.ANY_USER, guard=analysis_fails),
    move("approve",       "PEER_REVIEW",        "APPROVED",            WHO.ANY_USER, guard=two_reviewers),
    move("reject",        "PEER_REVIEW",        "RESOLUTION_REQUIRED", WHO.ANY_USER),
    move("resolve",       "RESOLUTION_REQUIRED", "PEER_REVIEW",        WHO.ANY_USER),
    move("publish",       "APPROVED",           "PUBLISHED",           WHO.SYSTEM),
    move("deprecate",     "PUBLISHED",          "DEPRECATED",          WHO.ANY_USER),
], terminal=frozenset({"DEPRECATED"}))
