"""Start-up figures (issue: foundation, item 11; issue: spine, the CLI's cost against a bare script).

Prints the wall time of `r2k --json users list` (median of 10, services warm; target < 400 ms), the
same for its floor, a bare script that imports psycopg and redis, connects to the same servers with
the same credentials, pings Redis, runs the same query and prints the rows as JSON (target: the CLI
within 1.3x of it), and the time from process start to the dashboard's first complete frame,
headless (counts and service health shown; median of 5; target < 1.5 s). The CLI and the floor take
turns, so a drift of the machine's speed falls on both. r2k's bytecode is written first, as a wheel's
install writes it.

    python bench/startup.py            # uses its own data dir under the temp dir
    R2K_DATA_DIR=... python bench/startup.py
"""
from __future__ import annotations

import subprocess
import sys
import time

from _common import ROOT, bench_env, median, r2k, verdict

DASHBOARD_CHILD = """
from r2k.app.tui import R2KApp
from textual.widgets import Static

class Timed(R2KApp):
    def on_mount(self):
        super().on_mount()
        self.set_interval(0.005, self.check)

    def check(self):
        screen = self.screen
        if screen.has_class("loaded") and "postgres" in str(screen.query_one("#services", Static).render()):
            print("FRAME", flush=True)
            self.exit()

Timed(user="root").run(headless=True, size=(140, 45))
"""


BARE_SCRIPT = """
import json, os, sys
import psycopg, redis
from psycopg.rows import dict_row
redis.Redis.from_url(os.environ["BENCH_REDIS_URL"]).ping()
with psycopg.connect(os.environ["BENCH_DATABASE_URL"], row_factory=dict_row) as conn:
    rows = conn.execute("SELECT * FROM users ORDER BY name").fetchall()
json.dump(rows, sys.stdout, default=str)
"""


def compile_bytecode() -> None:
    """Write r2k's bytecode, as installing a wheel does. An editable checkout run where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it) compiles every r2k module from source at each
    start, about 30 ms the floor, reading its libraries' bytecode, never pays; and a source file
    edited since the last run is compiled again too."""
    import compileall

    for package in ("app", "core", "workers"):
        compileall.compile_dir(ROOT / package, quiet=1)


def main() -> None:
    env = bench_env("startup")
    compile_bytecode()
    r2k(env, "services", "up")
    r2k(env, "users", "list")
    if '"root"' not in r2k(env, "--json", "users", "list").stdout:
        r2k(env, "users", "add", "root", "--role", "admin")

    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap()  # the servers' URLs with their credentials, as every command finds them
    bare_env = {**env, "BENCH_DATABASE_URL": ctx.database_url, "BENCH_REDIS_URL": ctx.redis_url}
    cli, bare = [], []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run(["r2k", "--json", "users", "list"], env=env, capture_output=True, check=True)
        cli.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", BARE_SCRIPT], env=bare_env, capture_output=True, check=True)
        bare.append(time.perf_counter() - start)
    cli_ms, bare_ms = median(cli) * 1000, median(bare) * 1000

    frames = []
    for _ in range(5):
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", DASHBOARD_CHILD], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        line = child.stdout.readline()
        elapsed = time.perf_counter() - start
        child.wait(timeout=30)
        if line.strip() != "FRAME":
            raise SystemExit(f"dashboard did not render: {child.stderr.read()[-2000:]}")
        frames.append(elapsed)
    frame_s = median(frames)

    print(f"r2k --json users list       median of 10: {cli_ms:7.1f} ms   (target < 400 ms: {verdict(cli_ms, 400)})")
    print(f"bare psycopg+redis script   median of 10: {bare_ms:7.1f} ms   (the floor: same servers, same query)")
    print(f"  CLI / floor: {cli_ms / bare_ms:.2f}x   (target <= 1.3x: {verdict(cli_ms / bare_ms, 1.3)})")
    print(f"dashboard first full frame  median of 5:  {frame_s * 1000:7.1f} ms   "
          f"(target < 1500 ms: {verdict(frame_s, 1.5)})")
    print(f"  all CLI runs (ms): {', '.join(f'{v * 1000:.0f}' for v in cli)}")
    print(f"  all floor runs (ms): {', '.join(f'{v * 1000:.0f}' for v in bare)}")
    print(f"  all dashboard runs (ms): {', '.join(f'{v * 1000:.0f}' for v in frames)}")


if __name__ == "__main__":
    main()
