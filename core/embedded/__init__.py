"""The embedded servers: start on first use, reuse from later commands, stop on demand.

Three parts live in the data dir when their URL is not configured (`R2K_DATABASE_URL`,
`R2K_REDIS_URL`, `R2K_GRAPH_URL`), one module each: PostgreSQL (`postgres.py`), the queue Redis
(`redis.py`) and the graph (`graph.py`, a second `redis-server` with FalkorDB's module, started
by the same code as the queue Redis). Every one listens on a Unix socket that only the data dir's
owner can reach, with no TCP port unless `R2K_EMBEDDED_TCP=1`, and requires a credential generated
at its first start into the data dir.

Each running part is described by `run/<part>.json` (pid, socket; never a password). A command first
reads that file and checks the pid is alive and is the right program (the fast path, no lock);
otherwise it takes `run/services.lock` (an flock, so two commands starting together never start two
servers), checks again, and starts the part, on the same socket path as before: a process that
knew the server finds it again by the same URL.
"""
from __future__ import annotations

import ipaddress
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from .. import migrations
from ..adapters.graph import connect
from ..config import Settings, mask_url
from ..errors import ServiceUnavailable
from . import common, graph, postgres, redis
from .common import check_owner, run_dir  # noqa: F401 - part of this package's API

log = logging.getLogger(__name__)

PARTS = ("postgres", "redis", "graph")
NAMES = {"postgres": "PostgreSQL", "redis": "Redis", "graph": "the graph"}
ENV = {"postgres": "R2K_DATABASE_URL", "redis": "R2K_REDIS_URL", "graph": "R2K_GRAPH_URL"}
REDIS_SERVERS = {"redis": redis.QUEUES, "graph": graph.GRAPH}  # the parts that are a redis-server


@dataclass
class PartStatus:
    name: str
    mode: str  # "embedded" or "external"
    url: str | None  # never with its password
    answers: bool
    detail: str = ""
    pid: int | None = None
    credential: str = ""  # which credential is used, never the credential itself
    listens: str | None = None  # an embedded server's socket (and TCP port, if opened); else the URL

    def as_dict(self) -> dict:
        return {"name": self.name, "mode": self.mode, "url": self.url, "listens": self.listens,
                "answers": self.answers, "detail": self.detail, "pid": self.pid, "credential": self.credential}


_WARNED: set[tuple[str, str]] = set()  # each configured URL is warned about once per process
TLS_SCHEMES = {"rediss", "falkors", "bolt+s", "bolt+ssc", "neo4j+s", "neo4j+ssc"}
VERIFIED_SSLMODES = {"verify-ca", "verify-full"}


def configured_url(settings: Settings, part: str) -> str | None:
    url = {"postgres": settings.database_url, "redis": settings.redis_url, "graph": settings.graph_url}[part]
    if url and (part, url) not in _WARNED:
        _WARNED.add((part, url))
        reason = without_tls(part, url)
        if reason:
            log.warning("%s reaches %s: set up TLS (README, \"Servers on other hosts\")", ENV[part], reason)
    return url


def _remote(host: str | None) -> bool:
    """Another host: not a socket (a path), not loopback."""
    if not host or host.startswith("/") or host.lower() in ("localhost", "localhost."):
        return False
    try:
        return not ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return True  # a name other than localhost


def without_tls(part: str, url: str) -> str | None:
    """What a configured URL to another host sends in the clear, in words; None when it uses TLS, or
    reaches this machine (loopback, a Unix socket)."""
    if part == "postgres":
        try:
            params = conninfo_to_dict(url)  # a URL or key=value pairs, as libpq reads them
        except ProgrammingError:
            return None  # unparsable: the connection says so
        hosts = str(params.get("host") or os.environ.get("PGHOST") or "").split(",")
        remote = [h for h in hosts if _remote(h)]
        mode = params.get("sslmode") or os.environ.get("PGSSLMODE") or "prefer"
        if not remote or mode in VERIFIED_SSLMODES:
            return None
        if mode == "require":
            return f"{remote[0]} over TLS that never checks it is talking to that server (sslmode=require)"
        return f"{remote[0]} with sslmode={mode}, so its password and data may cross the network in the clear"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme in TLS_SCHEMES or scheme == "unix" or not _remote(host):
        return None
    return f"{host} without TLS ({scheme}://), so its password and data cross the network in the clear"


def _alive(state: dict | None) -> bool:
    # A server started by an older r2k (no credential, or on a TCP port with no socket) is not ours to
    # use: it is stopped and started again.
    return (bool(state) and state.get("secure") == 1 and bool(state.get("socket"))
            and common.process_is(state.get("pid"), state.get("program", "")))


def _url(settings: Settings, part: str, state: dict) -> str:
    if part == "postgres":
        return postgres.url(settings, state, postgres.APP)
    server = REDIS_SERVERS[part]
    return redis.url(server, state, redis.secret_of(settings, server))


def listens(state: dict) -> str:
    """Where an embedded server listens, in words: its socket, and its TCP port when it has one."""
    tcp = state.get("tcp_port")
    return state["socket"] + (f" and 127.0.0.1:{tcp}" if tcp else "")


def socket_of(settings: Settings, part: str) -> Path | None:
    """Where the embedded `part` listens, checked to fit a socket's path (InvalidInput naming it
    otherwise); None for PostgreSQL run by root, whose cluster lives outside the data dir at a
    short path of its own."""
    if part != "postgres":
        return redis.socket_of(settings, REDIS_SERVERS[part])
    if os.geteuid() == 0:
        return None
    return postgres.socket_file(Path(settings.data_dir) / "postgres",
                                65535 if settings.embedded_tcp else postgres.SOCKET_PORT)


def _adopt(settings: Settings, part: str, state: dict | None) -> dict | None:
    """A server of ours that runs without its run file saying so (restarted from outside r2k, or
    its run file lost): found by its own pid file, its process, and its answer."""
    found = (postgres.adopt(settings, state) if part == "postgres"
             else redis.adopt(settings, REDIS_SERVERS[part], state))
    if found is not None:
        common.write_state(settings, part, found)
    return found


def _running(settings: Settings, part: str, *, start_stopped: bool = True) -> dict:
    """The state of the embedded `part`, started (under the lock) when it is not running. A server
    that died restarts on its socket with its credential; one running already (an earlier start, or a
    restart from outside r2k) is adopted, never started twice. `start_stopped=False` (a process
    reconnecting) leaves alone a server an operator stopped with `services down`."""
    for other in PARTS:  # every embedded part's socket fits, or none starts: no half-started install
        if not configured_url(settings, other):
            socket_of(settings, other)
    state = common.read_state(settings, part)
    if _alive(state):
        return state
    with common.services_lock(settings):
        state = common.read_state(settings, part)
        if _alive(state):
            return state
        adopted = _adopt(settings, part, state)
        if adopted is not None:
            return adopted
        if state and state.get("stopped") and not start_stopped:
            raise ServiceUnavailable(f"the embedded {NAMES[part]} was stopped (`r2k services down`): "
                                     f"`r2k services up` starts it again", part)
        common.tighten(common.data_dir(settings), skip={Path(settings.data_dir) / "postgres"})
        if state and common.process_is(state.get("pid"), state.get("program", "")):
            _stop(part, state)  # started by an older r2k: without a credential, or on a TCP port
        previous = (state or {}).get("tcp_port")
        if part == "postgres":
            state = postgres.start(settings, prefer_tcp=previous)
        else:
            state = redis.start(settings, REDIS_SERVERS[part], prefer_tcp=previous)
        common.write_state(settings, part, state)
        if part == "postgres":
            prepare_database(settings, behind_only=True)
        return state


def ensure(settings: Settings, part: str, *, start_stopped: bool = True) -> str:
    """The URL the application uses for `part`: the configured one, or the embedded server's
    (started if needed), with the application's credential."""
    return configured_url(settings, part) or _url(settings, part,
                                                  _running(settings, part, start_stopped=start_stopped))


def server_pid(settings: Settings, part: str) -> int | None:
    """Which process serves the embedded `part` now, as its run file says (None for a configured
    one): a process whose clients reach the same socket tells a restarted server by it."""
    if configured_url(settings, part):
        return None
    return (common.read_state(settings, part) or {}).get("pid")


def owner_url(settings: Settings) -> str:
    """Who migrations run as: `R2K_DATABASE_OWNER_URL`, else the configured URL, else the embedded
    database's owner role."""
    if settings.database_url:
        return settings.database_owner_url or settings.database_url
    return postgres.url(settings, _running(settings, "postgres"), postgres.OWNER)


def superuser_url(settings: Settings, part: str = "postgres") -> str:
    """Who may do everything: the embedded cluster's superuser, or the embedded Redis's or graph's
    `operator` user (for administration, backups, and tests that play an insider); with a configured
    server, the URL it is configured with (the owner's, for the database). Never used on the request
    path, where the application's credentials are refused what these may do."""
    if part == "postgres":
        if settings.database_url:
            return owner_url(settings)
        return postgres.url(settings, _running(settings, "postgres"), postgres.SUPERUSER)
    configured = configured_url(settings, part)
    if configured:
        return configured
    server = REDIS_SERVERS[part]
    return redis.url(server, _running(settings, part), redis.operator_secret(settings, server), redis.OPERATOR)


def prepare_database(settings: Settings, *, behind_only: bool = False) -> None:
    """Bring the database to the current schema as its owner; for the embedded one, grant the app
    role what it needs on the tables the migrations made. `behind_only`: an embedded server just
    (re)started, left alone when it is at the current schema."""
    url = owner_url(settings)
    if behind_only and not settings.database_url and postgres.at_revision(url) == migrations.HEAD:
        return  # migrated and granted when it got there; Alembic's import alone is ~0.5 s of a restart
    if not settings.database_url:
        # pgvector may only be created by a superuser: the embedded cluster's makes it, so the
        # migrations (run as the owner) find it (docs/architecture.md, "Retrieval").
        postgres.create_vector_extension(superuser_url(settings))
    migrations.upgrade(url)
    if not settings.database_url:
        postgres.grant_app(url)


def up(settings: Settings) -> list[PartStatus]:
    for part in PARTS:
        ensure(settings, part)
    return status(settings)


def _stop(part: str, state: dict) -> None:
    if part == "postgres":
        postgres.stop(state)
    common.stop_pid(state.get("pid"), state.get("program", ""))


def down(settings: Settings) -> list[dict]:
    stopped = []
    with common.services_lock(settings):
        for part in PARTS:
            if configured_url(settings, part):
                continue
            state = common.read_state(settings, part)
            if not _alive(state):
                state = _adopt(settings, part, state) or state
            if state and common.process_is(state.get("pid"), state.get("program", "")):
                _stop(part, state)
                stopped.append(part)
            if state and (state.get("socket") or state.get("port")):
                # Kept: that an operator stopped it (processes that reconnect do not start it again
                # behind their back), and the TCP port it comes back on when it opens one.
                common.write_state(settings, part, {"stopped": True, **({"tcp_port": state["tcp_port"]}
                                                                        if state.get("tcp_port") else {})})
    return [{"name": p, "stopped": p in stopped} for p in PARTS]


def purge(settings: Settings) -> None:
    """Stop the embedded servers and remove what lives outside the data dir (a throwaway data dir)."""
    down(settings)
    postgres.purge(settings)


def credential(settings: Settings, part: str) -> str:
    """Which credential `part` is reached with, in words; never the credential itself."""
    url = configured_url(settings, part)
    if url:
        try:
            has_password = urlsplit(url).password is not None
        except ValueError:
            has_password = False
        if part == "graph" and settings.graph_password:
            has_password = True
        return f"password from {ENV[part]}" if has_password else f"none in {ENV[part]}"
    if part == "postgres":
        return f"scram-sha-256 as {postgres.APP}, password in {common.secret_path(settings, postgres.SECRETS[postgres.APP])}"
    return f"password in {redis.secret_file(settings, REDIS_SERVERS[part])}"


def status(settings: Settings) -> list[PartStatus]:
    """Each part, embedded or external, where it listens and whether it answers. Starts nothing."""
    result = []
    for part in PARTS:
        url = configured_url(settings, part)
        if url:
            ok, detail = probe(part, url, settings)
            result.append(PartStatus(part, "external", mask_url(url), ok, detail, credential=credential(settings, part),
                                     listens=mask_url(url)))
            continue
        state = common.read_state(settings, part)
        if not _alive(state):
            state = _adopt(settings, part, state)
        if state is None:
            result.append(PartStatus(part, "embedded", None, False, "not running"))
            continue
        url = _url(settings, part, state)
        ok, detail = probe(part, url, settings)
        result.append(PartStatus(part, "embedded", mask_url(url), ok, detail, state.get("pid"),
                                 credential(settings, part), listens(state)))
    return result


def probe(part: str, url: str, settings: Settings, timeout: float = 2.0) -> tuple[bool, str]:
    """Does the service at `url` answer a trivial request?"""
    try:
        if part == "postgres":
            with psycopg.connect(url, connect_timeout=max(1, int(timeout))) as conn:
                version = conn.execute("SHOW server_version").fetchone()[0]
            return True, f"PostgreSQL {version}"
        if part == "redis":
            import redis as redis_py

            client = redis_py.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
            try:
                info = client.info("server")
            finally:
                client.close()
            return True, f"Redis {info.get('redis_version', '?')}"

        graph = connect(url, settings.graph_user, settings.graph_password, timeout=timeout)
        try:
            graph.ping()
        finally:
            graph.close()
        return True, graph.protocol
    except Exception as exc:  # noqa: BLE001 - a probe reports what failed; it never raises
        return False, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]


def unavailable(part: str, url: str, exc: Exception) -> ServiceUnavailable:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ServiceUnavailable(f"{NAMES[part]} at {mask_url(url)} does not answer: {reason}", part)
