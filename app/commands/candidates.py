"""candidates: candidate answers and their validation, one by one. The command tree; the handlers
are app/handlers/candidates.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int


def register(commands) -> None:
    cands = commands.group("candidates", "candidate answers and their validation")
    add = cands.command("add", "add one candidate by hand", "candidates:cand_add", mutates=True)
    add.add_argument("--question", required=True,
                     help=f"the question the candidate answers (at most {limits.QUESTION:,} characters)")
    add.add_argument("--text", required=True, help=f"the candidate answer (at most {limits.ANSWER:,} characters)")
    add.add_argument("--horn-type", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE (default: classified)")
    add.add_argument("--source-ref", help=f"where it comes from (free text, at most {limits.SOURCE_REF:,} characters)")
    lst = cands.command("list", "list candidates", "candidates:cand_list")
    lst.add_argument("--state", help="only this state: PENDING, IN_REVIEW, APPROVED, REVISED, REJECTED, ESCALATED, "
                     "DISPUTED, CLOSED, SUPERSEDED, RETIRED or ADJUDICATION (reviewers disagreed)")
    lst.add_argument("--horn-type", help="only this Horn type: FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    lst.add_argument("--claimed-by", metavar="USER", help="only candidates this user has claimed")
    lst.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=100,
                     help=f"at most this many (default 100; {limits.said(limits.LIST_LIMIT)})")
    lst.add_argument("--offset", type=bounded_int("--offset", limits.OFFSET), default=0,
                     help=f"skip this many (the next page; {limits.said(limits.OFFSET)})")
    for name, help_text in [("show", "a candidate with its sources, answer and history"),
                            ("history", "every transition of a candidate")]:
        p = cands.command(name, help_text, "candidates:cand_show" if name == "show" else "candidates:cand_history")
        p.add_argument("id", help="the candidate's id")
    p = cands.command("claim", "claim one named candidate", "candidates:cand_claim", mutates=True)
    p.add_argument("id", help="the candidate's id")
    p = cands.command("approve", "approve a claimed candidate (publishes it)", "candidates:cand_decide", mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p = cands.command("revise", "approve with revised text (publishes the revision)", "candidates:cand_decide", mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p.add_argument("--text", required=True,
                   help=f"the revised answer, as it will be published (at most {limits.ANSWER:,} characters)")
    for name, what in [("reject", "reject a claimed candidate"), ("escalate", "escalate: a work item generates an answer")]:
        p = cands.command(name, what, "candidates:cand_decide", mutates=True)
        p.add_argument("id", help="the id of a candidate you have claimed")
        p.add_argument("--reason", required=True, help="why, in words the next reader understands "
                                                       f"(at most {limits.REASON:,} characters)")
    p = cands.command("resubmit", "put an ESCALATED candidate back in its queue with reworked text (a specialist or "
                      "an admin); the work item its escalation opened is closed, answered by the rework",
                      "candidates:cand_resubmit", mutates=True)
    p.add_argument("id", help="the id of an ESCALATED candidate")
    p.add_argument("--text", required=True,
                   help=f"the reworked answer, as validators will review it (at most {limits.ANSWER:,} characters)")
    p.add_argument("--horn-type", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE (default: as it was; an "
                                       "OPEN_ISSUE takes the type its reworked text classifies as)")
    p = cands.command("release", "give a claimed candidate back to the head of its queue", "candidates:cand_release", mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p = cands.command("skip", "pass a claimed candidate by, for you alone: it goes back to the head of its queue "
                      "for others, and your claims serve it again only when the queue holds nothing else",
                      "candidates:cand_skip", mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p = cands.command("undo", "undo your last decision within R2K_UNDO_SECONDS (60 by default), while nothing "
                      "has used it: its answer is retired, or its work item closed, and a new candidate "
                      "with the same content is claimed by you", "candidates:cand_undo", mutates=True)
    p.add_argument("id", help="the id of the candidate you decided last")
    cands.command("adjudications", "candidates whose reviewers disagree, awaiting adjudication (a specialist "
                  "or an admin)", "candidates:cand_adjudications")
    p = cands.command("adjudication", "a candidate awaiting adjudication with every review side by side (a "
                      "specialist or an admin)", "candidates:cand_adjudication")
    p.add_argument("id", help="the id of a candidate in ADJUDICATION")
    p = cands.command("adjudicate", "decide a candidate whose reviewers disagree (a specialist or an admin): "
                      "choose one of its reviews, or make your own decision; it publishes as any decision does",
                      "candidates:cand_adjudicate", mutates=True)
    p.add_argument("id", help="the id of a candidate in ADJUDICATION")
    p.add_argument("--choose", metavar="REVIEW_ID", help="the review whose decision stands (its id, as "
                   "`candidates adjudication ID` lists them)")
    p.add_argument("--action", choices=["approve", "revise", "reject"], help="your own decision instead")
    p.add_argument("--text", help=f"the revised answer, for --action revise (at most {limits.ANSWER:,} characters)")
    p.add_argument("--reason", help=f"why, for --action reject (at most {limits.REASON:,} characters)")
    for name in ("approve", "revise", "reject", "escalate", "release", "skip"):
        cands.parsers[name].add_argument(
            "--next", action="store_true",
            help="then claim and print the next candidate of the same queue (the workstation's loop)")
