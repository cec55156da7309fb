"""Users and their authority. `users` commands are local administration."""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from .. import engine
from ..adapters.postgres import public_row
from ..domain import HORN_TYPES, ROLES, SYSTEM, Actor, parse_horn_type
from ..errors import Conflict, Forbidden, InvalidInput
from .common import mutate

if TYPE_CHECKING:
    from ..context import Context

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


def add(ctx: Context, name: str, role: str, horn_types: list[str] | None = None, *, by: Actor = SYSTEM,
        idempotency_key: str | None = None) -> dict:
    """Add a user. Only an admin (or the system, for set-up code) may."""
    if not (by.is_system or by.role == "admin"):
        raise Forbidden(f"{by.name} ({by.role}) may not add users: only an admin may")
    name = (name or "").strip()
    if not NAME.match(name):
        raise InvalidInput(f"user name {name!r} must be 1–64 letters, digits, '.', '_', '@' or '-'")
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}: expected one of {', '.join(ROLES)}")
    horns = sorted({parse_horn_type(h) for h in horn_types or []}, key=HORN_TYPES.index)
    if role == "validator" and not horns:
        raise InvalidInput("a validator needs --horn-types (for example FACT,RULE)")
    if role != "validator" and horns:
        raise InvalidInput(f"only validators hold Horn-type authority; a {role} takes no --horn-types")

    def work(tx):
        if tx.one("SELECT 1 FROM users WHERE name = %s", (name,)):
            raise Conflict(f"user {name} already exists")
        return public_row(engine.record(tx, "user", "users", {"name": name, "role": role, "horn_types": horns},
                                        by, event_type="user_added").row)

    return mutate(ctx, by, "users.add", {"name": name, "role": role, "horn_types": horns}, work,
                  idempotency_key=idempotency_key)


def list_users(ctx: Context) -> list[dict]:
    with ctx.db.read() as tx:
        return [public_row(r) for r in tx.all("SELECT * FROM users ORDER BY name")]


def resolve(ctx: Context, name: str | None) -> Actor:
    """The acting user; an unknown name is a 403, never a silent default."""
    name = (name or "").strip()
    with ctx.db.read() as tx:
        # A name no user can have (a NUL, a surrogate, 10,000 characters) is unknown without asking.
        row = tx.one("SELECT name, role, horn_types FROM users WHERE name = %s", (name,)) if NAME.match(name) else None
    if row is None:
        shown = repr(name) if len(name) <= 80 else repr(name[:79] + "…")
        raise Forbidden(f"unknown user {shown}: an admin adds users with `r2k users add NAME --role ROLE`")
    return Actor(row["name"], row["role"], frozenset(row["horn_types"] or []))


def admin_exists(ctx: Context) -> bool:
    with ctx.db.read() as tx:
        return tx.one("SELECT 1 FROM users WHERE role = 'admin' LIMIT 1") is not None


def owns_data_dir(ctx: Context) -> bool:
    """Is this process the OS account that owns the data dir (and so holds its credentials)?"""
    try:
        return os.stat(ctx.settings.data_dir).st_uid == os.geteuid()
    except OSError:
        return False


def acting(ctx: Context, name: str | None, *, admin: bool = False, what: str = "administer r2k") -> Actor:
    """The acting user for a command, with `admin=True` an admin. While no admin exists, the OS
    account that owns the data dir administers it (that is how the first admin gets added); anyone
    else gets the 403 of an unknown user."""
    try:
        actor = resolve(ctx, name)
    except Forbidden:
        if owns_data_dir(ctx) and not admin_exists(ctx) and NAME.match((name or "").strip() or "operator"):
            return Actor((name or "").strip() or "operator", "admin")
        raise
    if admin and actor.role != "admin":
        raise Forbidden(f"{actor.name} ({actor.role}) may not {what}: only an admin may")
    return actor
