"""The workstation's own worker: started when none is live, stopped when the workstation goes, and
the dashboard saying who serves the jobs (docs/architecture.md, "Jobs without asking")."""
from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from r2k.app.screens.dashboard import DashboardScreen
from r2k.app.widgets.modals import ReasonModal
from r2k.app.worker_child import WorkerChild, wanted
from r2k.core.services.answering import workitems
from r2k.core.services.documents import ingest
from r2k.core.services.operations import workers_live
from r2k.core.services.operations.workers_live import said
from r2k.core.services.validation import candidates
from tests.conftest import ROOT
from tests.test_candidate_path import QUESTION, SOURCES  # the backup corpus both tests ask about
from tests.test_tui_validation import open_review
from tests.tui import after, make_app, open_modal, shows, type_text, wait_for

# --------------------------------------------------------------------------- the words (fast tier)

def worker(pid: int, host: str = "here", own: bool = False) -> dict:
    return {"name": f"w{pid}", "host": host, "pid": pid, "queues": ["raw_to_knowledge_generation"], "own": own}


def served(*workers: dict) -> dict:
    return {"workers": list(workers), "count": len(workers), "host": "here"}


def test_the_dashboard_says_who_serves_the_jobs_in_words():
    assert said(served(worker(7, own=True))) == "Jobs: served by 1 worker started by this workstation (pid 7)"
    assert said(served(worker(7, "build-3"), worker(8, "build-3"))) == "Jobs: served by 2 workers on host build-3"
    assert said(served(worker(7))) == "Jobs: served by 1 worker on this host"
    assert said(served(worker(7, own=True), worker(9, "build-3"))) == (
        "Jobs: served by 1 worker started by this workstation (pid 7) and 1 on host build-3")
    assert said(served()) == "Jobs: no worker: escalations wait until one runs (`r2k worker`)"
    assert "R2K_START_WORKER=0" in said(served(), {"state": "off"})
    assert said(served(), {"state": "running", "pid": 5}) == "Jobs: starting a worker for this workstation (pid 5)…"
    waiting = said(served(), {"state": "waiting", "exit": 7, "retry_in": 4, "log": "/d/logs/worker.log"})
    assert waiting.startswith("Jobs: no worker: escalations wait") and "exit 7" in waiting and "in 4 s" in waiting
    assert "/d/logs/worker.log" in waiting


def test_the_opt_out_is_read_from_the_environment():
    assert wanted({}) and wanted({"R2K_START_WORKER": "1"})
    for off in ("0", "false", "No", " off "):
        assert not wanted({"R2K_START_WORKER": off})


# --------------------------------------------------------------------------- with the services

def corpus(ctx, people, tmp_path) -> None:
    for name, text in SOURCES.items():
        (tmp_path / name).write_text(text)
    ingest.ingest(ctx, people["root"], [tmp_path])
    with ctx.db.begin() as tx:  # the FACT queue holds the test's candidate alone
        tx.execute("UPDATE candidates SET state = 'REJECTED'")
    ctx.redis.flushdb()
    from r2k.core.services.queue import queue_index

    queue_index.reconcile(ctx)


def workers_of(parent: int) -> list[int]:
    """The processes started as `r2k worker --parent PARENT` (the workstation's worker and its forks)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"worker" in argv and b"--parent" in argv and str(parent).encode() in argv:
            found.append(int(entry.name))
    return found


async def test_a_worker_started_by_the_workstation_generates_for_an_escalation_made_in_it(ctx, people, tmp_path):
    corpus(ctx, people, tmp_path)
    asked = candidates.add(ctx, people["root"], QUESTION, "Fourteen days, I believe.", "FACT")
    assert workers_live.serving(ctx)["count"] == 0  # nobody serves the jobs: the workstation starts one
    app = make_app(ctx, "alice", start_worker=True)
    async with app.run_test(size=(140, 45)) as pilot:
        await shows(pilot, "#services", "Jobs:", "started by this workstation", timeout=60,
                    what="the dashboard naming the workstation's worker")
        child = app.worker_child.pid
        assert f"(pid {child})" in str(app.screen.query_one("#services").render())
        await open_review(pilot)
        await open_modal(pilot, "x", ReasonModal)
        await type_text(pilot, "fourteen or thirty")
        await pilot.press("enter")
        await after(pilot, "Escalated candidate")
        (item,) = [w for w in workitems.list_items(ctx) if w["candidate_id"] == asked["id"]]

        async def generated():
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                shown = await asyncio.to_thread(workitems.show, ctx, item["id"])
                if shown["generated_candidate"] is not None:
                    return shown
                await asyncio.sleep(0.3)
            raise AssertionError(f"work item {item['id']} was not generated for: {shown['state']}")

        shown = await generated()
        assert shown["state"] == "READY_FOR_REVIEW"
        assert shown["generated"][0]["model"] == "extractive"
        assert app.worker_child.pids == [child]  # one worker, started once
        log = app.worker_child.log  # its output, never on the screen: a file of the data dir's, 0600
        assert log.stat().st_mode & 0o777 == 0o600 and log.parent.stat().st_mode & 0o777 == 0o700
        assert f"started by the workstation (pid {os.getpid()})" in log.read_text()
        # The worker dies: the workstation carries on, and starts another (nobody else serves).
        await pilot.press("D")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen), what="the dashboard")
        os.kill(child, signal.SIGKILL)
        await wait_for(pilot, lambda: len(app.worker_child.pids) == 2, timeout=30, what="a second worker")
        again = app.worker_child.pids[1]
        await shows(pilot, "#services", f"started by this workstation (pid {again})", timeout=60)
        assert app.is_running
    # The workstation left: its worker and whatever the worker forked are gone with it.
    deadline = time.monotonic() + 20
    while workers_of(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert workers_of(os.getpid()) == []
    assert workers_live.serving(ctx)["count"] == 0


async def test_a_workstation_starts_none_while_another_worker_serves(ctx, people):
    other = subprocess.Popen([sys.executable, "-m", "r2k.app", "worker", "--queues", "generation,graph"], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not workers_live.serving(ctx)["count"] and time.monotonic() < deadline:
            time.sleep(0.2)
        app = make_app(ctx, "alice", start_worker=True)
        async with app.run_test(size=(140, 45)) as pilot:
            text = await shows(pilot, "#services", "Jobs: served by 1 worker on this host", timeout=30)
            assert "started by this workstation" not in text
            await pilot.pause(4)  # a tick or more of the supervisor
            assert app.worker_child.pids == []
    finally:
        os.killpg(other.pid, signal.SIGTERM)
        other.wait(30)


def test_two_workstations_opened_at_once_start_one_worker(ctx, people, tmp_path):
    first, second = WorkerChild("alice", tmp_path), WorkerChild("bob", tmp_path)
    try:
        assert first.tick(ctx) and first.pid
        deadline = time.monotonic() + 60
        while not workers_live.serving(ctx)["count"] and time.monotonic() < deadline:
            assert not second.tick(ctx)  # the first one's child is starting: the claim is the first's
            first.tick(ctx)
            time.sleep(0.3)
        assert [w["pid"] for w in workers_live.serving(ctx)["workers"]] == [first.pid]
        assert not second.tick(ctx) and second.pids == []
    finally:
        first.stop()
        second.stop()


def test_a_slow_start_keeps_its_claim_and_its_holder_may_start_again(ctx):
    assert workers_live.start_claim(ctx, "one", seconds=1)
    assert not workers_live.start_claim(ctx, "two", seconds=1)
    time.sleep(0.6)
    assert workers_live.start_claim(ctx, "one", seconds=1)  # its holder's again: a second more
    time.sleep(0.6)
    assert not workers_live.start_claim(ctx, "two", seconds=1)
    time.sleep(1.2)
    assert workers_live.start_claim(ctx, "two", seconds=1)  # lapsed: a workstation that left holds nothing


def test_a_workstation_built_for_a_test_starts_no_worker_unless_asked(ctx, people):
    app = make_app(ctx, "alice")
    assert app.worker_child is None and app.worker_status() is None


# --------------------------------------------------------------------------- the real `r2k` in a terminal

def open_workstation(user: str) -> tuple[subprocess.Popen, int]:
    """`r2k --as USER` in a pseudo-terminal of 120×40, its output drained; (process, master fd)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("R2K_START_WORKER", None)
    tui = subprocess.Popen([sys.executable, "-m", "r2k.app", "--as", user], cwd=ROOT, stdin=slave, stdout=slave,
                           stderr=slave, env=env, start_new_session=True, close_fds=True)
    os.close(slave)

    def drain() -> None:
        while True:
            try:
                if not os.read(master, 65536):
                    return
            except OSError:
                return

    threading.Thread(target=drain, daemon=True).start()
    return tui, master


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=["kill -9", "SIGTERM", "SIGHUP"])
def test_killing_the_workstation_leaves_no_worker_behind(ctx, people, how):
    tui, master = open_workstation("alice")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                workers_of(tui.pid) and any(w["pid"] in workers_of(tui.pid)
                                            for w in workers_live.serving(ctx)["workers"])):
            assert tui.poll() is None, "the workstation ended by itself"
            time.sleep(0.2)
        assert workers_of(tui.pid), "the workstation started no worker"
        os.kill(tui.pid, how)
        tui.wait(30)
        deadline = time.monotonic() + 30  # the worker notices within a second, then stops as SIGTERM stops it
        while workers_of(tui.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert workers_of(tui.pid) == []
        deadline = time.monotonic() + 10
        while workers_live.serving(ctx)["count"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert workers_live.serving(ctx)["count"] == 0
    finally:
        if tui.poll() is None:
            tui.kill()
            tui.wait(10)
        for pid in workers_of(tui.pid):
            os.kill(pid, signal.SIGKILL)
        os.close(master)


async def test_a_workstation_that_crashes_stops_its_worker(ctx, people):
    app = make_app(ctx, "alice", start_worker=True)
    with pytest.raises(ZeroDivisionError):
        async with app.run_test(size=(140, 45)) as pilot:
            await wait_for(pilot, lambda: app.worker_child.pid and workers_of(os.getpid()), timeout=60,
                           what="the workstation's worker")
            app.call_later(lambda: 1 / 0)  # an error nothing handles: the workstation crashes
            await pilot.pause(2)
    deadline = time.monotonic() + 20
    while workers_of(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert workers_of(os.getpid()) == []
