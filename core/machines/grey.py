"""Grey queue of unknowns: questions no source answers yet, triaged and retried until resolved."""
from . import NEW, WHO, Machine, move

GREY = Machine("grey_entry", "grey_entries", "state", [
    # action        from                                   to             who                        needs
    move("add",        NEW,                                 "Pending",     WHO.ANY_USER,              needs=("subject",)),
    move("process",    {"Pending", "Retrying"},             "Processing",  WHO.SYSTEM),
    move("retry",      "Processing",                        "Retrying",    WHO.SYSTEM),
    move("fail",       {"Processing", "Retrying"},          "Failed",      WHO.SYSTEM),
    move("expire",     {"Pending", "Retrying"},             "Expired",     WHO.SYSTEM),
    move("assign",     {"Pending", "Processing"},           "UnderReview", WHO.SYSTEM_OR_SPECIALIST,  needs=("assignee",)),
    move("dismiss",    "Pending",                           "Dismissed",   WHO.SYSTEM_OR_SPECIALIST),
    move("resolve",    {"Processing", "UnderReview", "Escalated"}, "Resolved", WHO.SYSTEM_OR_SPECIALIST),
    move("escalate",   "UnderReview",                       "Escalated",   WHO.SYSTEM_OR_SPECIALIST,  needs=("reason",)),
    move("reject",     {"UnderReview", "Escalated"},        "Rejected",    WHO.SYSTEM_OR_SPECIALIST,  needs=("reason", "rejected_by")),
    move("unassign",   "UnderReview",                       "Pending",     WHO.SYSTEM_OR_SPECIALIST),
    move("deescalate", "Escalated",                         "UnderReview", WHO.SYSTEM_OR_SPECIALIST),
    move("reopen",     "Rejected",                          "Pending",     WHO.SYSTEM_OR_SPECIALIST,  needs=("reason",)),
    move("reopen",     "Dismissed",                         "Pending",     WHO.SYSTEM_OR_SPECIALIST),
    move("reset",      "Failed",                            "Pending",     WHO.SYSTEM_OR_SPECIALIST),
], terminal=frozenset({"Resolved", "Expired"}))
