"""Secure by default: each attack found on a running install, replayed against the new defaults.

- a local user without the data dir's credentials gets into none of the servers;
- the application's own database role cannot silence the append-only triggers or run programs;
- nobody acts beyond their authority: unknown users are refused on every command, administration
  needs an admin, authority is checked before state, an expired claim decides nothing.
"""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import psycopg
import pytest

from r2k.core import embedded
from r2k.core.embedded import common
from r2k.core.embedded.postgres import os_account as postgres_account
from r2k.core.errors import Conflict, Forbidden
from r2k.core.services import candidate_views, candidates, claims, users, workitems
from tests.conftest import error_of, r2k, r2k_json

EMBEDDED_DB = not os.environ.get("R2K_DATABASE_URL")
EMBEDDED_REDIS = not os.environ.get("R2K_REDIS_URL")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="playing another OS user needs root")


# ----------------------------------------------------------------------------- the servers

def listening(pid: int) -> list[str]:
    """The local addresses `pid` listens on (TCP)."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines() if f"pid={pid}," in line]


@pytest.mark.parametrize("part", ["postgres", "redis", "graph"])
def test_every_embedded_server_listens_on_loopback_only(services, part):
    if embedded.configured_url(services, part):
        pytest.skip(f"{part} is configured, not embedded")
    state = common.read_state(services, part)
    addresses = listening(state["pid"])
    assert addresses and all(a.startswith("127.0.0.1:") for a in addresses), addresses


def test_the_data_dir_is_private(services, ctx):
    root = Path(services.data_dir)
    for path in [root, *root.rglob("*")]:
        if (root / "postgres") in path.parents or path.is_symlink():
            continue  # PostgreSQL's own cluster keeps itself private (0700, files 0600)
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path} is {oct(mode)}"
    assert sorted(p.name for p in (root / "secrets").iterdir()) == [
        "graph.password", "postgres-app.password", "postgres-owner.password", "postgres-superuser.password",
        "redis.password"]


def _as_nobody(script: str) -> str:
    """Run a shell script as the unprivileged OS user `nobody`; its output."""
    result = subprocess.run(["bash", "-c", script], user="nobody", group="nogroup", extra_groups=[],
                            capture_output=True, text=True, timeout=30, cwd="/")
    return result.stdout + result.stderr


@as_root
def test_an_unprivileged_user_reads_no_credential_and_gets_into_no_server(services, ctx):
    data = Path(services.data_dir)
    out = _as_nobody(f"cat {data}/secrets/redis.password; ls {data}; cat {data}/run/postgres.json")
    assert out.count("Permission denied") == 3
    for part in ("redis", "graph"):
        if embedded.configured_url(services, part):
            continue
        port = common.read_state(services, part)["port"]
        # Plain Redis protocol over bash's /dev/tcp: no client library, no credential.
        reply = _as_nobody(f"exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'PING\\r\\nKEYS *\\r\\n' >&3; "
                           f"read -t 2 a <&3; read -t 2 b <&3; echo \"$a $b\"")
        assert "NOAUTH" in reply and "PONG" not in reply, reply
    if EMBEDDED_DB:
        port = common.read_state(services, "postgres")["port"]
        for role in ("postgres", "r2k_owner", "r2k_app"):
            with pytest.raises(psycopg.OperationalError, match="password"):
                psycopg.connect(f"postgresql://{role}@127.0.0.1:{port}/r2k", connect_timeout=5)


@pytest.mark.skipif(not EMBEDDED_REDIS, reason="a configured Redis is its operator's to harden")
def test_the_redis_password_holder_still_cannot_reconfigure_or_load_code(ctx):
    import redis

    for command in (("CONFIG", "SET", "dir", "/tmp"), ("CONFIG", "SET", "dbfilename", "authorized_keys"),
                    ("MODULE", "LOAD", "/tmp/evil.so"), ("DEBUG", "SLEEP", "0")):
        with pytest.raises(redis.exceptions.ResponseError):
            ctx.redis.execute_command(*command)


@pytest.mark.skipif(not EMBEDDED_DB, reason="a configured database is used with the role its URL names")
@pytest.mark.parametrize("statement", [
    "ALTER TABLE events DISABLE TRIGGER events_append_only",
    "ALTER TABLE approved_answers DISABLE TRIGGER approved_answers_immutable",
    "COPY (SELECT 1) TO PROGRAM 'id'",
    "SET session_replication_role = replica",
    "UPDATE events SET actor = 'mallory'",
    "DELETE FROM approved_answers",
    "TRUNCATE events",
    "CREATE TABLE mine (a int)",
    "UPDATE alembic_version SET version_num = '0001'",
])
def test_the_application_role_cannot_rewrite_history_or_run_programs(ctx, people, statement):
    candidates.add(ctx, people["root"], "Q?", "A fact.", "FACT")
    with ctx.db.read() as tx:
        before = tx.all("SELECT id, hash FROM events ORDER BY id")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with ctx.db.begin() as tx:
            tx.execute(statement)
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT current_user") == "r2k_app"
        assert not tx.scalar("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert tx.all("SELECT id, hash FROM events ORDER BY id") == before


@pytest.mark.skipif(not EMBEDDED_DB, reason="the embedded cluster's own roles")
def test_the_application_role_reaches_no_other_database(ctx):
    base = ctx.database_url.rsplit("/", 1)[0]
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(f"{base}/postgres", connect_timeout=5)


def test_services_status_names_each_credential_and_prints_none(ctx, people):
    result = r2k("--json", "--as", "alice", "services", "status")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in __import__("json").loads(result.stdout)}
    for part in ("postgres", "redis", "graph"):
        assert rows[part]["credential"], rows[part]
    if EMBEDDED_DB:
        assert "scram-sha-256 as r2k_app" in rows["postgres"]["credential"]
    secrets = [p.read_text().strip() for p in (Path(ctx.settings.data_dir) / "secrets").iterdir()]
    text = r2k("--as", "alice", "services", "status")
    assert not [s for s in secrets if s in result.stdout + result.stderr + text.stdout + text.stderr]


@pytest.mark.services  # a cluster of its own
@pytest.mark.skipif(not EMBEDDED_DB, reason="the embedded cluster's set-up")
def test_a_cluster_made_by_an_older_r2k_trusting_loopback_is_locked_down(tmp_path):
    """An older r2k initialised its cluster with trust for every local connection. Started again,
    the cluster gets its passwords and scram-sha-256, and its tables move to the owner role."""
    from r2k.core.config import Settings
    from r2k.core.embedded import postgres

    import shutil

    settings = Settings(data_dir=tmp_path / "old")
    account = postgres.os_account()
    pgdata = common.data_dir(settings) / "postgres"
    # Where the account can reach it (the older r2k opened the data dir's parents to everyone instead).
    scratch = postgres.SYSTEM_BASE / "clusters" / f"legacy-{os.getpid()}" if account else pgdata
    scratch.mkdir(mode=0o700, parents=True)
    if account:
        shutil.chown(scratch, account, account)
    binaries = postgres._runnable_bin_dir(postgres.bin_dir(), account)
    assert postgres._run_as(account, [str(binaries / "initdb"), "-D", str(scratch), "-U", "postgres", "--auth=trust",
                                      "--encoding=UTF8", "--locale=C"], cwd=str(scratch)).returncode == 0
    if account:
        shutil.move(str(scratch), str(pgdata))
    try:
        url = embedded.ensure(settings, "postgres")
        port = common.read_state(settings, "postgres")["port"]
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=5)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "r2k_app"
            owners = {r[0] for r in conn.execute("SELECT tableowner FROM pg_tables WHERE schemaname = 'public'")}
        assert owners == {"r2k_owner"}
        if account:
            assert not (Path(settings.data_dir) / "postgres").exists()  # moved out of the private data dir
    finally:
        embedded.purge(settings)


@pytest.mark.services  # a cluster of its own
@pytest.mark.skipif(not EMBEDDED_DB or postgres_account() is None,
                    reason="run by root: the cluster lives outside the data dir")
def test_a_data_dir_removed_and_made_again_gets_a_cluster_it_can_log_in_to(tmp_path):
    """Run by root, the cluster lives under /var/lib/r2k-postgres, so removing the data dir (with
    its passwords) leaves it behind, still running. The next start at the same path stops it and
    sets it aside, never deleting it, instead of failing on a password it no longer has."""
    import shutil

    from r2k.core.config import Settings
    from r2k.core.embedded import postgres

    settings = Settings(data_dir=tmp_path / "data")
    kept = []
    try:
        embedded.ensure(settings, "postgres")
        first = Path((Path(settings.data_dir) / "postgres.cluster").read_text().strip())
        pid, _ = postgres._postmaster(first)
        assert common.process_is(pid, postgres.PROGRAM)
        shutil.rmtree(settings.data_dir)  # no `services down`: the server keeps running

        url = embedded.ensure(settings, "postgres")
        with psycopg.connect(url, connect_timeout=5) as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "r2k_app"
        kept = sorted(first.parent.glob(f"{first.name}.orphaned-*"))
        assert len(kept) == 1 and (kept[0] / "PG_VERSION").exists()  # set aside whole
        assert not common.process_is(pid, postgres.PROGRAM)  # and its server stopped
        assert Path((Path(settings.data_dir) / "postgres.cluster").read_text().strip()) == first
    finally:
        embedded.purge(settings)
        for path in kept:
            shutil.rmtree(path, ignore_errors=True)


def test_copies_of_the_postgres_binaries_made_at_once_never_remove_one_in_use(tmp_path, monkeypatch):
    """Run by root with a venv the PostgreSQL account cannot reach, each start copies the binaries
    under /var/lib/r2k-postgres once. Two starting together both copied, and the one that finished
    last removed the other's copy while its initdb read it (CI: "could not open file
    sql_features.txt"). Here four processes copy at once; each keeps using what it was given."""
    import multiprocessing

    from r2k.core.embedded import postgres

    monkeypatch.setattr(postgres, "SYSTEM_BASE", tmp_path / "system")
    monkeypatch.setattr(postgres, "_can_run", lambda account, program: False)  # as for an unreachable venv
    binaries = postgres.bin_dir()
    assert binaries is not None
    start, done = multiprocessing.get_context("fork").Barrier(4), multiprocessing.get_context("fork").Barrier(4)
    results = multiprocessing.get_context("fork").Queue()

    def copy() -> None:
        start.wait()
        got = postgres._runnable_bin_dir(binaries, "r2k-postgres")
        before = (got / "postgres").stat().st_ino
        done.wait()  # every copy made: is the one this process was given still the one there?
        results.put((str(got), before, (got / "postgres").stat().st_ino))

    procs = [multiprocessing.get_context("fork").Process(target=copy) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    seen = [results.get(timeout=5) for _ in procs]
    assert all(p.exitcode == 0 for p in procs)
    assert len({got for got, _, _ in seen}) == 1
    assert [(before == after) for _, before, after in seen] == [True] * 4, seen
    assert not [p for p in (tmp_path / "system" / "pginstall").iterdir() if p.name.endswith((".tmp", ".stale"))]


# ----------------------------------------------------------------------------- authority

@pytest.mark.compat
@pytest.mark.parametrize("argv", [
    ["queue", "stats"], ["candidates", "list"], ["candidates", "show", "1"], ["candidates", "history", "1"],
    ["registry", "search", "fact"], ["registry", "show", "1"], ["registry", "readout", "fact"],
    ["workitems", "list"], ["grey", "list"], ["users", "list"], ["audit", "verify"], ["replay", "--verify"],
    ["services", "status"], ["queue", "reconcile"], ["queue", "sweep"],
])
def test_every_command_refuses_an_unknown_user(ctx, people, argv):
    candidates.add(ctx, people["root"], "Q?", "A fact.", "FACT")
    result = r2k("--as", "nobody", *argv)
    assert result.returncode == 7, (argv, result.stdout, result.stderr)
    assert error_of(result)["status"] == 403 and "nobody" in error_of(result)["message"]
    assert result.stdout == ""


@pytest.mark.compat
def test_administration_needs_an_admin(ctx, people):
    for who in ("nobody", "alice", "sam"):
        result = r2k("--as", who, "users", "add", "mallory", "--role", "admin")
        assert result.returncode == 7, result.stderr
        assert error_of(result)["status"] == 403
        result = r2k("--as", who, "services", "down")
        assert result.returncode == 7, result.stderr
        result = r2k("--as", who, "db", "upgrade")
        assert result.returncode == 7, result.stderr
    assert "mallory" not in [u["name"] for u in users.list_users(ctx)]
    assert all(p.answers for p in embedded.status(ctx.settings))  # nothing was stopped
    added = r2k_json("--as", "root", "users", "add", "ada", "--role", "validator", "--horn-types", "FACT")
    assert added["name"] == "ada"
    with pytest.raises(Forbidden):
        users.add(ctx, "eve", "admin", by=people["alice"])  # core refuses, whoever calls it


def test_while_no_admin_exists_the_data_dir_owner_adds_the_first(ctx):
    first = r2k_json("users", "add", "first", "--role", "admin")  # no --as: the login name, unknown
    assert first["role"] == "admin"
    result = r2k("--as", "nobody", "users", "add", "second", "--role", "admin")
    assert result.returncode == 7  # now an admin exists: the owner is no longer enough
    assert [u["name"] for u in users.list_users(ctx)] == ["first"]


def test_someone_who_does_not_own_the_data_dir_is_no_bootstrap_operator(ctx, tmp_path):
    """While no admin exists, only the OS account owning the data dir administers it."""
    from r2k.core.context import Context

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, 65534, 65534) if os.geteuid() == 0 else pytest.skip("needs root to hand a dir to nobody")
    other = Context(ctx.settings.model_copy(update={"data_dir": foreign}))
    other.__dict__["db"] = ctx.db  # the same database, reached by a process that does not own the data dir
    with pytest.raises(Forbidden, match="unknown user"):
        users.acting(other, "intruder", admin=True)
    assert users.acting(ctx, "operator", admin=True).role == "admin"  # the owner, while no admin exists


@pytest.mark.compat
def test_authority_is_checked_before_state_through_the_cli(ctx, people):
    rule = candidates.add(ctx, people["root"], "Q?", "If it rains, roads are wet.", "RULE")
    for argv in (["candidates", "approve", str(rule["id"])], ["candidates", "release", str(rule["id"])],
                 ["candidates", "reject", str(rule["id"]), "--reason", "x"],
                 ["candidates", "claim", str(rule["id"]), "--expected-version", "9"]):
        result = r2k("--as", "bob", *argv)  # bob holds FACT only
        assert result.returncode == 7, (argv, result.stderr)
        message = error_of(result)["message"]
        assert "PENDING" not in message and "version" not in message
    assert candidate_views.get(ctx, rule["id"])["state"] == "PENDING"
    result = r2k("--as", "alice", "candidates", "approve", str(rule["id"]))  # alice holds RULE: the state
    assert result.returncode == 5 and "PENDING" in error_of(result)["message"]


def test_work_item_commands_need_authority_for_its_horn_type(ctx, people):
    item = workitems.create(ctx, people["sam"], "What is the forklift speed limit?", horn_type="RULE")
    for argv in (["workitems", "close", str(item["id"])], ["workitems", "generate", str(item["id"])],
                 ["workitems", "rework", str(item["id"]), "--reason", "x"],
                 ["workitems", "create", "--question", "Q?", "--horn-type", "RULE"],
                 ["workitems", "create", "--question", "Q?"]):
        result = r2k("--as", "bob", *argv)  # FACT only
        assert result.returncode == 7, (argv, result.stderr)
        assert "NEW" not in error_of(result)["message"]
    assert workitems.get(ctx, item["id"])["state"] == "NEW"
    assert len(workitems.list_items(ctx)) == 1
    assert workitems.close(ctx, people["alice"], item["id"])["state"] == "CLOSED"  # alice holds RULE
    made = workitems.create(ctx, people["alice"], "Another?", horn_type="FACT")
    assert made["created_by"] == "alice"
    with pytest.raises(Forbidden):
        workitems.create(ctx, people["bob"], "Horn-less?")


@pytest.mark.parametrize("action,extra", [("approve", {}), ("revise", {"text": "Revised."}),
                                          ("reject", {"reason": "no"}), ("escalate", {"reason": "unsure"})])
def test_a_decision_on_an_expired_claim_is_a_409_and_changes_nothing(ctx, people, superuser, action, extra):
    candidates.add(ctx, people["root"], "Q?", "A fact.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    superuser("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (claimed["id"],))
    before = candidate_views.get(ctx, claimed["id"])
    with ctx.db.read() as tx:
        events = tx.scalar("SELECT count(*) FROM events")
    with pytest.raises(Conflict, match="expired"):
        candidates.decide(ctx, people["alice"], claimed["id"], action, **extra)
    assert candidate_views.get(ctx, claimed["id"]) == before
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM events") == events
    result = r2k("--as", "alice", "candidates", action, str(claimed["id"]),
                 *[f"--{k}={v}" for k, v in extra.items()])
    assert result.returncode == 4 and "expired" in error_of(result)["message"]
