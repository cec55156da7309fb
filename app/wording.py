"""What a decision or a registry move did, in a validator's words: one sentence each, said the same
by the review screen, the registry browser and the command line ("Approved candidate 2: answer 2
published."). Plain Python: the CLI imports it without Textual."""
from __future__ import annotations

PAST = {"approve": "Approved", "revise": "Revised", "reject": "Rejected", "escalate": "Escalated"}


def decision_said(action: str, candidate_id: int, decided: dict) -> str:
    """What a decision did, in a validator's words: the review screen's line and the CLI's output."""
    said = f"{PAST[action]} candidate {candidate_id}"
    if decided.get("review"):  # overlap (docs/architecture.md, "Overlap"): one review of k
        if decided.get("candidate", {}).get("state") == "ADJUDICATION":
            return said + ": the reviews disagree, so it goes to a specialist's adjudication"
        return said + ": your review is recorded; it goes back to its queue for another validator's review"
    if answer := decided.get("answer"):
        said += f": answer {answer['id']} published"
        if answer.get("supersedes_id"):
            said += f", superseding disputed answer {answer['supersedes_id']}"
    elif item := decided.get("work_item"):
        if decided.get("candidate", {}).get("work_item_id") == item["id"]:  # a generated candidate: its own item
            said += f": work item {item['id']} moved to {item['state']}"
        else:
            said += f": work item {item['id']} created"
    elif retired := decided.get("retired"):
        said += f": disputed answer {retired['id']} retired"
    return said


def release_said(candidate: dict) -> str:
    """What a release did (`candidate`: the released row): the review screen's line and the CLI's output."""
    return f"Released candidate {candidate['id']}: back at the head of the {candidate['horn_type']} queue."


def resubmit_said(done: dict) -> str:
    """What a resubmission did: the candidate back in its queue, and the work item it closed."""
    candidate = done["candidate"]
    said = f"Resubmitted candidate {candidate['id']}: back in the {candidate['horn_type']} queue with the reworked text"
    if item := done.get("work_item"):
        said += f"; work item {item['id']} closed, answered by the rework"
    return said


def registry_move_said(action: str, answer_id: int, row: dict) -> str:
    """What a registry move did (`row`: the answer it returned), in the browser's and the CLI's words."""
    if action == "supersede":
        return f"Published answer {row['id']}, superseding answer {answer_id}."
    if action == "dispute":
        return (f"Answer {answer_id} is DISPUTED; its candidate is back at the head of the "
                f"{row['horn_type']} queue for re-review.")
    return f"Answer {answer_id} is RETIRED: out of search and readout, kept for audit."
