"""Checking: every checkpoint (both copies, signatures, links, roots) folded from the deltas, trusting
no table, and `audit verify`'s one streaming pass over every chain and signature."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..config import get_settings
from ..errors import InvalidInput
from ..events import GENESIS, event_hash, hashed_fields, trust_store
from .file import checkpoint_file, file_delta, scan_file
from .merkle import BucketTree, PrefixTree, bucket_digest, bucket_of, chain_key, leaf_hash
from .records import FORMAT, delta_digest, header, record_format, record_problems

if TYPE_CHECKING:
    from ..adapters.postgres import Database


@dataclass
class Inspection:
    """What the checkpoints say: their problems, and the heads the chosen anchor fixed."""
    problems: list[dict] = field(default_factory=list)  # {"number", "problem"}
    anchor: dict | None = None
    heads: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    database: int = 0
    file: int = 0
    checked: int = 0

    def add(self, number: int | None, problem: str) -> None:
        self.problems.append({"number": number, "problem": problem})

    def as_dict(self) -> dict:
        return {"database": self.database, "file": self.file, "checked": self.checked, "problems": self.problems}


class Fold:
    """The heads of every chain as the checkpoints' deltas, applied in order, make them, and the
    tree of each checkpoint's format over them: format 1's buckets until the first format 2
    checkpoint, which builds the prefix tree from every head folded so far (once), and goes on."""

    def __init__(self):
        self.heads: dict[tuple[str, str], tuple[int, str]] = {}
        self.format: Any = None
        self.leaves: dict[int, dict[tuple[str, str], bytes]] = {}  # format 1: bucket -> chain -> leaf
        self.tree: BucketTree | None = None
        self.prefix: PrefixTree | None = None
        self.events = 0

    def apply(self, record: dict, delta: Any) -> str | None:
        fmt = record_format(record)
        if fmt not in (1, FORMAT):
            return f"its format {fmt!r} is not one this version reads (1 or {FORMAT})"
        if fmt == 1 and self.format == FORMAT:
            return f"it goes back to format 1 after format {FORMAT} checkpoints"
        if fmt == 1 and self.tree is None:
            try:
                self.tree = BucketTree(buckets=record["buckets"])
            except (InvalidInput, TypeError) as exc:
                return str(exc)
        if fmt == FORMAT and self.prefix is None:
            self.prefix = PrefixTree()
            for chain, (seq, digest) in self.heads.items():
                self.prefix.put(chain, chain_key(*chain), leaf_hash(*chain, seq, digest))
            self.leaves, self.tree = {}, None
        self.format = fmt
        touched = set()
        for entry in delta if isinstance(delta, list) else [None]:
            if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)
                    and isinstance(entry[1], str) and isinstance(entry[2], int) and isinstance(entry[3], str)):
                return "its delta is malformed"
            t, i, seq, digest = entry
            before = self.heads.get((t, i))
            if before is not None and seq <= before[0]:
                return f"it moves chain {t} {i} back from seq {before[0]} to seq {seq}"
            self.heads[(t, i)] = (seq, digest)
            self.events += seq - (before[0] if before else 0)
            if self.prefix is not None:
                self.prefix.put((t, i), chain_key(t, i), leaf_hash(t, i, seq, digest))
            else:
                bucket = bucket_of(t, i, self.tree.buckets)
                self.leaves.setdefault(bucket, {})[(t, i)] = leaf_hash(t, i, seq, digest)
                touched.add(bucket)
        if self.prefix is None:
            self.tree.update({b: bucket_digest(self.leaves[b]) for b in touched})
        return None

    @property
    def root(self) -> str:
        return self.prefix.root().hex() if self.prefix is not None else self.tree.root


def inspect(conn, settings, trust: dict[str, bytes], anchor: dict | None = None,
            anchor_name: str = "--anchor") -> Inspection:
    """Check every checkpoint (database and file copies, signatures, links, roots) and rebuild
    the heads of the anchor: `anchor` if given, else the newest checkpoint that checks out."""
    out = Inspection()
    path = checkpoint_file(settings)
    in_file = scan_file(path, out)
    in_db = {r["number"]: r for r in conn.execute("SELECT number, hash, record FROM audit_checkpoints "
                                                    "ORDER BY number").fetchall()}
    out.database, out.file = len(in_db), len(in_file)
    for number in sorted(in_file.keys() - in_db.keys()):
        out.add(number, f"checkpoint {number} is in {path} but missing from the database")
    for number in sorted(in_file.keys() & in_db.keys()):
        if header(in_file[number][0]) != header(in_db[number]["record"]):
            out.add(number, f"checkpoint {number} differs between the database and {path}")
    anchor_problems = record_problems(anchor, trust) if anchor is not None else []
    for p in anchor_problems:
        out.add(anchor.get("number") if isinstance(anchor, dict) else None, f"the {anchor_name} checkpoint: {p}")

    numbers = sorted(in_db.keys() | in_file.keys())
    fold: Fold | None = None
    chosen: dict | None = None   # the last checkpoint that checks out
    snapshot = None              # the heads at the --anchor checkpoint, when older than the last
    deltas = _db_deltas(conn)
    stop = None
    for number in range(1, (numbers[-1] if numbers else 0) + 1):
        copies = []  # (where, header, delta loader)
        if number in in_db:
            record = in_db[number]["record"]
            wrong = record_problems(record, trust)
            if not wrong and in_db[number]["hash"] != record.get("hash"):
                wrong = ["its hash column does not match its record"]
            for p in wrong:
                out.add(number, f"checkpoint {number} in the database: {p}")
            if not wrong:
                copies.append(("database", record, lambda n=number: deltas(n)))
        if number in in_file:
            record, offset = in_file[number]
            wrong = record_problems(record, trust)
            for p in wrong:
                out.add(number, f"checkpoint {number} in {path}: {p}")
            if not wrong:
                copies.append(("file", record, lambda o=offset: file_delta(path, o)))
        if number not in in_db and number not in in_file:
            out.add(number, f"checkpoint {number} is missing from the database and {path}")
        if not copies:
            stop = number
            break
        if len(copies) == 2 and header(copies[0][1]) == header(copies[1][1]):
            where, record, load = copies[0]
            source = "database and file"
        else:  # one good copy, or two that differ: the file's is outside the database's reach
            where, record, load = copies[-1]
            source = where
        problem = None
        if record["prev_hash"] != (chosen["hash"] if chosen else GENESIS):
            problem = f"it does not follow checkpoint {number - 1} (its prev_hash differs)"
        elif chosen and record["watermark"] < chosen["watermark"]:
            problem = f"its watermark is below checkpoint {number - 1}'s"
        else:
            if fold is None:
                fold = Fold()
            delta = load()
            if delta_digest(delta) != record["delta_digest"]:
                problem = f"its delta in the {where} does not match its signed digest"
            else:
                problem = fold.apply(record, delta)
            if problem is None:
                if fold.root != record["root"]:
                    problem = "its recorded heads do not match its signed root"
                elif fold.events != record["events"] or len(fold.heads) != record["chains"]:
                    problem = "its event and chain counts do not match its heads"
        if problem:
            out.add(number, f"checkpoint {number}: {problem}")
            stop = number
            break
        chosen = {**record, "source": source}
        out.checked += 1
        if anchor is not None and not anchor_problems and number == anchor.get("number") \
                and numbers and number < numbers[-1]:
            snapshot = (dict(fold.heads), chosen)
    if stop is not None and numbers and stop < numbers[-1]:
        out.add(stop, f"checkpoints {stop + 1} to {numbers[-1]} were not checked: they build on checkpoint {stop}")

    if anchor is not None and not anchor_problems:
        number = anchor["number"]
        have = snapshot[1] if snapshot else (chosen if chosen and chosen["number"] == number else None)
        if have is None:
            if number not in in_db and number not in in_file:
                out.add(number, f"the {anchor_name} checkpoint {number} is missing from the database and {path}")
            else:
                out.add(number, f"the {anchor_name} checkpoint {number} could not be rebuilt from the "
                                f"checkpoints before it")
        elif header(have) != header(anchor):
            out.add(number, f"checkpoint {number} here differs from the {anchor_name} checkpoint")
        else:
            out.anchor = {**header(anchor), "source": anchor_name}
            out.heads = snapshot[0] if snapshot else fold.heads
            return out
    if chosen is not None:
        out.anchor = {**header(chosen), "source": chosen["source"]}
        out.heads = fold.heads
    return out


def _db_deltas(conn):
    """Deltas from the database, asked for in increasing checkpoint order, read one at a time
    through a server-side cursor (they hold one entry per chain that moved)."""
    state: dict[str, Any] = {}

    def get(number: int) -> list:
        if "rows" not in state:
            state["rows"], state["pending"] = _stream(conn), None
        while True:
            row = state["pending"] or next(state["rows"], None)
            state["pending"] = None
            if row is None or row[0] > number:
                state["pending"] = row
                return []
            if row[0] == number:
                return row[1]

    return get


def _stream(conn) -> Iterator[tuple[int, list]]:
    cursor = conn.cursor(name="audit_deltas")
    cursor.itersize = 50
    cursor.execute("SELECT number, delta FROM audit_checkpoints ORDER BY number")
    try:
        for row in cursor:
            yield row["number"], row["delta"]
    finally:
        cursor.close()


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


def verify(db: Database, batch: int = 5000, *, settings=None, anchor: dict | None = None,
           anchor_name: str = "--anchor") -> dict:
    """Recompute every chain and signature (under the trust store's keys only) and name the first
    broken link of each broken chain; then compare every chain with the heads the newest trusted
    checkpoint (or `anchor`) fixed, naming each chain that is shorter, missing or ends elsewhere.
    One streaming pass over the events."""
    settings = settings or get_settings()
    trust = trust_store(settings)
    keys = {key_id: Ed25519PublicKey.from_public_bytes(raw) for key_id, raw in trust.items()}
    broken: list[Broken] = []
    damaged: list[dict] = []
    checked = chains = 0
    untrusted: set[str] = set()
    with db.connection() as conn:
        listed = {r["key_id"] for r in conn.execute("SELECT key_id FROM signing_keys").fetchall()}
        with conn.transaction():
            checkpoints = inspect(conn, settings, trust, anchor, anchor_name)
        anchored = dict(checkpoints.heads)
        number = checkpoints.anchor["number"] if checkpoints.anchor else None

        def finish(chain, last_seq: int, at_anchor: str | None) -> None:
            if chain not in anchored:
                return
            seq, digest = anchored.pop(chain)
            entry = {"aggregate_type": chain[0], "aggregate_id": chain[1], "anchored_seq": seq,
                     "found_seq": last_seq, "checkpoint": number}
            if at_anchor is None and last_seq < seq:
                damaged.append({**entry, "problem": f"shorter than anchored: it ends at seq {last_seq}, "
                                                    f"checkpoint {number} anchored seq {seq}"})
            elif at_anchor is None:
                damaged.append({**entry, "problem": f"the event at its anchored seq {seq} is missing "
                                                    f"(checkpoint {number})"})
            elif at_anchor != digest:
                damaged.append({**entry, "problem": f"different head: its event seq {seq} is not the one "
                                                    f"checkpoint {number} anchored"})

        with conn.transaction():
            cursor = conn.cursor(name="verify_events")
            cursor.itersize = batch
            cursor.execute("SELECT * FROM events ORDER BY aggregate_type, aggregate_id, seq")
            chain = None
            expected_seq, expected_prev, bad, last_seq, target, at_anchor = 0, GENESIS, False, 0, None, None
            for ev in cursor:
                checked += 1
                here = (ev["aggregate_type"], ev["aggregate_id"])
                if here != chain:
                    if chain is not None:
                        finish(chain, last_seq, at_anchor)
                    chain, chains = here, chains + 1
                    expected_seq, expected_prev, bad, at_anchor = 0, GENESIS, False, None
                    target = anchored.get(here)
                last_seq = ev["seq"]
                if target is not None and ev["seq"] == target[0]:
                    at_anchor = ev["hash"]
                if bad:
                    continue
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
                            if ev["key_id"] in listed:
                                untrusted.add(ev["key_id"])
                                problem = (f"signed by untrusted key {ev['key_id']}: it is in signing_keys "
                                           f"but not in the trust store")
                            else:
                                problem = f"signed by unknown key {ev['key_id']}: not in the trust store"
                        else:
                            try:
                                key.verify(bytes(ev["signature"]), ev["hash"].encode())
                            except InvalidSignature:
                                problem = "signature does not verify"
                if problem:
                    broken.append(Broken(ev["id"], ev["aggregate_type"], ev["aggregate_id"], ev["seq"], problem))
                    bad = True
                else:
                    expected_seq, expected_prev = ev["seq"], ev["hash"]
            if chain is not None:
                finish(chain, last_seq, at_anchor)
            cursor.close()
    for (aggregate_type, aggregate_id), (seq, _) in sorted(anchored.items()):
        damaged.append({"aggregate_type": aggregate_type, "aggregate_id": aggregate_id, "anchored_seq": seq,
                        "found_seq": None, "checkpoint": number,
                        "problem": f"missing: checkpoint {number} anchored it at seq {seq}, the database "
                                   f"has no event of it"})
    damaged.sort(key=lambda d: (d["aggregate_type"], d["aggregate_id"]))
    return {"ok": not broken and not damaged and not checkpoints.problems, "events": checked, "chains": chains,
            "broken": [b.as_dict() for b in broken], "damaged_chains": damaged, "anchor": checkpoints.anchor,
            "checkpoints": checkpoints.as_dict(), "trusted_keys": sorted(trust), "untrusted_keys": sorted(untrusted)}
