"""users: users, their authority, their API tokens and SSH keys. The handlers of the tree in
app/commands/users.py."""
from __future__ import annotations

from r2k.core.domain import files, limits
from r2k.core.services.people import users

from ..output import Table


def users_add(cli, args):
    horns = [h for h in args.horn_types.split(",") if h.strip()]
    return users.add(cli.ctx, args.name, args.role, horns, by=cli.actor, idempotency_key=args.idempotency_key)


def users_add_key(cli, args):
    text = files.read_text_argument(args.key_file, "--key-file", limits.KEY_FILE, errors="replace")
    return users.add_key(cli.ctx, args.name, text, by=cli.actor, path=args.authorized_keys,
                         idempotency_key=args.idempotency_key)


def users_list(cli, args):
    return Table(users.list_users(cli.ctx), ["name", "role", "horn_types", "version"])
