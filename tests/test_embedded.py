"""The embedded servers' addresses and their data dir: Unix sockets nobody else reaches, a TCP port
only when asked for, a warning for a server elsewhere reached without TLS, servers an older r2k left
on TCP ports moved to sockets, and a data dir that is not this account's alone refused before
anything starts."""
from __future__ import annotations

import json
import logging
import os
import pty
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
import redis

from r2k.core import embedded
from r2k.core.config import Settings
from r2k.core.embedded import common, postgres, redis as embedded_redis
from r2k.core.embedded.graph import GRAPH
from r2k.core.errors import InvalidInput
from tests.conftest import ROOT, as_account, error_of, r2k_in_process, tcp_listeners

PARTS = ("postgres", "redis", "graph")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="plays another OS account: needs root")
embedded_only = pytest.mark.skipif(any(os.environ.get(v) for v in ("R2K_DATABASE_URL", "R2K_REDIS_URL")),
                                   reason="starts embedded servers of its own")


def _env(data: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("R2K_")}
    env.update(R2K_DATA_DIR=str(data), **extra)
    return env


def _r2k(data: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "r2k.app", *args], cwd=ROOT, env=_env(data, **extra),
                          capture_output=True, text=True, timeout=180)


def _workstation(data: Path) -> subprocess.CompletedProcess:
    """`r2k` alone on a terminal (stdin and stdout a pty, as a person runs it; without one it refuses
    to open), its stderr captured."""
    leader, follower = pty.openpty()
    try:
        return subprocess.run([sys.executable, "-m", "r2k.app"], cwd=ROOT, env=_env(data), stdin=follower,
                              stdout=follower, stderr=subprocess.PIPE, text=True, timeout=180)
    finally:
        os.close(follower)
        os.close(leader)


def _servers_of(data: Path) -> list[int]:
    """Processes running a server of this data dir (their command line or their cluster names it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if ("redis-server" in cmdline or "postgres" in cmdline) and (str(data) in cmdline or str(data) in cwd):
            found.append(int(proc.name))
    return found


# ----------------------------------------------------------------------------- TLS to other hosts

@pytest.mark.parametrize("part,url,warned", [
    ("redis", "redis://:pw@cache.example.com:6379/0", "cache.example.com without TLS (redis://)"),
    ("redis", "rediss://:pw@cache.example.com:6380/0", None),
    ("redis", "redis://:pw@127.0.0.1:6379/9", None),
    ("redis", "redis://localhost:6379/0", None),
    ("redis", "redis://[::1]:6379/0", None),
    ("redis", "unix://:pw@/run/redis/redis.sock?db=0", None),
    ("redis", "redis://10.0.0.7:6379/0", "10.0.0.7 without TLS"),
    ("graph", "falkor://:pw@graph.example.com:6379", "graph.example.com without TLS (falkor://)"),
    ("graph", "falkors://:pw@graph.example.com:6379", None),
    ("graph", "bolt://neo4j.example.com:7687", "neo4j.example.com without TLS (bolt://)"),
    ("graph", "neo4j+s://neo4j.example.com:7687", None),
    ("graph", "bolt+s://neo4j.example.com:7687", None),
    ("postgres", "postgresql://ops:pw@db.example.com/r2k", "db.example.com with sslmode=prefer"),
    ("postgres", "postgresql://ops:pw@db.example.com/r2k?sslmode=disable", "db.example.com with sslmode=disable"),
    ("postgres", "postgresql://ops:pw@db.example.com/r2k?sslmode=require", "never checks it is talking to"),
    ("postgres", "postgresql://ops:pw@db.example.com/r2k?sslmode=verify-full", None),
    ("postgres", "postgresql://ops:pw@db.example.com/r2k?sslmode=verify-ca", None),
    ("postgres", "postgresql://postgres@127.0.0.1:5432/r2k_ci", None),
    ("postgres", "postgresql://r2k_app:pw@/r2k?host=/var/lib/r2k-postgres/clusters/x&port=5432", None),
    ("postgres", "postgresql://ops:pw@/r2k?host=db.example.com", "db.example.com with sslmode=prefer"),
    ("postgres", "host=db.example.com dbname=r2k sslmode=disable", "db.example.com with sslmode=disable"),
    ("postgres", "postgresql://ops@localhost,db.example.com/r2k", "db.example.com with sslmode=prefer"),
])
def test_a_url_to_another_host_without_tls_is_named(part, url, warned, monkeypatch):
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.delenv("PGHOST", raising=False)
    said = embedded.without_tls(part, url)
    assert (said is None) if warned is None else (warned in said), said
    assert "pw" not in (said or "")  # never the password


def test_the_warning_comes_once_per_process_and_never_for_the_embedded_servers(caplog, monkeypatch):
    monkeypatch.setattr(embedded, "_WARNED", set())
    settings = Settings(data_dir=Path("/nonexistent"), redis_url="redis://:s3cret@cache.example.com:6379/0",
                        graph_url="falkors://:s3cret@graph.example.com:6379")
    with caplog.at_level(logging.WARNING, logger="r2k.core.embedded"):
        for _ in range(3):
            assert embedded.configured_url(settings, "redis") == settings.redis_url
            assert embedded.configured_url(settings, "graph") == settings.graph_url
            assert embedded.configured_url(settings, "postgres") is None
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ['R2K_REDIS_URL reaches cache.example.com without TLS (redis://), so its password and data '
                     'cross the network in the clear: set up TLS (README, "Servers on other hosts")'], lines


def test_a_command_with_a_url_to_another_host_warns_once_on_stderr(ctx, people, tmp_path):
    """`services status` reaches every part (PostgreSQL and the graph twice, Redis for the breaker
    too): the line comes once. `.invalid` never resolves, so nothing is sent anywhere."""
    result = subprocess.run([sys.executable, "-m", "r2k.app", "--as", "root", "services", "status"], cwd=ROOT,
                            env={**os.environ, "R2K_GRAPH_URL": "falkor://:s3cret@graph.example.invalid:6379"},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("R2K_GRAPH_URL reaches graph.example.invalid without TLS (falkor://)") == 1, \
        result.stderr
    assert "s3cret" not in result.stderr + result.stdout


# ----------------------------------------------------------------------------- sockets

def test_a_socket_path_too_long_is_refused_in_one_line_before_anything_starts(tmp_path):
    data = tmp_path / ("d" * (common.SOCKET_PATH_MAX - len(str(tmp_path)) - 10))
    result = _r2k(data, "--json", "services", "up")
    assert result.returncode == 6, result.stderr
    error = error_of(result)
    socket = data / "redis" / "server.sock"
    assert error["status"] == 400 and error["message"] == (
        f"the socket path {socket} is {len(str(socket))} bytes, over the 107 a Unix socket's path may have: "
        f"set a shorter R2K_DATA_DIR")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (data / "secrets").exists() and not (data / "postgres.cluster").exists()
    assert _servers_of(data) == []
    with pytest.raises(InvalidInput):  # the limit is the kernel's: 107 bytes fit, 108 do not
        common.socket_path(Path("/" + "s" * 107))
    assert common.socket_path(Path("/" + "s" * 106)) == Path("/" + "s" * 106)


def test_a_new_tcp_port_lies_outside_the_range_the_kernel_hands_to_outgoing_connections():
    """A port the kernel picked (bind to 0) is an ephemeral one: once its server stops, any outgoing
    connection on the machine may be given it, and the restart moves. CI saw exactly that."""
    low, high = common.ephemeral_ports()
    assert (low, high) == tuple(int(n) for n in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = {common.tcp_port(None) for _ in range(20)}
    assert all(port < low or port > high for port in ports), (sorted(ports), low, high)
    assert all(common.port_free(port) for port in ports) and len(ports) > 1
    taken = min(ports)
    with socket.socket() as holder:  # a previous port still free is kept; one taken is not
        assert common.tcp_port(taken) == taken
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        assert common.tcp_port(taken) != taken


@pytest.mark.services  # servers of its own
@embedded_only
def test_embedded_tcp_opens_a_loopback_port_besides_the_socket_and_keeps_it_across_a_restart(tmp_path):
    """R2K_EMBEDDED_TCP=1, for a tool that needs TCP: each server also listens on 127.0.0.1 (the
    same passwords), clients still use the socket, and a restart keeps the port while it is free."""
    settings = Settings(data_dir=tmp_path / "tcp", embedded_tcp=True)
    try:
        urls = {part: embedded.ensure(settings, part) for part in PARTS}
        assert urls["postgres"].startswith("postgresql://r2k_app:") and "@/r2k?host=/" in urls["postgres"]
        assert urls["redis"].startswith("unix://") and urls["graph"].startswith("unix://")
        states = {part: common.read_state(settings, part) for part in PARTS}
        for part, state in states.items():
            assert tcp_listeners(state["pid"]), part  # and so this check sees a TCP listener when there is one
            assert all(line.split()[1].startswith("0100007F:") for line in tcp_listeners(state["pid"])), part
        port = states["postgres"]["tcp_port"]
        password = (tmp_path / "tcp" / "secrets" / "postgres-app.password").read_text().strip()
        with psycopg.connect(f"postgresql://r2k_app:{password}@127.0.0.1:{port}/r2k", connect_timeout=5) as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "r2k_app"
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://r2k_app@127.0.0.1:{port}/r2k", connect_timeout=5)
        rows = {p.name: p for p in embedded.status(settings)}
        assert rows["redis"].listens == f"{states['redis']['socket']} and 127.0.0.1:{states['redis']['tcp_port']}"
        os.kill(states["redis"]["pid"], signal.SIGKILL)
        while common.process_is(states["redis"]["pid"], "redis-server"):
            time.sleep(0.05)
        embedded.ensure(settings, "redis")
        again = common.read_state(settings, "redis")
        assert again["tcp_port"] == states["redis"]["tcp_port"] and again["socket"] == states["redis"]["socket"]
    finally:
        embedded.purge(settings)


def _old_redis_config(workdir: Path, port: int, password: str, module: Path | None) -> str:
    """The configuration an older r2k gave its redis-servers: a TCP port on loopback, requirepass."""
    lines = [f"port {port}", "bind 127.0.0.1", "protected-mode yes", f"requirepass {password}", "daemonize yes",
             f'dir "{workdir}"', f'pidfile "{workdir / "server.pid"}"', f'logfile "{workdir / "server.log"}"',
             'save ""', "appendonly yes", "appendfsync everysec"]
    return "\n".join(lines + ([f'loadmodule "{module}"'] if module else [])) + "\n"


@pytest.mark.services  # servers of its own
@embedded_only
def test_servers_an_older_r2k_left_on_tcp_ports_are_moved_to_their_sockets(tmp_path):
    """A data dir of the previous r2k: its run files name ports, its servers listen on 127.0.0.1
    (the queue Redis's run file even lost, so only its pid file knows it). The next `services up`
    stops each and starts it again on its socket, with its data, and no TCP port is left open."""
    data = tmp_path / "old"
    settings = Settings(data_dir=data)
    try:
        embedded.up(settings)  # the secrets, cluster and append-only files, as the older r2k made them
        with psycopg.connect(embedded.ensure(settings, "postgres")) as conn:
            conn.execute("INSERT INTO users (name, role, created_at, updated_at) VALUES ('ada', 'validator', now(), now())")
        redis.Redis.from_url(embedded.ensure(settings, "redis")).set("kept", "1")
        embedded.ensure(settings, "graph")
        embedded.down(settings)
        old = {}
        for part, server in (("redis", embedded_redis.QUEUES), ("graph", GRAPH)):
            workdir = data / part
            port = common.tcp_port(None)
            module = embedded_redis.bin_dir() / server.module if server.module else None
            common.write_private(workdir / "server.conf", _old_redis_config(
                workdir, port, embedded_redis.secret_of(settings, server), module))
            subprocess.run([str(embedded_redis.bin_dir() / "redis-server"), str(workdir / "server.conf")], check=True)
            deadline = time.monotonic() + 15
            while not (workdir / "server.pid").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            old[part] = {"port": port, "program": "redis-server", "secure": 1,
                         "pid": int((workdir / "server.pid").read_text())}
        account = postgres.os_account()
        pgdata = postgres.cluster_dir(settings, account)
        binaries = postgres._runnable_bin_dir(postgres.bin_dir(), account)
        postgres._write_hba(pgdata, account, "host all all 127.0.0.1/32 scram-sha-256\n")
        port = common.tcp_port(None)
        started = postgres._run_as(account, [str(binaries / "pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "server.log"),
                                             "-w", "-o", f"-p {port} -c listen_addresses=127.0.0.1 "
                                             "-c unix_socket_directories=''", "start"], cwd=str(pgdata))
        assert started.returncode == 0, started.stderr
        old["postgres"] = {"pid": postgres._postmaster(pgdata)[0], "port": port, "program": "postgres",
                           "pgdata": str(pgdata), "bin_dir": str(binaries), "os_user": account, "secure": 1}
        for part in ("postgres", "graph"):
            common.write_state(settings, part, old[part])
        common.state_path(settings, "redis").unlink()  # lost: its pid file alone says it runs
        assert all(tcp_listeners(old[part]["pid"]) for part in PARTS)

        result = _r2k(data, "--json", "services", "up")
        assert result.returncode == 0, result.stderr
        rows = {row["name"]: row for row in json.loads(result.stdout)}
        for part in PARTS:
            state = common.read_state(settings, part)
            assert rows[part]["answers"] and rows[part]["pid"] == state["pid"] != old[part]["pid"], (part, rows[part])
            assert not common.process_is(old[part]["pid"], old[part]["program"]), part  # stopped, not left beside it
            assert tcp_listeners(state["pid"]) == [] and "tcp_port" not in state, (part, state)
            assert rows[part]["listens"] == state["socket"]
        with psycopg.connect(embedded.ensure(settings, "postgres")) as conn:
            assert conn.execute("SELECT name FROM users").fetchall() == [("ada",)]
        assert redis.Redis.from_url(embedded.ensure(settings, "redis")).get("kept") == b"1"
    finally:
        embedded.purge(settings)


# ----------------------------------------------------------------------------- a data dir of one account

def _nothing_made_or_started(data: Path, before: list[str]) -> None:
    assert sorted(p.name for p in data.iterdir()) == before
    assert _servers_of(data) == []
    import hashlib

    key = hashlib.sha256(str(data.resolve()).encode()).hexdigest()[:16]
    assert not (postgres.SYSTEM_BASE / "clusters" / key).exists()


@as_root
@pytest.mark.parametrize("argv", [["--json", "services", "up"], ["--json", "--as", "ada", "queue", "stats"], []])
def test_a_data_dir_of_another_account_is_refused_before_anything_starts(tmp_path, argv):
    """Root runs r2k on a data dir `nobody` made and owns: refused at once, exit 7, in one line (it
    used to start a PostgreSQL cluster for it, then refuse everything else). `[]`: the workstation."""
    data = tmp_path / "theirs"
    data.mkdir(mode=0o700)
    (data / "notes").write_text("theirs")
    os.chown(data, 65534, 65534)
    result = _r2k(data, *argv) if argv else _workstation(data)
    assert result.returncode == 7, result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(
        f"the data dir {data} belongs to nobody (uid 65534), and r2k runs as root (uid 0): run it as nobody, "
        f"or set R2K_DATA_DIR to a directory of your own" + ('"}' if argv[:1] == ["--json"] else ""))
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    _nothing_made_or_started(data, ["notes"])


@pytest.mark.parametrize("where,mode,who", [("", 0o770, "its group"), ("", 0o707, "others"),
                                            ("secrets", 0o777, "its group and others"), ("run", 0o730, "its group")])
def test_a_data_dir_others_can_write_is_refused_before_anything_starts(tmp_path, where, mode, who):
    """As OpenSSH's StrictModes refuses a key file others could have changed: a data dir, or its
    secrets/ or run/, writable by group or others is refused, and nothing in it is read or started."""
    data = tmp_path / "loose"
    (data / "secrets").mkdir(parents=True, mode=0o700)
    (data / "run").mkdir(mode=0o700)
    data.chmod(0o700)
    (data / where).chmod(mode)
    before = sorted(p.name for p in data.iterdir())
    result = _r2k(data, "--json", "services", "up")
    assert result.returncode == 7, result.stderr
    place = data / where if where else data
    name = "the data dir" if not where else f"the data dir's {where}/"
    assert error_of(result) == {"error": "Forbidden", "status": 403, "message": (
        f"{name} {place} is writable by {who} (mode {mode:o}), so anything in it may be someone else's: "
        f"`chmod go-w {place}`")}
    _nothing_made_or_started(data, before)
    assert stat.S_IMODE(place.stat().st_mode) == mode  # left as it was: its owner decides


def _cli_as_this_account(data: str, *argv: str) -> dict:
    """The command line, in this process (run by `as_account` as another account)."""
    os.environ["R2K_DATA_DIR"] = data
    result = r2k_in_process(*argv)
    return {"code": result.returncode, "stderr": result.stderr}


@as_root
@pytest.mark.parametrize("reachable", [True, False])
def test_another_accounts_data_dir_is_a_clear_refusal_for_an_ordinary_user(tmp_path, reachable):
    """`nobody` runs r2k on root's data dir: a one-line 403 (exit 7), never a 500 PermissionError,
    whether it can see the data dir (its parent open to all) or not even that."""
    import tempfile

    data = Path(tempfile.mkdtemp(prefix="r2k-root-", dir="/tmp")) if reachable else tmp_path / "root's"
    data.mkdir(mode=0o700, exist_ok=True)
    try:
        seen = as_account(_cli_as_this_account, str(data), "--json", "--as", "ada", "queue", "stats")
    finally:
        if reachable:
            data.rmdir()
    assert seen["code"] == 7, seen
    error = error_of(seen["stderr"])
    assert error["status"] == 403 and "PermissionError" not in seen["stderr"]
    if reachable:
        assert error["message"] == (f"the data dir {data} belongs to root (uid 0), and r2k runs as nobody (uid "
                                    f"65534): run it as root, or set R2K_DATA_DIR to a directory of your own")
    else:
        assert error["message"] == (f"the data dir {data} cannot be reached by nobody (uid 65534), the account r2k "
                                    f"runs as: it is another account's; run r2k as its owner, or set "
                                    f"R2K_DATA_DIR to a directory of your own")
