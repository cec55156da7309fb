"""tasks: durable article tasks (docs/architecture.md, "Durable tasks"): Markdown articles through an
AI analysis gate and two reviewers to publication, every change a typed, signed event."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int
from ..output import Table, Text

TASK_COLUMNS = ["id", "state", "title", "created_by", "ai_confidence_score", "flagged", "reviewers", "approvals",
                "version"]
STATES = "DRAFT, AI_ANALYSIS, PEER_REVIEW, RESOLUTION_REQUIRED, APPROVED, PUBLISHED or DEPRECATED"


def register(commands) -> None:
    t = commands.group("tasks", "durable article tasks: Markdown articles, AI analysis, two reviewers, publication")
    p = t.command("create", "a DRAFT article from a Markdown file", create, mutates=True)
    p.add_argument("--title", required=True, help="the article's title (at most 500 characters)")
    p.add_argument("--body-file", metavar="FILE", help="the article, Markdown (- reads stdin)")
    p.add_argument("--supersedes", metavar="ID", help="a PUBLISHED article this is a new version of: publishing "
                                                      "this one deprecates it")
    p.add_argument("--version", dest="task_version", metavar="V", help="a version label, e.g. v2.1.0")
    p = t.command("list", "list tasks", list_cmd)
    p.add_argument("--state", help=f"only this state: {STATES}")
    p.add_argument("--reviewer", metavar="USER", help="only tasks assigned to this reviewer")
    p.add_argument("--mine", action="store_true", help="only tasks assigned to me")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=200,
                   help=f"at most this many (default 200; {limits.said(limits.LIST_LIMIT)})")
    p.add_argument("--offset", type=bounded_int("--offset", limits.OFFSET), default=0,
                   help=f"skip this many, newest first (the next page; {limits.said(limits.OFFSET)})")
    p = t.command("show", "a task: its projection, next states and events", read)
    p.add_argument("id", help="the task's id")
    p = t.command("events", "a task's typed events, each with its signature status", read)
    p.add_argument("id", help="the task's id")
    p = t.command("export", "the article rendered as Markdown with its sources", export)
    p.add_argument("id", help="the task's id")
    p = t.command("transition", "request a state change (JSON Schema checked; --idempotency-key required)",
                  transition, mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--to", dest="new_state", required=True, metavar="STATE", help=f"the new state: {STATES}")
    p.add_argument("--metadata", metavar="JSON", help='a JSON object: reviewer_ids, ai_confidence_score, '
                   'flagged_claims, version, reason, note, body')
    p = t.command("submit", "DRAFT → AI_ANALYSIS: queue the AI analysis", move, mutates=True)
    p.add_argument("id", help="the task's id")
    p = t.command("assign", "assign reviewers (domain experts; never the author)", move, mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--reviewers", required=True, metavar="A,B", help="comma-separated user names")
    p = t.command("review", "an assigned reviewer's decision", move, mutates=True)
    p.add_argument("id", help="the task's id")
    decision = p.add_mutually_exclusive_group(required=True)
    decision.add_argument("--approve", dest="decision", action="store_const", const="approve",
                          help="approve (the second distinct reviewer's approval makes it APPROVED, then PUBLISHED)")
    decision.add_argument("--reject", dest="decision", action="store_const", const="reject",
                          help="reject: it needs resolution (RESOLUTION_REQUIRED); --reason required")
    p.add_argument("--reason", help=f"why (required to reject; at most {limits.REASON:,} characters)")
    p = t.command("resolve", "RESOLUTION_REQUIRED → PEER_REVIEW: a revised article; approvals are cleared",
                  move, mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--note", required=True, help=f"what was resolved (at most {limits.REASON:,} characters)")
    p.add_argument("--body-file", metavar="FILE", help="the revised article, Markdown (default: unchanged)")
    p.add_argument("--version", dest="task_version", metavar="V", help="a new version label")
    p = t.command("deprecate", "PUBLISHED → DEPRECATED by decision (terminal, immutable)", move, mutates=True)
    p.add_argument("id", help="the task's id")
    p.add_argument("--reason", required=True, help=f"why (at most {limits.REASON:,} characters)")


def _read_body(path: str | None) -> str | None:
    """The article of --body-file: a regular file within its limit (a FIFO, a device or a folder is
    refused before anything is read), or stdin for `-`."""
    from r2k.core.domain import files
    from r2k.core.errors import InvalidInput

    if path is None:
        return None
    if path != "-":
        return files.read_text_argument(path, "--body-file", limits.ARTICLE_FILE)
    import sys

    try:
        text = sys.stdin.read(limits.ARTICLE_FILE.bytes + 1)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(f"--body-file - (stdin): {getattr(exc, 'strerror', None) or exc}") from None
    if len(text) > limits.ARTICLE_FILE.bytes:
        raise InvalidInput(f"--body-file - (stdin) is over {limits.ARTICLE_FILE.bytes:,} characters; "
                           f"{limits.ARTICLE_FILE.said()}")
    return text


def create(cli, args):
    from r2k.core.services import tasks

    return tasks.create(cli.ctx, cli.actor, args.title, _read_body(args.body_file) or "", supersedes=args.supersedes,
                        version=args.task_version, idempotency_key=args.idempotency_key)


def list_cmd(cli, args):
    from r2k.core.services import tasks

    reviewer = cli.actor.name if args.mine else args.reviewer
    return Table(tasks.list_tasks(cli.ctx, args.state, reviewer, limit=args.limit,
                                 offset=args.offset), TASK_COLUMNS)


def read(cli, args):
    from r2k.core.services import tasks

    cli.actor
    if args.tasks_command == "events":
        return Table(tasks.events(cli.ctx, args.id), ["seq", "type", "actor", "at", "from", "to", "signature"])
    return tasks.show(cli.ctx, args.id)


def export(cli, args):
    from r2k.core.services import tasks

    cli.actor
    text = tasks.export(cli.ctx, args.id)
    return Text({"id": int(args.id), "markdown": text}, text)


def transition(cli, args):
    from r2k.core.errors import InvalidInput
    from r2k.core.services import tasks

    request: dict = {"new_state": args.new_state}
    if args.metadata is not None:
        try:
            request["metadata"] = limits.loads_json(args.metadata)
        except ValueError as exc:
            raise InvalidInput(f"--metadata is not JSON: {exc}") from None
    if args.idempotency_key is not None:
        request["idempotency_key"] = args.idempotency_key
    if args.expected_version is not None:
        request["expected_version"] = args.expected_version
    return tasks.transition(cli.ctx, cli.actor, args.id, request)


def move(cli, args):
    from r2k.core.services import tasks

    opts = cli.opts()
    name = args.tasks_command
    if name == "submit":
        return tasks.submit(cli.ctx, cli.actor, args.id, **opts)
    if name == "assign":
        return tasks.assign(cli.ctx, cli.actor, args.id, [r.strip() for r in args.reviewers.split(",")], **opts)
    if name == "review":
        return tasks.review(cli.ctx, cli.actor, args.id, args.decision, args.reason, **opts)
    if name == "resolve":
        return tasks.resolve(cli.ctx, cli.actor, args.id, args.note, _read_body(args.body_file),
                             version=args.task_version, **opts)
    return tasks.deprecate(cli.ctx, cli.actor, args.id, args.reason, **opts)
