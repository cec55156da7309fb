"""PostgreSQL: connections and the unit of work.

The request path talks to PostgreSQL through psycopg 3 directly: SQLAlchemy (used by Alembic for
migrations) costs ~0.25 s to import, which a CLI command with a 400 ms budget cannot pay.

A unit of work is one transaction (`with db.begin() as tx:`). Work that must follow the commit
(a queue push, a pub/sub notice) is registered with `tx.after_commit(fn)` and runs only once the
transaction has committed, so Redis never gets ahead of the truth. Once committed, the change is
made: a step after it that fails is logged and handed to `on_after_commit_error` (which has the
Redis index rebuilt), never raised as if the change had failed.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterator

import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg.types.json import Jsonb

from ..domain import jsonable
from ..errors import Conflict, R2KError

if TYPE_CHECKING:
    from ..bus import Bus

# Columns stored as jsonb: Python lists and dicts bound to them are wrapped as Jsonb.
JSONB_COLUMNS = {"horn_types", "source_refs", "sources", "flagged_claims", "approvals", "payload", "response",
                 "reviewers", "decisions", "analysis"}  # the last three: durable tasks (migration 0010)


def adapt(column: str, value: Any) -> Any:
    if column in JSONB_COLUMNS and isinstance(value, (list, dict)):
        return Jsonb(value)
    return value


def public_row(row: dict | None) -> dict | None:
    """A row without its internal columns (the tsvector index)."""
    if row is None:
        return None
    return {k: jsonable(v) for k, v in row.items() if k != "search"}


class Tx:
    """One open transaction: query helpers plus after-commit hooks."""

    def __init__(self, conn: psycopg.Connection, signer=None, bus: Bus | None = None, embeddings=None):
        self.conn = conn
        self.signer = signer  # the event log's signing key (core.events.Signer)
        self.bus = bus  # dispatches what follows an engine move (core/bus.py), in this transaction
        self.embeddings = embeddings  # the vector index, for the rows this transaction writes (core.services.search.embeddings)
        self.heads: dict[tuple[str, str], tuple[int, str]] = {}  # event chain heads seen in this transaction
        self.events_appended = 0  # events this unit wrote (core.events counts them): for on_events_committed
        self._after: list[Callable[[], None]] = []

    def execute(self, sql: str, params: Any = None) -> psycopg.Cursor:
        return self.conn.execute(sql, params)

    def one(self, sql: str, params: Any = None) -> dict | None:
        return self.conn.execute(sql, params).fetchone()

    def all(self, sql: str, params: Any = None, *, prepare: bool | None = None) -> list[dict]:
        return self.conn.execute(sql, params, prepare=prepare).fetchall()

    def scalar(self, sql: str, params: Any = None, *, prepare: bool | None = None) -> Any:
        """The first column of the first row. `prepare=False` plans the statement for its parameters
        every time, never once for all (psycopg prepares a statement run five times, and PostgreSQL
        may then plan it without looking at the parameters)."""
        row = self.conn.execute(sql, params, prepare=prepare).fetchone()
        return None if row is None else next(iter(row.values()))

    def one_on_kept_cursor(self, sql: str, params: Any) -> dict | None:
        """One row of a statement on the claim's path, through a cursor kept with the connection,
        in binary, its column names read once per statement: a new cursor and a dict row maker
        for each call cost about a third of the statement's own CPU in the claimer (bench/claim.py)."""
        cursor = _KEPT_CURSORS.get(self.conn)
        if cursor is None or cursor.closed:
            cursor = _KEPT_CURSORS[self.conn] = self.conn.cursor(row_factory=tuple_row)
        row = cursor.execute(sql, params, binary=True).fetchone()
        if row is None:
            return None
        names = _KEPT_COLUMNS.get(sql)
        if names is None or len(names) != len(row):  # new, or its table gained or lost a column since
            names = _KEPT_COLUMNS[sql] = tuple(column.name for column in cursor.description)
        return dict(zip(names, row))

    def insert(self, table: str, values: dict) -> dict:
        cols = list(values)
        sql = (f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))}) "
               f"RETURNING *")
        return self.one(sql, [adapt(c, values[c]) for c in cols])

    def copy(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """Write rows (values in `columns`' order) with one COPY; nothing read back."""
        if not rows:
            return
        with self.conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def insert_all(self, table: str, rows: list[dict]) -> list[dict]:
        """INSERT many rows that name the same columns: their ids drawn from the table's sequence in
        one statement, the rows written by one COPY (a multi-row INSERT … RETURNING cost seven times
        as much, bench/ingest.py), then read back as stored. The rows as inserted, in the order given."""
        if not rows:
            return []
        cols = list(rows[0])
        ids = [r["id"] for r in self.all("SELECT nextval(%s) AS id FROM generate_series(1, %s)",
                                         (id_sequence(self, table), len(rows)))]
        with self.conn.cursor().copy(f"COPY {table} (id, {', '.join(cols)}) FROM STDIN") as copy:
            for row_id, row in zip(ids, rows):
                copy.write_row([row_id, *(adapt(c, row[c]) for c in cols)])
        return self.all(f"SELECT t.* FROM unnest(%s::bigint[]) WITH ORDINALITY AS w(id, n) JOIN {table} t ON t.id = w.id "
                        f"ORDER BY w.n", (ids,))

    def update(self, table: str, row_id: Any, values: dict, *, with_sql: str | None = None,
               with_params: list | None = None) -> dict | None:
        """UPDATE one row by id; `with_sql` runs in the same statement first (as a CTE)."""
        cols = list(values)
        assignments = ", ".join(f"{c} = %s" for c in cols)
        sql = f"UPDATE {table} SET {assignments} WHERE id = %s RETURNING *"
        params = [*(adapt(c, values[c]) for c in cols), row_id]
        if with_sql:
            sql = f"WITH before AS ({with_sql}) {sql}"
            params = [*with_params, *params]
        return self.one(sql, params)

    def after_commit(self, fn: Callable[[], None]) -> None:
        self._after.append(fn)

    def react(self, event) -> None:
        """An engine move was written: its bus runs what follows it now, in this transaction, and
        queues what follows the commit (core/bus.py)."""
        if self.bus is not None:
            self.bus.dispatch(self, [event])

    def react_all(self, events: list) -> None:
        """Many moves of one kind were written together (engine.create_all): what follows them."""
        if self.bus is not None and events:
            self.bus.dispatch(self, events)


_ID_SEQUENCES: dict[str, str] = {}


def id_sequence(tx: Tx, table: str) -> str:
    """The sequence a table's ids are drawn from, looked up once per process (Tx.insert_all)."""
    if table not in _ID_SEQUENCES:
        _ID_SEQUENCES[table] = tx.scalar("SELECT pg_get_serial_sequence(%s, 'id')", (table,))
    return _ID_SEQUENCES[table]


# Tx.one_on_kept_cursor: a cursor per connection (used by one thread at a time, as its connection is), and
# the column names of each statement's rows.
_KEPT_CURSORS: weakref.WeakKeyDictionary[psycopg.Connection, psycopg.Cursor] = weakref.WeakKeyDictionary()
_KEPT_COLUMNS: dict[str, tuple[str, ...]] = {}


def _translate(exc: psycopg.Error) -> R2KError | None:
    if isinstance(exc, psycopg.errors.UniqueViolation):
        return Conflict(f"a concurrent change won: {exc.diag.message_primary}")
    if isinstance(exc, psycopg.errors.SerializationFailure):
        return Conflict("a concurrent change won; try again")
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return Conflict("the row is locked by another change; try again")
    return None


class Database:
    """Connections to one PostgreSQL database.

    `pool_size=None` keeps one connection per process guarded by a lock (the CLI); a size
    uses psycopg_pool, for the TUI's worker threads, RQ workers and benches. Its bus and its hooks
    after a commit are given by the composition root (core/bootstrap.py).
    """

    def __init__(self, url: str, *, pool_size: int | None = None, connect_timeout: float = 3.0,
                 on_connect_error: Callable[[Exception], Exception] | None = None, signer=None,
                 on_after_commit_error: Callable[[Exception], None] | None = None,
                 on_events_committed: Callable[[int], None] | None = None,
                 bus: Bus | None = None, embeddings=None):
        self.url = url
        self.signer = signer
        self.bus = bus
        self.embeddings = embeddings
        self.connect_timeout = connect_timeout
        self._on_connect_error = on_connect_error
        self._on_after_commit_error = on_after_commit_error  # queue upkeep: the index may miss the change
        self._on_events_committed = on_events_committed  # the audit checkpoint's trigger (core.audit)
        self._lock = threading.RLock()
        self._conn: psycopg.Connection | None = None
        self._pool = None
        if pool_size:
            # In-function: psycopg_pool costs 18 ms to import (load 4), which a command's one connection never needs
            from psycopg_pool import ConnectionPool

            # reconnect_timeout: a long-lived process keeps trying through an outage of any length.
            self._pool = ConnectionPool(url, min_size=1, max_size=pool_size, open=False,
                                        kwargs={"row_factory": dict_row, "autocommit": True},
                                        timeout=connect_timeout + 10, reconnect_timeout=24 * 3600)

    def _connect(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.url, row_factory=dict_row, autocommit=True,
                                   connect_timeout=max(1, int(self.connect_timeout)))
        except psycopg.OperationalError as exc:
            if self._on_connect_error:
                raise self._on_connect_error(exc) from None
            raise

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        if self._pool is not None:
            if self._pool.closed:
                try:
                    self._pool.open(wait=True, timeout=self.connect_timeout + 2)
                except Exception as exc:
                    if self._on_connect_error:
                        raise self._on_connect_error(exc) from None
                    raise
            try:
                with self._pool.connection() as conn:
                    yield conn
            except psycopg.OperationalError:
                self._drop_stale_connections()
                raise
            return
        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = self._connect()
            yield self._conn

    def _drop_stale_connections(self) -> None:
        """One connection failed as if the server went away (a restart): check the idle ones now,
        so each does not fail once more before the pool replaces it."""
        try:
            self._pool.check()
        except Exception as exc:  # noqa: BLE001 - the server is still away: the pool reconnects later
            logging.getLogger(__name__).debug("checking pooled connections: %s", exc)

    @contextlib.contextmanager
    def begin(self) -> Iterator[Tx]:
        """One unit of work: a transaction, committed when the block ends without error."""
        with self._unit(in_transaction=True) as tx:
            yield tx

    @contextlib.contextmanager
    def autocommit(self) -> Iterator[Tx]:
        """Statements that each commit by themselves (no BEGIN/COMMIT round trips), for a unit of
        work that is one conditional statement; after-commit hooks run at the end as usual."""
        with self._unit(in_transaction=False) as tx:
            yield tx

    @contextlib.contextmanager
    def _unit(self, in_transaction: bool) -> Iterator[Tx]:
        with self.connection() as conn:
            tx = Tx(conn, self.signer, self.bus, self.embeddings)
            try:
                if in_transaction:
                    with conn.transaction():
                        yield tx
                else:
                    yield tx
            except psycopg.Error as exc:
                translated = _translate(exc)
                if translated is not None:
                    raise translated from None
                raise
            # A unit nested in another one on this connection committed only a savepoint: its
            # events are not committed yet, so they must not be checkpointed.
            committed = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        self._after_commit(tx, committed)

    def _after_commit(self, tx: Tx, committed: bool) -> None:
        """The unit ended without error (a rollback raised before this): its steps after the commit,
        in the order they were queued, then this database's hooks; the checkpoint's only when
        `committed` (not a savepoint of a unit nested in another)."""
        failed = None
        for fn in tx._after:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - committed already: the rest still runs
                logging.getLogger(__name__).warning("a step after a commit failed (%s): %s",
                                                    getattr(fn, "__qualname__", fn), exc)
                failed = exc
        if failed is not None and self._on_after_commit_error is not None:
            self._on_after_commit_error(failed)  # once per unit, however many steps failed
        if tx.events_appended and committed and self._on_events_committed is not None:
            try:
                self._on_events_committed(tx.events_appended)
            except Exception as exc:  # noqa: BLE001 - the events are committed: a checkpoint is not the change
                logging.getLogger(__name__).error("the audit checkpoint after a commit failed: %s", exc)

    def read(self) -> contextlib.AbstractContextManager[Tx]:
        """A read-only unit of work (same shape, nothing to commit)."""
        return self.begin()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        if self._pool is not None and not self._pool.closed:
            self._pool.close()
