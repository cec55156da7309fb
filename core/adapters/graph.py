"""The graph over Bolt (DESIGN §9), through the official neo4j driver.

Binding on every call, from what FalkorDB's experimental Bolt server survives: auto-commit
statements only (an explicit transaction costs ~44 ms), each idempotent (MERGE); requests kept
small (at most 20 rows per batch, every string property cut to 200 characters), because one
request of more than a few KB crashed the server. The graph holds structure, never full texts.
"""
from __future__ import annotations

from typing import Any, Iterable

MAX_BATCH = 20
MAX_STRING = 200
MAX_REQUEST_BYTES = 3000


class GraphRequestTooLarge(ValueError):
    pass


def short(value: Any) -> Any:
    """A property value fit for the graph: strings cut to MAX_STRING characters."""
    if isinstance(value, str) and len(value) > MAX_STRING:
        return value[: MAX_STRING - 1] + "…"
    if isinstance(value, dict):
        return {k: short(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [short(v) for v in value]
    return value


def batches(rows: Iterable[dict], size: int = MAX_BATCH) -> Iterable[list[dict]]:
    batch: list[dict] = []
    for row in rows:
        batch.append(short(row))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


_patched = False


def _close_without_goodbye() -> None:
    """Measured on FalkorDB 4.16.3: after a client closes with Bolt GOODBYE, the server leaves the
    next connection's handshake unanswered (every other connection then hangs until its timeout).
    A plain socket close does not upset it, and Neo4j accepts it too, so connections skip GOODBYE."""
    global _patched
    if _patched:
        return
    from neo4j._sync.io._bolt import Bolt

    original = Bolt.close

    def close(self):
        self._defunct = True
        original(self)

    Bolt.close = close
    _patched = True


class Graph:
    def __init__(self, url: str, user: str | None = None, password: str | None = None, timeout: float = 5.0):
        from neo4j import GraphDatabase

        _close_without_goodbye()
        auth = (user, password) if user else None
        self.url = url
        self._driver = GraphDatabase.driver(url, auth=auth, connection_timeout=timeout,
                                            connection_acquisition_timeout=timeout * 2,
                                            max_transaction_retry_time=0)

    def run(self, query: str, **params: Any) -> list[dict]:
        """One auto-commit statement; refuses a request too large for the server to survive."""
        params = short(params)
        size = len(query) + len(repr(params))
        if size > MAX_REQUEST_BYTES:
            raise GraphRequestTooLarge(f"graph request of ~{size} bytes exceeds {MAX_REQUEST_BYTES}: batch it")
        with self._driver.session() as session:
            return session.run(query, params).data()

    def ping(self) -> None:
        self.run("RETURN 1 AS ok")

    def close(self) -> None:
        self._driver.close()
