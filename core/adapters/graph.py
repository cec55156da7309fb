"""The graph: one small Cypher vocabulary over two protocols.

- FalkorDB's own protocol (the `falkordb` client), for the embedded graph and any FalkorDB server:
  `falkor://[:password@]host:port[/graph]` (also `falkors://`, `redis://`, `rediss://`), or on a
  Unix socket `unix://[:password@]/path/to/socket[?graph=NAME]` (the embedded graph's).
- Bolt through the official `neo4j` driver, for Neo4j or any Bolt server: `bolt://…`, `neo4j://…`.

Both run the same statements: auto-commit, each idempotent (MERGE), parameters for every value.
Requests are kept small (at most 20 rows per batch, every string property cut to 200 characters):
FalkorDB's experimental Bolt server crashed on requests over a few KB, and the graph holds structure,
never full texts, so the same discipline costs nothing on the other protocol. Connection failures of
either surface as `GraphUnavailable`, which the CLI turns into a 503 naming the graph.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import ServiceUnavailable

MAX_BATCH = 20
MAX_STRING = 200
MAX_REQUEST_BYTES = 3000
GRAPH_NAME = "r2k"

FALKOR_SCHEMES = ("falkor", "falkors", "redis", "rediss", "unix")
BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


class GraphRequestTooLarge(ValueError):
    pass


class GraphUnavailable(ConnectionError):
    """The graph server did not answer (either protocol)."""


def short(value: Any) -> Any:
    """A property value fit for the graph: strings cut to MAX_STRING characters."""
    if isinstance(value, str) and len(value) > MAX_STRING:
        return value[: MAX_STRING - 1] + "…"
    if isinstance(value, dict):
        return {k: short(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [short(v) for v in value]
    return value


def _size(query: str, params: dict) -> int:
    return len(query) + len(repr(params))


def _checked(query: str, params: dict) -> dict:
    """The parameters cut short; refuses a request too large for a Bolt server to survive."""
    params = short(params)
    size = _size(query, params)
    if size > MAX_REQUEST_BYTES:
        raise GraphRequestTooLarge(f"graph request of ~{size} bytes exceeds {MAX_REQUEST_BYTES}: batch it")
    return params


def chunks(query: str, rows: list[dict], name: str = "rows", **params: Any):
    """`rows` in runs that each fit one request: at most MAX_BATCH rows and MAX_REQUEST_BYTES with
    the query and the other parameters (a single row too large is refused when it is run)."""
    chunk: list[dict] = []
    base = _size(query, short(params)) + len(name) + 8
    size = base
    for row in rows:
        row = short(row)
        cost = len(repr(row)) + 2
        if chunk and (len(chunk) >= MAX_BATCH or size + cost > MAX_REQUEST_BYTES):
            yield chunk
            chunk, size = [], base
        chunk.append(row)
        size += cost
    if chunk:
        yield chunk


class _Statements(ABC):
    """What both adapters offer on top of `run`, which each adapter is (one auto-commit request)."""

    @abstractmethod
    def run(self, query: str, **params: Any) -> list[dict]:
        """One statement, its rows as dicts."""

    def run_rows(self, query: str, rows: list[dict], name: str = "rows", **params: Any) -> list[dict]:
        """`query` (an `UNWIND $rows AS r …`) over `rows`, one small auto-commit request per chunk."""
        out: list[dict] = []
        for chunk in chunks(query, rows, name, **params):
            out.extend(self.run(query, **{name: chunk}, **params))
        return out

    def index(self, label: str, prop: str) -> None:
        """A range index on `label.prop`, made once: `CREATE INDEX FOR … ON …`, which Neo4j 5 and
        FalkorDB both accept (FalkorDB has no `IF NOT EXISTS`); an existing one is left as it is."""
        try:
            self.run(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
        except GraphUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - both servers refuse an index that exists, in words
            if "already" not in str(exc).lower() and not self._unexplained_refusal_is_an_existing_index():
                raise

    def _unexplained_refusal_is_an_existing_index(self) -> bool:
        return False


class FalkorGraph(_Statements):
    """FalkorDB over its own protocol (Redis commands `GRAPH.QUERY`)."""

    protocol = "FalkorDB"

    def __init__(self, url: str, user: str | None = None, password: str | None = None, timeout: float = 5.0):
        # Here, not at the top: redis (192 ms) and falkordb only once a graph is reached; every module
        # that reports a 503 imports this one for GraphUnavailable, `r2k --help` too.
        import redis
        from falkordb import FalkorDB

        parts = urlsplit(url)
        self.url = url
        where: dict[str, Any]
        if parts.scheme == "unix":  # the path names the socket; the graph, if not r2k, is ?graph=NAME
            name = parse_qs(parts.query).get("graph", [GRAPH_NAME])[-1]
            where = {"unix_socket_path": unquote(parts.path)}
        else:
            name = parts.path.strip("/") or GRAPH_NAME
            tls = parts.scheme in ("falkors", "rediss")
            # TLS checks the server's name too (the falkordb client's default does not).
            where = {"host": parts.hostname or "127.0.0.1", "port": parts.port or 6379, "ssl": tls,
                     **({"ssl_check_hostname": True} if tls else {})}
        try:
            self._db = FalkorDB(**where, username=user or (unquote(parts.username) if parts.username else None),
                                password=password or (unquote(parts.password) if parts.password else None),
                                socket_timeout=timeout, socket_connect_timeout=timeout)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise GraphUnavailable(str(exc)) from None
        self._graph = self._db.select_graph(name)
        self._errors = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                        redis.exceptions.BusyLoadingError)

    def run(self, query: str, **params: Any) -> list[dict]:
        """One auto-commit statement; rows as dicts keyed by the RETURN names."""
        params = _checked(query, params)
        try:
            result = self._graph.query(query, params)
        except self._errors as exc:
            raise GraphUnavailable(str(exc)) from None
        names = [column[1] if isinstance(column, (list, tuple)) else column for column in result.header]
        return [dict(zip(names, row)) for row in result.result_set]

    def ping(self) -> None:
        self.run("RETURN 1 AS ok")

    def close(self) -> None:
        self._db.connection.close()


_patched = False


def close_without_goodbye() -> None:
    """Measured on FalkorDB 4.16.3: after a client closes with Bolt GOODBYE, the server leaves the
    next connection's handshake unanswered (every other connection then hangs until its timeout).
    A plain socket close does not upset it, so against FalkorDB (only) connections skip GOODBYE.
    This patches the neo4j driver's private `Bolt.close` (neo4j is pinned to its major version for
    it): its close sends GOODBYE unless the connection is defunct. A test fails if that changes."""
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


def _neo4j():
    """The neo4j driver with its exceptions, imported on first use: 637 ms (python -X importtime) that
    only a Bolt graph pays."""
    import neo4j.exceptions

    return neo4j


class BoltGraph(_Statements):
    """Any Bolt server (Neo4j 5, FalkorDB's Bolt port) through the official neo4j driver."""

    protocol = "Bolt"

    def __init__(self, url: str, user: str | None = None, password: str | None = None, timeout: float = 5.0):
        auth = (user, password or "") if user else None
        self.url = url
        self._driver = _neo4j().GraphDatabase.driver(url, auth=auth, connection_timeout=timeout,
                                            connection_acquisition_timeout=timeout * 2,
                                            max_transaction_retry_time=0)
        self._server: str | None = None  # the server's agent, read with the first statement

    def run(self, query: str, **params: Any) -> list[dict]:
        lost = _neo4j().exceptions
        params = _checked(query, params)
        try:
            if self._server is None:
                self._server = self._identify()
                if self._server == "FalkorDB":
                    close_without_goodbye()
            with self._driver.session() as session:
                return session.run(query, params).data()
        except (lost.ServiceUnavailable, lost.SessionExpired) as exc:
            raise GraphUnavailable(str(exc)) from None

    def _unexplained_refusal_is_an_existing_index(self) -> bool:
        """Measured on FalkorDB 4.16.3: over Bolt, an index that exists is refused as an unknown
        error with no words (its own protocol says "already indexed")."""
        return self._server == "FalkorDB"

    def _identify(self) -> str:
        """Which Bolt server this is. FalkorDB's says it is "Neo4j/5.13.0", so it is told apart by
        what it lacks: Neo4j answers `dbms.components()`, FalkorDB does not."""
        refused = _neo4j().exceptions
        try:
            with self._driver.session() as session:
                rows = session.run("CALL dbms.components() YIELD name RETURN name").data()
        except (refused.ClientError, refused.DatabaseError):
            return "FalkorDB"
        return rows[0]["name"] if rows else "Bolt"

    def ping(self) -> None:
        self.run("RETURN 1 AS ok")

    def close(self) -> None:
        self._driver.close()


def connect(url: str, user: str | None = None, password: str | None = None,
            timeout: float = 5.0) -> FalkorGraph | BoltGraph:
    """The adapter the URL's scheme names."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in BOLT_SCHEMES:
        return BoltGraph(url, user, password, timeout)
    if scheme in FALKOR_SCHEMES:
        return FalkorGraph(url, user, password, timeout)

    raise ServiceUnavailable(f"R2K_GRAPH_URL has an unknown scheme {scheme!r}: use falkor://host:port or "
                             f"unix:///path/to/socket (FalkorDB) or bolt://host:port (Neo4j, any Bolt server)")
