"""Shared bench plumbing: a data dir of its own, warm services, figures printed plainly."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_env(name: str) -> dict:
    """Environment for a bench: R2K_* from the caller, else a data dir of the bench's own."""
    env = dict(os.environ)
    if not env.get("R2K_DATA_DIR"):
        env["R2K_DATA_DIR"] = str(Path(tempfile.gettempdir()) / f"r2k-bench-{name}")
    os.environ.update(env)
    return env


def r2k(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "r2k.app", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise SystemExit(f"r2k {' '.join(args)} failed: {result.stderr}")
    return result


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: list[float]) -> float:
    return statistics.median(values)


def verdict(value: float, target: float, lower_is_better: bool = True) -> str:
    ok = value < target if lower_is_better else value >= target
    return "meets target" if ok else "MISSES target"


def vacuum(table: str) -> None:
    """VACUUM ANALYZE a table after a bulk change, as the database's owner: the application role may
    not vacuum (PostgreSQL only warns and does nothing), and the planner would meet the table with no
    statistics until autovacuum comes by."""
    import psycopg

    from r2k.core.config import Settings
    from r2k.core.embedded import owner_url

    with psycopg.connect(owner_url(Settings()), autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {table}")
