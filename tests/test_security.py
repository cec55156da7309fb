"""Secure by default: each attack found on a running install, replayed against the new defaults.

- the embedded servers listen on Unix sockets only their data dir's owner reaches: a local user gets
  into none of them, and cannot pose as one when it dies (no port to take);
- the application's Redis credential cannot reconfigure, replicate or dump its server;
- a data dir of another account, or one others can write, is refused before anything starts;
- the application's own database role cannot silence the append-only triggers or run programs;
- nobody acts beyond their authority: unknown users are refused on every command, administration
  needs an admin, authority is checked before state, an expired claim decides nothing.
"""
from __future__ import annotations

import os
import pwd
import stat
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from r2k.core import embedded
from r2k.core.embedded import common
from r2k.core.embedded.postgres import os_account as postgres_account
from r2k.core.errors import Conflict, Forbidden
from r2k.core.services.answering import workitems
from r2k.core.services.people import users
from r2k.core.services.queue import candidate_views, claims
from r2k.core.services.validation import candidates
from tests.conftest import as_account, error_of, on_database, r2k, r2k_json, tcp_listeners

EMBEDDED_DB = not os.environ.get("R2K_DATABASE_URL")
EMBEDDED_REDIS = not os.environ.get("R2K_REDIS_URL")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="playing another OS user needs root")


# ----------------------------------------------------------------------------- the servers

def unix_listeners(pid: int) -> list[str]:
    """The Unix socket paths `pid` listens on."""
    out = subprocess.run(["ss", "-lxpH"], capture_output=True, text=True).stdout
    return [line.split()[4] for line in out.splitlines() if f"pid={pid}," in line]


@pytest.mark.parametrize("part", ["postgres", "redis", "graph"])
def test_every_embedded_server_listens_on_its_private_socket_only(services, part):
    if embedded.configured_url(services, part):
        pytest.skip(f"{part} is configured, not embedded")
    state = common.read_state(services, part)
    assert tcp_listeners(state["pid"]) == []
    assert unix_listeners(state["pid"]) == [state["socket"]]
    socket = Path(state["socket"])
    assert stat.S_ISSOCK(socket.stat().st_mode) and stat.S_IMODE(socket.stat().st_mode) == 0o700
    folder = socket.parent.stat()
    assert stat.S_IMODE(folder.st_mode) == 0o700  # nobody but its owner (and root) gets to the socket
    owner = postgres_account() if part == "postgres" else None
    assert folder.st_uid == (pwd.getpwnam(owner).pw_uid if owner else os.geteuid())


def test_the_data_dir_is_private(services, ctx):
    root = Path(services.data_dir)
    for path in [root, *root.rglob("*")]:
        if (root / "postgres") in path.parents or path.is_symlink():
            continue  # PostgreSQL's own cluster keeps itself private (0700, files 0600)
        mode = stat.S_IMODE(path.lstat().st_mode)
        private = 0o700 if path.is_dir() or stat.S_ISSOCK(path.lstat().st_mode) else 0o600
        assert mode == private, f"{path} is {oct(mode)}"
    assert sorted(p.name for p in (root / "secrets").iterdir()) == [
        "graph-operator.password", "graph.password", "postgres-app.password", "postgres-owner.password",
        "postgres-superuser.password", "redis-operator.password", "redis.password"]


def _as_nobody(script: str) -> str:
    """Run a shell script as the unprivileged OS user `nobody`; its output."""
    result = subprocess.run(["bash", "-c", script], user="nobody", group="nogroup", extra_groups=[],
                            capture_output=True, text=True, timeout=30, cwd="/")
    return result.stdout + result.stderr


def _reach(sockets: list[str], files: list[str]) -> list[str]:
    """What this process can do to each socket (connect; bind a socket of its own beside it) and
    each file (create or append to it): "denied" or "ALLOWED" for each."""
    import socket

    seen = []
    for path in sockets:
        for what in ("connect", "bind"):
            with socket.socket(socket.AF_UNIX) as sock:
                try:
                    sock.connect(path) if what == "connect" else sock.bind(str(Path(path).parent / "mallory.sock"))
                    seen.append(f"{what} {path} ALLOWED")
                except PermissionError:
                    seen.append(f"{what} {path} denied")
    for path in files:
        try:
            open(path, "a").close()
            seen.append(f"write {path} ALLOWED")
        except PermissionError:
            seen.append(f"write {path} denied")
    return seen


@as_root
def test_an_unprivileged_user_reads_no_credential_and_gets_into_no_server(services, ctx):
    data = Path(services.data_dir)
    out = _as_nobody(f"cat {data}/secrets/redis.password; ls {data}; cat {data}/run/postgres.json")
    assert out.count("Permission denied") == 3
    sockets = [common.read_state(services, part)["socket"] for part in ("postgres", "redis", "graph")
               if not embedded.configured_url(services, part)]
    # Each socket refuses the connection itself, and nothing can be made beside it or in the data dir.
    seen = as_account(_reach, sockets, [str(data / "mallory"), str(data / "run" / "redis.json")])
    assert [line for line in seen if not line.endswith("denied")] == [] and len(seen) == 2 * len(sockets) + 2, seen


REFUSED = [  # what the application's Redis credential must not do (docs/architecture.md, "Embedded servers")
    ("REPLICAOF", "127.0.0.1", "9"), ("SLAVEOF", "127.0.0.1", "9"), ("CONFIG", "SET", "dir", "/tmp"),
    ("CONFIG", "GET", "requirepass"), ("MODULE", "LOAD", "/tmp/evil.so"), ("DEBUG", "SLEEP", "0"),
    ("MIGRATE", "127.0.0.1", "9", "k", "0", "1000"), ("ACL", "SETUSER", "default", "+@all"), ("ACL", "LIST"),
    ("SHUTDOWN", "NOSAVE"), ("FAILOVER",), ("SYNC",), ("PSYNC", "?", "-1"), ("MONITOR",), ("BGSAVE",), ("SAVE",),
    ("BGREWRITEAOF",),
]


@pytest.mark.skipif(not EMBEDDED_REDIS, reason="a configured Redis is its operator's to harden")
@pytest.mark.parametrize("part", ["redis", "graph"])
def test_the_application_credential_cannot_reconfigure_replicate_or_dump_the_server(ctx, part):
    import redis

    app = ctx.redis if part == "redis" else ctx.graph._db.connection
    operator = redis.Redis.from_url(embedded.superuser_url(ctx.settings, part))
    try:
        # First asked without running anything (a command let through would stop or tie up the
        # session's server): ACL DRYRUN, as the operator, for the application's user.
        for command in REFUSED:
            reply = operator.execute_command("ACL", "DRYRUN", "default", *command)
            assert reply != b"OK" and b"no permissions" in reply, (command, reply)
        for command in REFUSED:  # then run: refused by the ACL (DEBUG and MODULE by the server's config first)
            with pytest.raises(redis.exceptions.ResponseError, match="no permissions|not allowed"):
                app.execute_command(*command)
        assert operator.config_get("maxmemory")  # the operator's credential may (backups, the tests' insider)
    finally:
        operator.close()
    state = common.read_state(ctx.settings, part)
    secret = (Path(ctx.settings.data_dir) / "secrets" / f"{part}.password").read_text().strip()
    config = Path(ctx.settings.data_dir) / part / "server.conf"
    assert secret not in Path(f"/proc/{state['pid']}/cmdline").read_text()  # every local user can read it
    assert secret not in config.read_text() and stat.S_IMODE(config.stat().st_mode) == 0o600  # its hash only


@pytest.mark.skipif(not EMBEDDED_REDIS, reason="a configured Redis is its operator's to harden")
def test_what_r2k_does_on_its_redis_servers_is_still_allowed(ctx, people):
    """The queue, an RQ job run by r2k's worker class, pub/sub and graph queries, all with the
    application's credential, on servers whose ACL denies it what it never sends."""
    from r2k.core.adapters.jobs import QUEUES
    from r2k.core.notices import CHANNEL
    from r2k.workers import tasks
    from r2k.workers.main import R2KWorker

    listener = ctx.redis.pubsub(ignore_subscribe_messages=True)
    listener.subscribe(CHANNEL)
    added = candidates.add(ctx, people["root"], "Where is the Rotterdam warehouse?", "In the port of Rotterdam.", "FACT")
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == added["id"]  # the queue
    deadline = time.monotonic() + 10
    while (message := listener.get_message(timeout=0.5)) is None:  # pub/sub
        assert time.monotonic() < deadline, "no notice"
    assert message["type"] == "message"
    listener.close()
    item = workitems.create(ctx, people["sam"], "Where is the Rotterdam warehouse?")
    tasks._ctx, tasks._pid = ctx, os.getpid()
    try:  # an RQ job: CLIENT SETNAME and CLIENT INFO, registries, heartbeats, the job's result
        assert R2KWorker([QUEUES["generation"]], connection=ctx.redis).work(burst=True, logging_level="WARNING")
    finally:
        tasks._ctx = tasks._pid = None
    assert workitems.show(ctx, item["id"])["state"] in ("READY_FOR_REVIEW", "ESCALATED")
    assert ctx.graph.run("RETURN 1 AS ok") == [{"ok": 1}]  # a graph query


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
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(on_database(ctx.database_url, "postgres"), connect_timeout=5)


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
    import shutil

    from r2k.core.config import Settings
    from r2k.core.embedded import postgres

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
        state = common.read_state(settings, "postgres")
        without_password = f"postgresql://postgres@/postgres?host={Path(state['socket']).parent}&port={state['port']}"
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(without_password, connect_timeout=5)
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
        pid = postgres._postmaster(first)[0]
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

def command_lines() -> list[tuple[list[str], str]]:
    """Every command of the CLI's tree (each leaf of its argparse parsers), with what it must be
    given filled in, and the authority it declares: "user", "admin", or "own" (the data dir's owner,
    who runs the servers and needs no r2k user)."""
    import argparse

    from r2k.app.cli import build_parser

    def leaves(parser, path=()):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield list(path), parser
        for sub in subs:
            for name, child in sub.choices.items():
                yield from leaves(child, (*path, name))

    def required(parser) -> list[str]:
        argv = []
        for group in parser._mutually_exclusive_groups:
            if group.required:
                argv.append(group._group_actions[0].option_strings[0])
        for action in parser._actions:
            if (action.option_strings and not action.required) or action.nargs in ("?", "*") \
                    or isinstance(action, argparse._HelpAction):
                continue
            value = str(action.choices[0]) if action.choices else "1"
            argv += [*action.option_strings[:1], value]
        return argv

    tree = build_parser()
    return [(path + required(leaf), getattr(tree.parse_args(path + required(leaf)), "authority", "user"))
            for path, leaf in leaves(tree) if path]


COMMANDS = command_lines()
# The commands the data dir's owner runs as the operator of the embedded servers, whoever `--as` names
# (docs/architecture.md, "Command line"): none of them reads or changes r2k's data as a user.
OWN = {"services status", "demo", "serve ssh", "serve api"}


def test_the_commands_without_a_user_check_are_only_the_operators():
    assert len(COMMANDS) > 80  # the whole tree, not a list kept by hand
    assert {" ".join(argv[:2]) for argv, authority in COMMANDS if authority == "own"} == OWN


@pytest.mark.compat
@pytest.mark.parametrize("argv", [argv for argv, authority in COMMANDS if authority != "own"],
                         ids=lambda argv: "-".join(a for a in argv if not a.startswith("-") and a != "1")[:40])
def test_every_command_refuses_an_unknown_user(ctx, people, argv):
    candidates.add(ctx, people["root"], "Q?", "A fact.", "FACT")
    with ctx.db.read() as tx:
        events = tx.scalar("SELECT count(*) FROM events")
    result = r2k("--as", "nobody", *argv)
    assert result.returncode == 7, (argv, result.stdout, result.stderr)
    assert error_of(result)["status"] == 403 and "nobody" in error_of(result)["message"]
    assert result.stdout == ""
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM events") == events  # refused before anything was done


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
    """While no admin exists, only the OS account owning the data dir administers it: another
    account's data dir is not even opened."""
    from r2k.core.bootstrap import bootstrap

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, 65534, 65534) if os.geteuid() == 0 else pytest.skip("needs root to hand a dir to nobody")
    with pytest.raises(Forbidden, match=r"belongs to nobody \(uid 65534\)"):
        bootstrap(ctx.settings.model_copy(update={"data_dir": foreign}))
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
