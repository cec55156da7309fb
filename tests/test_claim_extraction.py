"""One self-contained claim per candidate (docs/architecture.md, "Documents and extraction"): the
leaning openings, pointers, lost intros and unfinished sentences real corpora produced, in small
Markdown documents worded anew. Pure: the fast tier."""
from __future__ import annotations

from pathlib import Path

import pytest

from r2k.core.knowledge.extract import extract

CLAIM = "The cache keeps each entry for one day before the sweeper evicts it."


def texts(body: str) -> list[str]:
    return [u.text for u in extract(Path("cache.md"), f"# Cache\n\n{CLAIM}\n\n{body}\n").units]


@pytest.mark.parametrize("leaning", [
    "Worse, the sweeper runs only when the disk is nearly full.",
    "Many other settings make eviction slower than it needs to be.",
    "If instead you pass --keep, entries stay until the next restart of the daemon.",
    "(Actually, the sweeper can be started by hand at any time of day.)",
    "(In earlier versions the sweeper ran every hour of the day.)",
    "You can start the sweeper by hand at any time, however!",
])
def test_a_paragraph_that_leans_goes_on_the_claim_before_it(leaning):
    assert texts(leaning) == [f"{CLAIM}\n\n{leaning}"]


def test_a_pointer_to_what_is_given_here_is_no_claim():
    out = extract(Path("cache.md"), f"# Cache\n\n{CLAIM}\n\nSome hints for tuning eviction are given here.\n")
    assert [u.text for u in out.units] == [CLAIM]
    assert out.dropped.get("navigation") == 1


@pytest.mark.parametrize("pointer", [
    "Details on the sweep schedule are here: sweep-schedule.",
    "Check out the scheduler documentation for the cron syntax.",
    "For more information on how eviction works, consult the operator guide.",
    "Read below for the migration notes and the deprecation timeline.",
    "Limits on the key sizes are listed earlier in section Storage.",
])
def test_a_pointer_elsewhere_is_no_claim(pointer):
    out = extract(Path("cache.md"), f"# Cache\n\n{CLAIM}\n\n{pointer}\n")
    assert [u.text for u in out.units] == [CLAIM]
    assert out.dropped.get("navigation") == 1


def test_an_intro_whose_example_is_not_there_is_cut_off():
    body = "The sweeper writes one line per entry it evicts. An example of such a line is shown below:\n\n## Next\n\n" \
           "Eviction is logged at the info level by default."
    assert texts(body) == [CLAIM, "The sweeper writes one line per entry it evicts.",
                           "Eviction is logged at the info level by default."]


def test_an_intro_alone_whose_list_is_not_there_is_no_claim():
    out = extract(Path("cache.md"), f"# Cache\n\n{CLAIM}\n\nSweep policies: these are the policies the daemon "
                                    "can apply:\n\n## Next\n\nEviction is logged at the info level by default.\n")
    assert CLAIM in [u.text for u in out.units]
    assert not any(u.text.rstrip().endswith(":") for u in out.units)


def test_a_sentence_that_the_code_after_it_finishes_keeps_the_code():
    body = "The short form of the sweep command is equivalent to\n\n```\nsweep --all --now\n```"
    units = extract(Path("cache.md"), f"# Cache\n\n{CLAIM}\n\n## Short form\n\n{body}\n").units
    assert [u.text for u in units][1] == body
    assert units[1].question == "What is the short form of the sweep command equivalent to?"
