"""tasks: durable article tasks (docs/architecture.md, "Durable tasks"): Markdown articles through an
AI analysis gate and two reviewers to publication, every change a typed, signed event. The command tree; the handlers are app/handlers/tasks.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int

STATES = "DRAFT, AI_ANALYSIS, PEER_REVIEW, RESOLUTION_REQUIRED, APPROVED, PUBLISHED or DEPRECATED"


def register(commands) -> None:
    t = commands.group("tasks", "durable article tasks: Markdown articles, AI analysis, two reviewers, publication")
    p = t.command("create", "a DRAFT article from a Markdown file", "tasks:create", mutates=True)
    p.add_argument("--title", required=True, help="the article's title (at most 500 characters)")
    p.add_argument("--body-file", metavar="FILE", help="the article, Markdown (- reads stdin)")
    p.add_argument("--supersedes", metavar="ID", help="a PUBLISHED article this is a new version of: publishing "
                                                      "this one deprecates it")
    p.add_argument("--version", dest="task_version", metavar="V", help="a version label, e.g. v2.1.0")
    p = t.command("list", "list tasks", "tasks:list_cmd")
    p.add_argument("--state", help=f"only this state: {STATES}")
    p.add_argument("--reviewer", metavar="USER", help="only tasks assigned to this reviewer")
    p.add_argument("--mine", action="store_true", help="only tasks assigned to me")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.LIST_LIMIT)})")
    p.add_argument("--offset", type=bounded_int("--offset", limits.OFFSET), default=0,
                   help=f"skip this many, newest first (the next page; {limits.said(limits.OFFSET)})")
    p = t.command("show", "a task: its projection, next states and events", "tasks:read")
    p.add_argument("id", help="the task's id")
    p = t.command("events", "a task's typed events, each with its signature status", "tasks:read")
    p.add_argument("id", help="the task's id")
    p = t.command("export", "the article rendered as Markdown with its sources", "tasks:export")
    p.add_argument("id", help="the task's id")
    p = t.command("transition", "request a state change (JSON Schema checked; --idempotency-key required)",
                  "tasks:transition", mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--to", dest="new_state", required=True, metavar="STATE", help=f"the new state: {STATES}")
    p.add_argument("--metadata", metavar="JSON", help='a JSON object: reviewer_ids, ai_confidence_score, '
                   'flagged_claims, version, reason, note, body')
    p = t.command("submit", "DRAFT → AI_ANALYSIS: queue the AI analysis", "tasks:move", mutates=True)
    p.add_argument("id", help="the task's id")
    p = t.command("assign", "assign reviewers (domain experts; never the author)", "tasks:move", mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--reviewers", required=True, metavar="A,B", help="comma-separated user names")
    p = t.command("review", "an assigned reviewer's decision", "tasks:move", mutates=True)
    p.add_argument("id", help="the task's id")
    decision = p.add_mutually_exclusive_group(required=True)
    decision.add_argument("--approve", dest="decision", action="store_const", const="approve",
                          help="approve (the second distinct reviewer's approval makes it APPROVED, then PUBLISHED)")
    decision.add_argument("--reject", dest="decision", action="store_const", const="reject",
                          help="reject: it needs resolution (RESOLUTION_REQUIRED); --reason required")
    p.add_argument("--reason", help=f"why (required to reject; at most {limits.REASON:,} characters)")
    p = t.command("resolve", "RESOLUTION_REQUIRED → PEER_REVIEW: a revised article; approvals are cleared",
                  "tasks:move", mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--note", required=True, help=f"what was resolved (at most {limits.REASON:,} characters)")
    p.add_argument("--body-file", metavar="FILE", help="the revised article, Markdown (default: unchanged)")
    p.add_argument("--version", dest="task_version", metavar="V", help="a new version label")
    p = t.command("deprecate", "PUBLISHED → DEPRECATED by decision (terminal, immutable)", "tasks:move", mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--reason", required=True, help=f"why (at most {limits.REASON:,} characters)")
