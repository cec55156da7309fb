"""Users and their authority. `users` commands are local administration."""
from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.serialization import load_ssh_public_key

from ... import engine
from ...adapters.postgres import public_row
from ...domain import HORN_TYPES, ROLES, SYSTEM, Actor, files, limits, parse_horn_type
from ...errors import Conflict, Forbidden, InvalidInput, NotFound
from ...events import append, now
from ..unit_of_work import in_unit_of_work

if TYPE_CHECKING:
    from ...context import Context

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

    return in_unit_of_work(ctx, by, "users.add", {"name": name, "role": role, "horn_types": horns}, work,
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


# ----------------------------------------------------------------------------- SSH keys (`serve ssh`)
# The authorized keys file maps a public key to the r2k user its SSH sessions act as
# (docs/architecture.md, "Remote access"): one key a line, `TYPE BASE64 user=NAME [comment]`;
# lines starting with # are comments. No OpenSSH options: the server grants one thing only.

KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


def authorized_keys_path(ctx: Context) -> Path:
    return Path(ctx.settings.data_dir) / "ssh" / "authorized_keys"


def parse_public_key(text: str) -> tuple[str, str, str]:
    """A public key as `ssh-keygen` writes it (`TYPE BASE64 [comment]`): its type, base64 and
    SHA256 fingerprint (as `ssh-keygen -l` prints it); anything else is a 400."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip() and not line.strip().startswith("#")]
    if len(lines) != 1:
        raise InvalidInput(f"a key file holds one public key (a .pub file), found {len(lines)} lines")
    parts = lines[0].split()
    if len(parts) < 2 or parts[0] not in KEY_TYPES:
        raise InvalidInput(f"not an OpenSSH public key (expected one of {', '.join(KEY_TYPES)}, then base64; "
                           "no authorized_keys options)")
    try:
        load_ssh_public_key(f"{parts[0]} {parts[1]}".encode())
        blob = base64.b64decode(parts[1], validate=True)
    except (ValueError, TypeError, UnicodeError) as exc:
        raise InvalidInput(f"not a valid {parts[0]} public key: {exc}") from None
    return parts[0], parts[1], fingerprint(blob)


def fingerprint(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def authorized_keys(path: Path) -> dict[str, str]:
    """Fingerprint -> r2k user name, from the authorized keys file (a missing file: no keys). One
    that is not a regular file, or is larger than a keys file may be, is a 400 (the server grants no
    key then): read anyway, a FIFO would hang the server."""
    if not Path(path).exists():
        return {}
    return keys_in(files.read_text_argument(path, "the authorized keys file", limits.KEYS_FILE, errors="replace"))


def keys_in(text: str) -> dict[str, str]:
    """Fingerprint -> user name of each line; a line that is not `TYPE BASE64 user=NAME …` grants nothing."""
    keys: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[0] not in KEY_TYPES or not parts[2].startswith("user="):
            continue
        name = parts[2][len("user="):]
        try:
            blob = base64.b64decode(parts[1], validate=True)
        except ValueError:
            continue
        if NAME.match(name):
            keys.setdefault(fingerprint(blob), name)
    return keys


def _open_keys_file(target: Path) -> int:
    """The authorized keys file opened to read and append, made if missing: a regular file within a keys
    file's size, else a 400 before anything is read or written (opened without blocking, then looked at:
    a FIFO opened to read and write never blocks, but reading it would)."""
    what = f"the authorized keys file {files.shown(target)}"
    kind = files.kind_at(target)
    if kind not in (None, "a regular file"):
        raise InvalidInput(f"{what} is {kind}, not a regular file: no key was added")
    try:
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY, 0o600)
    except OSError as exc:
        raise InvalidInput(f"{what} cannot be opened: {exc.strerror or exc}") from None
    opened = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(opened.st_mode):
        problem = f"is {files.kind_of(opened.st_mode)}, not a regular file: no key was added"
    elif opened.st_size > limits.KEYS_FILE.bytes:
        problem = f"has {opened.st_size:,} bytes; {limits.KEYS_FILE.said()}"
    if problem:
        os.close(fd)
        raise InvalidInput(f"{what} {problem}")
    return fd


def add_key(ctx: Context, name: str, key_text: str, *, by: Actor = SYSTEM, path: Path | None = None,
            idempotency_key: str | None = None) -> dict:
    """Let the holder of a public key in through `r2k serve ssh` as the user `name` (who must exist):
    a line in the authorized keys file (0600, in a 0700 directory), and an event on the user."""
    if not (by.is_system or by.role == "admin"):
        raise Forbidden(f"{by.name} ({by.role}) may not add keys: only an admin may")
    key_type, key_b64, print_ = parse_public_key(key_text)
    name = (name or "").strip()
    target = Path(path) if path else authorized_keys_path(ctx)

    def work(tx):
        row = tx.one("SELECT * FROM users WHERE name = %s FOR UPDATE", (name,)) if NAME.match(name) else None
        if row is None:
            raise NotFound(f"no user {name!r}: add them first with `r2k users add NAME --role ROLE`")
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = _open_keys_file(target)
        with os.fdopen(fd, "r+", encoding="utf-8", errors="replace") as keys:
            fcntl.flock(keys, fcntl.LOCK_EX)  # two add-keys at once each see the other's line
            os.fchmod(keys.fileno(), 0o600)
            keys.seek(0)
            holder = keys_in(keys.read(limits.KEYS_FILE.bytes)).get(print_)
            if holder is not None:
                raise Conflict(f"key {print_} already lets in user {holder}")
            at = now()
            values = {"version": row["version"] + 1, "updated_at": at}
            tx.update("users", row["id"], values)
            append(tx, tx.signer, "user", row["id"], "user_key_added", by.name,
                   {"set": values, "key": {"type": key_type, "fingerprint": print_}}, at=at)
            # Written last in the transaction: a failed write rolls the event back with it.
            keys.write(f"{key_type} {key_b64} user={name}\n")
            keys.flush()
            os.fsync(keys.fileno())
        return {"id": row["id"], "name": name, "version": values["version"], "key_type": key_type,
                "fingerprint": print_, "authorized_keys": str(target)}

    return in_unit_of_work(ctx, by, "users.add_key",
                           {"name": name, "key": f"{key_type} {key_b64}", "path": str(target)},
                           work, idempotency_key=idempotency_key)
