"""Durable article task (docs/architecture.md, "Durable tasks"). State is the projection of the task's
typed events (core/services/tasks/); this table says which moves are legal, who may make them and
what they need. Each move is one typed event: the event a move appends is `EVENT_OF[action]`.

`assign` and `note_approval` keep the state (a reviewer joins; a first approval is recorded);
`approve` is the approval that makes two distinct assigned reviewers, and so reaches APPROVED.
"""
from . import NEW, WHO, Machine, Who, move

CONFIDENCE_THRESHOLD = 0.8  # the default of R2K_TASK_CONFIDENCE_THRESHOLD (core/config.py)


def reviewer_names(row: dict) -> set[str]:
    return {r.get("name") for r in (row.get("reviewers") or [])}


def approvers(row: dict) -> set[str]:
    return {a.get("reviewer") for a in (row.get("approvals") or [])}


def _editor(actor, row) -> bool:
    return actor.is_system or actor.role in ("specialist", "admin") or actor.name == row.get("created_by")


def _reviewer(actor, row) -> bool:
    return not actor.is_system and actor.name != row.get("created_by") and actor.name in reviewer_names(row)


AUTHOR_OR_EDITOR = Who("the author, a specialist or an admin", _editor)
EDITOR = Who("a specialist or an admin (the editorial board), or the system on supersession",
             lambda a, r: a.is_system or a.role in ("specialist", "admin"))
REVIEWER = Who("a reviewer assigned to it who is not its author", _reviewer,
               standing=lambda a, r: not a.is_system)


def analysis_passes(row: dict, fields: dict) -> str | None:
    score = fields.get("ai_confidence_score")
    threshold = fields.get("threshold", CONFIDENCE_THRESHOLD)
    if score is None or score < threshold:
        return f"AI confidence {score} is below the threshold {threshold}"
    if fields.get("flagged_claims"):
        return "the analysis flagged claims: resolution is required first"
    return None


def analysis_fails(row: dict, fields: dict) -> str | None:
    return None if analysis_passes(row, fields) else "the analysis passed: move to PEER_REVIEW"


def second_approval(row: dict, fields: dict) -> str | None:
    """APPROVED needs recorded approvals of two distinct assigned reviewers: those already in the
    projection plus the one being made. Reviewer ids named in a request count for nothing."""
    reviewers = approvers(row) | ({fields["reviewer"]} if fields.get("reviewer") else set())
    if len(reviewers) < 2:
        return f"approval needs at least 2 distinct reviewers' approvals, has {len(reviewers)}"
    return None


OPEN = ("DRAFT", "AI_ANALYSIS", "PEER_REVIEW", "RESOLUTION_REQUIRED")

TASK = Machine("task", "durable_tasks", "state", [
    # action           from                   to                     who               needs / guard
    move("create",        NEW,                  "DRAFT",               WHO.ANY_USER,     needs=("title",)),
    move("submit",        "DRAFT",              "AI_ANALYSIS",         AUTHOR_OR_EDITOR),
    move("pass_analysis", "AI_ANALYSIS",        "PEER_REVIEW",         WHO.SYSTEM,       guard=analysis_passes),
    move("flag_analysis", "AI_ANALYSIS",        "RESOLUTION_REQUIRED", WHO.SYSTEM,       guard=analysis_fails),
    *[move("assign",      state,                state,                 AUTHOR_OR_EDITOR, needs=("reviewer_ids",))
      for state in OPEN],
    move("note_approval", "PEER_REVIEW",        "PEER_REVIEW",         REVIEWER),
    move("approve",       "PEER_REVIEW",        "APPROVED",            REVIEWER,         guard=second_approval),
    move("reject",        "PEER_REVIEW",        "RESOLUTION_REQUIRED", REVIEWER,         needs=("reason",)),
    move("resolve",       "RESOLUTION_REQUIRED", "PEER_REVIEW",        AUTHOR_OR_EDITOR, needs=("note",)),
    move("publish",       "APPROVED",           "PUBLISHED",           WHO.SYSTEM),
    move("deprecate",     "PUBLISHED",          "DEPRECATED",          EDITOR,           needs=("reason",)),
], terminal=frozenset({"DEPRECATED"}))

# The typed event each move appends (the event types of docs/architecture.md, "Durable tasks").
EVENT_OF = {
    "create": "TaskCreated", "submit": "SubmittedForAnalysis", "pass_analysis": "AnalysisCompleted",
    "flag_analysis": "AnalysisCompleted", "assign": "ReviewerAssigned", "note_approval": "ReviewApproved",
    "approve": "ReviewApproved", "reject": "ReviewRejected", "resolve": "ResolutionSubmitted",
    "publish": "Published", "deprecate": "Deprecated",
}
