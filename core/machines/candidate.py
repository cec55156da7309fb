"""Candidate validation state."""
from . import NEW, WHO, Machine, move


def not_open_issue(row: dict, fields: dict) -> str | None:
    if row.get("horn_type") == "OPEN_ISSUE":
        return "an OPEN_ISSUE is never approved or revised: escalate it so an answer can be generated"
    return None


def a_decision(row: dict, fields: dict) -> str | None:
    """A review (overlap) records one of the decisions that publish or reject."""
    if fields.get("decision") not in ("approve", "revise", "reject"):
        return f"a review's decision is approve, revise or reject, not {fields.get('decision')!r}"
    return None


CANDIDATE = Machine("candidate", "candidates", "state", [
    # action        from                                    to            who                        needs
    move("extract",    NEW,                                 "PENDING",    WHO.ANY_USER,              needs=("question", "text", "horn_type")),
    move("claim",      "PENDING",                           "IN_REVIEW",  WHO.HORN_AUTHORITY),
    move("approve",    "IN_REVIEW",                         "APPROVED",   WHO.CLAIMANT,              guard=not_open_issue),
    move("revise",     "IN_REVIEW",                         "REVISED",    WHO.CLAIMANT,              needs=("revised_text",), guard=not_open_issue),
    move("reject",     "IN_REVIEW",                         "REJECTED",   WHO.CLAIMANT,              needs=("reason",)),
    move("escalate",   "IN_REVIEW",                         "ESCALATED",  WHO.CLAIMANT,              needs=("reason",)),
    move("release",    "IN_REVIEW",                         "PENDING",    WHO.CLAIMANT_OR_SYSTEM),
    move("resubmit",   "ESCALATED",                         "PENDING",    WHO.SYSTEM_OR_SPECIALIST,  needs=("text",)),
    move("close",      "ESCALATED",                         "CLOSED",     WHO.SYSTEM_OR_SPECIALIST),
    move("supersede",  {"APPROVED", "REVISED", "DISPUTED"}, "SUPERSEDED", WHO.SYSTEM),
    move("dispute",    {"APPROVED", "REVISED"},             "DISPUTED",   WHO.SYSTEM_OR_VALIDATOR,   needs=("reason",)),
    move("re_review",  "DISPUTED",                          "IN_REVIEW",  WHO.HORN_AUTHORITY),
    move("retire",     "DISPUTED",                          "RETIRED",    WHO.VALIDATOR_OR_ADMIN,    needs=("reason",)),
    # Extension: a document ingested again no longer holds the statement of a candidate still
    # waiting in its queue; it leaves the queue, reason `source_removed`.
    move("withdraw",   "PENDING",                           "REJECTED",   WHO.SYSTEM,                needs=("reason",)),
    # Extension: with an LLM configured, a worker's accepted proposal for an extracted candidate that
    # still waits unclaimed: a new question, claim or Horn type, the old ones in the event's fields.
    move("refine",     "PENDING",                           "PENDING",    WHO.SYSTEM,                needs=("question", "text", "horn_type")),
    # Extension: a registry supersede publishes a new version; its candidate starts APPROVED so the
    # new answer can itself be disputed and re-reviewed like any other.
    move("record_version", NEW,                             "APPROVED",   WHO.SYSTEM),
    # Extension, overlap (docs/architecture.md, "Overlap"): in a queue that requires k reviews, a
    # decision short of the k-th is a `review`: recorded, the candidate back in its queue for another
    # validator; the k-th, if it disagrees with the others, sends it to a specialist's adjudication,
    # who decides it with the same approve, revise or reject (their reactions publish as ever). A
    # validator undoing an open review takes the candidate back (`unreview`) while it still waits.
    move("review",     "IN_REVIEW",                         "PENDING",    WHO.CLAIMANT,              needs=("decision",), guard=a_decision),
    move("disagree",   "IN_REVIEW",                         "ADJUDICATION", WHO.CLAIMANT,            needs=("decision",), guard=a_decision),
    move("approve",    "ADJUDICATION",                      "APPROVED",   WHO.SPECIALIST,            guard=not_open_issue),
    move("revise",     "ADJUDICATION",                      "REVISED",    WHO.SPECIALIST,            needs=("revised_text",), guard=not_open_issue),
    move("reject",     "ADJUDICATION",                      "REJECTED",   WHO.SPECIALIST,            needs=("reason",)),
    move("unreview",   "PENDING",                           "IN_REVIEW",  WHO.HORN_AUTHORITY),
], terminal=frozenset({"REJECTED", "CLOSED", "SUPERSEDED", "RETIRED"}))
