"""What every embedded server shares: the private data dir, credentials, run files, the start lock,
sockets and processes.

The data dir is private to the OS account that owns it: directories 0700, files 0600, and every
credential a server requires is generated into `secrets/` at its first start. Whoever can read the
data dir is an operator of this installation (docs/architecture.md, "Trust model").
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import secrets as _secrets
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

from ..config import Settings
from ..errors import Forbidden, InvalidInput, ServiceUnavailable

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
    check_owner(settings)
    try:
        return private_dir(Path(settings.data_dir))
    except PermissionError as exc:
        raise Forbidden(f"the data dir {settings.data_dir} cannot be made by this account ({exc.strerror}): set "
                        f"R2K_DATA_DIR to a directory of your own") from None


def _account(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_owner(settings: Settings) -> None:
    """Refuse a data dir that is not this account's alone, before anything reads or starts in it,
    as OpenSSH's StrictModes refuses a key file others could change: the data dir, its `secrets/`
    and its `run/` must belong to this account and be writable by no one else. Whoever could write
    there could plant a run file, a credential or a server's configuration (docs/architecture.md,
    "Trust model"). A data dir not made yet passes: it is made private."""
    root = Path(settings.data_dir)
    me = _account(os.geteuid())
    for place in (root, root / "secrets", root / "run"):
        name = "the data dir" if place == root else f"the data dir's {place.name}/"
        try:
            st = place.stat()
        except FileNotFoundError:
            continue
        except PermissionError:
            raise Forbidden(f"the data dir {root} cannot be reached by {me}, the account r2k runs as: it is "
                            f"another account's; run r2k as its owner, or set R2K_DATA_DIR to a directory of "
                            f"your own") from None
        if st.st_uid != os.geteuid():
            owner = _account(st.st_uid)
            raise Forbidden(f"{name} {place} belongs to {owner}, and r2k runs as {me}: run it as "
                            f"{owner.split(' (')[0]}, or set R2K_DATA_DIR to a directory of your own")
        loose = st.st_mode & 0o022
        if loose:
            who = {0o020: "its group", 0o002: "others", 0o022: "its group and others"}[loose]
            raise Forbidden(f"{name} {place} is writable by {who} (mode {stat.S_IMODE(st.st_mode):o}), so "
                            f"anything in it may be someone else's: `chmod go-w {place}`")


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


# ----------------------------------------------------------------------------- processes and sockets

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


# A Unix socket's path fits in sockaddr_un's sun_path: 108 bytes on Linux, its final NUL included.
SOCKET_PATH_MAX = 107


def socket_path(path: Path) -> Path:
    """`path` for a server's Unix socket, refused (before anything starts) when it is too long."""
    size = len(os.fsencode(path))
    if size > SOCKET_PATH_MAX:
        raise InvalidInput(f"the socket path {path} is {size} bytes, over the {SOCKET_PATH_MAX} a Unix socket's "
                           f"path may have: set a shorter R2K_DATA_DIR")
    return path


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_ports() -> tuple[int, int]:
    """The ports the kernel hands to outgoing connections (Linux's default when it does not say)."""
    try:
        low, high = (int(part) for part in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def tcp_port(previous: int | None) -> int:
    """The TCP port of a server that opens one (`R2K_EMBEDDED_TCP=1`, docs/architecture.md,
    "Embedded servers"): the one it had when still free, else a free one outside the ephemeral
    range. One the kernel picked would be ephemeral, and while its server restarts any outgoing
    connection on the machine may be given it, so the port would move."""
    if previous and port_free(previous):
        return previous
    low, high = ephemeral_ports()
    pool = range(max(1024, low - 12000), low) if low > 2048 else range(high + 1, 65536)
    rng = _secrets.SystemRandom()
    for port in rng.sample(pool, min(64, len(pool))):
        if port_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # all taken: the kernel's pick
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
