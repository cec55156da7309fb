"""A checkpoint record: its signed fields, its hash, its delta's digest, and what is wrong with one on
its own (hash, signer, signature)."""
from __future__ import annotations

import hashlib
from typing import Any

from ..events import canonical, verify_signature

FORMAT = 2                # the checkpoint format this version writes: the prefix tree (merkle.PrefixTree)
HEADER = ("number", "watermark", "events", "chains", "buckets", "root", "prev_hash", "delta_digest",
          "created_at", "key_id")


def _fields(record: dict) -> tuple[str, ...]:
    """A record's signed fields: format 1's records (written before the prefix tree) have no
    "format" field, and their hash stays the one they were signed with."""
    return (*HEADER, "format") if "format" in record else HEADER


def record_format(record: dict) -> Any:
    return record.get("format", 1)


def record_hash(record: dict) -> str:
    return hashlib.sha256(canonical({k: record.get(k) for k in _fields(record)})).hexdigest()


def delta_digest(delta: list) -> str:
    return hashlib.sha256(canonical(delta)).hexdigest()


def header(record: dict) -> dict:
    """A checkpoint as `audit anchor` prints it: everything but the delta (its digest is signed)."""
    return {**{k: record.get(k) for k in _fields(record)}, "hash": record.get("hash"),
            "signature": record.get("signature")}


def record_problems(record: dict, trust: dict[str, bytes]) -> list[str]:
    """What is wrong with a checkpoint record on its own: its hash, its signer, its signature."""
    if not isinstance(record, dict) or any(k not in record for k in (*HEADER, "hash", "signature")):
        return ["it is not a whole checkpoint record"]
    if record_hash(record) != record["hash"]:
        return ["its content does not match its hash (altered after it was signed)"]
    if record["key_id"] not in trust:
        return [f"it is signed by untrusted key {record['key_id']}: not in the trust store"]
    try:
        signature = bytes.fromhex(record["signature"])
    except (TypeError, ValueError):
        return ["its signature does not verify"]
    if not verify_signature(trust[record["key_id"]], signature, record["hash"]):
        return ["its signature does not verify"]
    return []
