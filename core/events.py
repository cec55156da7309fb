"""The append-only, hash-chained, signed event log; verify and replay.

Each aggregate (one candidate, one answer, one grey entry …) has its own chain: event `seq` n
carries the hash of event n-1, so writers of different entities never wait on each other.
An event's hash is SHA-256 over a canonical JSON of its fields; the hash is signed with the
process's Ed25519 key, whose public half is registered in `signing_keys` so any machine can see
which key signed what.

`signing_keys` is a table, and whoever can write the events table can write it too, so verify
never trusts it: a signature counts only under a key of the trust store, which lives outside the
database (the data dir's own key, and the file R2K_TRUSTED_KEYS names). Removals that leave every
chain well-formed (a cut tail, a whole chain gone) are found against the signed checkpoints of
core/audit/.

Every projection row is written together with an event whose payload's `set` holds the columns it
wrote; replay folds those `set`s per aggregate and compares the result with the tables.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from psycopg.types.json import Jsonb

from .adapters.postgres import Database, Tx, jsonable
from .domain import files
from .domain.limits import KEY_FILE, KEYS_FILE, refused_in
from .errors import InvalidInput

GENESIS = ""


def canonical(value: Any) -> bytes:
    """The canonical JSON of `value` (docs/architecture.md, "Event format"). What neither the hash nor
    PostgreSQL can take (a lone surrogate, a NUL, which jsonb refuses, a NaN or an infinity) is a 400
    naming where it is, never a UnicodeEncodeError or a refusal from the database: the services check
    their fields first, and this is the last check before the event log."""
    try:
        text = _canonical_json(value)
        data = text.encode()
    except (UnicodeEncodeError, ValueError):
        why = refused_in(value)
        if why is None:
            raise
        raise InvalidInput(why) from None
    if "\\u0000" in text:  # a NUL (or the six characters \u0000 typed as text: then refused_in finds nothing)
        why = refused_in(value)
        if why is not None:
            raise InvalidInput(why)
    return data


# Built once: json.dumps with options builds a new encoder on every call (this runs for every event).
_canonical_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str,
                                   allow_nan=False).encode


def event_hash(fields: dict) -> str:
    return hashlib.sha256(canonical(fields)).hexdigest()


def hashed_fields(aggregate_type: str, aggregate_id: str, seq: int, type_: str, actor: str, payload: dict,
                  created_at: datetime, idempotency_key: str | None, prev_hash: str) -> dict:
    return {
        "aggregate_type": aggregate_type, "aggregate_id": aggregate_id, "seq": seq, "type": type_,
        "actor": actor, "payload": payload, "created_at": created_at.astimezone(timezone.utc).isoformat(),
        "idempotency_key": idempotency_key, "prev_hash": prev_hash,
    }


class Signer:
    """The Ed25519 key events are signed with: R2K_SIGNING_KEY_FILE, or generated into the data dir."""

    def __init__(self, key_file: Path):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key_file = Path(key_file)
        if not key_file.exists():
            key_file.parent.mkdir(parents=True, exist_ok=True)
            pem = Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
            # O_EXCL: two processes generating at once keep the first key, never a mix.
            try:
                fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(pem)
            except FileExistsError:
                pass
        self._key = private_key(key_file)
        self.public_key = self._key.public_key().public_bytes(serialization.Encoding.Raw,
                                                              serialization.PublicFormat.Raw)
        self.key_id = hashlib.sha256(self.public_key).hexdigest()[:16]
        self._registered: set[int] = set()
        self._lock = threading.Lock()

    def sign(self, digest: str) -> bytes:
        return self._key.sign(digest.encode())

    def register(self, tx: Tx) -> None:
        """Publish the public key (once per connection) so verify can check this signer's events."""
        if id(tx.conn) in self._registered:
            return
        tx.execute("INSERT INTO signing_keys (key_id, public_key) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                   (self.key_id, self.public_key))
        with self._lock:
            self._registered.add(id(tx.conn))


def now() -> datetime:
    return datetime.now(timezone.utc)


EVENT_COLUMNS = ("aggregate_type, aggregate_id, seq, type, actor, payload, created_at, idempotency_key, "
                 "prev_hash, hash, signature, key_id")
_INSERT = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"

HEAD_SQL = ("SELECT seq, hash FROM events WHERE aggregate_type = %s AND aggregate_id = %s "
            "ORDER BY seq DESC LIMIT 1")


def chain_head(tx: Tx, aggregate_type: str, aggregate_id: str) -> tuple[int, str]:
    """The last (seq, hash) of an aggregate's chain in this transaction; read once, then followed."""
    key = (aggregate_type, aggregate_id)
    if key not in tx.heads:
        row = tx.one(HEAD_SQL, key)
        tx.heads[key] = (row["seq"], row["hash"]) if row else (0, GENESIS)
    return tx.heads[key]


def heads(tx: Tx, aggregate_type: str, aggregate_ids: list) -> None:
    """`chain_head` for many aggregates of one type, read in one statement (a new row's chain is
    empty, but its id is looked up all the same, as `chain_head` looks up one)."""
    wanted = [str(i) for i in aggregate_ids if (aggregate_type, str(i)) not in tx.heads]
    if not wanted:
        return
    found = {r["aggregate_id"]: (r["seq"], r["hash"]) for r in tx.all(
        "SELECT DISTINCT ON (aggregate_id) aggregate_id, seq, hash FROM events WHERE aggregate_type = %s "
        "AND aggregate_id = ANY(%s) ORDER BY aggregate_id, seq DESC", (aggregate_type, wanted))}
    for aggregate_id in wanted:
        tx.heads[(aggregate_type, aggregate_id)] = found.get(aggregate_id, (0, GENESIS))


def event_values(tx: Tx, signer: Signer, aggregate_type: str, aggregate_id: Any, type_: str, actor: str,
                 payload: dict, *, idempotency_key: str | None = None, at: datetime | None = None) -> list:
    """The aggregate's next event, hashed and signed, as parameters for EVENT_COLUMNS.

    The caller holds the aggregate's row lock, creates it, or writes it only if unchanged since it
    read the chain head (engine.apply_if_unchanged): either way the head cannot move under it.
    """
    signer.register(tx)
    tx.events_appended += 1  # counted for the checkpoint after the commit (core.audit)
    aggregate_id = str(aggregate_id)
    seq, prev_hash = chain_head(tx, aggregate_type, aggregate_id)
    seq += 1
    at = at or now()
    payload = jsonable(payload)
    digest = event_hash(hashed_fields(aggregate_type, aggregate_id, seq, type_, actor, payload, at,
                                      idempotency_key, prev_hash))
    tx.heads[(aggregate_type, aggregate_id)] = (seq, digest)
    return [aggregate_type, aggregate_id, seq, type_, actor, Jsonb(payload), at, idempotency_key,
            prev_hash, digest, signer.sign(digest), signer.key_id]


def append(tx: Tx, signer: Signer, aggregate_type: str, aggregate_id: Any, type_: str, actor: str,
           payload: dict, *, idempotency_key: str | None = None, at: datetime | None = None) -> None:
    """Append one event to the aggregate's chain, in the caller's transaction."""
    tx.execute(_INSERT, event_values(tx, signer, aggregate_type, aggregate_id, type_, actor, payload,
                                     idempotency_key=idempotency_key, at=at))


def append_all(tx: Tx, logged: list[list]) -> None:
    """Write events made by `event_values` (in the order they were made: a chain's events follow
    one another) with one COPY, in the caller's transaction."""
    if not logged:
        return
    with tx.conn.cursor().copy(f"COPY events ({EVENT_COLUMNS}) FROM STDIN") as copy:
        for values in logged:
            copy.write_row(values)


# ----------------------------------------------------------------------------- trust store

TRUSTED_KEYS_FORMAT = ("one key a line: the 32-byte raw Ed25519 public key in hex (64 digits) or base64 "
                       "(44 characters), optionally followed by a comment; lines starting with # are comments")


def key_id_of(public_key: bytes) -> str:
    return hashlib.sha256(public_key).hexdigest()[:16]


def _decode_key(token: str) -> bytes | None:
    import base64
    import binascii

    if len(token) == 64:
        try:
            return bytes.fromhex(token)
        except ValueError:
            pass
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def parse_trusted_keys(path: Path) -> dict[str, bytes]:
    """The file of trusted public keys (R2K_TRUSTED_KEYS): key id -> raw public key.

    Format: TRUSTED_KEYS_FORMAT, e.g.
        # rotated 2026-11, host ops-2
        3Jc8…base64…=  ops-2 signing key
        9f1c…64 hex digits…
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    path = Path(path)
    text = files.read_text_argument(path, "the trusted keys file (R2K_TRUSTED_KEYS)", KEYS_FILE)
    keys: dict[str, bytes] = {}
    for number, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        if not body or body.startswith("#"):
            continue
        token = body.split(None, 1)[0]
        raw = _decode_key(token)
        if raw is not None:
            try:
                Ed25519PublicKey.from_public_bytes(raw)
            except ValueError:
                raw = None
        if raw is None:
            shown = token if len(token) <= 24 else token[:21] + "…"
            raise InvalidInput(f"{path} line {number}: {shown!r} is not an Ed25519 public key; "
                               f"the format is {TRUSTED_KEYS_FORMAT}")
        keys[key_id_of(raw)] = raw
    return keys


def own_public_key(settings) -> bytes | None:
    """The public half of the data dir's signing key, when this host has one (never generated here)."""
    from cryptography.hazmat.primitives import serialization

    key_file = Path(settings.signing_key_file or Path(settings.data_dir) / "signing_key.pem")
    if not key_file.exists():
        return None
    key = private_key(key_file)
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def private_key(key_file: Path):
    """The Ed25519 private key of a PEM file (the data dir's signing_key.pem or R2K_SIGNING_KEY_FILE):
    a regular file of at most a key file's size, else a 400 that says what it is instead."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    what = "the signing key file (R2K_SIGNING_KEY_FILE)"
    pem = files.read_argument(key_file, what, KEY_FILE)
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):  # not PEM, a passphrase, an unknown algorithm
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidInput(f"{what} {files.shown(key_file)} is not an Ed25519 private key in PEM "
                           "(unencrypted PKCS8, as r2k writes it)")
    return key


def trust_store(settings) -> dict[str, bytes]:
    """The keys whose signatures count: key id -> raw Ed25519 public key."""
    keys = parse_trusted_keys(settings.trusted_keys) if settings.trusted_keys else {}
    own = own_public_key(settings)
    if own is not None:
        keys[key_id_of(own)] = own
    return keys


def verify_signature(public_key: bytes, signature: bytes, digest: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, digest.encode())
    except (InvalidSignature, ValueError):
        return False
    return True


# ----------------------------------------------------------------------------- replay

# aggregate type -> projection table. Child histories are aggregates of their own.
PROJECTIONS = {
    "user": "users",
    "source_document": "source_documents",
    "candidate": "candidates",
    "validation_record": "validation_records",
    "answer": "approved_answers",
    "work_item": "work_items",
    "generated_candidate": "generated_candidates",
    "conflict_flag": "conflict_flags",
    "grey_entry": "grey_entries",
    "grey_transition": "grey_transitions",
    "task": "durable_tasks",
    "comment": "comments",
    "guidelines": "queue_guidelines",
    "queue_settings": "queue_settings",
    "candidate_review": "candidate_reviews",
}


def _normal(value: Any) -> Any:
    """Compare values as they look in JSON, timestamps as instants."""
    value = jsonable(value)
    if isinstance(value, str) and len(value) >= 19 and value[10:11] == "T":
        try:
            return datetime.fromisoformat(value).astimezone(timezone.utc).isoformat()
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def replay(db: Database) -> dict:
    """Fold every aggregate's events into the row they imply and compare it with the table."""
    rebuilt: dict[str, dict[str, dict]] = {t: {} for t in PROJECTIONS}
    events = 0
    with db.connection() as conn:
        with conn.transaction():
            cursor = conn.cursor(name="replay_events")
            cursor.itersize = 5000
            cursor.execute("SELECT aggregate_type, aggregate_id, payload FROM events "
                           "ORDER BY aggregate_type, aggregate_id, seq")
            for ev in cursor:
                events += 1
                if ev["aggregate_type"] not in rebuilt:
                    continue
                state = rebuilt[ev["aggregate_type"]].setdefault(ev["aggregate_id"], {})
                state.update(ev["payload"].get("set", {}))
            cursor.close()
        differences = []
        for aggregate, table in PROJECTIONS.items():
            expected = rebuilt[aggregate]
            actual = {str(r["id"]): r for r in conn.execute(f"SELECT * FROM {table}").fetchall()}
            for agg_id, row in actual.items():
                if agg_id not in expected:
                    differences.append({"aggregate_type": aggregate, "id": agg_id, "column": None,
                                        "problem": "row has no events"})
                    continue
                for column, value in expected[agg_id].items():
                    if column not in row:
                        continue
                    if _normal(row[column]) != _normal(value):
                        differences.append({"aggregate_type": aggregate, "id": agg_id, "column": column,
                                            "from_events": jsonable(value), "in_table": jsonable(row[column])})
            for agg_id in expected.keys() - actual.keys():
                differences.append({"aggregate_type": aggregate, "id": agg_id, "column": None,
                                    "problem": "events exist but the row is missing"})
    return {"ok": not differences, "events": events,
            "rows": sum(len(v) for v in rebuilt.values()), "differences": differences}
