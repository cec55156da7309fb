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

The package, one job per module: `merkle` (the trees' maths), `records` (a record's fields, hash and
signature), `file` (the checkpoints file and anchors), `writing` (a checkpoint written), `scheduling`
(when one is written) and `verifying` (`audit verify`).
"""
from __future__ import annotations

from .file import append_to_file, checkpoint_file, last_file_record, read_anchor
from .merkle import (
                     BUCKETS,
                     RADIX,
                     BucketTree,
                     PrefixTree,
                     bucket_digest,
                     bucket_of,
                     chain_key,
                     leaf_hash,
                     node_digest,
                     slot_digest,
                     tree_hash,
)
from .records import FORMAT, HEADER, delta_digest, header, record_format, record_hash, record_problems
from .scheduling import CHECK_INTERVAL, after_commit, checkpoint_if_due, wait_pending
from .verifying import Broken, Fold, Inspection, inspect, verify
from .writing import FORCED_PATIENCE, LOCK_KEY, STEP_EVENTS, WATERMARK_WAIT, Outcome, is_due, log, write_checkpoint

__all__ = ["BUCKETS", "CHECK_INTERVAL", "FORCED_PATIENCE", "FORMAT", "HEADER", "LOCK_KEY", "RADIX", "STEP_EVENTS",
           "WATERMARK_WAIT", "Broken", "BucketTree", "Fold", "Inspection", "Outcome", "PrefixTree", "after_commit",
           "append_to_file", "bucket_digest", "bucket_of", "chain_key", "checkpoint_file", "checkpoint_if_due",
           "delta_digest", "header", "inspect", "is_due", "last_file_record", "leaf_hash", "log", "node_digest",
           "read_anchor", "record_format", "record_hash", "record_problems", "slot_digest", "tree_hash", "verify",
           "wait_pending", "write_checkpoint"]
