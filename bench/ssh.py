"""The workstation over SSH (issue: remote access, item 6), next to the same workstation in a local
terminal measured in the same run:

- the time from starting `ssh` to the dashboard's first full frame (the user's name with their
  role, and the services' versions, drawn): median of 5; the floor is `r2k` started in a local pty
  (target: under 2 s over SSH);
- the echo of a key press: a letter typed into the registry's search box until its echo arrives,
  over SSH and in a local pty (median and p95 of 40 keys; target: SSH within 30 ms of local);
- memory per session with 1, 5 and 20 sessions at once: the resident set (RSS) and the
  proportional set (PSS, shared pages divided among their sharers) of each session's process
  group, and of the server; next to one local `r2k` process.

Both sides run the real OpenSSH client or the real `r2k` on a pty this script reads, so the
difference is what SSH adds (the client, encryption over loopback, the server's relay).

    python bench/ssh.py            # uses its own data dir under the temp dir
    R2K_DATA_DIR=... python bench/ssh.py
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

from _common import ROOT, bench_env, median, percentile, r2k, verdict

ANSI = re.compile(rb"\x1b\[[0-9;?<>=$ ]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\x1b\][^\x07]*\x07")
USER = "bench"
FRAME = ("Dashboard — bench (validator", "PostgreSQL")  # the actor resolved and the services checked
SSH_OPTIONS = ["-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR"]


class Reader(threading.Thread):
    """Drains every pty's output as it comes (a full pty would stall its TUI), with times."""

    def __init__(self):
        super().__init__(daemon=True)
        self.selector = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.start()

    def add(self, term: "Pty") -> None:
        with self.lock:
            self.selector.register(term.master, selectors.EVENT_READ, term)

    def remove(self, term: "Pty") -> None:
        with self.lock:
            try:
                self.selector.unregister(term.master)
            except (KeyError, ValueError):
                pass

    def run(self) -> None:
        while True:
            with self.lock:
                ready = self.selector.select(timeout=0) if self.selector.get_map() else []
            if not ready:
                time.sleep(0.0005)
                continue
            for key, _ in ready:
                term = key.data
                try:
                    data = os.read(term.master, 65536)
                except OSError:
                    data = b""
                if not data:
                    self.remove(term)
                    continue
                term.received(data)


READER: Reader | None = None


class Pty:
    """A command on a pty of the given size; what it wrote, and when."""

    def __init__(self, command: list[str], env: dict, cols: int = 120, rows: int = 40):
        global READER
        READER = READER or Reader()
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.buffer = bytearray()
        self.changed = threading.Condition()
        self.last = time.perf_counter()
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT,
                                        start_new_session=True)
        os.close(slave)
        READER.add(self)

    def received(self, data: bytes) -> None:
        with self.changed:
            self.buffer += data
            self.last = time.perf_counter()
            self.changed.notify_all()

    def text(self, since: int = 0) -> str:
        return ANSI.sub(b"", bytes(self.buffer[since:])).decode("utf-8", "replace")

    def wait_for(self, condition, timeout: float = 60.0) -> float:
        """The time `condition(self)` first held (checked at each output)."""
        deadline = time.perf_counter() + timeout
        with self.changed:
            while not condition(self):
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise SystemExit(f"timed out; the terminal shows:\n{self.text()[-3000:]}")
                self.changed.wait(left)
            return self.last

    def quiet(self, seconds: float = 0.3) -> None:
        while True:
            with self.changed:
                idle = time.perf_counter() - self.last
            if idle >= seconds:
                return
            time.sleep(seconds - idle)

    def send(self, data: bytes) -> float:
        sent = time.perf_counter()
        os.write(self.master, data)
        return sent

    def close(self) -> None:
        READER.remove(self)
        try:
            os.killpg(self.process.pid, signal.SIGHUP)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        os.close(self.master)


def framed(term: Pty) -> bool:
    text = term.text()
    return all(part in text for part in FRAME)


def first_frame(command: list[str], env: dict) -> float:
    term = Pty(command, env)
    try:
        return term.wait_for(framed) - term.started
    finally:
        term.close()


def echoes(command: list[str], env: dict, keys: int = 40) -> list[float]:
    """Open the registry, focus its search box, then type letters one at a time: each from the write
    to the first output holding it."""
    term = Pty(command, env)
    try:
        term.wait_for(framed)
        term.quiet()
        mark = len(term.buffer)
        term.send(b"G")
        term.wait_for(lambda t: "Search the registry" in t.text(mark))
        term.quiet(0.5)
        term.send(b"/")
        term.quiet(0.5)
        times = []
        letters = "qwkjzv"
        for i in range(keys):
            letter = letters[i % len(letters)]
            mark = len(term.buffer)
            sent = term.send(letter.encode())
            arrived = term.wait_for(lambda t: letter in t.text(mark), timeout=10)
            times.append(arrived - sent)
            term.quiet(0.25)  # the search it starts, drawn, before the next key
            if i % len(letters) == len(letters) - 1:
                term.send(b"\x15")  # ctrl+u: the box empty again
                term.quiet(0.3)
        return times
    finally:
        term.close()


def group_memory(pgid: int) -> tuple[int, int]:
    """RSS and PSS in kB of every process in the process group `pgid`."""
    rss = pss = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            rollup = (entry / "smaps_rollup").read_text()
        except OSError:
            continue
        rss += int(re.search(r"^Rss:\s+(\d+)", rollup, re.M).group(1))
        pss += int(re.search(r"^Pss:\s+(\d+)", rollup, re.M).group(1))
    return rss, pss


def process_memory(pid: int) -> tuple[int, int]:
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    return (int(re.search(r"^Rss:\s+(\d+)", rollup, re.M).group(1)),
            int(re.search(r"^Pss:\s+(\d+)", rollup, re.M).group(1)))


def main() -> None:
    env = bench_env("ssh")
    env.pop("R2K_USER", None)
    env["R2K_START_WORKER"] = "0"  # the sessions measured, not a worker
    r2k(env, "services", "up")
    users = json.loads(r2k(env, "--json", "users", "list").stdout)
    names = {u["name"] for u in users}
    if "root" not in names:
        r2k(env, "users", "add", "root", "--role", "admin")
    if USER not in names:
        r2k(env, "--as", "root", "users", "add", USER, "--role", "validator", "--horn-types", "FACT")
    home = Path(tempfile.mkdtemp(prefix="r2k-bench-ssh-"))
    key = home / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    keys = home / "authorized_keys"
    r2k(env, "--as", "root", "users", "add-key", USER, "--key-file", f"{key}.pub", "--authorized-keys", str(keys))

    log = home / "server.log"
    server = subprocess.Popen([sys.executable, "-m", "r2k.app", "serve", "ssh", "--port", "0", "--authorized-keys",
                               str(keys)], cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while not (found := re.search(r"on 127\.0\.0\.1:(\d+)", log.read_text())):
            if server.poll() is not None or time.time() > deadline:
                raise SystemExit(f"the server did not start:\n{log.read_text()}")
            time.sleep(0.1)
        port = int(found.group(1))
        ssh = ["ssh", "-tt", "-p", str(port), "-i", str(key), *SSH_OPTIONS, "bench@127.0.0.1"]
        local = [sys.executable, "-m", "r2k.app", "--as", USER]
        run(env, ssh, local, server, port)
    finally:
        server.terminate()
        server.wait(20)


def run(env: dict, ssh: list[str], local: list[str], server: subprocess.Popen, port: int) -> None:
    first_frame(local, env)  # bytecode and the servers' caches warm for both
    ssh_frames, local_frames = [], []
    for _ in range(5):  # taking turns, so a drift of the machine's speed falls on both
        ssh_frames.append(first_frame(ssh, env))
        local_frames.append(first_frame(local, env))

    ssh_echo = echoes(ssh, env)
    local_echo = echoes(local, env)

    status = Path(env["R2K_DATA_DIR"]) / "ssh" / f"sessions-{port}.json"
    memory = {}
    for count in (1, 5, 20):
        terms = [Pty(ssh, env) for _ in range(count)]
        try:
            for term in terms:
                term.wait_for(framed, timeout=180)
            for term in terms:
                term.quiet(0.5)
            sessions = json.loads(status.read_text())["sessions"]
            while len(sessions) != count:
                time.sleep(0.2)
                sessions = json.loads(status.read_text())["sessions"]
            per = [group_memory(s["pid"]) for s in sessions]
            memory[count] = (sum(r for r, _ in per) / count, sum(p for _, p in per) / count,
                             process_memory(server.pid))
        finally:
            for term in terms:
                term.close()
        time.sleep(3)  # the sessions gone before the next count
    term = Pty(local, env)
    try:
        term.wait_for(framed)
        term.quiet(0.5)
        local_memory = group_memory(term.process.pid)
    finally:
        term.close()

    frame_ssh, frame_local = median(ssh_frames), median(local_frames)
    echo_ssh, echo_local = median(ssh_echo) * 1000, median(local_echo) * 1000
    p95_ssh, p95_local = percentile(ssh_echo, 95) * 1000, percentile(local_echo, 95) * 1000
    print(f"first full frame over SSH     median of 5: {frame_ssh * 1000:7.0f} ms   "
          f"(target < 2000 ms: {verdict(frame_ssh, 2.0)})")
    print(f"first full frame, local pty   median of 5: {frame_local * 1000:7.0f} ms   (the floor)")
    print(f"  SSH adds {1000 * (frame_ssh - frame_local):.0f} ms")
    print(f"key echo over SSH             median of {len(ssh_echo)}: {echo_ssh:6.1f} ms   p95 {p95_ssh:6.1f} ms")
    print(f"key echo, local pty           median of {len(local_echo)}: {echo_local:6.1f} ms   p95 {p95_local:6.1f} ms"
          "   (the floor)")
    print(f"  SSH adds {echo_ssh - echo_local:.1f} ms at the median, {p95_ssh - p95_local:.1f} ms at p95   "
          f"(target within 30 ms: {verdict(echo_ssh - echo_local, 30)})")
    for count, (rss, pss, (server_rss, server_pss)) in memory.items():
        print(f"memory, {count:2d} session(s) at once: per session RSS {rss / 1024:6.1f} MB, PSS {pss / 1024:6.1f} MB;"
              f"   the server RSS {server_rss / 1024:5.1f} MB, PSS {server_pss / 1024:5.1f} MB")
    print(f"memory, one local r2k:                   RSS {local_memory[0] / 1024:6.1f} MB, "
          f"PSS {local_memory[1] / 1024:6.1f} MB   (the floor)")
    print(f"  all SSH frames (ms): {', '.join(f'{v * 1000:.0f}' for v in ssh_frames)}")
    print(f"  all local frames (ms): {', '.join(f'{v * 1000:.0f}' for v in local_frames)}")


if __name__ == "__main__":
    main()
