"""webhooks: events POSTed to other systems, signed, on RQ (docs/architecture.md, "HTTP API"). The
handlers of the tree in app/commands/webhooks.py."""
from __future__ import annotations

from r2k.core.services.operations import webhooks

from ..output import Table, Text

HOOK_COLUMNS = ["id", "state", "url", "events", "failures", "paused_reason", "version"]
LOG_COLUMNS = ["id", "webhook_id", "delivery_id", "event", "attempt", "at", "status_code", "error", "status"]


def add(cli, args):
    made = webhooks.add(cli.ctx, cli.actor, args.url, args.events, idempotency_key=args.idempotency_key)
    return Text(made, f"webhook {made['id']} → {made['url']} for {', '.join(made['events'])}\nsecret: {made['secret']}\n"
                      f"It is shown this once: the receiver checks {webhooks.SIGNATURE}: sha256=HMAC-SHA256(secret, body).")


def list_cmd(cli, args):
    return Table(webhooks.list_hooks(cli.ctx, cli.actor, removed=args.removed), HOOK_COLUMNS)


def remove(cli, args):
    done = webhooks.remove(cli.ctx, cli.actor, args.id, idempotency_key=args.idempotency_key)
    return Text(done, f"webhook {done['id']} is removed: nothing more is delivered to it.")


def resume(cli, args):
    done = webhooks.resume(cli.ctx, cli.actor, args.id, idempotency_key=args.idempotency_key)
    return Text(done, f"webhook {done['id']} takes events again.")


def log_cmd(cli, args):
    return Table(webhooks.delivery_log(cli.ctx, cli.actor, args.id, limit=args.limit), LOG_COLUMNS)
