"""webhooks: events POSTed to other systems, signed, on RQ (docs/architecture.md, "HTTP API")."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int
from ..output import Table, Text

HOOK_COLUMNS = ["id", "state", "url", "events", "failures", "paused_reason", "version"]
LOG_COLUMNS = ["id", "webhook_id", "delivery_id", "event", "attempt", "at", "status_code", "error", "status"]


def register(commands) -> None:
    w = commands.group("webhooks", "webhooks: chosen events POSTed to a URL, signed with HMAC-SHA256, retried "
                                   "with backoff (an admin)")
    p = w.command("add", "a hook; its secret is shown once", add, mutates=True, authority="admin")
    p.add_argument("url", metavar="URL", help="where to POST (http:// or https://)")
    p.add_argument("--events", required=True, metavar="E[,E…]",
                   help="event names such as candidate.approved,answer.published; ENTITY.* or * for all")
    p = w.command("list", "the hooks, with their state (ACTIVE, PAUSED) and failures", list_cmd, authority="admin")
    p.add_argument("--removed", action="store_true", help="removed hooks too")
    p = w.command("remove", "no more deliveries to a hook (its log is kept)", remove, mutates=True, authority="admin")
    p.add_argument("id", help="the hook's id")
    p = w.command("resume", "a paused hook takes events again", resume, mutates=True, authority="admin")
    p.add_argument("id", help="the hook's id")
    p = w.command("log", "every delivery attempt, newest first", log_cmd, authority="admin")
    p.add_argument("id", nargs="?", help="only this hook's")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=50,
                   help=f"at most this many (default 50; {limits.said(limits.LIST_LIMIT)})")


def add(cli, args):
    from r2k.core.services import webhooks

    made = webhooks.add(cli.ctx, cli.actor, args.url, args.events, idempotency_key=args.idempotency_key)
    return Text(made, f"webhook {made['id']} → {made['url']} for {', '.join(made['events'])}\nsecret: {made['secret']}\n"
                      f"It is shown this once: the receiver checks {webhooks.SIGNATURE}: sha256=HMAC-SHA256(secret, body).")


def list_cmd(cli, args):
    from r2k.core.services import webhooks

    return Table(webhooks.list_hooks(cli.ctx, cli.actor, removed=args.removed), HOOK_COLUMNS)


def remove(cli, args):
    from r2k.core.services import webhooks

    done = webhooks.remove(cli.ctx, cli.actor, args.id, idempotency_key=args.idempotency_key)
    return Text(done, f"webhook {done['id']} is removed: nothing more is delivered to it.")


def resume(cli, args):
    from r2k.core.services import webhooks

    done = webhooks.resume(cli.ctx, cli.actor, args.id, idempotency_key=args.idempotency_key)
    return Text(done, f"webhook {done['id']} takes events again.")


def log_cmd(cli, args):
    from r2k.core.services import webhooks

    return Table(webhooks.delivery_log(cli.ctx, cli.actor, args.id, limit=args.limit), LOG_COLUMNS)
