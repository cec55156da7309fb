"""Real services for the tests that need them: embedded ones started once per session in a
temporary data dir, or the servers the R2K_* URLs name. Each such test starts from empty tables and an
empty Redis.

Two tiers. A test that asks for `services`, `ctx`, `people` or `superuser` (itself or through another
fixture) is marked `services` here; a test that starts servers of its own says so with
`@pytest.mark.services`. The rest is the fast tier, pure logic that reaches no server:
`python -m pytest -m "not services"`.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The fixtures that reach the session's servers: a test that uses one, directly or through another
# fixture, is a `services` test.
SERVICE_FIXTURES = frozenset({"data_dir", "services", "ctx", "people", "superuser"})


def pytest_configure(config):
    # Under pytest-xdist each worker starts embedded servers of its own (its own data dir); servers
    # named by R2K_* URLs would be one for all, and each worker's ctx would empty the others' tables.
    if getattr(config.option, "numprocesses", None) and any(
            os.environ.get(v) for v in ("R2K_DATABASE_URL", "R2K_REDIS_URL", "R2K_GRAPH_URL")):
        raise pytest.UsageError("R2K_DATABASE_URL, R2K_REDIS_URL or R2K_GRAPH_URL is set: those servers are "
                                "shared by every xdist worker, so run the tests on them without -n")


# The longest files first: with pytest-xdist (--dist loadfile) each file goes whole to the next free
# worker, so a long one dealt last would run alone at the end.
LONGEST_FIRST = ("test_soak.py", "test_fuzz.py", "test_faults.py")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("r2k-data")
    os.environ["R2K_DATA_DIR"] = str(path)
    os.environ.pop("R2K_USER", None)
    from r2k.core.config import get_settings

    get_settings.cache_clear()
    return path


@pytest.fixture(scope="session")
def services(data_dir):
    """Start (or reach) PostgreSQL, Redis and the graph once; stop the embedded ones at the end."""
    from r2k.core import embedded
    from r2k.core.config import get_settings

    settings = get_settings()
    embedded.up(settings)
    embedded.prepare_database(settings)  # external servers are migrated here
    yield settings
    for conn in _CLEANERS.values():
        conn.close()
    embedded.purge(settings)


TABLES = ("idempotency_keys", "events", "signing_keys", "durable_tasks", "grey_transitions", "grey_entries",
          "answer_subjects", "conflict_flags", "generated_candidates", "work_items", "approved_answers", "validation_records", "candidate_reviews",
          "document_statements", "candidates", "passage_terms", "source_passages", "source_documents", "users", "audit_checkpoints", "audit_heads", "audit_nodes",
          "audit_buckets", "task_snapshots", "api_tokens", "webhook_attempts", "webhook_deliveries", "webhooks",
          "comments", "queue_guidelines", "queue_settings", "queue_counts")


# The vector index (core/migrations/vectors.py): there only with pgvector, so emptied when it is.
VECTOR_TABLES = ("passage_vectors", "candidate_vectors", "answer_vectors", "embedding_index")

_SEQUENCES: list[str] = []
_CLEANERS: dict = {}
_PRESENT: list[str] = []


def _tables(conn) -> list[str]:
    """TABLES, with the vector tables first when this database has them."""
    if not _PRESENT:
        present = {r[0] for r in conn.execute("SELECT relname::text FROM pg_class WHERE relkind = 'r' "
                                              "AND relname = ANY(%s)", (list(VECTOR_TABLES),))}
        _PRESENT.extend([t for t in VECTOR_TABLES if t in present] + list(TABLES))
    return _PRESENT


def _cleaner(settings):
    """One superuser connection per session for the cleanup between tests (a new one if it broke)."""
    import psycopg

    from r2k.core import embedded

    url = embedded.superuser_url(settings)
    conn = _CLEANERS.get(url)
    if conn is None or conn.closed or conn.broken:
        conn = _CLEANERS[url] = psycopg.connect(url, autocommit=True)
    return conn


def _sequences(conn) -> list[str]:
    """The sequences the tables' id columns own (what TRUNCATE … RESTART IDENTITY restarts)."""
    if not _SEQUENCES:
        _SEQUENCES.extend(row[0] for row in conn.execute(
            "SELECT DISTINCT seq.oid::regclass::text FROM pg_class seq JOIN pg_depend d ON d.objid = seq.oid "
            "AND d.deptype IN ('a', 'i') JOIN pg_class tab ON tab.oid = d.refobjid "
            "WHERE seq.relkind = 'S' AND tab.relname = ANY(%s)", (list(TABLES),)))
    return _SEQUENCES


def _wipe_graph(context) -> None:
    """The graph of the last test's world goes too: its nodes carry the same ids (1, 2, …) at other
    versions, which a sync, guarded by version, would not overwrite. A graph a test left down has
    nothing to wipe now; the sweep that starts it again catches it up from the (empty) tables."""
    from r2k.core.errors import R2KError

    try:
        context.graph.run("MATCH (n) DETACH DELETE n")
    except (R2KError, OSError, ConnectionError):
        pass


@pytest.fixture
def ctx(services):
    """A fresh world: empty tables and Redis, and a Context on them."""
    from r2k.core import audit
    from r2k.core.bootstrap import bootstrap

    audit.wait_pending()  # a checkpoint the previous test's commits started writes into its own world
    context = bootstrap(services, pool_size=8)
    # As the superuser: the application's own role may neither delete from the append-only tables nor
    # silence their triggers (replica mode does, for this cleanup only, and skips the foreign keys
    # too). DELETE, not TRUNCATE: the tables hold a few rows, and TRUNCATE makes new files for each
    # table and index at every test. The ids start at 1 again, as TRUNCATE … RESTART IDENTITY did.
    conn = _cleaner(services)
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica; "  # one round trip
                     + " ".join(f"DELETE FROM {table};" for table in _tables(conn)))
        conn.execute("SELECT setval(s, 1, false) FROM unnest(%s::regclass[]) AS s", (_sequences(conn),))
    (Path(services.data_dir) / "audit" / "checkpoints.jsonl").unlink(missing_ok=True)  # their copy outside it
    context.redis.flushdb()
    _wipe_graph(context)
    from r2k.core.services.queue import queue_index

    queue_index.reconcile(context)  # as every workstation and worker does at start-up: the mark is set
    yield context
    context.close()


@pytest.fixture
def superuser(ctx):
    """SQL as the database superuser, the insider of the tamper tests: `superuser(sql, params)`
    runs one statement in autocommit and returns its rows (None for a statement without rows)."""
    import psycopg
    from psycopg.rows import dict_row

    from r2k.core import embedded

    with psycopg.connect(embedded.superuser_url(ctx.settings), autocommit=True, row_factory=dict_row) as conn:
        def run(sql: str, params=None):
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else None

        yield run


@pytest.fixture
def redis_operator(ctx):
    """The queue Redis as its operator, for what the application's credential may not do (CONFIG,
    to make the server refuse writes for a moment); a configured Redis with its URL's credential."""
    import redis

    from r2k.core import embedded

    client = redis.Redis.from_url(embedded.superuser_url(ctx.settings, "redis"))
    yield client
    client.close()


@pytest.fixture
def people(ctx):
    """The users a session needs: validators with different authority, a specialist, an admin."""
    from r2k.core.services.people import users

    users.add(ctx, "alice", "validator", ["FACT", "RULE"])
    users.add(ctx, "bob", "validator", ["FACT"])
    users.add(ctx, "vera", "validator", ["PROCEDURE", "CONSTRAINT", "OPEN_ISSUE"])
    users.add(ctx, "sam", "specialist")
    users.add(ctx, "root", "admin")
    return {name: users.resolve(ctx, name) for name in ("alice", "bob", "vera", "sam", "root")}


class Hung(BaseException):
    """A call that did not return in time. Raised by SIGALRM in the main thread, so a blocking open or
    read ends too; a BaseException, so no `except Exception` of the code under test takes it for its own."""


@contextmanager
def within(seconds: float, what: str = "the call"):
    """Fail (Hung) when the block runs longer than `seconds`: a FIFO opened for reading waits for ever."""
    def hung(signum, frame):
        raise Hung(f"{what} did not return within {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def as_account(fn, *args, account: str = "nobody", timeout: float = 60):
    """`fn(*args)` run in a forked child as another OS account (its uid and gid, no other groups: a
    local user with no credential); what it returns, through a pipe as JSON, or the exception it
    raised as an AssertionError. Needs root. A fork, not a new interpreter: this one lives where
    only root may enter (a venv under /root), and the child needs nothing but the standard library."""
    import pwd
    import select
    import traceback

    who = pwd.getpwnam(account)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges for good, run, report, end without pytest's cleanup
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(who.pw_gid)
            os.setuid(who.pw_uid)
            out = json.dumps({"result": fn(*args)})
        except BaseException:  # noqa: BLE001 - reported to the parent
            out, code = json.dumps({"error": traceback.format_exc()}), 1
        with os.fdopen(write, "w") as pipe:
            pipe.write(out)
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        if not select.select([pipe], [], [], timeout)[0]:
            os.kill(pid, 9)
        text = pipe.read()  # to the end: the child has closed its side (or was killed)
    os.waitpid(pid, 0)
    reply = json.loads(text or f'{{"error": "no reply within {timeout} s"}}')
    assert "error" not in reply, reply["error"]
    return reply["result"]


def tcp_listeners(pid: int) -> list[str]:
    """The TCP addresses `pid` listens on (IPv4 and IPv6), from /proc: its sockets' inodes matched
    against the kernel's tables of listening sockets (state 0A)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                found.append(f"{table.rsplit('/', 1)[1]} {fields[1]}")
    return found


def on_database(url: str, database: str) -> str:
    """The same PostgreSQL URL for another database: a TCP one, or the embedded cluster's socket URL
    (whose socket directory is a query parameter)."""
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


@contextlib.contextmanager
def scratch_databases(services, *names: str):
    """Empty databases of these names on the test cluster, as its superuser: their URLs, dropped after
    (with a configured server only: the embedded cluster is removed whole, and DROP DATABASE forces a
    checkpoint)."""
    import psycopg

    from r2k.core import embedded

    superuser = embedded.superuser_url(services)
    with psycopg.connect(on_database(superuser, "postgres"), autocommit=True) as admin:
        for name in names:
            admin.execute(f"DROP DATABASE IF EXISTS {name}")
            admin.execute(f"CREATE DATABASE {name}")
    try:
        yield [on_database(superuser, name) for name in names]
    finally:
        if services.database_url:
            with psycopg.connect(on_database(superuser, "postgres"), autocommit=True) as admin:
                for name in names:
                    admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def r2k(*args: str, env: dict | None = None, timeout: float = 120,
        process: bool = False) -> subprocess.CompletedProcess:
    """The command line as a user runs it: its exit code, stdout and stderr.

    In this process (`app.cli.run`, what `python -m r2k.app` calls), which costs no interpreter start:
    stdout and stderr are written through the encodings a process's pipes have and read back as
    `subprocess.run(text=True)` reads them. In a real subprocess (`r2k_process`) when `process` is set
    or `env` changes the environment (settings are read once per process)."""
    if process or env:
        return r2k_process(*args, env=env, timeout=timeout)
    return r2k_in_process(*args)


def r2k_process(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed command line in a subprocess, as a user would."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "r2k.app", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT)


def _pipe(errors: str) -> io.TextIOWrapper:
    """A text stream over bytes, as a process's stdout or stderr on a pipe: UTF-8, stdout with the
    error handler of this interpreter's stdout, stderr with backslashreplace (what Python gives it)."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, newline="\n", write_through=True)


def _read_back(stream: io.TextIOWrapper) -> str:
    """What `subprocess.run(text=True)` makes of the bytes: strict UTF-8, universal newlines."""
    data = stream.buffer.getvalue()
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="strict", newline=None).read()


def r2k_in_process(*args: str) -> subprocess.CompletedProcess:
    """`python -m r2k.app ARGS` without the new interpreter: `app.cli.run`, its exit code returned."""
    from r2k.app.cli import run
    from r2k.core.config import get_settings

    out = _pipe(getattr(sys.__stdout__, "errors", None) or "strict")
    err = _pipe("backslashreplace")
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = columns or "80"  # argparse wraps help as on a pipe, whatever runs pytest
    get_settings.cache_clear()  # settings as a new process reads them from the environment now
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = run(list(args))
            except SystemExit as exit_:  # argparse's --help
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        get_settings.cache_clear()
    return subprocess.CompletedProcess([sys.executable, "-m", "r2k.app", *args], code, _read_back(out), _read_back(err))


def r2k_json(*args: str, **kw):
    result = r2k("--json", *args, **kw)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


ERROR_NAMES = {400: "InvalidInput", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 422: "ValidationStateError",
               500: "InternalError", 503: "ServiceUnavailable"}
ERROR_LINE = re.compile(r"r2k: (?P<word>[a-z ]+) \((?P<status>\d{3})\): ?(?P<message>.*)")


def error_of(result: subprocess.CompletedProcess | str) -> dict:
    """The error a command printed last on stderr, as `{"error", "status", "message"}`: the JSON
    document of --json, or parsed from the one readable line printed without it
    (`r2k: forbidden (403): …`, whose message shows controls as visible escapes)."""
    last = (result if isinstance(result, str) else result.stderr).strip().splitlines()[-1]
    if last.startswith("{"):
        return json.loads(last)
    line = ERROR_LINE.fullmatch(last)
    assert line, f"not an error line: {last!r}"
    status = int(line["status"])
    from r2k.app.output import STATUS_WORDS

    assert line["word"] == STATUS_WORDS[status], last
    return {"error": ERROR_NAMES[status], "status": status, "message": line["message"]}


def redis_snapshot(redis) -> dict:
    """Every key with its value, to show a failed action left Redis as it was (once the claims
    committed before it have settled: a claim's settle may wait a moment for the next pop)."""
    from r2k.core.adapters.redis_queues import send_all_settles

    send_all_settles()
    snap = {}
    for key in sorted(redis.keys("*")):
        kind = redis.type(key)
        if kind == b"list":
            snap[key] = redis.lrange(key, 0, -1)
        elif kind == b"zset":
            snap[key] = redis.zrange(key, 0, -1, withscores=True)
        elif kind == b"hash":
            snap[key] = redis.hgetall(key)
        elif kind == b"string":
            snap[key] = redis.get(key)
        else:
            snap[key] = kind
    return snap
