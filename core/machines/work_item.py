"""Work item in the generation pipeline."""
from . import NEW, WHO, Machine, move

# The reasons the pipeline escalates with, word for word (docs/architecture.md, "Retrieval and
# generation"); a validator's escalation of a generated candidate carries the validator's own reason.
NO_CONTENT = "no_content"
LLM_ERROR = "LLM error: {detail}"
CIRCUIT_OPEN = "LLM circuit open"


WORK_ITEM = Machine("work_item", "work_items", "state", [
    # action      from                                            to                    who                        needs
    move("create",   NEW,                                          "NEW",                WHO.HORN_AUTHORITY_OR_SPECIALIST, needs=("question",)),
    move("generate", "NEW",                                        "GENERATING",         WHO.SYSTEM),
    move("rework",   "NEEDS_REWORK",                               "GENERATING",         WHO.HORN_AUTHORITY_OR_SPECIALIST, needs=("reason",)),
    move("generated", "GENERATING",                                "PENDING_VALIDATION", WHO.SYSTEM),
    move("classify", "PENDING_VALIDATION",                         "IN_CLASSIFICATION",  WHO.SYSTEM),
    move("ready",    {"PENDING_VALIDATION", "IN_CLASSIFICATION"},  "READY_FOR_REVIEW",   WHO.SYSTEM),
    move("validate", "READY_FOR_REVIEW",                           "VALIDATED",          WHO.SYSTEM),
    move("reject",   "READY_FOR_REVIEW",                           "NEEDS_REWORK",       WHO.SYSTEM,                needs=("reason",)),
    move("escalate", {"GENERATING", "READY_FOR_REVIEW"},           "ESCALATED",          WHO.SYSTEM,                needs=("reason",)),
    move("close",    {"NEW", "VALIDATED", "NEEDS_REWORK", "ESCALATED"}, "CLOSED",        WHO.HORN_AUTHORITY_OR_SPECIALIST),
], terminal=frozenset({"CLOSED"}))
