"""Signed checkpoints of the event log, so removing events cannot pass unseen.

Hash chains and signatures show that no event was altered; they cannot show that the tail of a
chain, or a whole chain, was not deleted. A checkpoint fixes what existed: the number of events, a
Merkle root over the head (type, id, seq, hash) of every chain, and the previous checkpoint's hash,
signed by the data dir's key. It is written every `checkpoint_events` events or
`checkpoint_seconds` seconds, stored in PostgreSQL and appended to a file in the data dir
(`audit/checkpoints.jsonl`), and `r2k audit anchor` prints the latest to be kept off the host.
`audit verify` (core/events.py) checks the database's chains against the newest checkpoint it
trusts and names every chain that is shorter, missing or ends elsewhere.

Format 2 (FORMAT, migration 0027; docs/architecture.md, "Event log and audit"): the root is a
sparse 16-ary Merkle tree over the chains' keys (PrefixTree), whose nodes the writer keeps in
`audit_nodes`. A checkpoint reads only the nodes on the paths of the chains that moved and the
heads at their ends, checks each against the slot above it and the root against the previous
signed root, and rehashes those paths: O(events since the last checkpoint · log16 chains), not
O(chains). The tables are the writer's cache, never trusted: what does not hash to the signed root
is refused.

Format 1 (records without a "format" field, written before): chains fell into BUCKETS buckets by a
hash of (type, id); a bucket's digest was the RFC 6962 Merkle tree hash of its sorted leaves (leaf
= H(0x00‖leaf), node = H(0x01‖left‖right)); the root the Merkle tree hash of the bucket digests in
order. Such logs still verify; the first format 2 checkpoint checks every stored head against
format 1's root and builds the tree from them, once.

Each checkpoint's record holds its delta (the new head of every chain that moved since the
previous one), so a verifier folds the deltas from the first checkpoint to rebuild the heads any
checkpoint anchored and checks them against its signed root (in the tree of its format), trusting
no table.
"""
from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .domain import files
from .domain.limits import ANCHOR_FILE, JSONTooDeep, loads_json
from .errors import Conflict, InvalidInput
from .events import GENESIS, canonical, event_hash, hashed_fields, trust_store, verify_signature

if TYPE_CHECKING:
    from .adapters.postgres import Database

log = logging.getLogger(__name__)

BUCKETS = 4096            # 2^12: a perfect top tree of 8191 nodes; ~25 chains a bucket at 100,000 chains
LOCK_KEY = 72731003       # pg_advisory_xact_lock: one checkpoint writer at a time (migrations take 72731001)
CHECK_INTERVAL = 1.0      # seconds: a process looks whether a checkpoint is due at most this often
WATERMARK_WAIT = "200ms"  # the longest the writer waits for in-flight inserts (new ones queue behind it)
FORCED_PATIENCE = 10.0    # seconds `audit anchor` keeps trying while writers are busy

HEADER = ("number", "watermark", "events", "chains", "buckets", "root", "prev_hash", "delta_digest",
          "created_at", "key_id")

_EMPTY = hashlib.sha256(b"").digest()


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# ----------------------------------------------------------------------------- the Merkle tree

def leaf_hash(aggregate_type: str, aggregate_id: str, seq: int, digest: str) -> bytes:
    # canonical([type, id, seq, hash]) written out: the same bytes, without its options' slower path.
    return _h(b"\x00" + _leaf_json([aggregate_type, aggregate_id, seq, digest]).encode())


_leaf_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def bucket_of(aggregate_type: str, aggregate_id: str, buckets: int = BUCKETS) -> int:
    return int.from_bytes(_h(f"{aggregate_type}\x00{aggregate_id}".encode())[:4], "big") % buckets


def tree_hash(leaves: list[bytes]) -> bytes:
    """RFC 6962's Merkle tree hash over leaves already hashed with the 0x00 prefix.

    Built bottom up, an odd last node carried up unchanged: the same tree as the RFC's split at
    the largest power of two below n, without its recursion (this runs for every touched bucket)."""
    if not leaves:
        return _EMPTY
    sha = hashlib.sha256
    level = leaves
    while len(level) > 1:
        up = [sha(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            up.append(level[-1])
        level = up
    return level[0]


def bucket_digest(leaves: dict[tuple[str, str], bytes]) -> bytes:
    """A bucket's digest: its leaves in (type, id) order (sorted here, never by a collation)."""
    return tree_hash([leaves[k] for k in sorted(leaves)])


class BucketTree:
    """The top tree over the bucket digests: a perfect binary tree kept level by level, so a
    changed bucket costs log2(BUCKETS) hashes instead of the whole tree."""

    def __init__(self, digests: dict[int, bytes] | None = None, buckets: int = BUCKETS):
        if buckets < 1 or buckets & (buckets - 1):
            raise InvalidInput(f"a checkpoint's bucket count is a power of two, not {buckets}")
        self.buckets = buckets
        level = [_h(b"\x00" + _EMPTY)] * buckets
        for bucket, digest in (digests or {}).items():
            level[bucket] = _h(b"\x00" + digest)
        self.levels = [level]
        while len(level) > 1:
            level = [_h(b"\x01" + level[i] + level[i + 1]) for i in range(0, len(level), 2)]
            self.levels.append(level)

    def update(self, digests: dict[int, bytes]) -> None:
        dirty = set()
        for bucket, digest in digests.items():
            self.levels[0][bucket] = _h(b"\x00" + digest)
            dirty.add(bucket // 2)
        for depth in range(1, len(self.levels)):
            below, here = self.levels[depth - 1], self.levels[depth]
            for i in dirty:
                here[i] = _h(b"\x01" + below[2 * i] + below[2 * i + 1])
            dirty = {i // 2 for i in dirty}

    @property
    def root(self) -> str:
        return self.levels[-1][0].hex()


FORMAT = 2                # the checkpoint format this version writes: the prefix tree below
RADIX = 16                # children per node: one hex digit (nibble) of a chain's key per level
_ZERO = bytes(32)         # an empty slot (no known preimage: no leaf or node hashes to it)


def chain_key(aggregate_type: str, aggregate_id: str) -> str:
    """A chain's place in the prefix tree: SHA-256 of (type, id) in hex (the hash bucket_of reads)."""
    return hashlib.sha256(f"{aggregate_type}\x00{aggregate_id}".encode()).hexdigest()


def node_digest(children: bytes | bytearray) -> bytes:
    """A node's digest from its 16 slots, 32 bytes each, in order (as audit_nodes stores them)."""
    return hashlib.sha256(b"\x01" + children).digest()


def slot_digest(children: bytes | bytearray, digit: str) -> bytes:
    at = int(digit, 16) * 32
    return bytes(children[at:at + 32])


def slot_of(tree: PrefixTree, path: str) -> bytes:
    """What fills the slot at `path` (in the node above it)."""
    return slot_digest(tree.nodes[path[:-1]], path[-1])


_EMPTY_NODE = _ZERO * RADIX


class PrefixTree:
    """Format 2's tree: a sparse 16-ary Merkle tree over the chains' keys (a Merkle Patricia trie).

    A node at path P (a string of hex digits) holds 16 slots, one per next digit. A slot is empty
    (_ZERO), or the leaf hash of the one chain whose key starts with P+digit, or the digest of the
    node P+digit when two or more chains' keys start with it. A node's digest is
    H(0x01 ‖ its 16 slots); the root (path "") is always a node. So the root depends only on the set
    of heads, any chain is found log16(chains) nodes down, and a changed head costs that many
    hashes. The writer holds only the nodes on the paths of the chains that moved (read from
    audit_nodes and checked against the previous signed root); the verifier holds them all (built
    from the checkpoints' deltas). `occupant` names the chain whose leaf fills a slot."""

    def __init__(self):
        self.nodes: dict[str, bytearray] = {"": bytearray(_EMPTY_NODE)}
        self.occupant: dict[str, tuple[str, str]] = {}
        self.dirty: set[str] = {""}
        self.written: set[str] = set()
        self._root: bytes | None = None

    def put(self, chain: tuple[str, str], key: str, leaf: bytes) -> None:
        """Set `chain`'s leaf. Every node on its path must be held (the writer read them)."""
        nodes, occupant = self.nodes, self.occupant
        path = ""
        while True:
            depth = len(path)
            slot = path + key[depth]
            if slot in nodes:
                path = slot
                continue
            held = occupant.get(slot)
            if held is None or held == chain:
                at = int(key[depth], 16) * 32
                nodes[path][at:at + 32] = leaf
                occupant[slot] = chain
                self.dirty.add(path)
                self._root = None
                return
            # Another chain's leaf fills the slot: the slot becomes a node holding both (and
            # deeper ones while their keys still agree, as the loop goes on).
            other = chain_key(*held)
            below = bytearray(_EMPTY_NODE)
            at = int(other[depth + 1], 16) * 32
            below[at:at + 32] = slot_digest(nodes[path], key[depth])
            nodes[slot] = below
            del occupant[slot]
            occupant[slot + other[depth + 1]] = held
            self.dirty.add(slot)
            path = slot

    def root(self) -> bytes:
        """Rehash the changed nodes, deepest first, each into its parent's slot."""
        if self._root is None:
            todo = set()
            for path in self.dirty:
                todo.update(path[:n] for n in range(len(path) + 1))
            nodes = self.nodes
            for path in sorted(todo, key=len, reverse=True):
                if path:
                    at = int(path[-1], 16) * 32
                    nodes[path[:-1]][at:at + 32] = node_digest(nodes[path])
            self.written |= todo  # the nodes whose slots changed: what the writer stores
            self.dirty = set()
            self._root = node_digest(nodes[""])
        return self._root


# ----------------------------------------------------------------------------- records

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


def checkpoint_file(settings) -> Path:
    return Path(settings.data_dir) / "audit" / "checkpoints.jsonl"


def _append_to_file(settings, record: dict) -> None:
    """One line per checkpoint, the whole record with its delta, outside the database."""
    path = checkpoint_file(settings)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # concurrent writers' lines never interleave
        _drop_torn_tail(fd, path)
        line = memoryview((json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode())
        while line:  # a write may be cut short: the rest follows
            line = line[os.write(fd, line):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _drop_torn_tail(fd: int, path: Path) -> None:
    """A writer killed in the middle of its line (a process ending while its checkpoint thread
    wrote) leaves a fragment with no newline: cut it off, so this line starts on a line of its own.
    Only such a fragment goes: every whole line ends with a newline. The database holds that
    checkpoint, so the file is only behind by it, which is no problem for verify."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    pos = size
    while pos > 0:
        step = min(65536, pos)
        chunk = os.pread(fd, step, pos - step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            pos = pos - step + cut + 1
            break
        pos -= step
    os.ftruncate(fd, pos)
    log.warning("%s ended in a partly written line (%d bytes, a writer that died while writing): cut off",
                path, size - pos)


def _last_file_record(settings) -> dict | None:
    """The file's last line, read from the end (the file grows with every checkpoint)."""
    path = checkpoint_file(settings)
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = pos = handle.tell()
            tail = b""
            while pos > 0 and tail.count(b"\n") < 2:
                step = min(65536, pos)
                pos -= step
                handle.seek(pos)
                tail = handle.read(step) + tail
            lines = tail[: end - pos].split(b"\n")
            lines = [line for line in lines[:-1] if line.strip()]  # the last: empty, or a torn line's start
            return json.loads(lines[-1]) if lines else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"unreadable": str(exc)}


# ----------------------------------------------------------------------------- writing

@dataclass
class Outcome:
    written: dict | None = None            # the new checkpoint's header, when one was written
    latest: dict | None = None             # the newest checkpoint's header after the attempt
    refused: list[str] = field(default_factory=list)  # why none was written despite new events
    skipped: str | None = None             # why none was needed or possible now

    def as_dict(self) -> dict:
        return {"written": self.written["number"] if self.written else None,
                "latest": self.latest["number"] if self.latest else None,
                "refused": self.refused, "skipped": self.skipped}


def _rows(tx, sql: str, params=None, binary: bool = False) -> list[tuple]:
    """Rows as tuples: the writer reads tens of thousands, where dicts cost more than the query.
    `binary`: bytea as raw bytes, not hex text to parse (the tree's nodes, 512 bytes each)."""
    from psycopg.rows import tuple_row

    return tx.conn.cursor(row_factory=tuple_row).execute(sql, params, binary=binary).fetchall()


def _latest(tx) -> dict | None:
    row = tx.one("SELECT record FROM audit_checkpoints ORDER BY number DESC LIMIT 1")
    return row["record"] if row else None


def _due_sql() -> str:
    return ("SELECT (SELECT coalesce(max(id), 0) FROM events) AS max_id, "
            "coalesce((SELECT now() - created_at >= make_interval(secs => %(seconds)s) FROM events "
            "WHERE id > %(watermark)s ORDER BY id LIMIT 1), false) AS old_enough")


def _is_due(tx, settings, watermark: int, upto: int | None = None) -> bool:
    """N events since the last checkpoint (counted by id: an insert rolled back counts too, so a
    checkpoint is never later than N events), or an unanchored event older than M seconds."""
    row = tx.one(_due_sql(), {"seconds": float(settings.checkpoint_seconds), "watermark": watermark})
    top = upto if upto is not None else row["max_id"]
    return top > watermark and (top - watermark >= settings.checkpoint_events or row["old_enough"])


def write_checkpoint(ctx, *, force: bool = False, db: Database | None = None, upto: int | None = None) -> Outcome:
    """Write a checkpoint of every event committed so far (when due, or whenever there is a new
    event with `force`), unless the log no longer matches the previous checkpoint. Unless forced,
    it leaves the checkpoint to another process already writing one, rather than wait for it.
    `upto`: no event after this id (a log loaded in bulk, checkpointed in steps: one record's delta
    must stay under jsonb's 256 MB, about 2.5 million chains)."""
    db, settings = db or ctx.db, ctx.settings
    # The exact watermark: SHARE waits for every transaction still inserting events (they hold
    # ROW EXCLUSIVE from before their ids were drawn), so every event up to max(id) is committed.
    # Held for one statement; inserts that arrive meanwhile wait at most WATERMARK_WAIT.
    # Asked for (`audit anchor`), it tries again for up to FORCED_PATIENCE seconds: writers in a busy
    # moment are not a failure (a writer's unit may hold its insert while it embeds the text it
    # wrote, longer on a loaded machine). Each try waits WATERMARK_WAIT only, so inserts queued
    # behind the lock it asks for never wait longer than that.
    deadline = time.monotonic() + (FORCED_PATIENCE if force else 0)
    attempt = 0
    while True:
        try:
            with db.begin() as tx:
                tx.execute(f"SET LOCAL lock_timeout = '{WATERMARK_WAIT}'")
                watermark = tx.scalar("SELECT r2k_events_watermark()")
            if upto is not None:  # every event up to the exact watermark is committed, so up to less too
                watermark = min(watermark, upto)
            break
        except Conflict:
            attempt += 1
            if time.monotonic() >= deadline:
                return Outcome(skipped=f"events were still being written after {WATERMARK_WAIT}"
                                       f"{f' (tried for {FORCED_PATIENCE:g} s)' if force else ''}; try again")
            time.sleep(min(0.1 * attempt, 0.5))
    trust = trust_store(settings)
    with db.begin() as tx:
        if force:
            tx.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        elif not tx.scalar("SELECT pg_try_advisory_xact_lock(%s)", (LOCK_KEY,)):
            return Outcome(skipped="another process is writing a checkpoint")
        last = _latest(tx)  # read under the lock: another writer may have just written one
        previous_mark = last["watermark"] if last else 0
        if watermark <= previous_mark:
            return Outcome(latest=header(last) if last else None, skipped="no event since the latest checkpoint")
        if not force and not _is_due(tx, settings, previous_mark, watermark):
            return Outcome(latest=header(last) if last else None, skipped="not due")
        problems, plan = _plan(tx, settings, trust, last, previous_mark, watermark)
        if problems:
            return Outcome(latest=header(last) if last else None, refused=problems)
        record = _sign(ctx, last, watermark, plan)
        _store(tx, record, plan)
    try:
        _append_to_file(settings, record)
    except OSError as exc:  # committed already; verify compares what the file has
        log.error("audit checkpoint %d is in the database but not in %s: %s", record["number"],
                  checkpoint_file(settings), exc)
    return Outcome(written=header(record), latest=header(record))


@dataclass
class _Plan:
    delta: list          # [[type, id, seq, hash]], sorted
    heads: list          # rows for audit_heads: [type, id, seq, hash, bucket, leaf hex, key hex]
    nodes: list          # rows for audit_nodes: (path, its 16 slots as 512 bytes), the changed nodes
    rebuilt: bool        # the whole tree was built (the first checkpoint, or the first after format 1)
    root: str
    events: int
    chains: int


def _plan(tx, settings, trust, last: dict | None, previous_mark: int, watermark: int) -> tuple[list[str], _Plan | None]:
    """The next checkpoint from the previous one and the events since, or every reason it would
    bless damage: the state it builds on must match the previous signed root (and the file's copy),
    and each chain's new events must continue exactly from its anchored head."""
    problems: list[str] = []
    file_last = _last_file_record(settings)
    if file_last is not None:
        if "unreadable" in file_last:
            problems.append(f"{checkpoint_file(settings)} cannot be read: {file_last['unreadable']}")
        elif last is None or file_last.get("number", 0) > last["number"]:
            problems.append(f"checkpoint {file_last.get('number')} is in {checkpoint_file(settings)} but "
                            f"missing from the database")
        elif file_last.get("number") == last["number"] and header(file_last) != header(last):
            problems.append(f"checkpoint {last['number']} differs between the database and "
                            f"{checkpoint_file(settings)}")
    if last is not None:
        problems += [f"checkpoint {last['number']}: {p}" for p in record_problems(last, trust)]
        if record_format(last) not in (1, FORMAT):
            problems.append(f"checkpoint {last['number']} has format {record_format(last)!r}, which this "
                            f"version does not write on")
    if problems:
        return problems, None

    chains: dict[tuple[str, str], list[tuple]] = {}
    for ev in _rows(tx, "SELECT aggregate_type, aggregate_id, seq, prev_hash, hash FROM events "
                        "WHERE id > %s AND id <= %s ORDER BY aggregate_type, aggregate_id, seq",
                    (previous_mark, watermark)):
        chains.setdefault((ev[0], ev[1]), []).append(ev)
    keys = {chain: chain_key(*chain) for chain in chains}  # once each: it is a hash
    rebuilt = last is None or record_format(last) == 1
    if rebuilt:  # O(chains), once: the first checkpoint, or the first of format 2
        tree, anchored, problems = _whole_tree(tx, last)
    else:        # O(chains that moved · log16 chains): their paths only
        tree, anchored, problems = _paths(tx, last, keys)
    if problems:
        return problems, None

    # Only the links are checked here: an event's content and signature are verify's check of every
    # event, which anchoring it can neither hide nor replace. What a checkpoint must never do is
    # anchor a chain that was cut back, so each chain's new events must continue from its head.
    new_heads = []
    for chain, evs in chains.items():
        name = f"{chain[0]} {chain[1]}"
        row = anchored.get(chain)
        seq, prev = row or (0, GENESIS)
        for _, _, ev_seq, ev_prev, ev_hash in evs:
            if row is not None and ev_seq <= row[0]:
                problems.append(f"chain {name} is shorter than anchored: a new event has seq {ev_seq}, "
                                f"checkpoint {last['number']} anchored seq {row[0]}")
                break
            if ev_seq != seq + 1:
                problems.append(f"chain {name}: seq {ev_seq} follows seq {seq} (an event is missing)")
                break
            if ev_prev != prev:
                problems.append(f"chain {name}: seq {ev_seq} does not link to the previous event")
                break
            seq, prev = ev_seq, ev_hash
        else:
            new_heads.append((chain, row, seq, prev))
    if problems:
        return problems, None

    delta, rows = [], []
    count = last["events"] if last else 0
    chain_count = last["chains"] if last else 0
    for chain, row, seq, digest in new_heads:
        key = keys[chain]
        leaf = leaf_hash(*chain, seq, digest)
        tree.put(chain, key, leaf)
        delta.append([chain[0], chain[1], seq, digest])
        rows.append([chain[0], chain[1], seq, digest, int(key[:8], 16) % BUCKETS, leaf.hex(), key])
        count += seq - (row[0] if row else 0)
        chain_count += row is None
    root = tree.root().hex()
    delta.sort()
    nodes = [(path, bytes(tree.nodes[path])) for path in sorted(tree.written)]
    return [], _Plan(delta, rows, nodes, rebuilt, root, count, chain_count)


def _whole_tree(tx, last: dict | None) -> tuple[PrefixTree, dict, list[str]]:
    """Every anchored head, checked against format 1's signed root, and the prefix tree over them."""
    tree = PrefixTree()
    heads = _rows(tx, "SELECT aggregate_type, aggregate_id, seq, hash FROM audit_heads")
    if last is None:
        if heads:
            return tree, {}, ["audit_heads holds anchored heads but the database holds no checkpoint"]
        return tree, {}, []
    leaves: dict[int, dict[tuple[str, str], bytes]] = {}
    anchored = {}
    for t, i, seq, digest in heads:
        leaf = leaf_hash(t, i, seq, digest)
        leaves.setdefault(bucket_of(t, i, last["buckets"]), {})[(t, i)] = leaf
        anchored[(t, i)] = (seq, digest)
        tree.put((t, i), chain_key(t, i), leaf)
    if BucketTree({b: bucket_digest(ls) for b, ls in leaves.items()}, last["buckets"]).root != last["root"]:
        problem = (f"the anchored heads in the database (audit_heads) do not match checkpoint "
                   f"{last['number']}'s signed root")
        return tree, {}, [problem]
    return tree, anchored, []


def _paths(tx, last: dict, keys: dict[tuple[str, str], str]) -> tuple[PrefixTree, dict, list[str]]:
    """The stored nodes on the paths of the chains that moved, level by level from the root, each
    checked against the slot above it (the root against the previous signed root); and the leaf at
    the end of each path, read from audit_heads by key and checked against its slot. The writer
    trusts no row it has not checked so: a changed node or head, a head deleted or added, is refused."""
    tree = PrefixTree()
    tree.dirty = set()
    problems: list[str] = []
    # Every read here is a handful of index rows; a table the planner has no statistics for yet (just
    # filled by the first checkpoint, before autovacuum comes by) must not be scanned, per path.
    tx.execute("SET LOCAL enable_seqscan = off")
    root = _rows(tx, "SELECT children FROM audit_nodes WHERE path = ''", binary=True)
    if not root or len(root[0][0]) != RADIX * 32 or node_digest(root[0][0]) != bytes.fromhex(last["root"]):
        return tree, {}, [f"the stored tree's root in audit_nodes does not match checkpoint {last['number']}'s signed root"]
    tree.nodes[""] = bytearray(root[0][0])
    pending = {chain: "" for chain in keys}  # chain -> the deepest node held on its path
    ends: dict[str, list[tuple[str, str]]] = {}  # the slot each path ends in -> its chains
    while pending:
        wanted: dict[str, list[tuple[str, str]]] = {}
        for chain, path in pending.items():
            wanted.setdefault(path + keys[chain][len(path)], []).append(chain)
        found = dict(_rows(tx, "SELECT path, children FROM audit_nodes WHERE path = ANY(%b)", (list(wanted),),
                           binary=True))
        pending = {}
        for slot, members in wanted.items():
            above = slot_of(tree, slot)
            if slot not in found:
                ends[slot] = members
                continue
            children = found[slot]
            if len(children) != RADIX * 32 or node_digest(children) != above:
                problems.append(f"the stored tree node {slot} in audit_nodes was changed")
                continue
            tree.nodes[slot] = bytearray(children)
            pending.update((chain, slot) for chain in members)
    if problems:
        return tree, {}, problems

    anchored = {}
    spans = json.dumps([[slot, slot.ljust(64, "0"), slot.ljust(64, "f")] for slot in ends])
    held: dict[str, list[tuple]] = {slot: [] for slot in ends}
    for slot, t, i, seq, digest in _rows(
            tx, "SELECT s->>0, h.aggregate_type, h.aggregate_id, h.seq, h.hash FROM jsonb_array_elements(%s::jsonb) s "
                "CROSS JOIN LATERAL (SELECT aggregate_type, aggregate_id, seq, hash FROM audit_heads "
                "WHERE key BETWEEN decode(s->>1, 'hex') AND decode(s->>2, 'hex') LIMIT 2) h", (spans,)):
        held[slot].append((t, i, seq, digest))
    for slot, found_heads in held.items():
        above = slot_of(tree, slot)
        if above == _ZERO:
            problems += [f"chain {t} {i}: audit_heads holds a head for it that no checkpoint anchored"
                         for t, i, _, _ in found_heads]
        elif not found_heads:
            problems.append(f"the anchored head in tree slot {slot} is missing from audit_heads")
        elif len(found_heads) > 1:
            problems.append(f"audit_heads holds more than one head in tree slot {slot}, which anchors one")
        else:
            t, i, seq, digest = found_heads[0]
            if not chain_key(t, i).startswith(slot) or leaf_hash(t, i, seq, digest) != above:
                problems.append(f"chain {t} {i}: its anchored head in audit_heads was changed")
            else:
                tree.occupant[slot] = (t, i)
                anchored[(t, i)] = (seq, digest)
    return tree, anchored, problems


def _sign(ctx, last: dict | None, watermark: int, plan: _Plan) -> dict:
    signer = ctx.signer
    record = {"number": (last["number"] if last else 0) + 1, "watermark": watermark, "events": plan.events,
              "chains": plan.chains, "buckets": None, "root": plan.root,
              "prev_hash": last["hash"] if last else GENESIS, "delta_digest": delta_digest(plan.delta),
              "created_at": datetime.now(timezone.utc).isoformat(), "key_id": signer.key_id, "format": FORMAT}
    record["hash"] = record_hash(record)
    record["signature"] = signer.sign(record["hash"]).hex()
    record["delta"] = plan.delta
    return record


NODE_BATCH = 20000  # nodes a statement upserts: bounded parameters however large the change
HEAD_BATCH = 50000  # heads likewise


def _store(tx, record: dict, plan: _Plan) -> None:
    from psycopg.types.json import Jsonb

    # Thousands of rows as one JSON parameter: far cheaper to send than arrays adapted value by value;
    # in batches, so the first checkpoint of millions of chains sends no gigabyte string.
    for n in range(0, len(plan.heads), HEAD_BATCH):
        tx.execute("INSERT INTO audit_heads (aggregate_type, aggregate_id, seq, hash, bucket, leaf, key) "
                   "SELECT e->>0, e->>1, (e->>2)::int, e->>3, (e->>4)::int, decode(e->>5, 'hex'), "
                   "decode(e->>6, 'hex') FROM jsonb_array_elements(%s::jsonb) e "
                   "ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET seq = EXCLUDED.seq, "
                   "hash = EXCLUDED.hash, bucket = EXCLUDED.bucket, leaf = EXCLUDED.leaf, key = EXCLUDED.key",
                   (json.dumps(plan.heads[n:n + HEAD_BATCH]),))
    # Upserts, never a delete (the application's role may not delete): a node, once made, only
    # changes, as chains are never removed from the tree.
    for n in range(0, len(plan.nodes), NODE_BATCH):
        part = plan.nodes[n:n + NODE_BATCH]
        tx.execute("INSERT INTO audit_nodes (path, children) SELECT * FROM unnest(%b::text[], %b::bytea[]) "
                   "ON CONFLICT (path) DO UPDATE SET children = EXCLUDED.children",
                   ([p for p, _ in part], [c for _, c in part]))
    tx.execute("INSERT INTO audit_checkpoints (number, watermark, created_at, hash, record, delta) "
               "VALUES (%s, %s, %s, %s, %s, %s)",
               (record["number"], record["watermark"], record["created_at"], record["hash"],
                Jsonb(header(record)), Jsonb(record["delta"])))


# ----------------------------------------------------------------------------- when to write

_state_lock = threading.Lock()
_last_check: float | None = None
_refused_until = 0.0


def checkpoint_if_due(ctx) -> dict | None:
    """Write a checkpoint when one is due (the sweep, and after commits); never raises: the
    events are committed either way, and a failure here is logged and retried at the next check."""
    global _refused_until
    if time.monotonic() < _refused_until:
        return None
    try:
        with ctx.db.read() as tx:  # one short query: most looks find none due
            last = tx.one("SELECT watermark FROM audit_checkpoints ORDER BY number DESC LIMIT 1")
            if not _is_due(tx, ctx.settings, last["watermark"] if last else 0):
                return None
        outcome = write_checkpoint(ctx, db=ctx.checkpoint_db)
    except Exception as exc:  # noqa: BLE001 - see above
        log.error("the audit checkpoint failed: %s: %s", type(exc).__name__, exc)
        return {"error": str(exc)}
    if outcome.refused:
        shown = outcome.refused[:5]  # the first few say what is wrong; thousands would drown the log
        more = len(outcome.refused) - len(shown)
        log.error("no audit checkpoint written: %s%s", "; ".join(shown),
                  f"; and {more} more (r2k audit verify lists them all)" if more else "")
        # Damage is not going away by itself: look again after a checkpoint interval, not every second.
        _refused_until = time.monotonic() + float(ctx.settings.checkpoint_seconds)
    return outcome.as_dict()


_pending: threading.Thread | None = None


def after_commit(ctx, count: int) -> None:
    """Database.on_events_committed: `count` events were committed. Looks whether a checkpoint is
    due at most once per CHECK_INTERVAL in a process (the first look at once, so a single command
    checkpoints when due); the claim's fast path pays a clock read, not a query. The look, and the
    checkpoint it may write (half a second at 100,000 chains), run in a thread of their own, so the
    change that crossed the threshold returns at once; a command waits for it before it exits
    (`wait_pending`)."""
    global _last_check, _pending
    now = time.monotonic()
    with _state_lock:
        if _last_check is not None and now - _last_check < CHECK_INTERVAL:
            return
        if _pending is not None and _pending.is_alive():
            return
        _last_check = now
        _pending = threading.Thread(target=checkpoint_if_due, args=(ctx,), name="r2k audit checkpoint", daemon=True)
        _pending.start()


def wait_pending(timeout: float = 30.0) -> None:
    """Let a checkpoint started after this process's last commit finish (a command about to exit)."""
    with _state_lock:
        pending = _pending
    if pending is not None:
        pending.join(timeout)


# Any process that ends normally lets its checkpoint finish first: cut short in the middle of the
# file's line, it would leave a torn line (which the next writer cuts off, but the copy is lost).
atexit.register(wait_pending, 10.0)


# ----------------------------------------------------------------------------- checking

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


def read_anchor(path: Path) -> dict:
    """A checkpoint printed by `audit anchor --json` (or a line of a checkpoints file; of several
    lines, the newest)."""
    path = Path(path)
    text = files.read_text_argument(path, "the anchor file", ANCHOR_FILE)  # never a FIFO, a device, too much
    records = []
    try:
        records = [loads_json(text)]
    except ValueError:
        try:
            records = [loads_json(line) for line in text.splitlines() if line.strip()]
        except JSONTooDeep as exc:
            raise InvalidInput(f"the anchor file {path} is not a checkpoint: {exc}") from None
        except ValueError:
            raise InvalidInput(f"the anchor file {path} is not JSON: give the output of "
                               f"`r2k audit anchor --json`") from None
    records = [r for r in records if isinstance(r, dict) and isinstance(r.get("number"), int)]
    if not records:
        raise InvalidInput(f"the anchor file {path} holds no checkpoint: give the output of "
                           f"`r2k audit anchor --json`")
    return max(records, key=lambda r: r["number"])


def _scan_file(path: Path, inspection: Inspection) -> dict[int, tuple[dict, int]]:
    """Every record of the checkpoints file: number -> (header, offset of its line)."""
    found: dict[int, tuple[dict, int]] = {}
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return found
    with handle:
        offset = 0
        for n, line in enumerate(handle, 1):
            start, offset = offset, offset + len(line)
            if not line.strip() or not line.endswith(b"\n"):  # the last, torn by a writer that died: not a record
                continue
            try:
                record = json.loads(line)
                number = record["number"]
                ok = isinstance(number, int) and delta_digest(record["delta"]) == record.get("delta_digest")
            except (ValueError, KeyError, TypeError):
                inspection.add(None, f"line {n} of {path} is not a checkpoint record")
                continue
            if not ok:
                inspection.add(number if isinstance(number, int) else None,
                               f"checkpoint {number} in {path} (line {n}): its delta does not match its digest")
                continue
            if number in found and header(found[number][0]) != header(record):
                inspection.add(number, f"checkpoint {number} appears twice in {path}, differently")
                continue
            found[number] = (header(record), start)
    return found


def _file_delta(path: Path, offset: int) -> list:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return json.loads(handle.readline())["delta"]


class _Fold:
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
    in_file = _scan_file(path, out)
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
    fold: _Fold | None = None
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
                copies.append(("file", record, lambda o=offset: _file_delta(path, o)))
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
                fold = _Fold()
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
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from .config import get_settings

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
