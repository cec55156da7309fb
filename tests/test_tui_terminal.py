"""Nothing typed is lost, through a real terminal: the workstation under tmux, each burst sent with
one `tmux send-keys` call (as a fast typist, a key macro or an SSH link delivers keys), and what
it published read back through the JSON command line (docs/architecture.md, "Keys")."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest

from r2k.core.services.validation import candidates
from tests.conftest import ROOT, r2k_json
from tests.test_ssh import Terminal, wait_until

pytestmark = pytest.mark.skipif(subprocess.run(["which", "tmux"], capture_output=True).returncode != 0,
                                reason="needs tmux")

LONG = ("Dock 4 of the Rotterdam warehouse takes reefer trailers only; the night shift checks the seals, "
        "and the Stowage backup starts at noon.")
SENTENCE = " The seals are checked at six."


@pytest.fixture
def tmux():
    socket = f"r2k-test-typing-{os.getpid()}-{uuid.uuid4().hex[:8]}"  # one server per test: a killed one
    # may still be on its way out when the next test starts one on the same socket
    yield socket
    listed = subprocess.run(["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_pid}"], capture_output=True,
                            text=True).stdout.split()
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    for pid in map(int, listed):  # each pane's process is the workstation itself (exec): none outlives the test
        try:
            wait_until(lambda: not alive(pid), f"workstation {pid} to leave", 2)
        except AssertionError:
            os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def workstation(tmux: str, user: str) -> Terminal:
    env = ["env", "R2K_START_WORKER=0", f"R2K_DATA_DIR={os.environ['R2K_DATA_DIR']}"]
    return Terminal(tmux, user, [*env, "sh", "-c", f"cd {ROOT} && exec {sys.executable} -m r2k.app --as {user}"],
                    width=140, height=45, keep=False)


def published(candidate_id: int) -> str | None:
    """The text of the answer published for the candidate, as `registry show` says it (None: none yet)."""
    shown = r2k_json("--as", "alice", "candidates", "show", str(candidate_id))
    answer = shown.get("answer") or {}
    if answer.get("id") is None:
        return None
    return r2k_json("--as", "alice", "registry", "show", str(answer["id"]))["text"]


def test_the_issues_review_bursts_publish_what_was_typed(ctx, people, tmux):
    root = people["root"]
    ids = [candidates.add(ctx, root, f"Which trailers does dock {n} take?", LONG, "FACT")["id"] for n in (1, 2, 3)]
    candidates.add(ctx, root, "Fact question 4?", "A plain fact number 4.", "FACT")
    term = workstation(tmux, "alice")
    term.shows("Dashboard — alice")
    term.send("V")
    term.shows("alice reviews FACT, RULE")
    term.send("Enter")
    term.shows(f"candidate {ids[0]} · IN_REVIEW")

    bursts = [
        (["e", *["BSpace"] * 3, "X", "Y", "Z", "C-s"], LONG[:-3] + "XYZ"),
        (["e", "C-End", *["BSpace"] * 10, "X", "Y", "Z", "C-s"], LONG[:-10] + "XYZ"),
        (["e", "C-End", *["BSpace"] * 80, "-l", SENTENCE], LONG[:-80] + SENTENCE),
    ]
    for (keys, expected), candidate_id in zip(bursts, ids):
        if "-l" in keys:  # the sentence as literal text, then ctrl+s: still one call
            term.tmux("send-keys", "-t", term.name, *keys[:keys.index("-l")], SENTENCE, "C-s")
        else:
            term.send(*keys)
        wait_until(lambda: published(candidate_id) is not None, f"candidate {candidate_id}'s revision", 30)
        assert published(candidate_id) == expected
        assert r2k_json("--as", "alice", "candidates", "show", str(candidate_id))["state"] == "REVISED"
    term.shows(f"candidate {ids[-1] + 1} · IN_REVIEW")  # the editor closed: the next candidate claimed


def test_the_grey_add_burst_keeps_its_fields(ctx, people, tmux):
    term = workstation(tmux, "sam")
    term.shows("Dashboard — sam")
    term.send("Y")
    term.shows("No entries")
    # The issue's burst in one call: +, the subject, enter, the detail, enter.
    term.send("+", "A", "i", "s", "l", "e", "Space", "h", "e", "a", "t", "Enter",
              "2", "7", "Space", "o", "r", "Space", "3", "2", "Enter")
    entry = wait_until(lambda: next(iter(r2k_json("--as", "sam", "grey", "list")), None), "the entry added", 30)
    shown = r2k_json("--as", "sam", "grey", "show", str(entry["id"]))
    assert (shown["subject"], shown["detail"]) == ("Aisle heat", "27 or 32")
    assert len(r2k_json("--as", "sam", "grey", "list")) == 1
