"""`r2k worker` that also runs one function of the bench's own, `noop_worker.noop`, a job that does
nothing: the floor bench/generation.py measures beside generation (RQ's and r2k's worker's own cost
for a job, same worker class, same pool). The product's workers run r2k's tasks and nothing else
(core/adapters/jobs.py TASKS, docs/architecture.md "Queues"); this process adds the bench's one
function to what its workers accept before the pool forks them, so no bench code ships in r2k.

    python bench/noop_worker.py worker --queues generation --processes 4
"""
from __future__ import annotations

import sys

from r2k.app.cli import main
from r2k.workers import main as workers

NOOP = "noop_worker.noop"  # as the workers import it: this file's folder is on their path


def noop() -> None:
    return None


if __name__ == "__main__":
    workers.TASK_PATHS = workers.TASK_PATHS | {NOOP}
    main(sys.argv[1:])
