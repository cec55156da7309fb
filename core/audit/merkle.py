"""The checkpoints' Merkle maths: leaf and node hashes, format 1's buckets and format 2's prefix tree
(docs/architecture.md, "Event log and audit"). Pure: no I/O."""
from __future__ import annotations

import hashlib
import json

from ..errors import InvalidInput

BUCKETS = 4096            # 2^12: a perfect top tree of 8191 nodes; ~25 chains a bucket at 100,000 chains

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
