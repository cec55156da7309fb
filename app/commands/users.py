"""users: users, their authority, their API tokens and SSH keys. The command tree; the handlers are
app/handlers/users.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    users = commands.group("users", "users and their authority (local administration)")
    add = users.command("add", "add a user (an admin; while no admin exists, the data dir's owner)", "users:users_add",
                        mutates=True, authority="admin")
    add.add_argument("name", help="the user's name, as given to --as or R2K_USER")
    add.add_argument("--role", required=True, choices=["validator", "specialist", "admin"],
                     help="validator (reviews candidates), specialist (grey queue, work items) or admin")
    add.add_argument("--horn-types", default="", metavar="H[,H…]",
                     help="for validators: the Horn types they hold authority for, e.g. FACT,RULE")
    users.command("list", "list users", "users:users_list")
    _register_tokens(users)
    add_key = users.command("add-key", "let a public key in through `r2k serve ssh` as this user (an admin; the "
                            "user must exist)", "users:users_add_key", mutates=True, authority="admin")
    add_key.add_argument("name", help="the r2k user the key's SSH sessions act as")
    add_key.add_argument("--key-file", required=True, metavar="F", help="the public key, a .pub file as ssh-keygen "
                         "writes it")
    add_key.add_argument("--authorized-keys", metavar="FILE", help="the file `serve ssh` reads (default: "
                         "ssh/authorized_keys in the data dir)")


def _register_tokens(users) -> None:
    """users token create|list|revoke (docs/architecture.md, "HTTP API"); the handlers are in
    app/handlers/tokens.py."""
    token = users.group("token", "API tokens for `r2k serve api`: an admin's for anyone, a user's for themselves")
    p = token.command("create", "a new token, shown once (it acts as the user in every request)", "tokens:create",
                      mutates=True)
    p.add_argument("--user", metavar="NAME", help="whose token (default: you; another's: an admin)")
    p.add_argument("--name", default="", help="a label to tell it apart by (at most 200 characters)")
    p = token.command("list", "tokens (yours unless --user or --all), never the tokens themselves", "tokens:list_cmd")
    p.add_argument("--user", metavar="NAME", help="another user's tokens (an admin)")
    p.add_argument("--all", action="store_true", help="every user's tokens (an admin)")
    p = token.command("revoke", "revoke a token by id: its requests are refused (401) from now on", "tokens:revoke",
                      mutates=True)
    p.add_argument("id", help="the token's id (`r2k users token list`)")
