"""users token create|list|revoke (the tree is in app/commands/users.py): API tokens for `r2k serve api`
(docs/architecture.md, "HTTP API")."""
from __future__ import annotations

from r2k.core.services.people import tokens

from ..output import Table, Text

TOKEN_COLUMNS = ["id", "user_name", "name", "prefix", "state", "created_at", "last_used_at", "revoked_by"]


def create(cli, args):
    made = tokens.create(cli.ctx, cli.actor, args.user, args.name, idempotency_key=args.idempotency_key)
    return Text(made, f"API token {made['id']} for {made['user_name']}" + (f" ({made['name']})" if made["name"] else "")
                + f":\n{made['token']}\nIt is shown this once: keep it now. Send it as `Authorization: Bearer TOKEN`.")


def list_cmd(cli, args):
    return Table(tokens.list_tokens(cli.ctx, cli.actor, args.user, all_users=args.all), TOKEN_COLUMNS)


def revoke(cli, args):
    done = tokens.revoke(cli.ctx, cli.actor, args.id, idempotency_key=args.idempotency_key)
    return Text(done, f"API token {done['id']} of {done['user_name']} is revoked: its requests are refused from now on.")
