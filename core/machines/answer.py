"""Registry answer status. There is no delete move, anywhere."""
from . import NEW, WHO, Machine, move

ANSWER = Machine("answer", "approved_answers", "status", [
    # action       from                      to            who
    move("publish",   NEW,                    "APPROVED",   WHO.SYSTEM_OR_VALIDATOR),
    move("supersede", {"APPROVED", "DISPUTED"}, "SUPERSEDED", WHO.SYSTEM_OR_VALIDATOR, needs=("reason",)),
    move("dispute",   "APPROVED",             "DISPUTED",   WHO.SYSTEM_OR_VALIDATOR, needs=("reason",)),
    move("retire",    {"APPROVED", "DISPUTED"}, "RETIRED",  WHO.VALIDATOR_OR_ADMIN,  needs=("reason",)),
], terminal=frozenset({"SUPERSEDED", "RETIRED"}))
