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
    "Eviction semantics are described in more detail in section Sweeps.",
    "More information about the `sweep.conf` file format can be found in the operator's manual.",
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


def test_a_see_also_list_is_navigation():
    out = extract(Path("cache.md"), f"# Cache\n\n{CLAIM}\n\nSee also:\n\n- sweep-schedule\n- cache-sizes\n")
    assert [u.text for u in out.units] == [CLAIM]
    assert out.dropped.get("navigation") == 1


@pytest.mark.parametrize("leaning", [
    # a relational noun as the definite subject, what it relates to lost
    "The most common cause is that the sweeper was started before the disk was mounted.",
    "An exception is that entries pinned by an administrator are never evicted at all.",
    # a reader's own case or an example of the text's, lost
    "The fix for your error depends on which of the two sweepers you run.",
    "In our first example both the sweeper and the writer have been pinned to one core.",
    # a pronoun subject past a label, "only" or a phrase of context
    "Note that on a read-only disk, it skips the eviction pass and logs a warning instead.",
    "Only their relative ages matter, so moving every clock forward by an hour changes nothing.",
    "In practice, they are rarely large enough to matter for a cache of this size.",
    # "such" and a plural the sentence itself did not name points back
    "Every night a job looks for such entries, but it may run hours after the last reader is gone.",
    # "the" and one noun the block before names, followed by a verb of the third person
    "The sweeper runs only on weekdays, between two and four in the morning.",
])
def test_a_paragraph_whose_subject_leans_goes_on_the_claim_before_it(leaning):
    assert texts(leaning) == [f"{CLAIM}\n\n{leaning}"]


def test_a_relational_subject_under_a_heading_that_asks_is_its_answer():
    body = "The most common problem is that the sweeper runs as the wrong user, so it cannot delete entries."
    out = extract(Path("faq.md"), f"# Cache FAQ\n\n## Why does the cache never shrink?\n\n{body}\n")
    assert [(u.question, u.text) for u in out.units] == [("Why does the cache never shrink?", body)]


@pytest.mark.parametrize("paragraph,claims", [
    # a sentence whose definite subject the sentence before names stays with it (a leading phrase aside)
    ("The / and // operators yield the quotient of their operands. The integer operands are first widened "
     "to a common type. A zero divisor raises an error that names the operator.",
     ["The / and // operators yield the quotient of their operands. The integer operands are first widened "
      "to a common type.", "A zero divisor raises an error that names the operator."]),
    ("Before release 2, the order of key and value was not defined by the format. In the old reader, the value "
     "was read before the key. Since release 2 every reader takes the key first, as the format now says.",
     ["Before release 2, the order of key and value was not defined by the format. In the old reader, the value "
      "was read before the key.", "Since release 2 every reader takes the key first, as the format now says."]),
])
def test_a_sentence_whose_subject_the_one_before_names_stays_with_it(paragraph, claims):
    assert texts(paragraph)[1:] == claims


def test_a_pronoun_past_an_opener_that_refers_to_nothing_does_not_lean():
    body = "Note that it is possible to run two sweepers at once on separate disks."
    assert texts(body) == [CLAIM, body]


@pytest.mark.parametrize("premise,asked", [
    # a scenario sets the question up
    ("Sometimes you want the sweeper to skip a folder that a backup job is still writing to.",
     "How do I keep the sweeper out of a folder?"),
    ("If you wrote a hook like `on_evict(entry)` you might wonder why it never sees pinned entries.",
     "Why does my hook not see pinned entries?"),
    # under "Why …?", one sentence that gives no reason
    ("Cache entries are plain files on a local disk.", "Why doesn't deleting an entry free its space?"),
])
def test_a_faq_premise_is_kept_with_the_answer_after_it(premise, asked):
    answer = "The sweeper keeps a handle open on every entry until the next pass, so the space comes back then."
    out = extract(Path("faq.md"), f"# Cache FAQ\n\n## {asked}\n\n{premise}\n\n{answer}\n")
    assert [(u.question, u.text) for u in out.units] == [(asked, f"{premise}\n\n{answer}")]


def test_a_faq_answer_that_answers_at_once_stands_alone():
    first = "The sweeper keeps a handle open on every entry until its next pass, so the space comes back only then."
    more = "Entries pinned by an administrator are never evicted, whatever their age."
    out = extract(Path("faq.md"), f"# Cache FAQ\n\n## Why doesn't deleting an entry free its space?\n\n{first}\n\n{more}\n")
    assert [u.text for u in out.units] == [first, more]


@pytest.mark.parametrize("intro", [
    "From within a container, where the cache folder is mounted read-only:",
    "On Windows:",
])
def test_an_intro_that_only_sets_an_example_goes_with_the_claim_before_it(intro):
    code = "```\n$ sweeper --dry-run\n```"
    assert texts(f"{intro}\n\n{code}") == [f"{CLAIM}\n\n{intro}\n\n{code}"]


def test_an_intro_that_orders_in_a_setting_is_a_claim_of_its_own():
    intro = "In the service file, set the sweep interval like this:"
    code = "```\ninterval = 3600\n```"
    assert texts(f"{intro}\n\n{code}") == [CLAIM, f"{intro}\n\n{code}"]


def test_a_remark_in_brackets_is_not_split_open():
    paragraph = ("The resolver asks the name server for the host (some name servers map one address to many "
                 "names. Only one of them is kept.) Pinned hosts skip the lookup altogether. "
                 "A failed lookup is retried once after a second.")
    assert texts(paragraph)[1:] == [
        "The resolver asks the name server for the host (some name servers map one address to many names. Only "
        "one of them is kept.)", "Pinned hosts skip the lookup altogether.",
        "A failed lookup is retried once after a second."]


@pytest.mark.parametrize("leaning", [
    # a paragraph opening on a remark in brackets remarks on the text before it
    "(The longest wait is twice the sweep interval.) Unlike a restart, a reload keeps every entry.",
])
def test_a_paragraph_opening_on_a_remark_goes_on_the_claim_before_it(leaning):
    assert texts(leaning) == [f"{CLAIM}\n\n{leaning}"]


def test_an_intro_to_ways_to_do_this_points_back():
    intro = "Depending on the disk, there are two ways to do this:"
    out = texts(f"{intro}\n\n- A full sweep\n- A partial sweep")
    assert out == [f"{CLAIM}\n\n{intro}\n\n- A full sweep\n- A partial sweep"]


def test_such_of_what_the_sentence_itself_named_does_not_lean():
    body = "Entries whose names start with a dot are skipped by the sweeper, since such entries are hidden."
    assert texts(body) == [CLAIM, body]
