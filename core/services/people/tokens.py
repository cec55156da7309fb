"""API tokens (docs/architecture.md, "HTTP API"): each user's bearer credentials for `r2k serve api`.

A token is made for a user by an admin or by the user, shown once, and kept only as its SHA-256
(256 random bits: nothing to guess from a plain hash). Every request sends it as
`Authorization: Bearer TOKEN` and acts as its user, whose authority the core checks as for any
caller. A missing, unknown or revoked token is a 401, logged with its reason, never the token.
Making and revoking are events on the user (`user_token_created`, `user_token_revoked`).
"""
from __future__ import annotations

import hashlib
import logging
import secrets
from typing import TYPE_CHECKING

from ...domain import Actor, limits, parse_id
from ...errors import Conflict, Forbidden, NotFound, Unauthorized
from ...events import append, now
from ..unit_of_work import in_unit_of_work
from .users import NAME

if TYPE_CHECKING:
    from ...context import Context

log = logging.getLogger(__name__)

PREFIX = "r2k_"  # every token starts so: a secret scanner, or a person, tells an r2k token at a glance
SHOWN = 12  # characters of a token kept to tell it apart in a list (the prefix and 8 of its 43 random ones)
TOKEN_NAME = 200  # characters of a token's label
USED_EVERY = 60  # seconds: a token's last use is written at most this often (not one write per request)
COLUMNS = "id, user_name, name, prefix, created_by, created_at, last_used_at, revoked_at, revoked_by"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _may_manage(by: Actor, user: str, what: str) -> None:
    """An admin manages anyone's tokens; a user their own (403 otherwise, before anything is read)."""
    if by.role != "admin" and by.name != user:
        raise Forbidden(f"{by.name} ({by.role}) may not {what} of {user}: an admin may, or {user} themselves")


def create(ctx: Context, by: Actor, user: str | None = None, name: str = "", *,
           idempotency_key: str | None = None) -> dict:
    """A new token for `user` (default: `by`). The result holds the token itself, the only time it is
    shown; a repeat under the same idempotency key returns that same result."""
    user = (user or by.name).strip()
    _may_manage(by, user, "make tokens")
    name = (limits.text(name, "a token's name", TOKEN_NAME) or "").strip()
    token = PREFIX + secrets.token_urlsafe(32)

    def work(tx):
        row = tx.one("SELECT * FROM users WHERE name = %s FOR UPDATE", (user,)) if NAME.match(user) else None
        if row is None:
            raise NotFound(f"no user {user!r}: an admin adds users with `r2k users add NAME --role ROLE`")
        at = now()
        made = tx.one(f"INSERT INTO api_tokens (user_name, name, prefix, token_hash, created_by, created_at) "
                      f"VALUES (%s, %s, %s, %s, %s, %s) RETURNING {COLUMNS}",
                      (user, name, token[:SHOWN], digest(token), by.name, at))
        values = {"version": row["version"] + 1, "updated_at": at}
        tx.update("users", row["id"], values)
        append(tx, tx.signer, "user", row["id"], "user_token_created", by.name,
               {"set": values, "token": {"id": made["id"], "name": name, "prefix": made["prefix"]}}, at=at)
        return {**_shown(made), "token": token}

    return in_unit_of_work(ctx, by, "tokens.create", {"user": user, "name": name}, work,
                           idempotency_key=idempotency_key)


def _shown(row: dict) -> dict:
    return {**row, "state": "REVOKED" if row["revoked_at"] else "ACTIVE"}


def list_tokens(ctx: Context, by: Actor, user: str | None = None, *, all_users: bool = False) -> list[dict]:
    """A user's tokens (default: `by`'s own; every user's with `all_users`, for an admin), newest
    first, never the token itself."""
    if all_users:
        if by.role != "admin":
            raise Forbidden(f"{by.name} ({by.role}) may not list every user's tokens: only an admin may")
        with ctx.db.read() as tx:
            return [_shown(r) for r in tx.all(f"SELECT {COLUMNS} FROM api_tokens ORDER BY id DESC")]
    user = (user or by.name).strip()
    _may_manage(by, user, "list the tokens")
    with ctx.db.read() as tx:
        return [_shown(r) for r in tx.all(f"SELECT {COLUMNS} FROM api_tokens WHERE user_name = %s ORDER BY id DESC",
                                          (user,))]


def revoke(ctx: Context, by: Actor, token_id, *, idempotency_key: str | None = None) -> dict:
    """Revoke a token by its id: every request with it is a 401 from now on. An admin revokes anyone's,
    a user their own; revoking one revoked already is a 409 that changes nothing."""
    tid = parse_id(token_id, "API token")

    def work(tx):
        row = tx.one(f"SELECT {COLUMNS} FROM api_tokens WHERE id = %s FOR UPDATE", (tid,))
        if row is None or (by.role != "admin" and row["user_name"] != by.name):
            raise NotFound(f"no API token {tid}" + ("" if by.role == "admin" else " of yours"))
        if row["revoked_at"] is not None:
            raise Conflict(f"API token {tid} was revoked already, at {row['revoked_at']:%Y-%m-%d %H:%M} by "
                           f"{row['revoked_by']}")
        at = now()
        done = tx.one(f"UPDATE api_tokens SET revoked_at = %s, revoked_by = %s WHERE id = %s RETURNING {COLUMNS}",
                      (at, by.name, tid))
        user = tx.one("SELECT * FROM users WHERE name = %s FOR UPDATE", (row["user_name"],))
        values = {"version": user["version"] + 1, "updated_at": at}
        tx.update("users", user["id"], values)
        append(tx, tx.signer, "user", user["id"], "user_token_revoked", by.name,
               {"set": values, "token": {"id": tid, "prefix": row["prefix"]}}, at=at)
        return _shown(done)

    return in_unit_of_work(ctx, by, "tokens.revoke", {"id": tid}, work, idempotency_key=idempotency_key)


def bearer(header: str | None) -> str:
    """The token of an `Authorization: Bearer TOKEN` header; a 401 saying what is wrong otherwise."""
    if not header:
        raise Unauthorized("no credential: send `Authorization: Bearer TOKEN` (`r2k users token create` makes one)")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header is not `Bearer TOKEN`")
    return token.strip()


def authenticate(ctx: Context, header: str | None, where: str = "") -> Actor:
    """The user an `Authorization` header's token acts as. A missing, malformed, unknown or revoked
    token is a 401, logged with the reason and `where` (the client's address), never the token."""
    try:
        token = bearer(header)
        if len(token) > 200 or not token.isascii():
            raise Unauthorized("the token is not one r2k made")
        # One statement on its own (no BEGIN and COMMIT around it: one round trip, not three), on
        # every request, so a token revoked a moment ago is refused at once (docs/architecture.md,
        # "HTTP API": tokens).
        with ctx.db.autocommit() as tx:
            row = tx.one("SELECT t.id, t.revoked_at, t.last_used_at, u.name, u.role, u.horn_types FROM api_tokens t "
                         "JOIN users u ON u.name = t.user_name WHERE t.token_hash = %s", (digest(token),))
        if row is None:
            raise Unauthorized("the token is unknown")
        if row["revoked_at"] is not None:
            raise Unauthorized("the token was revoked")
    except Unauthorized as refused:
        log.warning("API request refused (401) from %s: %s", where or "an unknown address", refused.message)
        raise
    at = now()
    if row["last_used_at"] is None or (at - row["last_used_at"]).total_seconds() > USED_EVERY:
        with ctx.db.autocommit() as tx:
            tx.execute("UPDATE api_tokens SET last_used_at = %s WHERE id = %s", (at, row["id"]))
    return Actor(row["name"], row["role"], frozenset(row["horn_types"] or []))

