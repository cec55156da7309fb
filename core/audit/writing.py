"""Writing a checkpoint: the exact watermark, the plan (the moved chains' paths read and checked
against the previous signed root), the signed record, its rows and its line in the file."""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from ..errors import Conflict
from ..events import GENESIS, trust_store
from .file import append_to_file, checkpoint_file, last_file_record
from .merkle import (
    _ZERO,
    BUCKETS,
    RADIX,
    BucketTree,
    PrefixTree,
    bucket_digest,
    bucket_of,
    chain_key,
    leaf_hash,
    node_digest,
    slot_of,
)
from .records import FORMAT, delta_digest, header, record_format, record_hash, record_problems

if TYPE_CHECKING:
    from ..adapters.postgres import Database

log = logging.getLogger("r2k.core.audit")

LOCK_KEY = 72731003       # pg_advisory_xact_lock: one checkpoint writer at a time (migrations take 72731001)
WATERMARK_WAIT = "200ms"  # the longest the writer waits for in-flight inserts (new ones queue behind it)
FORCED_PATIENCE = 10.0    # seconds `audit anchor` keeps trying while writers are busy
# Events one record anchors at most: its delta holds one entry (~100 bytes of JSON) per chain that
# moved, and jsonb refuses more than 256 MB, about 2.5 million chains.
STEP_EVENTS = 1_000_000


@dataclass
class Outcome:
    written: dict | None = None            # the new checkpoint's header, when one was written
    latest: dict | None = None             # the newest checkpoint's header after the attempt
    refused: list[str] = field(default_factory=list)  # why none was written despite new events
    skipped: str | None = None             # why none was needed or possible now
    steps: int = 0                         # checkpoints written (more than one: in steps of STEP_EVENTS)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase of the last step (bench/audit.py)

    def as_dict(self) -> dict:
        return {"written": self.written["number"] if self.written else None,
                "latest": self.latest["number"] if self.latest else None,
                "refused": self.refused, "skipped": self.skipped, "steps": self.steps}


class _Clock:
    """Seconds spent per phase, summed: two perf_counter calls a phase, for bench/audit.py's rows."""

    def __init__(self):
        self.phases: dict[str, float] = {}
        self._at = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self._at
        self._at = now


def _rows(tx, sql: str, params=None, binary: bool = False) -> list[tuple]:
    """Rows as tuples: the writer reads tens of thousands, where dicts cost more than the query.
    `binary`: bytea as raw bytes, not hex text to parse (the tree's nodes, 512 bytes each)."""
    return tx.conn.cursor(row_factory=tuple_row).execute(sql, params, binary=binary).fetchall()


def _latest(tx) -> dict | None:
    row = tx.one("SELECT record FROM audit_checkpoints ORDER BY number DESC LIMIT 1")
    return row["record"] if row else None


def _due_sql() -> str:
    return ("SELECT (SELECT coalesce(max(id), 0) FROM events) AS max_id, "
            "coalesce((SELECT now() - created_at >= make_interval(secs => %(seconds)s) FROM events "
            "WHERE id > %(watermark)s ORDER BY id LIMIT 1), false) AS old_enough")


def is_due(tx, settings, watermark: int, upto: int | None = None) -> bool:
    """N events since the last checkpoint (counted by id: an insert rolled back counts too, so a
    checkpoint is never later than N events), or an unanchored event older than M seconds."""
    row = tx.one(_due_sql(), {"seconds": float(settings.checkpoint_seconds), "watermark": watermark})
    top = upto if upto is not None else row["max_id"]
    return top > watermark and (top - watermark >= settings.checkpoint_events or row["old_enough"])


def write_checkpoint(ctx, *, force: bool = False, db: Database | None = None, upto: int | None = None) -> Outcome:
    """Write a checkpoint of every event committed so far (when due, or whenever there is a new
    event with `force`), unless the log no longer matches the previous checkpoint. Unless forced,
    it leaves the checkpoint to another process already writing one, rather than wait for it.
    `upto`: no event after this id. More than STEP_EVENTS events since the last checkpoint (a log
    loaded in bulk, a checkpointer long stopped) are anchored in steps of that many, one signed
    record each, so no record's delta nears jsonb's 256 MB; the outcome is the last step's."""
    db, settings = db or ctx.db, ctx.settings
    watermark = _watermark(db, force)
    if isinstance(watermark, Outcome):
        return watermark
    if upto is not None:  # every event up to the exact watermark is committed, so up to less too
        watermark = min(watermark, upto)
    trust = trust_store(settings)
    steps = 0
    while True:
        outcome, reached = _write_step(ctx, db, settings, trust, watermark, force)
        steps += outcome.written is not None
        if outcome.written is None or reached:
            break
    if steps > 1:
        log.info("audit: %d checkpoints written in steps of %d events, up to checkpoint %d", steps, STEP_EVENTS,
                 outcome.written["number"])
    outcome.steps = steps
    return outcome


def _watermark(db: Database, force: bool) -> int | Outcome:
    """The exact watermark: SHARE waits for every transaction still inserting events (they hold
    ROW EXCLUSIVE from before their ids were drawn), so every event up to max(id) is committed.
    Held for one statement; inserts that arrive meanwhile wait at most WATERMARK_WAIT.
    Asked for (`audit anchor`), it tries again for up to FORCED_PATIENCE seconds: writers in a busy
    moment are not a failure (a writer's unit may hold its insert while it embeds the text it
    wrote, longer on a loaded machine). Each try waits WATERMARK_WAIT only, so inserts queued
    behind the lock it asks for never wait longer than that."""
    deadline = time.monotonic() + (FORCED_PATIENCE if force else 0)
    attempt = 0
    while True:
        try:
            with db.begin() as tx:
                tx.execute(f"SET LOCAL lock_timeout = '{WATERMARK_WAIT}'")
                return tx.scalar("SELECT r2k_events_watermark()")
        except Conflict:
            attempt += 1
            if time.monotonic() >= deadline:
                return Outcome(skipped=f"events were still being written after {WATERMARK_WAIT}"
                                       f"{f' (tried for {FORCED_PATIENCE:g} s)' if force else ''}; try again")
            time.sleep(min(0.1 * attempt, 0.5))


def _write_step(ctx, db: Database, settings, trust, watermark: int, force: bool) -> tuple[Outcome, bool]:
    """One checkpoint, of at most STEP_EVENTS events past the previous one; and whether it reached
    `watermark`."""
    clock = _Clock()
    with db.begin() as tx:
        if force:
            tx.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        elif not tx.scalar("SELECT pg_try_advisory_xact_lock(%s)", (LOCK_KEY,)):
            return Outcome(skipped="another process is writing a checkpoint"), True
        last = _latest(tx)  # read under the lock: another writer may have just written one
        previous_mark = last["watermark"] if last else 0
        if watermark <= previous_mark:
            return Outcome(latest=header(last) if last else None, skipped="no event since the latest checkpoint"), True
        if not force and not is_due(tx, settings, previous_mark, watermark):
            return Outcome(latest=header(last) if last else None, skipped="not due"), True
        mark = min(watermark, previous_mark + STEP_EVENTS)
        clock.lap("lock and latest")
        problems, plan = _plan(tx, settings, trust, last, previous_mark, mark, clock)
        if problems:
            return Outcome(latest=header(last) if last else None, refused=problems), True
        record = _sign(ctx, last, mark, plan)
        clock.lap("sign")
        _store(tx, record, plan)
        clock.lap("store")
    clock.lap("commit")
    try:
        append_to_file(settings, record)
    except OSError as exc:  # committed already; verify compares what the file has
        log.error("audit checkpoint %d is in the database but not in %s: %s", record["number"],
                  checkpoint_file(settings), exc)
    clock.lap("file append")
    return Outcome(written=header(record), latest=header(record), phases=clock.phases), mark >= watermark


@dataclass
class _Plan:
    delta: list          # [[type, id, seq, hash]], sorted
    heads: list          # rows for audit_heads: [type, id, seq, hash, bucket, leaf hex, key hex]
    nodes: list          # rows for audit_nodes: (path, its 16 slots as 512 bytes), the changed nodes
    rebuilt: bool        # the whole tree was built (the first checkpoint, or the first after format 1)
    root: str
    events: int
    chains: int


def _plan(tx, settings, trust, last: dict | None, previous_mark: int, watermark: int,
          clock: _Clock) -> tuple[list[str], _Plan | None]:
    """The next checkpoint from the previous one and the events since, or every reason it would
    bless damage: the state it builds on must match the previous signed root (and the file's copy),
    and each chain's new events must continue exactly from its anchored head."""
    problems: list[str] = []
    file_last = last_file_record(settings)
    clock.lap("file's last record")
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
    clock.lap("events")
    rebuilt = last is None or record_format(last) == 1
    if rebuilt:  # O(chains), once: the first checkpoint, or the first of format 2
        tree, anchored, problems = _whole_tree(tx, last)
    else:        # O(chains that moved · log16 chains): their paths only
        tree, anchored, problems = _paths(tx, last, keys)
    clock.lap("whole tree" if rebuilt else "paths")
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
    clock.lap("links and hashes")
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
