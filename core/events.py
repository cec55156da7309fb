"""The append-only, hash-chained, signed event log (DESIGN §6); verify and replay.

Each aggregate (one candidate, one answer, one grey entry …) has its own chain: event `seq` n
carries the hash of event n-1, so writers of different entities never wait on each other.
An event's hash is SHA-256 over a canonical JSON of its fields; the hash is signed with the
process's Ed25519 key, whose public half is registered in `signing_keys` so any machine can verify.

Every projection row is written together with an event whose payload's `set` holds the columns it
wrote; replay folds those `set`s per aggregate and compares the result with the tables.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .adapters.postgres import Database, Tx, jsonable

GENESIS = ""


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


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
        self._key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
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


def event_values(tx: Tx, signer: Signer, aggregate_type: str, aggregate_id: Any, type_: str, actor: str,
                 payload: dict, *, idempotency_key: str | None = None, at: datetime | None = None) -> list:
    """The aggregate's next event, hashed and signed, as parameters for EVENT_COLUMNS.

    The caller holds the aggregate's row lock, creates it, or writes it only if unchanged since it
    read the chain head (engine.apply_if_unchanged): either way the head cannot move under it.
    """
    signer.register(tx)
    aggregate_id = str(aggregate_id)
    seq, prev_hash = chain_head(tx, aggregate_type, aggregate_id)
    seq += 1
    at = at or now()
    payload = jsonable(payload)
    digest = event_hash(hashed_fields(aggregate_type, aggregate_id, seq, type_, actor, payload, at,
                                      idempotency_key, prev_hash))
    from psycopg.types.json import Jsonb

    tx.heads[(aggregate_type, aggregate_id)] = (seq, digest)
    return [aggregate_type, aggregate_id, seq, type_, actor, Jsonb(payload), at, idempotency_key,
            prev_hash, digest, signer.sign(digest), signer.key_id]


def append(tx: Tx, signer: Signer, aggregate_type: str, aggregate_id: Any, type_: str, actor: str,
           payload: dict, *, idempotency_key: str | None = None, at: datetime | None = None) -> None:
    """Append one event to the aggregate's chain, in the caller's transaction."""
    tx.execute(_INSERT, event_values(tx, signer, aggregate_type, aggregate_id, type_, actor, payload,
                                     idempotency_key=idempotency_key, at=at))


# ----------------------------------------------------------------------------- verify

@dataclass
class Broken:
    event_id: int
    aggregate_type: str
    aggregate_id: str
    seq: int
    problem: str

    def as_dict(self) -> dict:
        return {"event_id": self.event_id, "aggregate_type": self.aggregate_type,
                "aggregate_id": self.aggregate_id, "seq": self.seq, "problem": self.problem}


def verify(db: Database, batch: int = 5000) -> dict:
    """Recompute every chain and signature; name the first broken link of each broken chain."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    broken: list[Broken] = []
    checked = 0
    with db.connection() as conn:
        keys = {r["key_id"]: Ed25519PublicKey.from_public_bytes(bytes(r["public_key"]))
                for r in conn.execute("SELECT key_id, public_key FROM signing_keys").fetchall()}
        heads: dict[tuple[str, str], tuple[int, str]] = {}
        bad_chains: set[tuple[str, str]] = set()
        with conn.transaction():
            cursor = conn.cursor(name="verify_events")
            cursor.itersize = batch
            cursor.execute("SELECT * FROM events ORDER BY aggregate_type, aggregate_id, seq")
            for ev in cursor:
                checked += 1
                chain = (ev["aggregate_type"], ev["aggregate_id"])
                if chain in bad_chains:
                    continue
                expected_seq, expected_prev = heads.get(chain, (0, GENESIS))
                problem = None
                if ev["seq"] != expected_seq + 1:
                    problem = f"sequence gap: expected seq {expected_seq + 1}, found {ev['seq']}"
                elif ev["prev_hash"] != expected_prev:
                    problem = "prev_hash does not match the previous event's hash"
                else:
                    recomputed = event_hash(hashed_fields(
                        ev["aggregate_type"], ev["aggregate_id"], ev["seq"], ev["type"], ev["actor"],
                        ev["payload"], ev["created_at"], ev["idempotency_key"], ev["prev_hash"]))
                    if recomputed != ev["hash"]:
                        problem = "content does not match its hash (altered after it was written)"
                    else:
                        key = keys.get(ev["key_id"])
                        if key is None:
                            problem = f"signed by unknown key {ev['key_id']}"
                        else:
                            try:
                                key.verify(bytes(ev["signature"]), ev["hash"].encode())
                            except InvalidSignature:
                                problem = "signature does not verify"
                if problem:
                    broken.append(Broken(ev["id"], ev["aggregate_type"], ev["aggregate_id"], ev["seq"], problem))
                    bad_chains.add(chain)
                else:
                    heads[chain] = (ev["seq"], ev["hash"])
            cursor.close()
    return {"ok": not broken, "events": checked, "chains": len(heads) + len(bad_chains),
            "broken": [b.as_dict() for b in broken]}


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
