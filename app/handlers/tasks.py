"""tasks: durable article tasks (docs/architecture.md, "Durable tasks"): Markdown articles through an
AI analysis gate and two reviewers to publication, every change a typed, signed event. The handlers of the tree in app/commands/tasks.py."""
from __future__ import annotations

import sys

from r2k.core.domain import files, limits
from r2k.core.errors import InvalidInput
from r2k.core.services import tasks

from ..output import Table, Text

TASK_COLUMNS = ["id", "state", "title", "created_by", "ai_confidence_score", "flagged", "reviewers", "approvals",
                "version"]


def _read_body(path: str | None) -> str | None:
    """The article of --body-file: a regular file within its limit (a FIFO, a device or a folder is
    refused before anything is read), or stdin for `-`."""
    if path is None:
        return None
    if path != "-":
        return files.read_text_argument(path, "--body-file", limits.ARTICLE_FILE)

    try:
        text = sys.stdin.read(limits.ARTICLE_FILE.bytes + 1)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(f"--body-file - (stdin): {getattr(exc, 'strerror', None) or exc}") from None
    if len(text) > limits.ARTICLE_FILE.bytes:
        raise InvalidInput(f"--body-file - (stdin) is over {limits.ARTICLE_FILE.bytes:,} characters; "
                           f"{limits.ARTICLE_FILE.said()}")
    return text


def create(cli, args):
    return tasks.create(cli.ctx, cli.actor, args.title, _read_body(args.body_file) or "", supersedes=args.supersedes,
                        version=args.task_version, idempotency_key=args.idempotency_key)


def list_cmd(cli, args):
    reviewer = cli.actor.name if args.mine else args.reviewer
    return Table(tasks.list_tasks(cli.ctx, args.state, reviewer, limit=args.limit,
                                 offset=args.offset), TASK_COLUMNS)


def read(cli, args):
    cli.actor
    if args.tasks_command == "events":
        return Table(tasks.events(cli.ctx, args.id), ["seq", "type", "actor", "at", "from", "to", "signature"])
    return tasks.show(cli.ctx, args.id)


def export(cli, args):
    cli.actor
    text = tasks.export(cli.ctx, args.id)
    return Text({"id": int(args.id), "markdown": text}, text)


def transition(cli, args):
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
