"""users token create|list|revoke: API tokens for `r2k serve api` (docs/architecture.md, "HTTP API")."""
from __future__ import annotations

from ..output import Table, Text

TOKEN_COLUMNS = ["id", "user_name", "name", "prefix", "state", "created_at", "last_used_at", "revoked_by"]


def register_tokens(users) -> None:
    token = users.group("token", "API tokens for `r2k serve api`: an admin's for anyone, a user's for themselves")
    p = token.command("create", "a new token, shown once (it acts as the user in every request)", create,
                      mutates=True)
    p.add_argument("--user", metavar="NAME", help="whose token (default: you; another's: an admin)")
    p.add_argument("--name", default="", help="a label to tell it apart by (at most 200 characters)")
    p = token.command("list", "tokens (yours unless --user or --all), never the tokens themselves", list_cmd)
    p.add_argument("--user", metavar="NAME", help="another user's tokens (an admin)")
    p.add_argument("--all", action="store_true", help="every user's tokens (an admin)")
    p = token.command("revoke", "revoke a token by id: its requests are refused (401) from now on", revoke,
                      mutates=True)
    p.add_argument("id", help="the token's id (`r2k users token list`)")


def create(cli, args):
    from r2k.core.services import tokens

    made = tokens.create(cli.ctx, cli.actor, args.user, args.name, idempotency_key=args.idempotency_key)
    return Text(made, f"API token {made['id']} for {made['user_name']}" + (f" ({made['name']})" if made["name"] else "")
                + f":\n{made['token']}\nIt is shown this once: keep it now. Send it as `Authorization: Bearer TOKEN`.")


def list_cmd(cli, args):
    from r2k.core.services import tokens

    return Table(tokens.list_tokens(cli.ctx, cli.actor, args.user, all_users=args.all), TOKEN_COLUMNS)


def revoke(cli, args):
    from r2k.core.services import tokens

    done = tokens.revoke(cli.ctx, cli.actor, args.id, idempotency_key=args.idempotency_key)
    return Text(done, f"API token {done['id']} of {done['user_name']} is revoked: its requests are refused from now on.")
