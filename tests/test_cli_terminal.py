"""No terminal, no workstation (docs/architecture.md, "How the parts start"): `r2k`, `r2k --as USER` and
`r2k demo` with stdin or stdout not a tty exit at once with status 6 and one line saying to run a
command or use --json, before anything starts. Run as a user runs them: real subprocesses, the tty
end a pseudo-terminal, the other end redirected."""
from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

ESCAPE = re.compile(r"\x1b")
LINE = ("r2k: invalid input (400): the workstation needs a terminal (stdin and stdout a tty): "
        "run a command (r2k --help lists them), or add --json to one for a JSON document")


def run_without_terminal(argv: list[str], tmp_path, *, redirect: str) -> tuple[subprocess.CompletedProcess, str]:
    """`python -m r2k.app ARGV` with stdout redirected (stdin a pty) or stdin from /dev/null (stdout a
    pty); what it wrote to the pty comes back beside the result."""
    env = {**os.environ, "R2K_DATA_DIR": str(tmp_path / "data"), "R2K_START_WORKER": "0"}
    env.pop("TEXTUAL_DRIVER", None)
    leader, follower = pty.openpty()
    try:
        if redirect == "stdout":
            streams = {"stdin": follower, "stdout": subprocess.PIPE}
        else:
            streams = {"stdin": subprocess.DEVNULL, "stdout": follower}
        # A TUI opened anyway would not end by itself: the timeout fails the test, it never waits longer.
        result = subprocess.run([sys.executable, "-m", "r2k.app", *argv], stderr=subprocess.PIPE, text=True,
                                env=env, cwd=ROOT, timeout=30, **streams)
        os.close(follower)
        follower = -1
        on_terminal = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the pty's other end closed: all it was sent is read
                break
            if not chunk:
                break
            on_terminal += chunk
        return result, on_terminal.decode("utf-8", "replace")
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


@pytest.mark.parametrize("argv", [[], ["--as", "ada"], ["demo"], ["demo", "--as", "ada"]],
                         ids=["r2k", "as-user", "demo", "demo-as-user"])
@pytest.mark.parametrize("redirect", ["stdout", "stdin"], ids=["stdout-redirected", "stdin-devnull"])
def test_no_terminal_exits_at_once_with_one_line(argv, redirect, tmp_path):
    result, on_terminal = run_without_terminal(argv, tmp_path, redirect=redirect)
    assert result.returncode == 6, result.stderr
    assert result.stderr.splitlines() == [LINE]
    assert not ESCAPE.search(on_terminal + (result.stdout or "") + result.stderr)  # no TUI drew anything
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())  # nothing started

