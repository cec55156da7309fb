"""`r2k serve ssh`: an SSH server (asyncssh) whose only service is the workstation
(docs/architecture.md, "Remote access").

- A connection is let in by its public key alone: the authorized keys file (users.add_key) maps
  the key's fingerprint to an r2k user, who must exist. Passwords, keyboard-interactive logins and
  unknown keys are refused, and so is every key while the file or its folder is writable by others.
- Each session channel with a terminal runs the TUI (`python -m r2k.app.remote.session USER`) in a
  process of its own, on a pty of its own, leading its own session and process group. The client's
  terminal size is the pty's, and a window change is set on the pty (the kernel sends SIGWINCH).
  The child's environment is the server's, less R2K_USER and the SSH_* variables; the client's
  `env` requests are never used, and the client gives no command line: identity is the key's.
- A shell request starts that TUI; exec and subsystem requests, port, X11 and agent forwarding
  are refused. Every refusal is logged with the key's fingerprint (or "no key" before one).
- A closed connection ends its session: SIGHUP to the process group, SIGKILL after a grace.
  Claims keep their leases, as when a workstation quits without releasing.
- A session with no key pressed for `idle` seconds ends, after a warning written to it
  `warn_lead(idle)` before (a minute, or half the idle time when that is shorter).
- The server keeps a sessions file in the data dir (`ssh/sessions-PORT.json`) for
  `r2k services status` (app/remote/status.py).
"""
from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import signal
import struct
import sys
import termios
import time
import weakref
from pathlib import Path

import asyncssh

from r2k.core.errors import Forbidden, InvalidInput
from r2k.core.services.people import users

from ..safe import visible
from .status import sessions_file

log = logging.getLogger("r2k.ssh")

KILL_GRACE = 2.0  # seconds between SIGHUP and SIGKILL of a session's process group
# What a server-ended session writes before it goes, so the client's terminal is left usable: mouse
# reporting, bracketed paste and focus events off, the cursor shown, the main screen back.
RESET = b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?2004l\x1b[?1004l\x1b[0m\x1b[?25h\x1b[?1049l"


def warn_lead(idle: float) -> float:
    """How long before an idle session ends its warning is written: a minute, at most half the time."""
    return min(60.0, idle / 2)


def said(value, limit: int = 120) -> str:
    """Text a client sent (a login name, a command), safe for the log: controls visible, bounded."""
    text = visible(str(value), multiline=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ----------------------------------------------------------------------------- host key

def host_key(data_dir: Path) -> asyncssh.SSHKey:
    """The server's Ed25519 host key, generated into the data dir on first start, readable only by
    its owner (0600 in a 0700 directory)."""
    folder = Path(data_dir) / "ssh"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    path = folder / "host_ed25519_key"
    if not path.exists():
        key = asyncssh.generate_private_key("ssh-ed25519")
        draft = folder / f".host_ed25519_key.{os.getpid()}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key.export_private_key())
        try:
            os.link(draft, path)  # a server starting at the same moment keeps the one that came first
            log.info("host key generated: %s (%s)", path, key.get_fingerprint())
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    os.chmod(path, 0o600)
    return asyncssh.read_private_key(str(path))


def writable_by_others(path: Path) -> str | None:
    """Why the authorized keys file cannot be trusted, if it cannot: it, or its folder, writable by
    group or others or owned by another account than the server's (or root), as OpenSSH's
    StrictModes refuses. Anyone who could write it could let their own key in as anyone."""
    me = os.getuid()
    for what, place in (("the authorized keys file", path), ("its folder", path.parent)):
        stat = place.stat()
        if stat.st_uid not in (me, 0):
            return f"{what} {place} belongs to uid {stat.st_uid}"
        if stat.st_mode & 0o022:
            return f"{what} {place} is writable by others (mode {stat.st_mode & 0o777:o})"
    return None


# ----------------------------------------------------------------------------- one pty session

def set_size(fd: int, cols: int, rows: int, px: int = 0, py: int = 0) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", max(rows, 1), max(cols, 1), px, py))


class Session(asyncssh.SSHServerSession):
    """One session channel: the TUI on a pty, its bytes both ways."""

    def __init__(self, conn: "Connection"):
        self.conn = conn
        self.service = conn.service
        self.chan = None
        self.term: str | None = None
        self.size = (80, 24, 0, 0)
        self.master: int | None = None
        self.proc = None
        self.pending = bytearray()  # keys the pty could not take yet
        self.started = time.time()
        self.last_input = time.monotonic()
        self.last_output = 0.0
        self.warned = False
        self.ended = False
        self.reading = False
        self.task: asyncio.Task | None = None

    # -- what the client asks for ----------------------------------------------------------

    def connection_made(self, chan) -> None:
        self.chan = chan

    def pty_requested(self, term_type, term_size, term_modes) -> bool:
        self.term = term_type or "xterm-256color"
        self.size = term_size
        return True

    def shell_requested(self) -> bool:
        return True  # the session always runs the workstation

    def exec_requested(self, command: str) -> bool:
        self.conn.refuse(f"exec request {said(command)}")
        return False

    def subsystem_requested(self, subsystem: str) -> bool:
        self.conn.refuse(f"subsystem request {said(subsystem)}")
        return False

    def session_started(self) -> None:
        if self.term is None:
            self.conn.refuse("a session without a terminal (the workstation needs one: ssh -t)")
            self.chan.write(b"r2k: the workstation needs a terminal: connect with ssh -t\r\n")
            self.chan.exit(1)
            return
        self.task = asyncio.get_running_loop().create_task(self.run())  # held: the loop keeps only weak refs
        self.task.add_done_callback(self._ran)

    def _ran(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("conn %s: session failed: %s: %s", self.conn.id, type(exc).__name__, said(exc, 300))
            self.end("r2k: the session failed; see the server's log.")

    # -- the TUI's process ---------------------------------------------------------------

    async def run(self) -> None:
        master, slave = os.openpty()
        cols, rows, px, py = self.size
        set_size(master, cols, rows, px, py)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.service.command(self.conn.user), stdin=slave, stdout=slave, stderr=slave,
                env=self.service.child_env(self.term), start_new_session=True, close_fds=True,
                cwd=self.service.data_dir)
        except OSError as exc:
            os.close(slave)
            os.close(master)
            log.error("conn %s: could not start the workstation: %s", self.conn.id, exc)
            self.chan.write(b"r2k: the workstation could not start\r\n")
            self.chan.exit(1)
            return
        os.close(slave)
        os.set_blocking(master, False)
        self.master = master
        log.info("conn %s: session started for %s, pid %s, %sx%s %s", self.conn.id, self.conn.user,
                 self.proc.pid, cols, rows, said(self.term, 40))
        self.service.opened(self)
        if self.ended:  # the connection went while the process started
            self.kill()
        else:
            self.resume_writing()
        code = await self.proc.wait()
        self._drain()
        self.kill_group(signal.SIGKILL)  # anything it started and left behind
        self._close_master()
        self.service.closed(self)
        log.info("conn %s: session ended for %s (exit %s)", self.conn.id, self.conn.user, code)
        if not self.ended:
            self.ended = True
            try:
                self.chan.exit(code if code >= 0 else 128 - code)
            except (OSError, asyncssh.Error) as exc:  # the client left first: nobody to tell
                log.debug("conn %s: exit status not sent: %s", self.conn.id, exc)

    def _readable(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: every process holding the pty's other side is gone
            data = b""
        if not data:
            self.pause_writing()
            return
        self.last_output = time.monotonic()
        if not self.ended:
            self.chan.write(data)

    def _drain(self) -> None:
        """What the TUI wrote before it ended, to the client."""
        while self.master is not None:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            if not self.ended:
                self.chan.write(data)

    def _close_master(self) -> None:
        if self.master is not None:
            self.pause_writing()
            if self.pending:
                asyncio.get_running_loop().remove_writer(self.master)
            os.close(self.master)
            self.master = None

    def pause_writing(self) -> None:
        """The channel is full (or the pty closed): stop reading the pty until it drains."""
        if self.master is not None and self.reading:
            asyncio.get_running_loop().remove_reader(self.master)
            self.reading = False

    def resume_writing(self) -> None:
        if self.master is not None and not self.reading and not self.ended:
            asyncio.get_running_loop().add_reader(self.master, self._readable)
            self.reading = True

    # -- the client's keys and window --------------------------------------------------------

    def data_received(self, data: bytes, datatype) -> None:
        self.last_input = time.monotonic()
        if self.warned:
            self.warned = False
            self.kill_group(signal.SIGWINCH)  # the TUI draws itself again, over the warning
        if self.master is None:
            return
        if self.pending:
            self.pending += data
            return
        try:
            written = os.write(self.master, data)
        except BlockingIOError:
            written = 0
        except OSError:
            return
        if written < len(data):
            self.pending += data[written:]
            asyncio.get_running_loop().add_writer(self.master, self._writable)

    def _writable(self) -> None:
        try:
            written = os.write(self.master, self.pending)
        except BlockingIOError:
            return
        except OSError:
            written = len(self.pending)
        del self.pending[:written]
        if not self.pending:
            asyncio.get_running_loop().remove_writer(self.master)

    def terminal_size_changed(self, width: int, height: int, pixwidth: int, pixheight: int) -> None:
        self.size = (width, height, pixwidth, pixheight)
        if self.master is not None:
            set_size(self.master, width, height, pixwidth, pixheight)  # the kernel signals the TUI

    def break_received(self, msec: int) -> bool:
        return False

    def signal_received(self, signal_name: str) -> None:
        self.conn.refuse(f"signal request {said(signal_name, 20)}")

    def connection_lost(self, exc) -> None:
        """The channel closed (the client went, or the session ended): end the process."""
        if not self.ended:
            self.ended = True
            self.kill()

    # -- ending it ----------------------------------------------------------------------

    def kill_group(self, sig: int) -> bool:
        if self.proc is None:
            return False
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def kill(self) -> None:
        """SIGHUP to the session's process group (a hangup, as a terminal that went), SIGKILL after a
        grace. Claims stay leased to the user until their lease runs out."""
        self.pause_writing()
        if self.proc is None or self.proc.returncode is not None:
            return
        self.kill_group(signal.SIGHUP)

        def finish() -> None:
            if self.proc.returncode is None:
                self.kill_group(signal.SIGKILL)

        asyncio.get_running_loop().call_later(KILL_GRACE, finish)

    def end(self, message: str) -> None:
        """The server ends the session (idle, or the server stopping): the client's terminal put
        back, a line saying why, then the process and the channel."""
        if self.ended:
            return
        self.ended = True
        try:
            self.chan.write(RESET + b"\r\n" + message.encode() + b"\r\n")
            self.chan.exit(1)
        except (OSError, asyncssh.Error) as exc:  # the client left first: nobody to tell
            log.debug("conn %s: %r not sent: %s", self.conn.id, message, exc)
        self.kill()

    def warn(self, seconds_left: float) -> None:
        """Written over the top line of the screen: the TUI draws itself again at the next key."""
        self.warned = True
        minutes = self.service.idle / 60
        idle = f"{minutes:.0f} minutes" if minutes >= 2 else f"{self.service.idle:.0f} seconds"
        text = (f" r2k: no key pressed for a while; this session ends in {seconds_left:.0f} s "
                f"(idle limit {idle}). Press any key to stay. ")
        cols = self.size[0] or 80
        self.chan.write(b"\x07\x1b7\x1b[1;1H\x1b[0;1;97;41m" + text[:cols].ljust(cols).encode() + b"\x1b[0m\x1b8")

    def row(self) -> dict:
        return {"user": self.conn.user, "fingerprint": self.conn.fingerprint, "peer": self.conn.peer,
                "pid": self.proc.pid if self.proc else None, "started": self.started,
                "idle_seconds": round(time.monotonic() - self.last_input, 1),
                "size": f"{self.size[0]}x{self.size[1]}"}


# ----------------------------------------------------------------------------- one connection

class Connection(asyncssh.SSHServer):
    """One client connection: its authentication, and the refusals of everything but the workstation."""

    def __init__(self, service: "Service"):
        self.service = service
        self.id = service.next_id()
        self.peer = "?"
        self.login = ""  # the SSH user name the client gave; identity is the key's, not this
        self.user: str | None = None
        self.fingerprint: str | None = None
        self._offered: tuple[str, str] | None = None
        self._unknown: set[str] = set()
        self._tried: list[str] = []

    def refuse(self, what: str, fingerprint: str | None = None) -> None:
        key = fingerprint or self.fingerprint
        log.warning("conn %s: refused %s (key %s, r2k user %s, ssh user %s, from %s)", self.id, what,
                    key or "none: no key accepted", self.user or "none", said(self.login, 64) or "-", self.peer)

    def connection_made(self, conn) -> None:
        peer = conn.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        log.info("conn %s: connection from %s", self.id, self.peer)
        LIVE[conn] = self
        # X11 and agent forwarding are off (create_server's options); these log each request.
        conn.attach_x11_listener = self._x11_refused
        conn.create_agent_listener = self._agent_refused

    async def _x11_refused(self, *args) -> None:
        self.refuse("X11 forwarding")
        return None

    async def _agent_refused(self) -> bool:
        self.refuse("agent forwarding")
        return False

    def connection_lost(self, exc) -> None:
        if self.user is None and not self._tried and not self._unknown:
            log.info("conn %s: closed before any login attempt", self.id)
        elif self.user is None:
            tried = ", ".join(dict.fromkeys(self._tried)) or "none"
            self.refuse(f"login: no accepted key (methods tried: {tried}; only public keys are accepted)")
        reason = f": {said(exc)}" if exc else ""
        log.info("conn %s: disconnected%s", self.id, reason)

    def tried(self, method: str) -> None:
        self._tried.append(method)
        if method == "password":
            self.refuse("password login (only public keys are accepted)")
        elif method == "keyboard-interactive":
            self.refuse("keyboard-interactive login (only public keys are accepted)")

    # -- authentication: public keys only -----------------------------------------------------

    def begin_auth(self, username: str) -> bool:
        self.login = username
        return True

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    async def validate_public_key(self, username: str, key) -> bool:
        fingerprint = key.get_fingerprint("sha256")
        name = self.service.keys().get(fingerprint)
        if name is None:
            if fingerprint not in self._unknown:
                self._unknown.add(fingerprint)
                self.refuse("unknown key", fingerprint)
            return False
        if not await self.service.user_exists(name):
            if fingerprint not in self._unknown:
                self._unknown.add(fingerprint)
                self.refuse(f"key of r2k user {name!r}, who does not exist (or the database did not answer)",
                            fingerprint)
            return False
        self._offered = (fingerprint, name)
        return True

    def auth_completed(self) -> None:
        self.fingerprint, self.user = self._offered
        log.info("conn %s: %s logged in with key %s (ssh user %s) from %s", self.id, self.user, self.fingerprint,
                 said(self.login, 64) or "-", self.peer)

    # -- channels ------------------------------------------------------------------------

    def session_requested(self):
        if self.user is None:
            return False
        return Session(self)

    def connection_requested(self, dest_host, dest_port, orig_host, orig_port):
        self.refuse(f"port forwarding to {said(dest_host, 64)}:{dest_port}")
        return False

    def server_requested(self, listen_host, listen_port):
        self.refuse(f"remote port forwarding from {said(listen_host, 64)}:{listen_port}")
        return False

    def unix_connection_requested(self, dest_path):
        self.refuse(f"socket forwarding to {said(dest_path, 64)}")
        return False

    def unix_server_requested(self, listen_path):
        self.refuse(f"remote socket forwarding from {said(listen_path, 64)}")
        return False


# The Connection each asyncssh connection belongs to, for the auth methods a client tries.
LIVE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _watch_auth_methods() -> None:
    """asyncssh decides which method a login request uses in `lookup_server_auth`; a password or
    keyboard-interactive request (never offered, but a client may send one) is refused there, and
    noted here so the refusal is logged."""
    from asyncssh import connection as ssh_connection

    original = ssh_connection.lookup_server_auth
    if getattr(original, "r2k_watched", False):
        return

    def lookup(conn, username, method, packet):
        owner = LIVE.get(conn)
        if owner is not None:
            owner.tried(method.decode("ascii", "replace"))
        return original(conn, username, method, packet)

    lookup.r2k_watched = True
    ssh_connection.lookup_server_auth = lookup


# ----------------------------------------------------------------------------- the server

class Service:
    """The listening server: its keys, its sessions, the idle clock and the sessions file."""

    def __init__(self, ctx, host: str, port: int, authorized_keys: Path, idle: float):
        self.ctx = ctx
        self.host, self.port = host, port
        self.authorized_keys = Path(authorized_keys)
        self.idle = float(idle)
        self.data_dir = str(ctx.settings.data_dir)
        self.sessions: set[Session] = set()
        self._ids = 0
        self._keys: tuple[tuple, dict] = ((), {})
        self._stop = asyncio.Event()
        self._status_path = sessions_file(ctx.settings.data_dir, port)
        self.started = time.time()

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def keys(self) -> dict[str, str]:
        """Fingerprint -> user, read again whenever the file changes (add-key needs no restart). A file
        that someone else could have written grants nothing (logged once for each change of it)."""
        try:
            stat = self.authorized_keys.stat()
            folder = self.authorized_keys.parent.stat()
            mark = (stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_mode, stat.st_uid,
                    folder.st_mode, folder.st_uid)
        except FileNotFoundError:
            return {}
        if mark != self._keys[0]:
            problem = writable_by_others(self.authorized_keys)
            if problem:
                log.error("refusing every key: %s (chmod go-w, as add-key leaves it)", problem)
            granted = {}
            if not problem:
                try:
                    granted = users.authorized_keys(self.authorized_keys)
                except InvalidInput as exc:  # a FIFO, a folder, a file too large: never read, nobody let in
                    log.error("refusing every key: %s", visible(exc.message, multiline=False))
            self._keys = (mark, granted)
        return self._keys[1]

    async def user_exists(self, name: str) -> bool:
        def known() -> bool:
            try:
                users.resolve(self.ctx, name)
                return True
            except Forbidden:
                return False
            except Exception as exc:  # noqa: BLE001 - the database away: nobody gets in meanwhile
                log.error("checking user %s: %s: %s", name, type(exc).__name__, said(exc, 200))
                return False

        return await asyncio.get_running_loop().run_in_executor(None, known)

    def command(self, user: str) -> list[str]:
        return [sys.executable, "-m", "r2k.app.remote.session", user]

    def child_env(self, term: str) -> dict[str, str]:
        """The server's own environment (its R2K_* settings: data dir, URLs), never the client's:
        no R2K_USER (the argument is the identity), no SSH_*, the client's terminal type."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("R2K_USER", "COLUMNS", "LINES", "TMUX", "TMUX_PANE", "STY") and not k.startswith("SSH_")}
        env["TERM"] = term if term.isprintable() and len(term) < 64 else "xterm-256color"
        env.setdefault("LANG", "C.UTF-8")
        return env

    # -- sessions -----------------------------------------------------------------------

    def opened(self, session: Session) -> None:
        self.sessions.add(session)
        self.write_status()

    def closed(self, session: Session) -> None:
        self.sessions.discard(session)
        self.write_status()

    def write_status(self) -> None:
        """The live sessions, for `r2k services status` (written whole, then moved into place)."""
        data = {"pid": os.getpid(), "host": self.host, "port": self.port, "started": self.started,
                "idle_limit": self.idle, "written": time.time(),
                "sessions": sorted((s.row() for s in self.sessions), key=lambda r: r["started"])}
        draft = self._status_path.with_suffix(f".{os.getpid()}.tmp")
        try:
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(data, out)
            os.replace(draft, self._status_path)
        except OSError as exc:
            log.error("could not write %s: %s", self._status_path, exc)

    async def watch_idle(self) -> None:
        lead = warn_lead(self.idle)
        tick = max(0.2, min(1.0, self.idle / 20))
        beat = 0.0
        while not self._stop.is_set():
            await asyncio.sleep(tick)
            now = time.monotonic()
            for session in list(self.sessions):
                quiet = now - session.last_input
                if quiet >= self.idle:
                    log.info("conn %s: %s idle for %.0f s: session ended", session.conn.id, session.conn.user, quiet)
                    session.end(f"r2k: session ended after {self.idle:.0f} s without a key pressed.")
                elif quiet >= self.idle - lead and not session.warned and now - session.last_output > 0.25:
                    log.info("conn %s: %s idle for %.0f s: warned", session.conn.id, session.conn.user, quiet)
                    session.warn(self.idle - quiet)
            if self.sessions and now - beat >= 15:
                beat = now
                self.write_status()  # the idle times

    def stop(self) -> None:
        self._stop.set()

    async def serve(self) -> None:
        _watch_auth_methods()
        key = host_key(self.ctx.settings.data_dir)
        acceptor = await asyncssh.create_server(
            lambda: Connection(self), self.host, self.port, server_host_keys=[key],
            server_version="r2k", password_auth=False, kbdint_auth=False, gss_host=None,
            x11_forwarding=False, agent_forwarding=False, allow_pty=True, line_editor=False,
            encoding=None, keepalive_interval=30, keepalive_count_max=3, login_timeout=60)
        port = acceptor.sockets[0].getsockname()[1] if self.port == 0 else self.port
        if port != self.port:
            self.port = port
            self._status_path = sessions_file(self.ctx.settings.data_dir, port)
        self.write_status()
        log.info("serving the workstation over SSH on %s:%s (host key %s; keys from %s; idle limit %.0f s)",
                 self.host, self.port, key.get_fingerprint(), self.authorized_keys, self.idle)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        idle = loop.create_task(self.watch_idle())
        try:
            await self._stop.wait()
        finally:
            log.info("stopping: %s session(s) to end", len(self.sessions))
            acceptor.close()
            for session in list(self.sessions):
                session.end("r2k: the server is stopping.")
            deadline = time.monotonic() + KILL_GRACE + 1
            while self.sessions and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            idle.cancel()
            self._status_path.unlink(missing_ok=True)
            await acceptor.wait_closed()


def serve(ctx, host: str, port: int, authorized_keys: Path | None, idle: float) -> None:
    """Run the server until SIGTERM or ctrl+c."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s r2k serve ssh: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    path = Path(authorized_keys) if authorized_keys else users.authorized_keys_path(ctx)
    asyncio.run(Service(ctx, host, port, path, idle).serve())
