"""What every embedded server shares: the private data dir, credentials, run files, the start lock,
ports and processes.

The data dir is private to the OS account that owns it: directories 0700, files 0600, and every
credential a server requires is generated into `secrets/` at its first start. Whoever can read the
data dir is an operator of this installation (docs/architecture.md, "Trust model").
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets as _secrets
import socket
import stat
import subprocess
import time
from pathlib import Path

from ..config import Settings
from ..errors import ServiceUnavailable

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


# ----------------------------------------------------------------------------- private files

def private_dir(path: Path) -> Path:
    """`path` as a directory only its owner can enter (created if missing, tightened if looser)."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    if stat.S_IMODE(path.stat().st_mode) != PRIVATE_DIR:
        path.chmod(PRIVATE_DIR)
    return path


def data_dir(settings: Settings) -> Path:
    return private_dir(Path(settings.data_dir))


def write_private(path: Path, text: str) -> None:
    """Write a 0600 file atomically (a reader sees the old content or the new, never half)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def tighten(root: Path, skip: set[Path] = frozenset()) -> None:
    """Make every directory under `root` 0700 and every file 0600 (a data dir made by an older r2k
    was readable by others). Directories in `skip` (a PostgreSQL cluster, which PostgreSQL keeps
    private itself) are not entered."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in skip]
        for name in dirnames:
            _chmod(here / name, PRIVATE_DIR)
        for name in filenames:
            _chmod(here / name, PRIVATE_FILE)


def _chmod(path: Path, mode: int) -> None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISLNK(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        path.chmod(mode)


def secrets_dir(settings: Settings) -> Path:
    return private_dir(data_dir(settings) / "secrets")


def secret_path(settings: Settings, name: str) -> Path:
    return secrets_dir(settings) / f"{name}.password"


def has_secret(settings: Settings, name: str) -> bool:
    return secret_path(settings, name).exists()


def secret(settings: Settings, name: str) -> str:
    """The credential `name`, generated at first use into secrets/ (0600). O_EXCL: two processes
    generating at once both end up with the first one's."""
    path = secret_path(settings, name)
    if not path.exists():
        value = _secrets.token_urlsafe(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
            with os.fdopen(fd, "w") as handle:
                handle.write(value + "\n")
        except FileExistsError:
            pass
    value = path.read_text().strip()
    if not value:
        raise ServiceUnavailable(f"the credential file {path} is empty: restore it, or remove it together with "
                                 f"the server's data to start afresh")
    return value


# ----------------------------------------------------------------------------- run files and the lock

def run_dir(settings: Settings) -> Path:
    return private_dir(data_dir(settings) / "run")


@contextlib.contextmanager
def services_lock(settings: Settings, timeout: float = 120.0):
    """An exclusive flock on run/services.lock; released by the kernel if the holder dies."""
    lock_path = run_dir(settings) / "services.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
    with os.fdopen(fd, "r+") as handle:
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


def state_path(settings: Settings, part: str) -> Path:
    return run_dir(settings) / f"{part}.json"


def read_state(settings: Settings, part: str) -> dict | None:
    try:
        return json.loads(state_path(settings, part).read_text())
    except (FileNotFoundError, ValueError):
        return None


def write_state(settings: Settings, part: str, state: dict) -> None:
    write_private(state_path(settings, part), json.dumps(state))


# ----------------------------------------------------------------------------- processes and ports

def process_is(pid: int | None, program: str) -> bool:
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


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


PORT_SPAN = 400


def home_port(settings: Settings, part: str, base: int) -> int:
    """The port a data dir's `part` first tries: spread over PORT_SPAN ports by a hash of the data
    dir, so installs side by side (tests, benches) rarely want the same one, and a server that died
    finds its port still free when it comes back."""
    import hashlib

    key = hashlib.sha256(f"{Path(settings.data_dir).resolve()}:{part}".encode()).digest()
    return base + int.from_bytes(key[:4], "big") % PORT_SPAN


def port_freed(port: int, seconds: float = 3.0) -> bool:
    """Whether `port` is free, or frees within `seconds`: a server killed a moment ago can hold its
    port for a little while after its process is gone, and coming back elsewhere strands every
    process that still knows the old one."""
    deadline = time.monotonic() + seconds
    while not port_free(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def free_port(base: int, avoid: set[int] = frozenset()) -> int:
    for port in range(base, base + 500):
        if port not in avoid and port_free(port):
            return port
    raise ServiceUnavailable(f"no free port in {base}–{base + 499} for an embedded service")


def answers_tcp(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for(check, what: str, timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise ServiceUnavailable(f"embedded {what} did not start within {timeout:.0f}s{log_tail(log)}")


def log_tail(log: Path | None, lines: int = 15) -> str:
    if not log or not log.exists():
        return ""
    return "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def stop_pid(pid: int | None, program: str, timeout: float = 10.0) -> None:
    if not process_is(pid, program):
        return
    import signal

    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process_is(pid, program):
        time.sleep(0.05)
    if process_is(pid, program):
        os.kill(pid, signal.SIGKILL)


def run_private(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run a server program so that every file it creates (logs, append-only files) is 0600."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("umask", 0o077)
    return subprocess.run(args, **kwargs)
