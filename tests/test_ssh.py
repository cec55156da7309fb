"""The workstation over SSH (docs/architecture.md, "Remote access"): `r2k serve ssh` run as a user
runs it, against this session's services, and the real OpenSSH client with keys made here by
ssh-keygen, driven under tmux as a person types. A key is an identity: its sessions act as the user
it maps to, whatever the client asks; anything but the workstation is refused and logged."""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from r2k.core.services.people import users
from r2k.core.services.queue import candidate_views
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, error_of, r2k

SSH_OPTIONS = ["-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR",
               "-o", "ConnectTimeout=10"]


def wait_until(condition, what: str, timeout: float = 20.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


class Server:
    """`r2k serve ssh` in a subprocess on a free port, its log in a file."""

    def __init__(self, home: Path, idle: int | None = None):
        self.home = home
        self.keys = home / "authorized_keys"
        self.log_path = home / "server.log"
        env = {k: v for k, v in os.environ.items() if k != "R2K_USER"}
        env["R2K_START_WORKER"] = "0"  # the tests run no worker; a session must start none
        args = [sys.executable, "-m", "r2k.app", "serve", "ssh", "--port", "0", "--authorized-keys", str(self.keys)]
        if idle is not None:
            args += ["--idle", str(idle)]
        self.process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self.log_path.open("w"),
                                        stderr=subprocess.STDOUT)
        found = wait_until(lambda: self.process.poll() is not None or re.search(
            r"serving the workstation over SSH on 127\.0\.0\.1:(\d+)", self.log()), "the server to listen", 60)
        assert self.process.poll() is None, self.log()
        self.port = int(found.group(1))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def logged(self, pattern: str, timeout: float = 10.0) -> str:
        """The first log line matching `pattern`, waited for."""
        rx = re.compile(pattern)
        return wait_until(lambda: next((line for line in self.log().splitlines() if rx.search(line)), None),
                          f"a log line matching {pattern!r} in:\n{self.log()}", timeout)

    def status(self) -> dict:
        path = Path(os.environ["R2K_DATA_DIR"]) / "ssh" / f"sessions-{self.port}.json"
        return json.loads(path.read_text())

    def ssh(self, key: Path, *args: str, login: str = "specialist") -> list[str]:
        return ["ssh", "-p", str(self.port), "-i", str(key), *SSH_OPTIONS, *args, f"{login}@127.0.0.1"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Terminal:
    """A tmux window running a command, read and typed into as a person would."""

    def __init__(self, socket: str, name: str, command: list[str], width: int = 120, height: int = 40,
                 keep: bool = True):
        self.socket, self.name = socket, name
        line = shlex.join(command)
        if keep:  # the pane stays after ssh ends, to read what it said and how it exited
            line += '; echo "[ssh exited $?]"; sleep 600'
        else:
            line = "exec " + line
        self.tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), line)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def shows(self, text: str, timeout: float = 20.0) -> str:
        try:
            return wait_until(lambda: next((screen for screen in [self.screen()] if text in screen), None),
                              repr(text), timeout)
        except AssertionError:
            raise AssertionError(f"the terminal never showed {text!r}; it shows:\n{self.screen()}") from None

    def resize(self, width: int, height: int) -> None:
        self.tmux("resize-window", "-t", self.name, "-x", str(width), "-y", str(height))

    def pane_pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())


@pytest.fixture(scope="module")
def server(services, tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("ssh"))
    yield srv
    srv.stop()


@pytest.fixture
def tmux():
    socket = f"r2k-test-ssh-{os.getpid()}"
    yield socket
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def keygen(folder: Path, name: str) -> Path:
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@test", "-f", str(path)], check=True)
    return path


def fingerprint(key: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


@pytest.fixture
def keys(ctx, people, server, tmp_path):
    """A key for each user, let in as that user (users.add_key, what `r2k users add-key` calls)."""
    made = {}
    for name in ("alice", "bob"):
        made[name] = keygen(tmp_path, name)
        users.add_key(ctx, name, Path(f"{made[name]}.pub").read_text(), by=people["root"], path=server.keys)
    return made


def facts(ctx, people, n: int) -> list[int]:
    return [candidates.add(ctx, people["root"], f"Fact question {i}?", f"A plain fact number {i}.", "FACT")["id"]
            for i in range(1, n + 1)]


def session_pids(server: Server) -> list[int]:
    return [s["pid"] for s in server.status()["sessions"]]


def earlier_sessions_gone(server: Server) -> None:
    """The server is shared by the module's tests: a session of the test before may still be ending
    (its client was killed with its tmux) when a test starts counting sessions."""
    wait_until(lambda: session_pids(server) == [], "the earlier tests' sessions to end")


def live_processes():
    """(pid, parent pid, process group) of each live (not zombie) process, from /proc."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, parent, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            except (OSError, ValueError):
                continue
            if state != "Z":
                yield int(entry.name), int(parent), int(group)


def group_members(pgid: int) -> list[int]:
    """Processes whose process group is `pgid` (a session's TUI and whatever it started)."""
    return [pid for pid, _, group in live_processes() if group == pgid]


def children(parent: int) -> list[str]:
    """The command lines of the live processes whose parent is `parent`."""
    found = []
    for pid, ppid, _ in live_processes():
        if ppid == parent:
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return found


# --------------------------------------------------------------------------- a validator's session

def test_a_key_logs_in_as_its_user_who_claims_and_approves(ctx, people, server, keys, tmux):
    ids = facts(ctx, people, 2)
    # The client says it is root, as its login name and in R2K_USER: the key says alice.
    term = Terminal(tmux, "alice", ["env", "R2K_USER=root",
                                    *server.ssh(keys["alice"], "-o", "SetEnv=R2K_USER=root", login="root")])
    term.shows("Dashboard — alice (validator · FACT, RULE)")
    server.logged(rf"alice logged in with key {re.escape(fingerprint(keys['alice']))} \(ssh user root\)")
    term.send("V")
    term.shows("alice reviews FACT, RULE")
    term.send("Enter")
    term.shows(f"candidate {ids[0]} · IN_REVIEW")
    term.send("a")
    term.shows(f"candidate {ids[1]} · IN_REVIEW")  # approve claims the next one
    assert candidate_views.get(ctx, ids[0])["state"] == "APPROVED"
    approve = [h for h in candidate_views.history(ctx, ids[0]) if h.get("action") == "approve"]
    assert [h["actor"] for h in approve] == ["alice"]
    assert candidate_views.get(ctx, ids[1])["claimed_by"] == "alice"

    status = json.loads(r2k("--as", "root", "--json", "services", "status").stdout)
    ssh_row = next(row for row in status if row["name"] == "ssh")
    assert [s["user"] for s in ssh_row["sessions"]] == ["alice"]
    assert ssh_row["sessions"][0]["fingerprint"] == fingerprint(keys["alice"])

    term.send("C-q")  # alice holds a claim: quitting asks; k keeps it leased
    term.shows("Quit r2k?")
    term.send("k")
    term.shows("[ssh exited 0]")
    assert candidate_views.get(ctx, ids[1])["claimed_by"] == "alice"
    wait_until(lambda: session_pids(server) == [], "the session to leave the status file")


def test_a_fact_validator_over_ssh_cannot_open_the_procedure_queue(ctx, people, server, keys, tmux):
    procedure = candidates.add(ctx, people["root"], "How is a trailer unloaded?",
                               "First chock the wheels, then lower the leveller, then open the doors.",
                               "PROCEDURE")["id"]
    term = Terminal(tmux, "bob", server.ssh(keys["bob"]))
    term.shows("Dashboard — bob (validator · FACT)")
    term.send("V")
    term.shows("bob reviews FACT")
    term.send("Down", "Down", "Down")  # FACT, RULE, CONSTRAINT, PROCEDURE
    term.send("Enter")
    term.shows("bob holds no authority for PROCEDURE")
    assert candidate_views.get(ctx, procedure)["state"] == "PENDING"
    from r2k.core.errors import Forbidden
    from r2k.core.services.queue import claims

    with pytest.raises(Forbidden):  # and the core says the same to bob, whatever the screen offers
        claims.claim_next(ctx, users.resolve(ctx, "bob"), "PROCEDURE")


def test_a_session_saves_no_screenshot_where_the_server_runs(ctx, people, server, keys, tmux):
    downloads = Path.home() / "Downloads"
    before = set(downloads.glob("*.svg")) if downloads.exists() else set()
    term = Terminal(tmux, "alice", server.ssh(keys["alice"]))
    term.shows("Dashboard — alice (validator")
    term.send("C-p")
    time.sleep(0.5)
    term.send("-l", "Screenshot")
    term.shows("Save an SVG")
    term.send("Enter")
    term.shows("Over SSH nothing is saved where the server runs")
    after = set(downloads.glob("*.svg")) if downloads.exists() else set()
    assert after == before


def test_two_sessions_at_once_claim_different_candidates(ctx, people, server, keys, tmux):
    earlier_sessions_gone(server)
    ids = facts(ctx, people, 2)
    first = Terminal(tmux, "alice", server.ssh(keys["alice"]))
    second = Terminal(tmux, "bob", server.ssh(keys["bob"]))
    for term, name in ((first, "alice"), (second, "bob")):
        term.shows(f"Dashboard — {name} (validator")
    wait_until(lambda: len(session_pids(server)) == 2, "two sessions in the status file")
    pids = session_pids(server)
    assert len(set(pids)) == 2 and os.getpid() not in pids  # each its own process
    for term in (first, second):
        term.send("V")
    first.shows("alice reviews")
    second.shows("bob reviews")
    first.send("Enter")
    second.send("Enter")
    first.shows("· IN_REVIEW")
    second.shows("· IN_REVIEW")
    claimed = {candidate_views.get(ctx, i)["claimed_by"] for i in ids}
    assert claimed == {"alice", "bob"}
    for term, name in ((first, "alice"), (second, "bob")):
        mine = next(i for i in ids if candidate_views.get(ctx, i)["claimed_by"] == name)
        term.shows(f"candidate {mine} · IN_REVIEW")


def title_centre(screen: str) -> float:
    """Where the header's title is centred (far off when the screen is caught mid-redraw)."""
    line = next((line for line in screen.splitlines() if "Dashboard — alice" in line), None)
    if line is None:
        return -100.0
    start = line.index("Dashboard")
    return start + len(line[start:].rstrip()) / 2


def test_a_resize_redraws_at_the_new_width(ctx, people, server, keys, tmux):
    term = Terminal(tmux, "alice", server.ssh(keys["alice"]), width=120, height=40)
    screen = term.shows("Dashboard — alice (validator")
    assert abs(title_centre(screen) - 60) <= 2
    term.resize(84, 30)

    def redrawn() -> bool:
        lines = term.screen().rstrip().splitlines()
        return (abs(title_centre("\n".join(lines)) - 42) <= 2 and len(lines) == 30
                and "Queues" in lines[-1] and len(lines[-1]) <= 84)  # the footer on the new last line

    try:
        wait_until(redrawn, "the dashboard drawn at 84x30")
    except AssertionError:
        raise AssertionError(f"not redrawn at 84x30:\n{term.screen()}") from None


def test_killing_the_client_leaves_no_process_and_keeps_the_claim(ctx, people, server, keys, tmux):
    earlier_sessions_gone(server)
    ids = facts(ctx, people, 1)
    term = Terminal(tmux, "alice", server.ssh(keys["alice"]), keep=False)
    term.shows("Dashboard — alice (validator")
    term.send("V")
    term.shows("alice reviews")
    term.send("Enter")
    term.shows(f"candidate {ids[0]} · IN_REVIEW")
    [pid] = wait_until(lambda: session_pids(server), "the session in the status file")
    assert group_members(pid)
    os.kill(term.pane_pid(), signal.SIGKILL)  # the ssh client, killed: the connection drops
    server.logged(r"conn \d+: disconnected")
    wait_until(lambda: not group_members(pid), "the session's processes to end", 15)
    wait_until(lambda: session_pids(server) == [], "the session to leave the status file")
    assert children(server.process.pid) == []  # the server itself keeps nothing of the session
    row = candidate_views.get(ctx, ids[0])  # the claim keeps its lease, as when a workstation quits
    assert (row["state"], row["claimed_by"]) == ("IN_REVIEW", "alice")


# --------------------------------------------------------------------------- refusals

def ssh_run(command: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_an_unknown_key_is_refused_and_logged_with_its_fingerprint(ctx, people, server, keys, tmp_path):
    stranger = keygen(tmp_path, "stranger")
    result = ssh_run(server.ssh(stranger, "-o", "BatchMode=yes", "-tt"))
    assert result.returncode == 255
    assert "Permission denied (publickey)" in result.stderr
    server.logged(rf"refused unknown key \(key {re.escape(fingerprint(stranger))},")


def test_a_key_file_others_could_write_lets_nobody_in(ctx, people, server, keys):
    """Whoever could write the file could add their own key as anyone: such a file grants no key."""
    server.keys.chmod(0o666)
    try:
        result = ssh_run(server.ssh(keys["alice"], "-o", "BatchMode=yes", "-tt"))
        assert result.returncode == 255 and "Permission denied (publickey)" in result.stderr
        server.logged(rf"refusing every key: the authorized keys file {re.escape(str(server.keys))} is writable by "
                      r"others \(mode 666\)")
        server.logged(rf"refused unknown key \(key {re.escape(fingerprint(keys['alice']))},")
    finally:
        server.keys.chmod(0o600)


def test_a_password_login_is_refused_and_logged(ctx, people, server, keys):
    result = ssh_run(server.ssh(keys["alice"], "-o", "BatchMode=yes", "-o", "PubkeyAuthentication=no",
                                "-o", "PreferredAuthentications=password,keyboard-interactive", login="alice"))
    assert result.returncode == 255
    assert "Permission denied (publickey)" in result.stderr  # the only method offered
    server.logged(r"refused login: no accepted key \(methods tried: none; only public keys are accepted\) "
                  r"\(key none: no key accepted, r2k user none, ssh user alice,")


def test_an_exec_request_is_refused_and_logged(ctx, people, server, keys):
    result = ssh_run(server.ssh(keys["alice"], "-o", "BatchMode=yes") + ["r2k", "--as", "root", "users", "list"])
    assert result.returncode == 255
    assert "exec request failed" in result.stderr
    assert "root" not in result.stdout
    server.logged(rf"refused exec request r2k --as root users list \(key {re.escape(fingerprint(keys['alice']))}, "
                  r"r2k user alice,")


def test_file_transfer_is_refused_and_logged_and_copies_nothing(ctx, people, server, keys, tmp_path):
    # sftp, and scp (which speaks SFTP since OpenSSH 9), ask for the `sftp` subsystem; `scp -O`, the
    # old protocol, runs `scp` as an exec request. Each is refused: no file leaves or lands.
    fp = re.escape(fingerprint(keys["alice"]))
    options = ["-P", str(server.port), "-i", str(keys["alice"]), *SSH_OPTIONS, "-o", "BatchMode=yes"]
    target = "alice@127.0.0.1"
    result = ssh_run(["sftp", *options, "-b", "-", target])
    assert result.returncode != 0 and "subsystem request failed" in result.stderr
    server.logged(rf"refused subsystem request sftp \(key {fp}, r2k user alice,")

    local = tmp_path / "local.txt"
    local.write_text("secret")
    result = ssh_run(["scp", *options, str(local), f"{target}:/tmp/r2k-scp-landed.txt"])
    assert result.returncode != 0 and not Path("/tmp/r2k-scp-landed.txt").exists()
    result = ssh_run(["scp", "-O", *options, f"{target}:/etc/hostname", str(tmp_path / "fetched")])
    assert result.returncode != 0 and not (tmp_path / "fetched").exists()
    server.logged(rf"refused exec request scp -f /etc/hostname \(key {fp}, r2k user alice,")


def test_forwarding_is_refused_and_logged(ctx, people, server, keys, tmp_path, tmux):
    agent_socket = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(agent_socket)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        wait_until(agent_socket.exists, "the agent's socket")
        term = Terminal(tmux, "alice", ["env", f"SSH_AUTH_SOCK={agent_socket}", "DISPLAY=127.0.0.1:99",
                                        *server.ssh(keys["alice"], "-A", "-X",
                                                    "-R", "0:127.0.0.1:9")])
        term.shows("Dashboard — alice (validator")
        fp = re.escape(fingerprint(keys["alice"]))
        server.logged(rf"refused remote port forwarding from .*:0 \(key {fp}, r2k user alice,")
        server.logged(rf"refused X11 forwarding \(key {fp}, r2k user alice,")
        server.logged(rf"refused agent forwarding \(key {fp}, r2k user alice,")
    finally:
        agent.terminate()
        agent.wait()


def test_a_local_port_forward_is_refused_and_logged(ctx, people, server, keys, tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        local = probe.getsockname()[1]
    tunnel = subprocess.Popen(server.ssh(keys["alice"], "-o", "BatchMode=yes", "-N", "-L", f"{local}:127.0.0.1:9"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        def forwarded() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", local), timeout=2) as conn:
                    conn.settimeout(2)
                    return conn.recv(10) == b""  # the server refused the channel; ssh closes ours
            except OSError:
                return False

        wait_until(forwarded, "the tunnel's port to answer")
        server.logged(rf"refused port forwarding to 127\.0\.0\.1:9 \(key {re.escape(fingerprint(keys['alice']))},")
    finally:
        tunnel.terminate()
        tunnel.wait()


def test_an_idle_session_is_warned_then_ended(ctx, people, keys, tmux, tmp_path):
    (tmp_path / "idle").mkdir()
    idle = Server(tmp_path / "idle", idle=10)  # long enough for the dashboard to draw first, under load
    try:
        users.add_key(ctx, "alice", Path(f"{keygen(tmp_path, 'idle-alice')}.pub").read_text(), by=people["root"],
                      path=idle.keys)
        term = Terminal(tmux, "alice", idle.ssh(tmp_path / "idle-alice"))
        term.shows("Dashboard — alice (validator")
        term.shows("this session ends in", timeout=15)  # five seconds before (half of ten)
        idle.logged(r"alice idle for \d+ s: warned")
        term.shows("r2k: session ended after 10 s without a key pressed.", timeout=15)
        term.shows("[ssh exited 1]")
        [pid] = [int(m) for m in re.findall(r"session started for alice, pid (\d+)", idle.log())]
        wait_until(lambda: not group_members(pid), "the idle session's processes to end", 15)
    finally:
        idle.stop()


def test_a_session_without_a_terminal_is_refused(ctx, people, server, keys):
    result = ssh_run(server.ssh(keys["alice"], "-o", "BatchMode=yes", "-T"))
    assert result.returncode == 1
    assert "the workstation needs a terminal: connect with ssh -t" in result.stdout
    server.logged(r"refused a session without a terminal .*r2k user alice,")


def test_a_key_whose_user_is_gone_is_refused(ctx, people, server, tmp_path):
    ghost = keygen(tmp_path, "ghost")
    with server.keys.open("a") as keys_file:  # a line for a user the database does not hold
        keys_file.write(Path(f"{ghost}.pub").read_text().split(" ghost@")[0] + " user=ghost\n")
    result = ssh_run(server.ssh(ghost, "-o", "BatchMode=yes", "-tt"))
    assert result.returncode == 255 and "Permission denied (publickey)" in result.stderr
    server.logged(rf"refused key of r2k user 'ghost', who does not exist .*\(key {re.escape(fingerprint(ghost))},")


def test_a_key_pressed_after_the_idle_warning_keeps_the_session(ctx, people, keys, tmux, tmp_path):
    (tmp_path / "idle").mkdir()
    idle = Server(tmp_path / "idle", idle=12)
    try:
        users.add_key(ctx, "alice", Path(f"{keygen(tmp_path, 'idle-alice')}.pub").read_text(), by=people["root"],
                      path=idle.keys)
        connected = time.monotonic()
        term = Terminal(tmux, "alice", idle.ssh(tmp_path / "idle-alice"))
        term.shows("Dashboard — alice (validator")
        term.shows("this session ends in", timeout=15)  # six seconds before the limit (half of twelve)
        term.send("F12")  # a key that does nothing: the clock starts again, the workstation draws over the warning
        wait_until(lambda: "this session ends in" not in term.screen(), "the warning to be drawn over", 5)
        assert "Dashboard — alice (validator" in term.screen()
        term.send("V")
        term.shows("alice reviews FACT, RULE")
        time.sleep(max(0.0, connected + 13 - time.monotonic()))  # past the limit counted from the connection
        assert "session ended" not in term.screen() and "[ssh exited" not in term.screen()
        assert len(re.findall(r"alice idle for \d+ s: session ended", idle.log())) == 0
    finally:
        idle.stop()


def test_stopping_the_server_tells_each_session_and_leaves_nothing(ctx, people, keys, tmux, tmp_path):
    (tmp_path / "stopping").mkdir()
    stopping = Server(tmp_path / "stopping")
    try:
        users.add_key(ctx, "alice", Path(f"{keygen(tmp_path, 'stop-alice')}.pub").read_text(), by=people["root"],
                      path=stopping.keys)
        term = Terminal(tmux, "alice", stopping.ssh(tmp_path / "stop-alice"))
        term.shows("Dashboard — alice (validator")
        [pid] = wait_until(lambda: session_pids(stopping), "the session in the status file")
        status = Path(os.environ["R2K_DATA_DIR"]) / "ssh" / f"sessions-{stopping.port}.json"
        stopping.process.send_signal(signal.SIGTERM)  # as systemctl stop does
        term.shows("r2k: the server is stopping.")
        term.shows("[ssh exited 1]")
        assert stopping.process.wait(15) == 0
        assert not group_members(pid) and not status.exists()
        screen = term.screen()
        assert "Dashboard" not in screen  # the client's terminal is back on its main screen
    finally:
        stopping.stop()


# --------------------------------------------------------------------------- keys and the host key

def test_users_add_key_lets_a_key_in_as_an_existing_user(ctx, people, server, tmp_path):
    key = keygen(tmp_path, "carol")
    path = tmp_path / "authorized_keys"
    result = r2k("--as", "root", "--json", "users", "add-key", "alice", "--key-file", f"{key}.pub",
                 "--authorized-keys", str(path))
    assert result.returncode == 0, result.stderr
    added = json.loads(result.stdout)
    assert added["fingerprint"] == fingerprint(key) and added["name"] == "alice"
    assert (path.stat().st_mode & 0o777) == 0o600
    line = path.read_text().strip()
    assert line.startswith("ssh-ed25519 ") and line.endswith(" user=alice")
    assert users.authorized_keys(path) == {fingerprint(key): "alice"}
    with ctx.db.read() as tx:
        event = tx.one("SELECT actor, payload FROM events WHERE type = 'user_key_added'")
    assert event["actor"] == "root" and event["payload"]["key"]["fingerprint"] == fingerprint(key)


@pytest.mark.parametrize("as_user,name,content,status,words", [
    ("alice", "alice", None, 403, "alice (validator) may not run `r2k users add-key`: only an admin may"),
    ("root", "nobody", None, 404, "no user 'nobody'"),
    ("root", "alice", "not a key at all\n", 400, "not an OpenSSH public key"),
    ("root", "alice", "ssh-ed25519 AAAAnotbase64!!\n", 400, "not a valid ssh-ed25519 public key"),
    ("root", "alice", "ssh-ed25519 AAAA\nssh-ed25519 BBBB\n", 400, "one public key (a .pub file), found 2 lines"),
    ("root", "alice", 'command="sh" ssh-ed25519 AAAAC3Nza\n', 400, "no authorized_keys options"),
], ids=["not-admin", "unknown-user", "not-a-key", "bad-base64", "two-keys", "options"])
def test_users_add_key_refuses_bad_input_and_changes_nothing(ctx, people, tmp_path, as_user, name, content,
                                                             status, words):
    key = keygen(tmp_path, "k")
    key_file = Path(f"{key}.pub")
    if content is not None:
        key_file.write_text(content)
    path = tmp_path / "authorized_keys"
    result = r2k("--as", as_user, "users", "add-key", name, "--key-file", str(key_file), "--authorized-keys", str(path))
    error = error_of(result)
    assert error["status"] == status and words in error["message"], error
    assert not path.exists() or path.read_text() == ""
    with ctx.db.read() as tx:
        assert tx.one("SELECT count(*) AS n FROM events WHERE type = 'user_key_added'")["n"] == 0


def test_the_same_key_twice_is_a_conflict(ctx, people, tmp_path):
    key = keygen(tmp_path, "twice")
    path = tmp_path / "authorized_keys"
    args = ["--as", "root", "users", "add-key", "alice", "--key-file", f"{key}.pub", "--authorized-keys", str(path)]
    assert r2k(*args).returncode == 0
    again = r2k(*args[:4], "bob", *args[5:])
    assert error_of(again)["status"] == 409 and "already lets in user alice" in error_of(again)["message"]
    assert users.authorized_keys(path) == {fingerprint(key): "alice"}


def test_the_host_key_and_sessions_file_are_readable_by_their_owner_only(server):
    folder = Path(os.environ["R2K_DATA_DIR"]) / "ssh"
    key = folder / "host_ed25519_key"
    assert (key.stat().st_mode & 0o777) == 0o600
    assert ((folder / f"sessions-{server.port}.json").stat().st_mode & 0o777) == 0o600  # who is on, from where
    assert (folder.stat().st_mode & 0o777) == 0o700
    assert "BEGIN OPENSSH PRIVATE KEY" in key.read_text()
    assert key.read_text() not in server.log()


# --------------------------------------------------------------------------- pure: the key file's format

def test_a_public_key_parses_to_the_fingerprint_ssh_keygen_prints(tmp_path):
    key = keygen(tmp_path, "pure")
    kind, b64, print_ = users.parse_public_key(Path(f"{key}.pub").read_text())
    assert kind == "ssh-ed25519" and print_ == fingerprint(key)
    assert users.keys_in(f"# a comment\n{kind} {b64} user=alice trailing words\n") == {print_: "alice"}


@pytest.mark.parametrize("line", [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPHwINIWLs4YQkGdTLD2Av95RO+qCW0qF9LVochl21r5",  # no user
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPHwINIWLs4YQkGdTLD2Av95RO+qCW0qF9LVochl21r5 alice",  # no user=
    "ssh-ed25519 not*base64 user=alice",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPHwINIWLs4YQkGdTLD2Av95RO+qCW0qF9LVochl21r5 user=a\x1bb",
    'command="sh" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPHwINIWLs4YQkGdTLD2Av95RO+qCW0qF9LVochl21r5 user=alice',
], ids=["no-user", "comment-only", "bad-base64", "bad-name", "options"])
def test_a_line_not_in_the_form_grants_nothing(line):
    assert users.keys_in(line + "\n") == {}


def test_a_key_file_or_folder_writable_by_others_is_not_trusted(tmp_path):
    from r2k.app.remote.ssh import writable_by_others

    folder = tmp_path / "ssh"
    folder.mkdir(mode=0o700)
    path = folder / "authorized_keys"
    path.write_text("")
    path.chmod(0o600)
    assert writable_by_others(path) is None
    path.chmod(0o620)
    assert "authorized keys file" in writable_by_others(path) and "mode 620" in writable_by_others(path)
    path.chmod(0o644)
    assert writable_by_others(path) is None  # readable is the owner's choice; writable is not
    folder.chmod(0o777)
    assert "its folder" in writable_by_others(path)


def test_the_idle_warning_comes_a_minute_before_or_at_half_time():
    from r2k.app.remote.ssh import warn_lead

    assert warn_lead(1800) == 60 and warn_lead(120) == 60 and warn_lead(8) == 4


@pytest.mark.parametrize("args,env,words", [
    (["--idle", "1"], {}, "--idle is 5–604,800 seconds, got 1"),
    (["--port", "70000"], {}, "--port is 0 or more, at most 65,535, got 70000"),
    ([], {"R2K_SSH_IDLE_SECONDS": "soon"}, "R2K_SSH_IDLE_SECONDS is a whole number"),
], ids=["idle", "port", "idle-env"])
def test_serve_ssh_refuses_bad_settings_before_it_listens(ctx, args, env, words):
    result = r2k("serve", "ssh", *args, env=env or None, timeout=60)
    assert result.returncode == 6, result.stderr
    assert words in error_of(result)["message"]
