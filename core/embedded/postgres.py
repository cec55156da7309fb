"""The embedded PostgreSQL: a private cluster from the `pgserver` package's binaries (or the machine's
own `initdb`/`pg_ctl`), reached through a Unix socket in its cluster directory (0700, its owner's
alone) with no TCP port unless `R2K_EMBEDDED_TCP=1`, every connection authenticated with
scram-sha-256 all the same.

Three roles, each with a password generated into the data dir's `secrets/`:

- ``postgres``, the cluster's superuser: creates the other two and nothing else;
- ``r2k_owner`` owns the database and its tables; migrations run as it;
- ``r2k_app`` is what every command, workstation and worker connects as: neither superuser nor
  owner, so it cannot disable the append-only triggers, run programs (`COPY … TO PROGRAM`) or
  touch another database. It may read, insert and update the tables, and only insert into the
  append-only ones.

PostgreSQL never runs as root. Started by root, it runs as the system account ``r2k-postgres``, and
its cluster lives under /var/lib/r2k-postgres, outside the data dir: the data dir stays 0700 and
root's home is never opened to another account. Its socket is in that cluster directory, 0700 and
the account's, which root reaches and nobody else does.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from .. import migrations
from ..config import Settings
from ..errors import ServiceUnavailable
from . import common

log = logging.getLogger(__name__)

# With no TCP listener the port only names the socket file (.s.PGSQL.5432): the same one for
# every data dir, each in its own directory.
SOCKET_PORT = 5432
DATABASE = "r2k"
SUPERUSER, OWNER, APP = "postgres", "r2k_owner", "r2k_app"
SECRETS = {SUPERUSER: "postgres-superuser", OWNER: "postgres-owner", APP: "postgres-app"}
PROGRAM = "postgres"
OS_ACCOUNT = "r2k-postgres"
SYSTEM_BASE = Path("/var/lib/r2k-postgres")

# Passwords on the socket too: a second lock behind the directory's (docs/architecture.md, "Trust model").
HBA_SECURE = ("# r2k: the Unix socket; every role signs in with its password (scram-sha-256).\n"
              "local all all scram-sha-256\n")
HBA_TCP = ("# R2K_EMBEDDED_TCP=1: loopback too, with the same passwords.\n"
           "host all all 127.0.0.1/32 scram-sha-256\n"
           "host all all ::1/128 scram-sha-256\n")
# After a crash PostgreSQL first syncs its whole data directory to disk: file by file by default,
# 2-3 s of a restart here; one syncfs(2) of the file system on Linux, a tenth of that.
SYNC_AFTER_CRASH = "-c recovery_init_sync_method=syncfs " if sys.platform.startswith("linux") else ""
# Only for the first start of a cluster made by an older r2k, which trusted loopback: long enough to
# give the superuser its password, over the socket only the owner reaches, then HBA_SECURE replaces it.
HBA_LEGACY = "local all postgres trust\n"


# ----------------------------------------------------------------------------- where things are

def bin_dir() -> Path | None:
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.submodule_search_locations:
        pkg = Path(list(spec.submodule_search_locations)[0])
        if (pkg / "pginstall" / "bin" / "pg_ctl").exists():
            return pkg / "pginstall" / "bin"
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), reverse=True)
    return candidates[0].parent if candidates else None


def os_account() -> str | None:
    """None when we are not root; else the system account PostgreSQL runs as (created if missing)."""
    if os.geteuid() != 0:
        return None

    try:
        pwd.getpwnam(OS_ACCOUNT)
        return OS_ACCOUNT
    except KeyError:
        pass
    result = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", str(SYSTEM_BASE),
                             "--shell", "/usr/sbin/nologin", OS_ACCOUNT], capture_output=True, text=True)
    if result.returncode != 0:
        raise ServiceUnavailable(
            f"PostgreSQL never runs as root, and the system account {OS_ACCOUNT} could not be created "
            f"({result.stderr.strip() or 'useradd failed'}): create it, run r2k as an ordinary user, or set "
            f"R2K_DATABASE_URL")
    return OS_ACCOUNT


def cluster_dir(settings: Settings, account: str | None) -> Path:
    """Where the cluster lives: in the data dir, or (run by root) under SYSTEM_BASE, recorded in the
    data dir so a moved data dir keeps its cluster."""
    if account is None:
        return common.data_dir(settings) / "postgres"
    pointer = common.data_dir(settings) / "postgres.cluster"
    if pointer.exists():
        return Path(pointer.read_text().strip())
    key = hashlib.sha256(str(Path(settings.data_dir).resolve()).encode()).hexdigest()[:16]
    path = SYSTEM_BASE / "clusters" / key
    if path.exists() and not common.has_secret(settings, SECRETS[SUPERUSER]):
        _set_aside_orphan(path)
    inside = common.data_dir(settings) / "postgres"
    if (inside / "PG_VERSION").exists() and not path.exists():
        # A cluster an older r2k kept inside the data dir, which the account could only reach
        # by opening the data dir and its parents to everyone: moved out instead.
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(inside), str(path))
    common.write_private(pointer, str(path) + "\n")
    return path


def _run_as(account: str | None, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    if account:
        # Drop root's groups too: with gid 0 a root-owned directory could still be open to it.
        kwargs.update(user=account, group=pwd.getpwnam(account).pw_gid, extra_groups=[])
    return common.run_private(args, **kwargs)


def _can_run(account: str, program: Path) -> bool:
    try:
        return _run_as(account, [str(program), "--version"], cwd="/").returncode == 0
    except OSError:  # exec refused: a directory on the way is closed to the account
        return False


def _runnable_bin_dir(binaries: Path, account: str | None) -> Path:
    """Binaries the account can run: where they are, or (a venv inside root's home or a private
    temporary directory, which it cannot enter) a copy of the installation under SYSTEM_BASE, made
    once. pgserver's binaries find their libraries at $ORIGIN/../../../pgserver.libs: the copy keeps
    that layout."""
    if account is None or _can_run(account, binaries / "postgres"):
        return binaries
    install = binaries.parent                       # …/pgserver/pginstall
    libs = install.parent.parent / f"{install.parent.name}.libs"  # …/pgserver.libs
    key = hashlib.sha256(str(install).encode()).hexdigest()[:12]
    root = SYSTEM_BASE / "pginstall" / key
    target = root / install.parent.name / install.name
    if not (target / "bin" / "postgres").exists():
        tmp = root.with_name(root.name + f".{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(install, tmp / install.parent.name / install.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, tmp / libs.name, symlinks=True)
        for dirpath, dirnames, filenames in os.walk(tmp):  # public software: readable, never writable
            os.chmod(dirpath, 0o755)
            for name in filenames:
                path = os.path.join(dirpath, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
        # Put in place atomically, never over a complete copy: another process may have finished
        # first and be running initdb or postgres from it this moment.
        try:
            os.rename(tmp, root)
        except OSError:
            if (target / "bin" / "postgres").exists():
                shutil.rmtree(tmp, ignore_errors=True)  # theirs is complete and in use: keep it
            else:  # something left without the binaries (an older layout): set aside, then ours
                stale = root.with_name(f"{root.name}.{os.getpid()}.stale")
                os.rename(root, stale)
                os.rename(tmp, root)
                shutil.rmtree(stale, ignore_errors=True)
    return target / "bin"


def _system_dirs(account: str) -> None:
    """SYSTEM_BASE and its clusters/ are traversable, not listable; each cluster is its account's."""
    for path, mode in ((SYSTEM_BASE, 0o711), (SYSTEM_BASE / "clusters", 0o711), (SYSTEM_BASE / "pginstall", 0o755)):
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(mode)


# ----------------------------------------------------------------------------- URLs

def url(settings: Settings, state: dict, role: str, database: str = DATABASE) -> str:
    """libpq's URL for a socket: its directory as the host, the port naming the socket file."""
    password = common.secret(settings, SECRETS[role])
    return _socket_url(state, f"{role}:{password}", database)


def _socket_url(state: dict, userinfo: str, database: str) -> str:
    directory = quote(str(Path(state["socket"]).parent))
    return f"postgresql://{userinfo}@/{database}?host={directory}&port={state['port']}"


def socket_file(pgdata: Path, port: int) -> Path:
    return common.socket_path(pgdata / f".s.PGSQL.{port}")


# ----------------------------------------------------------------------------- start and stop

def _set_aside_orphan(path: Path) -> None:
    """A cluster left by a data dir that was removed at this same path (without `services down`):
    its passwords went with the data dir, so no r2k can log in to it, and a new one would find it
    in the way. Its server is stopped and the cluster moved aside, never deleted."""
    pid = _postmaster(path)[0]
    if common.process_is(pid, PROGRAM):
        os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
        deadline = time.monotonic() + 30
        while common.process_is(pid, PROGRAM) and time.monotonic() < deadline:
            time.sleep(0.1)
    kept = path.with_name(f"{path.name}.orphaned-{time.strftime('%Y%m%d-%H%M%S')}")
    path.rename(kept)
    log.warning("the PostgreSQL cluster %s belonged to an earlier data dir at this path, whose passwords "
                "are gone: stopped and moved to %s (delete it when it is not needed)", path, kept)


def start(settings: Settings, prefer_tcp: int | None = None) -> dict:
    binaries = bin_dir()
    if binaries is None:
        raise ServiceUnavailable(
            "no embedded PostgreSQL: the pgserver package (Python < 3.13) is not installed and no "
            "initdb/pg_ctl was found; set R2K_DATABASE_URL to a PostgreSQL server")
    account = os_account()
    if account:
        _system_dirs(account)
        binaries = _runnable_bin_dir(binaries, account)
    pgdata = cluster_dir(settings, account)
    pgdata.mkdir(mode=0o700, parents=True, exist_ok=True)
    if account:
        shutil.chown(pgdata, account, account)
    pgdata.chmod(0o700)
    fresh = not (pgdata / "PG_VERSION").exists()
    legacy = not fresh and not common.has_secret(settings, SECRETS[SUPERUSER])
    passwords = {role: common.secret(settings, name) for role, name in SECRETS.items()}
    if fresh:
        _initdb(binaries, pgdata, account, passwords[SUPERUSER])
    hba = HBA_SECURE + (HBA_TCP if settings.embedded_tcp else "")
    _write_hba(pgdata, account, HBA_LEGACY if legacy else hba)
    _stop_leftover(binaries, pgdata, account)
    port, tcp = _pg_ctl_start(binaries, pgdata, account, prefer_tcp if settings.embedded_tcp else None,
                              settings.embedded_tcp)
    state = {"pid": int((pgdata / "postmaster.pid").read_text().splitlines()[0]), "port": port,
             "socket": str(socket_file(pgdata, port)), "program": PROGRAM, "pgdata": str(pgdata),
             "bin_dir": str(binaries), "os_user": account, "secure": 1, **({"tcp_port": port} if tcp else {})}
    if legacy:
        _give_superuser_its_password(state, passwords[SUPERUSER])
        _write_hba(pgdata, account, hba)
        _reload(settings, state)
    _bootstrap(settings, state, passwords)
    return state


def _initdb(binaries: Path, pgdata: Path, account: str | None, superuser_password: str) -> None:
    # initdb reads the superuser's password from a file the account can read, removed at once.
    fd, pwfile = tempfile.mkstemp(prefix="r2k-pw-")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(superuser_password + "\n")
        if account:
            shutil.chown(pwfile, account, account)
        result = _run_as(account, [str(binaries / "initdb"), "-D", str(pgdata), "-U", SUPERUSER, "--pwfile", pwfile,
                                   "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C"], cwd=str(pgdata))
    finally:
        os.unlink(pwfile)
    if result.returncode != 0:
        raise ServiceUnavailable(f"initdb failed in {pgdata}: {result.stderr.strip()[-500:]}")


def adopt(settings: Settings, state: dict | None) -> dict | None:
    """The cluster of this data dir running although the run file does not say so (restarted from
    outside r2k with `pg_ctl restart`, say): its postmaster.pid names a live postgres with its
    socket in the cluster directory, and the app role signs in there. A server still starting is
    waited for. One an older r2k started on a TCP port, with no socket, is not adopted."""
    if not common.has_secret(settings, SECRETS[APP]):
        return None
    account = os_account()
    pgdata = Path(state["pgdata"]) if state and state.get("pgdata") else cluster_dir(settings, account)
    pid, port, socket_dir, listens = _postmaster(pgdata)
    if not common.process_is(pid, PROGRAM) or not port or socket_dir != str(pgdata):
        return None
    found = {"pid": pid, "port": port, "socket": str(socket_file(pgdata, port)), "program": PROGRAM,
             "pgdata": str(pgdata),
             "bin_dir": (state or {}).get("bin_dir") or str(_runnable_bin_dir(bin_dir(), account)),
             "os_user": account, "secure": 1, **({"tcp_port": port} if listens else {})}
    target = url(settings, found, APP)

    def answers() -> bool:
        try:
            with _connect(target, connect_timeout=2):
                return True
        except Exception:  # noqa: BLE001 - still starting, or in recovery: look again
            return False

    try:
        common.wait_for(answers, "PostgreSQL", 60, pgdata / "server.log")
    except ServiceUnavailable:
        return None
    return found


def _postmaster(pgdata: Path) -> tuple[int | None, int | None, str | None, str | None]:
    """What a cluster's postmaster.pid names: the pid, the port, the first socket directory and the
    first TCP address ('' for none); all None when there is no such file."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        return int(lines[0]), int(lines[3]), lines[4].strip(), lines[5].strip()
    except (OSError, ValueError, IndexError):
        return None, None, None, None


def _write_hba(pgdata: Path, account: str | None, text: str) -> None:
    path = pgdata / "pg_hba.conf"
    common.write_private(path, text)
    if account:
        shutil.chown(path, account, account)


def _stop_leftover(binaries: Path, pgdata: Path, account: str | None) -> None:
    """A postmaster.pid whose process is gone (or is no longer postgres) is stale: removed, with its
    socket's lock file. One whose server still runs although it could not be adopted (an older
    r2k's, on a TCP port) is stopped, to be started again on the socket."""
    pidfile = pgdata / "postmaster.pid"
    if not pidfile.exists():
        return
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (ValueError, IndexError):
        pid = None
    if common.process_is(pid, PROGRAM):
        _run_as(account, [str(binaries / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"], cwd="/")
    if not common.process_is(pid, PROGRAM):
        pidfile.unlink(missing_ok=True)
        # The socket's lock file of a postmaster killed a moment ago: PostgreSQL removes it only
        # once that process is reaped, which can take seconds after a kill -9.
        for lock in pgdata.glob(".s.PGSQL.*.lock"):
            try:
                holder = int(lock.read_text().splitlines()[0])
            except (OSError, ValueError, IndexError):
                continue
            if holder == pid:
                lock.unlink(missing_ok=True)
                Path(str(lock).removesuffix(".lock")).unlink(missing_ok=True)


def _pg_ctl_start(binaries: Path, pgdata: Path, account: str | None, prefer_tcp: int | None,
                  tcp: bool) -> tuple[int, bool]:
    """Start the cluster on its socket in `pgdata` (and, with `tcp`, on 127.0.0.1 too, on
    `prefer_tcp` when it is free); the port and whether it listens on TCP. After a `kill -9` of the
    postmaster its old backends can hold the shared memory for a moment: that start is retried."""
    log = pgdata / "server.log"
    tried: set[int] = set()
    result = None
    deadline = time.monotonic() + 20
    port = None
    for _attempt in range(40):
        if port is None:
            port = common.tcp_port(None if prefer_tcp in tried else prefer_tcp) if tcp else SOCKET_PORT
            tried.add(port)
        socket_file(pgdata, port)
        options = (f"-p {port} -c listen_addresses={'127.0.0.1' if tcp else shlex.quote('')} "
                   f"-c unix_socket_directories={shlex.quote(chr(34) + str(pgdata) + chr(34))} "
                   f"-c unix_socket_permissions=0700 {SYNC_AFTER_CRASH}"
                   f"-c password_encryption=scram-sha-256 -c max_connections=200 -c shared_buffers=128MB")
        size = log.stat().st_size if log.exists() else 0
        result = _run_as(account, [str(binaries / "pg_ctl"), "-D", str(pgdata), "-l", str(log), "-w", "-t", "60",
                                   "-o", options, "start"], cwd=str(pgdata))
        if result.returncode == 0:
            return port, tcp
        said = log.read_text(errors="replace")[size:] if log.exists() else ""
        if ("shared memory block" in said or "already exists" in said) and time.monotonic() < deadline:
            # The killed postmaster's backends are on their way out, or its process is not reaped
            # yet (its socket's lock file names it): the same start succeeds a moment later.
            time.sleep(0.25)
            continue
        if tcp and ("could not bind" in said or "Address already in use" in said):
            port = None  # another program took the port between our check and the bind
            if len(tried) < 3:
                continue
        break
    tail = log.read_text(errors="replace")[-800:] if log.exists() else result.stderr
    raise ServiceUnavailable(f"embedded PostgreSQL did not start: {tail.strip()}", "postgres")


def _connect(target: str, **kw):
    kw.setdefault("connect_timeout", 10)
    return psycopg.connect(target, autocommit=True, **kw)


def _give_superuser_its_password(state: dict, password: str) -> None:
    with _connect(_socket_url(state, SUPERUSER, "postgres")) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(SUPERUSER), sql.Literal(password)))


def _reload(settings: Settings, state: dict) -> None:
    with _connect(url(settings, state, SUPERUSER, "postgres")) as conn:
        conn.execute("SELECT pg_reload_conf()")


def _bootstrap(settings: Settings, state: dict, passwords: dict[str, str]) -> None:
    """The owner and app roles with their passwords, the database owned by the owner and open to
    these two only. Idempotent: run at every start, so the roles always match the secrets files."""
    with _connect(url(settings, state, SUPERUSER, "postgres")) as conn:
        for role in (OWNER, APP):
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            conn.execute(sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
                                 "PASSWORD {}").format(sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(role),
                                                       sql.Literal(passwords[role])))
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(DATABASE), sql.Identifier(OWNER)))
        else:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {} ENCODING 'UTF8' TEMPLATE template0").format(
                sql.Identifier(DATABASE), sql.Identifier(OWNER)))
        for database in (DATABASE, "postgres", "template1"):
            conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database)))
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}, {}").format(
            sql.Identifier(DATABASE), sql.Identifier(OWNER), sql.Identifier(APP)))
    with _connect(url(settings, state, SUPERUSER)) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(sql.SQL("ALTER SCHEMA public OWNER TO {}").format(sql.Identifier(OWNER)))
        _hand_objects_to_owner(conn)


def _hand_objects_to_owner(conn) -> None:
    """Tables, sequences and functions a cluster made by an older r2k created as the superuser go to
    the owner role (a fresh cluster has none)."""
    objects = conn.execute(
        "SELECT 'TABLE' AS kind, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND pg_get_userbyid(c.relowner) <> %s "
        "UNION ALL SELECT 'SEQUENCE', c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind = 'S' AND pg_get_userbyid(c.relowner) <> %s "
        "UNION ALL SELECT 'FUNCTION', p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n "
        "ON n.oid = p.pronamespace WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> %s",
        (OWNER, OWNER, OWNER)).fetchall()
    for kind, name in objects:
        target = sql.SQL(name) if kind == "FUNCTION" else sql.Identifier(name)
        conn.execute(sql.SQL("ALTER {} {} OWNER TO {}").format(sql.SQL(kind), target, sql.Identifier(OWNER)))


GRANTS = """
GRANT USAGE ON SCHEMA public TO {app};
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO {app};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT SELECT, INSERT, UPDATE ON TABLES TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {app};
REVOKE INSERT, UPDATE ON alembic_version FROM {app};
"""


def grant_app(owner_url: str) -> None:
    """After migrations (as the owner): what the app may do. Tables with an append-only trigger
    (the event log, its keys and checkpoints) take inserts only, so the trigger is not the only guard."""
    with _connect(owner_url) as conn:
        conn.execute(GRANTS.format(app=APP, owner=OWNER))
        append_only = [r[0] for r in conn.execute(
            "SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = 'r2k_refuse_change' AND NOT t.tgisinternal "
            "AND t.tgtype & 16 <> 0").fetchall()]  # 16: the trigger fires on UPDATE
        for table in append_only:
            conn.execute(sql.SQL("REVOKE UPDATE ON {} FROM {}").format(sql.Identifier(table), sql.Identifier(APP)))
        # The checkpoint writer's watermark takes a SHARE lock on the events as their owner; only
        # the app may call it (its migration closes it to PUBLIC).
        if conn.execute("SELECT to_regprocedure('r2k_events_watermark()')").fetchone()[0]:
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION r2k_events_watermark() TO {}").format(sql.Identifier(APP)))
        # Folding the queue counts' stripes of ended backends deletes their rows, as the owner
        # (migration 0028); the app may call it.
        if conn.execute("SELECT to_regprocedure('r2k_fold_queue_counts(text, text)')").fetchone()[0]:
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION r2k_fold_queue_counts(text, text) TO {}")
                         .format(sql.Identifier(APP)))
        # Recording an embedding model makes the HNSW indexes for its dimension, as the owner
        # (core/migrations/vectors.py); the app may call it, and nothing else of the kind.
        if conn.execute("SELECT to_regprocedure('r2k_record_embedding_model(text, integer, text)')").fetchone()[0]:
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION r2k_record_embedding_model(text, integer, text) TO {}")
                         .format(sql.Identifier(APP)))


def create_vector_extension(superuser_url: str) -> None:
    """pgvector in the r2k database, when this PostgreSQL ships it (pgserver's does): only a
    superuser may create it. Without it, retrieval runs lexical only."""
    with _connect(superuser_url) as conn:
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def at_revision(url: str) -> str | None:
    """The schema revision the database at `url` is at (None before the first migration)."""
    with _connect(url) as conn:
        return migrations.current(conn)


def stop(state: dict) -> None:
    pgdata, binaries = state.get("pgdata"), state.get("bin_dir")
    if pgdata and binaries and Path(pgdata, "postmaster.pid").exists():
        _run_as(state.get("os_user"), [str(Path(binaries) / "pg_ctl"), "-D", pgdata, "-m", "fast", "-w", "stop"],
                cwd="/")


def purge(settings: Settings) -> None:
    """Remove a cluster kept outside the data dir (run by root); for throwaway data dirs (tests)."""
    pointer = Path(settings.data_dir) / "postgres.cluster"
    if pointer.exists():
        path = Path(pointer.read_text().strip())
        if path.parent == SYSTEM_BASE / "clusters":
            shutil.rmtree(path, ignore_errors=True)
        pointer.unlink()
