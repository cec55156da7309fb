"""A short chaos soak (bench/soak.py): while PostgreSQL, Redis, the graph, workers and validators are
killed with SIGKILL and restarted, nothing is claimed twice, nothing is lost, every decision a
validator was told succeeded is in the database, the audit log verifies and replays exactly, and no
process is left behind.

The soak kills servers, so it never runs on the session's shared ones (conftest.py): it gets a data
dir of its own, and no R2K_* setting of this session reaches it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INVARIANTS = ("double claims", "candidates lost", "decisions reported successful but missing",
              "decisions applied but reported refused", "validators that died by themselves",
              "`r2k audit verify` exact", "`r2k replay --verify` exact", "processes left behind")


@pytest.mark.services  # servers of its own
@pytest.mark.parametrize("validators,reviews", [(5, 1), (16, 2)], ids=["k1", "overlap-k2"])
def test_a_short_chaos_soak_keeps_every_invariant(tmp_path, validators, reviews):
    """With one review per candidate, and under overlap (k = 2 blind reviews, 16 validators: each
    review's claim keeps the promise, and nobody reviews a candidate twice in a round)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("R2K_")}
    env["R2K_DATA_DIR"] = str(tmp_path / "soak-data")
    result = subprocess.run([sys.executable, "bench/soak.py", "--validators", str(validators), "--minutes", "1",
                             "--seed", "7", "--reviews", str(reviews)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = f"{result.stdout}\n{result.stderr}"
    lines = [line for line in result.stdout.splitlines() if line.startswith("invariant")]
    for name in INVARIANTS:
        assert any(name in line for line in lines), f"no invariant line for {name!r}:\n{output}"
    failed = [line for line in lines if re.search(r"\s(PASS|FAIL)(\s|$)", line).group(1) != "PASS"]
    assert not failed, "invariants failed:\n" + "\n".join(failed) + f"\n\n{output}"
    assert result.returncode == 0, output
    if reviews > 1:
        assert re.search(r"overlap \(k = 2\): [1-9]\d* reviews short of k", result.stdout), output
