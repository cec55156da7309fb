"""workitems: work items, questions that need a generated answer. The command tree; the handlers are
app/handlers/workitems.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..bulk import add_ids
from ..cli import bounded_int


def register(commands) -> None:
    wi = commands.group("workitems", "work items: questions that need a generated answer")
    p = wi.command("list", "list work items", "workitems:list_cmd")
    p.add_argument("--state", help="only this state: NEW, GENERATING, PENDING_VALIDATION, IN_CLASSIFICATION, "
                                   "READY_FOR_REVIEW, VALIDATED, NEEDS_REWORK, ESCALATED or CLOSED")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.LIST_LIMIT)})")
    p = wi.command("show", "a work item with its sources, prompt and generated text", "workitems:show")
    p.add_argument("id", help="the work item's id")
    p = wi.command("create", "a work item by hand", "workitems:create", mutates=True)
    p.add_argument("--question", required=True,
                   help=f"the question an answer is needed for (at most {limits.QUESTION:,} characters)")
    p.add_argument("--horn-type", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE, if known")
    p = wi.command("generate", "enqueue generation for a NEW work item", "workitems:generate")
    p.add_argument("id", help="the work item's id")
    p = wi.command("rework", "regenerate a NEEDS_REWORK item with the reason in the prompt", "workitems:rework", mutates=True)
    p.add_argument("id", help="the work item's id")
    p.add_argument("--reason", required=True,
                   help=f"what was wrong with the generated answer (at most {limits.REASON:,} characters)")
    p = wi.command("close", "close a work item", "workitems:close", mutates=True)
    add_ids(p, "work item")
    p.add_argument("--reason", help=f"why it is closed (at most {limits.REASON:,} characters)")
