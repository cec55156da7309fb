"""Servers that die or are restarted from outside come back where they were, and long-lived processes
follow them; nothing waits for a sweep that may never run. Each test reproduces a failure found by
killing servers under a running install.

These tests kill servers, so they run on embedded servers of their own (a data dir per module),
never on the session's shared ones.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from r2k.core.config import Settings
from r2k.core.embedded import common
from tests.conftest import ROOT
from tests.llm_server import ChatServer
from tests.tui import wait_for

pytestmark = [pytest.mark.services,  # servers of its own
              pytest.mark.skipif(any(os.environ.get(v) for v in ("R2K_DATABASE_URL", "R2K_REDIS_URL")),
                                 reason="kills embedded servers; configured ones are their operator's")]


class Install:
    """A data dir with its own embedded servers, driven through the CLI as an operator would."""

    def __init__(self, data: Path):
        self.data = data
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("R2K_")}
        self.env.update(R2K_DATA_DIR=str(data), R2K_USER="root", R2K_SWEEP_INTERVAL="2")
        self.settings = Settings(data_dir=data, sweep_interval=2)

    def r2k(self, *args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "r2k.app", *args], cwd=ROOT, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=timeout)

    def json(self, *args: str, **kw):
        result = self.r2k("--json", *args, **kw)
        assert result.returncode == 0, result.stderr[-2000:]
        return json.loads(result.stdout)

    def state(self, part: str) -> dict:
        return common.read_state(self.settings, part)

    def kill(self, part: str) -> int:
        """`kill -9` the part's server; its pid."""
        pid = self.state(part)["pid"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while common.process_is(pid, self.state(part)["program"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        return pid

    def secret(self, name: str) -> str:
        return (self.data / "secrets" / f"{name}.password").read_text()

    def worker(self, log: Path, env: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "r2k.app", "worker", "--queues", "generation,graph"], cwd=ROOT,
                                env={**self.env, **(env or {})}, stdout=log.open("w"), stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def install(tmp_path_factory):
    from r2k.core import embedded

    place = Install(tmp_path_factory.mktemp("faults"))
    loaded = place.r2k("demo", "--no-tui")
    assert loaded.returncode == 0, loaded.stderr
    yield place
    embedded.purge(place.settings)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


# ----------------------------------------------------------------------------- servers come back

def test_a_killed_postgres_comes_back_on_its_port_with_its_credential(install):
    before = install.state("postgres")
    password = install.secret("postgres-app")
    install.kill("postgres")
    stats = install.json("queue", "stats")  # the next command brings it back
    after = install.state("postgres")
    assert after["port"] == before["port"] and after["pid"] != before["pid"]
    assert install.secret("postgres-app") == password
    assert sum(row["pending"] for row in stats) > 0


@pytest.mark.parametrize("part", ["redis", "graph"])
def test_a_killed_redis_or_graph_comes_back_on_its_port_and_answers_the_first_command(install, part):
    install.json("services", "up")
    before = install.state(part)
    install.kill(part)
    result = install.r2k("--json", "services", "up")  # what an operator runs: no 503, no LOADING
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows[part]["answers"] and install.state(part)["port"] == before["port"]
    assert install.r2k("queue", "stats").returncode == 0


def test_a_postgres_restarted_outside_r2k_is_adopted_not_started_twice(install):
    from r2k.core.embedded import postgres

    install.json("queue", "stats")
    state = install.state("postgres")
    log = Path(state["pgdata"]) / "server.log"  # as an operator would, or its output holds our pipe open
    restarted = postgres._run_as(state["os_user"], [str(Path(state["bin_dir"]) / "pg_ctl"), "-D", state["pgdata"],
                                                    "-l", str(log), "-w", "-m", "fast", "restart"], cwd="/",
                                 timeout=120)
    assert restarted.returncode == 0, restarted.stderr
    new_pid = int((Path(state["pgdata"]) / "postmaster.pid").read_text().split()[0])
    assert new_pid != state["pid"]
    status = {row["name"]: row for row in install.json("services", "status")}
    assert status["postgres"]["answers"] and status["postgres"]["pid"] == new_pid
    assert install.r2k("queue", "stats").returncode == 0
    assert install.state("postgres")["pid"] == new_pid  # adopted, not started again beside it


# ----------------------------------------------------------------------------- long-lived processes

def test_a_running_worker_rides_out_a_postgres_restart_with_one_line_per_outage(install, tmp_path):
    log = tmp_path / "worker.log"
    worker = install.worker(log)
    try:
        first = install.json("workitems", "create", "--question", "What does the Rotterdam warehouse run?")
        deadline = time.monotonic() + 60
        while install.json("workitems", "show", str(first["id"]))["state"] in ("NEW", "GENERATING"):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        install.kill("postgres")
        time.sleep(8)  # the worker's sweeps meet the outage meanwhile
        install.json("services", "up")
        second = install.json("workitems", "create", "--question", "How many loading docks has Rotterdam?")
        deadline = time.monotonic() + 60
        while install.json("workitems", "show", str(second["id"]))["state"] in ("NEW", "GENERATING"):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        assert worker.poll() is None, log.read_text()[-3000:]  # still running
    finally:
        stop(worker)
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert text.count("PostgreSQL does not answer") <= 2, text[-3000:]


def test_a_job_that_meets_an_outage_is_finished_once_the_server_is_back(install, tmp_path):
    """PostgreSQL dies while a job waits on a slow LLM: the job waits for it, then finishes."""
    with ChatServer(mode="slow", delay=4) as llm:
        log = tmp_path / "worker.log"
        env = {"R2K_LLM_URL": llm.url}
        worker = install.worker(log, env)
        try:
            item = install.json("workitems", "create", "--question", "What does the Antwerp cross-dock handle?")
            deadline = time.monotonic() + 30
            while llm.calls == 0:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.1)
            install.kill("postgres")  # mid-job: the LLM answers while the database is away
            time.sleep(6)
            install.json("services", "up")
            deadline = time.monotonic() + 60
            while install.json("workitems", "show", str(item["id"]))["state"] in ("NEW", "GENERATING"):
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
            shown = install.json("workitems", "show", str(item["id"]))
        finally:
            stop(worker)
    assert shown["state"] in ("READY_FOR_REVIEW", "ESCALATED"), shown
    assert len(shown["generated"]) <= 1  # finished once, never twice
    assert "Traceback" not in log.read_text()


def test_a_dead_workers_job_runs_again_within_a_minute(install, tmp_path):
    with ChatServer(mode="slow", delay=3) as llm:
        env = {"R2K_LLM_URL": llm.url}
        first = install.worker(tmp_path / "first.log", env)
        try:
            item = install.json("workitems", "create", "--question", "What is the Hamburg warehouse's cold room?")
            deadline = time.monotonic() + 30
            while llm.calls == 0:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            first.kill()  # kill -9, mid-job
            first.wait(10)
        killed_at = time.monotonic()
        second = install.worker(tmp_path / "second.log", env)
        try:
            while install.json("workitems", "show", str(item["id"]))["state"] in ("NEW", "GENERATING"):
                assert time.monotonic() - killed_at < 60, (tmp_path / "second.log").read_text()[-3000:]
                time.sleep(0.5)
        finally:
            stop(second)
    assert install.json("workitems", "show", str(item["id"]))["state"] in ("READY_FOR_REVIEW", "ESCALATED")


@pytest.mark.parametrize("processes", [1, 2])
def test_what_a_killed_worker_forked_ends_with_it(install, tmp_path, processes):
    """`kill -9` of `r2k worker` runs none of its cleanup: its sweep scheduler (and a pool's
    workers) went on for ever, sweeping and restarting the servers of a data dir long removed."""
    def children(pid: int) -> set[int]:
        found = set()
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.add(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
        return found

    worker = subprocess.Popen([sys.executable, "-m", "r2k.app", "worker", "--queues", "generation",
                               "--processes", str(processes)], cwd=ROOT, env=install.env,
                              stdout=(tmp_path / "worker.log").open("w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while len(kids := children(worker.pid)) < processes + (1 if processes > 1 else 0) + 0 or not kids:
            assert time.monotonic() < deadline and worker.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(0.2)
        time.sleep(1)  # their watch has started
    finally:
        worker.kill()  # kill -9 of the supervisor alone, as an operator's `kill -9 PID`
        worker.wait(10)
    deadline = time.monotonic() + 15
    while (alive := {k for k in kids if Path(f"/proc/{k}").exists() and "zombie" not in
                     Path(f"/proc/{k}/status").read_text().lower()}) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive == set(), (tmp_path / "worker.log").read_text()[-2000:]


async def test_the_workstation_says_reconnecting_and_carries_on(install):
    """Redis dies under an open workstation: it says so, reconnects by itself (the embedded Redis is
    started again on its port), and the next claim works."""
    from r2k.app.screens.queues import QueuePickerScreen
    from r2k.app.tui import R2KApp
    from r2k.core.context import Context
    from tests.tui import open_screen

    shown = []  # every title the outage drew: Redis can be back before a poll would see the first

    class Recorded(R2KApp):
        def watch_reconnecting(self, value: bool) -> None:
            super().watch_reconnecting(value)
            shown.append((value, self.sub_title))

    install.json("services", "up")
    ctx = Context(install.settings, pool_size=4)
    app = Recorded(ctx, "ada", sweep_every=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_screen(pilot, "V", QueuePickerScreen)
        install.kill("redis")
        await pilot.press("ctrl+r")  # refresh: its call meets the outage
        await wait_for(pilot, lambda: any(value for value, _ in shown), timeout=20, what="reconnecting")
        assert any(value and "reconnecting…" in title for value, title in shown), shown
        await wait_for(pilot, lambda: not app.reconnecting, timeout=30, what="reconnected")
        assert "reconnecting" not in app.sub_title
        assert install.state("redis")["port"] == common.read_state(install.settings, "redis")["port"]
        from r2k.core.services import candidates, claims, users

        claimed = claims.claim_next(ctx, users.resolve(ctx, "ada"), "FACT")
        assert claimed["state"] == "IN_REVIEW"
        candidates.release(ctx, users.resolve(ctx, "ada"), claimed["id"])


# ----------------------------------------------------------------------------- nothing waits for a sweep

def test_a_claim_rebuilds_a_partition_that_lost_a_push(ctx, people):
    """A candidate committed while its queue push was lost (Redis away) is claimable at once,
    without `queue sweep`: the claim finds the partition empty while PostgreSQL holds the row."""
    from r2k.core.adapters.redis_queues import queue_key
    from r2k.core.services import candidates, claims, queue_index

    added = candidates.add(ctx, people["root"], "Q?", "A fact.", "FACT")
    assert ctx.redis.lrem(queue_key("FACT"), 0, added["id"]) == 1  # the push that never arrived
    assert queue_index.queue(ctx).length("FACT") == 0
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    assert claimed["id"] == added["id"] and claimed["state"] == "IN_REVIEW"
    from r2k.core.errors import NotFound

    with pytest.raises(NotFound):  # and an empty queue is still a plain 404
        claims.claim_next(ctx, people["alice"], "FACT")


def test_a_stale_in_flight_id_does_not_hide_a_lost_push(ctx, people):
    """Found by the chaos soak: a claim whose settle was lost (Redis restarting) leaves its id in flight
    while a push is lost at the same time. Counting, the partition looked complete; by ids it is not."""
    import time

    from r2k.core.adapters.redis_queues import inflight_key, queue_key
    from r2k.core.services import candidates, claims, queue_index, sweeps

    ids = [candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")["id"] for i in range(2)]
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    assert queue_index.queue(ctx).in_flight("FACT") == set()  # its settle went out (reading sends it)
    ctx.redis.zadd(inflight_key("FACT"), {claimed["id"]: time.time()})  # the settle that never came
    ctx.redis.lrem(queue_key("FACT"), 0, ids[1])  # the push that never came
    assert queue_index.queue(ctx).held("FACT") == 1  # one held, one queued: the counts agree
    assert queue_index.repair_queues(ctx, settle=0) == ["FACT"]
    assert queue_index.queue(ctx).ids("FACT") == [ids[1]]
    ctx.redis.zadd(inflight_key("FACT"), {claimed["id"]: time.time()})
    ctx.redis.delete(queue_key("FACT"))
    assert claims.claim_next(ctx, people["bob"], "FACT")["id"] == ids[1]  # and the claim path sees it too
    assert sweeps.sweep_claims(ctx)["rebuilt"] == []


def test_claims_that_rebuild_a_partition_at_once_do_not_trip_over_each_other(ctx, people):
    """Found by the chaos soak: two rebuilds shared one temporary key ('RENAME … no such key')."""
    from concurrent.futures import ThreadPoolExecutor

    from r2k.core.services import candidates, queue_index

    ids = [candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")["id"] for i in range(50)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: queue_index.reconcile(ctx, ["FACT"]), range(24)))
    assert queue_index.queue(ctx).ids("FACT") == ids
    assert [k for k in ctx.redis.keys("*rebuild*")] == []
