"""Workers run r2k's tasks and nothing else. Whoever can write to Redis can push a job; a job naming
any other function, carrying a callback outside the registry, or holding data that is not JSON is
refused by a real `r2k worker` (never imported, never unpickled, never run): one warning line, and
RQ's failed job registry. Core cannot enqueue a task that does not exist."""
from __future__ import annotations

import inspect
import json
import os
import pickle
import shlex
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from rq import Callback, Queue
from rq.job import Job, JobStatus
from rq.serializers import DefaultSerializer, JSONSerializer
from rq.utils import import_attribute
from rq.webhook import Webhook

from r2k.core.adapters import jobs
from r2k.core.services import jobs as service_jobs
from r2k.core.services.answering import workitems
from tests.conftest import ROOT

FOREIGN = "r2k_foreign"  # a module of the attacker's, on the worker's path in some tests


# A job of r2k's own that changes nothing: it mirrors answer 0, which no answer is ({"synced": False}).
HARMLESS = ("sync_graph_task", 0)


def burst_worker(env: dict | None = None, processes: int = 1) -> str:
    """Run `r2k worker --burst` on the generation queue until it is empty; its log."""
    result = subprocess.run([sys.executable, "-m", "r2k.app", "worker", "--burst", "--queues", "generation",
                             "--processes", str(processes)], cwd=ROOT, env={**os.environ, **(env or {})},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def lines_naming(log: str, *words: str) -> list[str]:
    return [line for line in log.splitlines() if all(w in line for w in words)]


def refusal_of(ctx, job_id: str) -> str:
    """The failure RQ recorded for a job in the generation queue's failed job registry."""
    generation = jobs.queue(ctx.redis, "generation")
    assert job_id in generation.failed_job_registry.get_job_ids()
    job = jobs.job(ctx.redis, job_id)
    assert job.get_status() == JobStatus.FAILED
    assert not job.retries_left  # refused for good: no retry waits anywhere
    assert job_id not in generation.scheduled_job_registry.get_job_ids() + generation.get_job_ids()
    return job.latest_result().exc_string


def foreign_module(tmp_path) -> tuple[dict, Path]:
    """A module that leaves a marker when it is imported: the env putting it on the worker's path,
    and the marker."""
    imported = tmp_path / "imported"
    (tmp_path / f"{FOREIGN}.py").write_text(
        f"import pathlib\npathlib.Path({str(imported)!r}).touch()\n\ndef hook(*args, **kwargs):\n    pass\n")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}, imported


def test_a_job_naming_another_function_is_refused_and_the_next_job_still_runs(ctx, people, tmp_path):
    marker = tmp_path / "ran"
    generation = jobs.queue(ctx.redis, "generation")
    # Pushed through RQ's own API, as any local user able to write to Redis could.
    foreign = generation.enqueue("os.system", f"touch {shlex.quote(str(marker))}")
    item = workitems.create(ctx, people["sam"], "Which colour are the forklifts painted?")  # queued behind it
    log = burst_worker()
    assert not marker.exists()
    assert "'os.system' is not one of r2k's tasks" in refusal_of(ctx, foreign.id)
    (line,) = lines_naming(log, foreign.id, "os.system")
    assert "refused" in line
    done = jobs.job(ctx.redis, workitems.generation_job_id(item["id"]))
    assert done.get_status() == JobStatus.FINISHED
    assert done.return_value()["outcome"] == "escalated"  # the task's result came back through JSON
    assert workitems.get(ctx, item["id"])["state"] == "ESCALATED"
    finished = generation.finished_job_registry.get_job_ids()
    assert len(finished) >= 2  # the generation job and the grey entry's processing job it led to
    assert all(isinstance(jobs.job(ctx.redis, job_id).return_value(), dict) for job_id in finished)


def test_the_bench_s_no_op_job_runs_only_under_the_bench_s_worker(ctx):
    """bench/generation.py's floor is a job that does nothing, a function of bench/noop_worker.py's:
    `r2k worker` refuses it as any function outside r2k's tasks; the bench's launcher, the same worker
    with that one function added, finishes it (or the bench would wait for it for ever)."""
    generation = jobs.queue(ctx.redis, "generation")
    refused = generation.enqueue("noop_worker.noop")
    bench_path = {"PYTHONPATH": os.pathsep.join([str(ROOT / "bench"), os.environ.get("PYTHONPATH", "")])}
    burst_worker(bench_path)  # importable, and still refused
    assert "'noop_worker.noop' is not one of r2k's tasks" in refusal_of(ctx, refused.id)
    run = generation.enqueue("noop_worker.noop")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "noop_worker.py"), "worker", "--burst", "--queues",
                             "generation"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert jobs.job(ctx.redis, run.id).get_status() == JobStatus.FINISHED, result.stderr[-3000:]


class Touch:
    """Unpickled, it runs `touch path`: what a pickle payload in a job's data can do."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.path)}",)


@pytest.mark.parametrize("processes", [1, 2], ids=["one worker", "worker pool"])
def test_job_data_written_straight_into_redis_is_never_unpickled(ctx, tmp_path, processes):
    marker, check = tmp_path / "ran", tmp_path / "payload_works"
    pickle.loads(pickle.dumps(Touch(check)))
    assert check.exists()  # the payload is live: RQ's default serializer would run it
    generation = jobs.queue(ctx.redis, "generation")
    ctx.redis.hset("rq:job:pickled", mapping={"data": zlib.compress(pickle.dumps(Touch(marker))),
                                              "origin": generation.name, "status": "queued"})
    ctx.redis.hset("rq:job:garbled", mapping={"data": b"{}", "origin": generation.name, "status": "no such status"})
    ctx.redis.rpush(generation.key, "pickled", "garbled", "not an RQ job id!")
    after = jobs.enqueue(ctx.redis, "generation", *HARMLESS)
    log = burst_worker(processes=processes)
    assert not marker.exists()
    assert "not a JSON job" in refusal_of(ctx, "pickled")
    assert len(lines_naming(log, "refused job pickled")) == 1
    # RQ cannot even read these two (it would stop the worker): refused, and the worker goes on.
    assert len(lines_naming(log, "refused job 'garbled'")) == 1
    assert len(lines_naming(log, "refused job 'not an RQ job id!'")) == 1
    assert jobs.job(ctx.redis, after.id).get_status() == JobStatus.FINISHED
    assert generation.count == 0 and ctx.redis.llen(generation.intermediate_queue_key) == 0


def test_a_task_carrying_a_foreign_callback_is_refused_unimported(ctx, tmp_path):
    env, imported = foreign_module(tmp_path)
    generation = jobs.queue(ctx.redis, "generation")
    noop, hook = jobs.task(HARMLESS[0]), f"{FOREIGN}.hook"
    refused = {
        "on_success callback 'r2k_foreign.hook'": generation.enqueue(noop, on_success=Callback(hook)),
        "on_failure callback 'r2k_foreign.hook'": generation.enqueue(noop, on_failure=Callback(hook)),
        "on_stopped callback 'r2k_foreign.hook'": generation.enqueue(noop, on_stopped=Callback(hook)),
        "function 'r2k_foreign.hook' is not": generation.enqueue(hook),
        "carries webhooks": generation.enqueue(noop, webhooks=[Webhook("http://127.0.0.1:9/", "failed")]),
    }
    method = generation.enqueue(noop)  # then made a method call on some instance
    ctx.redis.hset(method.key, "data", zlib.compress(json.dumps([noop, {"an": "instance"}, [], {}]).encode()))
    refused["on an instance"] = method
    after = jobs.enqueue(ctx.redis, "generation", *HARMLESS)
    log = burst_worker(env)
    assert not imported.exists()
    for why, job in refused.items():
        assert why in refusal_of(ctx, job.id)
        assert len(lines_naming(log, "refused job", job.id)) == 1
    assert jobs.job(ctx.redis, after.id).get_status() == JobStatus.FINISHED


def test_an_abandoned_job_is_failed_without_importing_its_foreign_failure_callback(ctx, tmp_path):
    env, imported = foreign_module(tmp_path)
    generation = jobs.queue(ctx.redis, "generation")
    job = generation.enqueue(jobs.task(HARMLESS[0]), 0, on_failure=Callback(f"{FOREIGN}.hook"))
    # As if a worker had taken it and died long ago: RQ's registry cleanup runs its failure callback.
    ctx.redis.lrem(generation.key, 0, job.id)
    job.set_status(JobStatus.STARTED)
    ctx.redis.zadd(generation.started_job_registry.key, {f"{job.id}:lost": 1})
    burst_worker(env)
    assert not imported.exists()
    assert job.id in generation.failed_job_registry.get_job_ids()


def test_core_cannot_enqueue_a_task_that_does_not_exist(ctx):
    for name in ("generate_answer", "r2k.workers.tasks.generate_answer_task", "os.system"):
        with pytest.raises(ValueError, match="unknown task"):
            jobs.enqueue(ctx.redis, "generation", name, 1)
        with pytest.raises(ValueError, match="unknown task"):
            service_jobs.enqueue(ctx, "generation", name, 1)
    assert jobs.depth(ctx.redis) == {"generation": 0, "graph": 0}


def test_the_registry_names_every_task_and_nothing_else():
    from r2k.workers import tasks

    defined = {name for name, f in vars(tasks).items() if name.endswith("_task") and inspect.isfunction(f)}
    assert set(jobs.TASKS) == defined
    for name, path in jobs.TASKS.items():
        assert path == f"r2k.workers.tasks.{name}" and import_attribute(path) is getattr(tasks, name)
    code = ("import sys\n"
            "import r2k.core.adapters.jobs, r2k.core.services.jobs, r2k.core.services.answering.workitems, r2k.core.services.grey_entries.grey\n"
            "import r2k.core.services.contradictions.graph_sync, r2k.core.services.operations.sweeps, r2k.core.services.answering.generation\n"
            "print(sorted(n for n in sys.modules if n == 'r2k.workers' or n.startswith('r2k.workers.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"  # core names the tasks; it never imports them


def test_queues_workers_the_pool_and_the_scheduler_use_json(ctx):
    from r2k.workers.main import R2KCronScheduler, R2KJob, R2KWorker
    from r2k.workers.tasks import sweep_task

    assert all(jobs.queue(ctx.redis, kind).serializer is JSONSerializer for kind in jobs.QUEUES)
    # What WorkerPool hands each worker: RQ's defaults, pickle and Job, and queues built with them.
    worker = R2KWorker([Queue(jobs.QUEUES["generation"], connection=ctx.redis)], connection=ctx.redis,
                       serializer=DefaultSerializer, job_class=Job)
    assert worker.serializer is JSONSerializer and worker.job_class is R2KJob
    assert all(q.serializer is JSONSerializer and q.job_class is R2KJob for q in worker.queues)
    scheduler = R2KCronScheduler(connection=ctx.redis)
    scheduler.register(sweep_task, queue_name=jobs.QUEUES["graph"], interval=60, job_timeout=120, result_ttl=60)
    (due,) = scheduler.enqueue_jobs()
    (job_id,) = jobs.queue(ctx.redis, "graph").get_job_ids()
    data = json.loads(zlib.decompress(ctx.redis.hget(f"rq:job:{job_id}", "data")))
    assert data == [jobs.task("sweep_task"), None, [], {}]


def test_a_running_worker_runs_the_sweep_its_scheduler_enqueues(ctx):
    graph = jobs.queue(ctx.redis, "generation")  # the sweep goes to the front of the queue taken first
    worker = subprocess.Popen([sys.executable, "-m", "r2k.app", "worker", "--queues", "generation,graph"], cwd=ROOT,
                              env={**os.environ, "R2K_SWEEP_INTERVAL": "1"}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.time() + 60
        while not graph.finished_job_registry.get_job_ids() and time.time() < deadline:
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        log = worker.communicate(timeout=30)[0]
    (job_id, *_) = graph.finished_job_registry.get_job_ids()
    swept = jobs.job(ctx.redis, job_id)
    assert swept.func_name == jobs.task("sweep_task")
    assert set(swept.return_value()) in ({"claims", "grey", "work_items", "tasks", "graph", "webhooks"}, {"skipped"})  # through JSON
    assert "refused" not in log


def test_the_scheduled_sweep_jumps_a_backlog(ctx):
    """Found by the chaos soak: behind thousands of generation and graph jobs, the sweep (expired
    claims, lost jobs) waited for the backlog to drain. It goes to the front of the first queue."""
    from redis import Redis

    from r2k.workers.main import R2KCronScheduler
    from r2k.workers.tasks import sweep_task

    generation = jobs.queue(ctx.redis, "generation")
    for _ in range(20):
        jobs.enqueue(ctx.redis, "generation", *HARMLESS)
    scheduler = R2KCronScheduler(connection=Redis.from_url(ctx.redis_url))
    cron = scheduler.register(sweep_task, queue_name=jobs.QUEUES["generation"], interval=60, ttl=60)
    cron.enqueue(ctx.redis)
    first = jobs.job(ctx.redis, generation.job_ids[0])
    assert first.func_name == jobs.task("sweep_task") and len(generation.job_ids) == 21
