"""Real services for every test: embedded ones started once per session in a temporary
data dir, or the servers the R2K_* URLs name. Each test starts from empty tables and an empty Redis.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("r2k-data")
    os.environ["R2K_DATA_DIR"] = str(path)
    os.environ.pop("R2K_USER", None)
    from core.config import get_settings

    get_settings.cache_clear()
    return path


@pytest.fixture(scope="session")
def services(data_dir):
    """Start (or reach) PostgreSQL, Redis and the graph once; stop the embedded ones at the end."""
    from core import embedded
    from core.config import get_settings

    settings = get_settings()
    embedded.up(settings)
    embedded.prepare_database(settings)  # external servers are migrated here
    yield settings
    embedded.purge(settings)


TABLES = ("idempotency_keys", "events", "signing_keys", "durable_tasks", "grey_transitions", "grey_entries",
          "conflict_flags", "generated_candidates", "work_items", "approved_answers", "validation_records",
          "candidates", "source_passages", "source_documents", "users", "audit_checkpoints", "audit_heads",
          "audit_buckets")


@pytest.fixture
def ctx(services):
    """A fresh world: empty tables and Redis, and a Context on them."""
    import psycopg

    from core import audit, embedded
    from core.context import Context

    audit.wait_pending()  # a checkpoint the previous test's commits started writes into its own world
    context = Context(services, pool_size=8)
    # As the superuser: the application's own role may neither truncate nor silence the append-only
    # triggers (replica mode does, for this cleanup only).
    with psycopg.connect(embedded.superuser_url(services), autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
        conn.execute("SET session_replication_role = DEFAULT")
    (Path(services.data_dir) / "audit" / "checkpoints.jsonl").unlink(missing_ok=True)  # their copy outside it
    context.redis.flushdb()
    from core.services import queue_index

    queue_index.reconcile(context)  # as every workstation and worker does at start-up: the mark is set
    yield context
    context.close()


@pytest.fixture
def superuser(ctx):
    """SQL as the database superuser, the insider of the tamper tests: `superuser(sql, params)`
    runs one statement in autocommit and returns its rows (None for a statement without rows)."""
    import psycopg
    from psycopg.rows import dict_row

    from core import embedded

    with psycopg.connect(embedded.superuser_url(ctx.settings), autocommit=True, row_factory=dict_row) as conn:
        def run(sql: str, params=None):
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else None

        yield run


@pytest.fixture
def people(ctx):
    """The users a session needs: validators with different authority, a specialist, an admin."""
    from core.services import users

    users.add(ctx, "alice", "validator", ["FACT", "RULE"])
    users.add(ctx, "bob", "validator", ["FACT"])
    users.add(ctx, "vera", "validator", ["PROCEDURE", "CONSTRAINT", "OPEN_ISSUE"])
    users.add(ctx, "sam", "specialist")
    users.add(ctx, "root", "admin")
    return {name: users.resolve(ctx, name) for name in ("alice", "bob", "vera", "sam", "root")}


def r2k(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed command line in a subprocess, as a user would."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT)


def r2k_json(*args: str, **kw):
    result = r2k("--json", *args, **kw)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def error_of(result: subprocess.CompletedProcess) -> dict:
    return json.loads(result.stderr.strip().splitlines()[-1])


def redis_snapshot(redis) -> dict:
    """Every key with its value, to show a failed action left Redis as it was."""
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
