"""The workstation's own worker (docs/architecture.md, "Jobs without asking").

When no RQ worker is live on r2k's queues, the workstation (and so `r2k demo`) starts one: a child
`r2k worker --parent PID` process, its output in `logs/worker.log` of the data dir (0600), never on
the screen. The two never take each other down:

- the child runs in a session of its own (a ctrl+c or a hang-up at the terminal reaches the
  workstation alone), and a child that ends is started again, with backoff, while no other worker
  is live;
- the workstation stops it when it leaves (ctrl+q, SIGTERM, SIGHUP, a crash: `stop`), and the child
  watches its parent besides (`watch_parent`): a workstation killed with `kill -9` runs no cleanup,
  and its worker ends within a few seconds all the same, with whatever that worker forked.

`R2K_START_WORKER=0` (also false, no, off) starts none: tests and CI run their own workers.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from r2k.core.services.operations import workers_live

ENV = "R2K_START_WORKER"
LOG_NAME = "worker.log"
LOG_KEPT = 10 * 2**20        # a log larger than this at start is moved to worker.log.1
TICK = 3.0                   # seconds between looks at the child and at who serves the jobs
HEALTHY_AFTER = 60.0         # a child that ran this long starts the backoff afresh when it ends
BACKOFF_MAX = 60             # seconds, at most, before the next start after a child ended
STOP_WAIT = 5.0              # seconds for RQ's warm stop (a job finishing) before the cold one

log = logging.getLogger("r2k.worker_child")


def wanted(environ=os.environ) -> bool:
    """Whether the workstation starts a worker when none is live (R2K_START_WORKER, on by default)."""
    return environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def log_path(data_dir, name: str = LOG_NAME) -> Path:
    """A log file in the data dir's `logs/` (0700): the worker's, or the workstation's own."""
    logs = Path(data_dir) / "logs"
    logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(logs, 0o700)
    return logs / name


def open_log(path: Path) -> int:
    """The log file opened for appending (0600; one larger than LOG_KEPT is moved to NAME.1 first)."""
    try:
        if path.stat().st_size > LOG_KEPT:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    return fd


class WorkerChild:
    """Starts, watches and stops the workstation's own `r2k worker`. `tick` (from a thread, every
    TICK seconds) starts one when none is live; `status` says what it is doing, for the dashboard."""

    def __init__(self, user: str | None, data_dir, *, argv: list[str] | None = None):
        self.user = user
        self.log = log_path(data_dir)
        self.argv = argv or [sys.executable, "-m", "r2k.app", "worker"]
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.failures = 0
        self.last_exit: int | None = None
        self.next_try = 0.0
        self.stopped = False
        self.pids: list[int] = []   # every child started, for the dashboard and the tests
        self.holder = f"{os.getpid()}:{id(self):x}"  # its name on the start claim (workers_live)
        self._lock = threading.Lock()

    # -- what it is doing ----------------------------------------------------------------------
    def status(self) -> dict:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            return {"state": "running", "pid": proc.pid, "log": str(self.log)}
        if self.stopped:
            return {"state": "stopped", "pid": None, "log": str(self.log)}
        if self.last_exit is not None:
            return {"state": "waiting", "pid": None, "exit": self.last_exit, "log": str(self.log),
                    "retry_in": max(0, round(self.next_try - time.monotonic()))}
        return {"state": "idle", "pid": None, "log": str(self.log)}

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    # -- the loop's step -------------------------------------------------------------------------
    def tick(self, ctx) -> bool:
        """Look at the child, and start one when none is live; True when something changed."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            return self._tick(ctx)
        finally:
            self._lock.release()

    def _tick(self, ctx) -> bool:
        now = time.monotonic()
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                if now - self.started_at < HEALTHY_AFTER:  # still starting, maybe: no other workstation starts one
                    workers_live.start_claim(ctx, self.holder)
                return False
            self.proc = None
            self.last_exit = code
            self.failures = 1 if now - self.started_at >= HEALTHY_AFTER else self.failures + 1
            self.next_try = now + min(BACKOFF_MAX, 2 ** (self.failures - 1))
            log.warning("the workstation's worker ended (exit %s); next try in %d s", code, self.next_try - now)
            return True
        if self.stopped or now < self.next_try:
            return False
        if workers_live.serving(ctx)["count"]:
            return False  # another worker serves the jobs
        if not workers_live.start_claim(ctx, self.holder):
            return False  # another workstation is starting one this moment
        self._start()
        return True

    def _start(self) -> None:
        fd = open_log(self.log)
        try:
            os.write(fd, f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} started by the workstation "
                         f"(pid {os.getpid()})\n".encode())
            args = [*self.argv, "--parent", str(os.getpid())] + (["--as", self.user] if self.user else [])
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
                                         start_new_session=True, close_fds=True, env=env)
        finally:
            os.close(fd)
        self.started_at = time.monotonic()
        self.pids.append(self.proc.pid)

    # -- leaving ----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the child and what it forked (its process group): RQ's warm stop, then the cold one,
        then SIGKILL. Safe to call more than once, from any thread: the first call takes the child,
        so a later one signals no group whose pid may since have been reused."""
        self.stopped = True
        with self._lock:  # a tick starting a child this moment finishes first, so that child is stopped too
            proc, self.proc = self.proc, None
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_WAIT), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        try:  # the group's other members (RQ's scheduler, the sweep's): they end with it, or now
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


# ------------------------------------------------------------------------------ the child's side

def watch_parent(pid: int, *, grace: float = 10.0) -> None:
    """In `r2k worker --parent PID`: end when the process PID is gone (the workstation that started
    it, even one killed with `kill -9`). Its whole process group is stopped as SIGTERM stops it
    (RQ's warm stop: the job in hand finishes), and after `grace` seconds it exits regardless."""
    was_parent = os.getppid() == pid

    def gone() -> bool:
        if was_parent:
            return os.getppid() != pid
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def watch() -> None:
        while not gone():
            time.sleep(1)
        log.warning("the workstation (pid %d) is gone: its worker stops", pid)
        if os.getpgid(0) == os.getpid():  # a group of its own, as the workstation starts it
            os.killpg(os.getpid(), signal.SIGTERM)
        else:  # started by hand from a shell: the shell's group is not its to stop
            os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os._exit(1)

    if gone():
        log.warning("the workstation (pid %d) is gone already: no worker started for it", pid)
        sys.exit(1)
    threading.Thread(target=watch, name="r2k workstation watch", daemon=True).start()
