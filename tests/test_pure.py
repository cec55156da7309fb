"""The fast tier: pure logic, no server, no fixture that reaches one (`python -m pytest -m "not services"`).

Classification, extraction, the workstation's and the CLI's wording, terminal-safe text, the graph's
subject and contradiction rules, the limits, the Merkle tree of the audit checkpoints, and the parts
of the command line's contract that need no server (help, every option explained, the schema head). The state
machines and the engine's checks over plain rows are in tests/test_machines.py.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from r2k.app import wording
from r2k.app.output import Table, Text, json_form, render_text
from r2k.app.safe import dumps, visible
from r2k.app.widgets import format as fmt
from r2k.core import audit
from r2k.core.domain import limits, parse_horn_type, parse_id
from r2k.core.errors import InvalidInput
from r2k.core.knowledge.classify import classify
from r2k.core.knowledge.extract import MIN_WORDS, ExtractError, extract
from r2k.core.services.contradictions.graph_sync import subject_of
from tests.conftest import r2k

PURE = settings(max_examples=200, deadline=None, derandomize=True, database=None)

# ----------------------------------------------------------------------------- classification


@pytest.mark.parametrize("text,horn", [
    ("The Rotterdam site has fourteen loading docks.", "FACT"),
    ("If a truck arrives late, the dock lead reassigns its slot.", "RULE"),
    ("Refunds are paid whenever the support lead signs them.", "RULE"),
    ("Drivers must never stand behind a reversing truck.", "CONSTRAINT"),
    ("Nobody may smoke on the dock.", "CONSTRAINT"),
    ("1. Chock the wheels.\n2. Open the leveller.\n3. Scan the labels.", "PROCEDURE"),
    ("Step 1: stop at the barrier\nStep 2: show the badge", "PROCEDURE"),
    ("First stop the engine, then chock the wheels, finally open the doors.", "PROCEDURE"),
    ("It is not yet decided whether docks stay open after midnight?", "OPEN_ISSUE"),
    ("Whether the cameras are kept is unclear.", "OPEN_ISSUE"),
])
def test_each_horn_type_is_read_off_the_logical_form(text, horn):
    assert classify(text) == horn


def test_the_first_reading_in_logical_order_wins():
    # An unsettled question is an OPEN_ISSUE whatever else it says.
    assert classify("If a gate is blocked, must nobody open it?") == "OPEN_ISSUE"
    # Ordered steps are a PROCEDURE even when a step forbids something.
    assert classify("1. Never run.\n2. If wet, walk slowly.") == "PROCEDURE"
    # A prohibition with conditions forbids the combination: a CONSTRAINT, not a RULE.
    assert classify("Never open the gate when the alarm sounds.") == "CONSTRAINT"
    # One numbered line is no sequence, and "first" without "then … finally" none either.
    assert classify("1. The dock opens at six.") == "FACT"
    assert classify("First the dock opens, then the gate.") == "FACT"


def test_a_step_line_keeps_its_leading_blanks_on_its_own_line():
    assert classify("  1. Stop.\n\t2. Go.") == "PROCEDURE"
    assert classify("1.\n\n\n2. x") == "FACT"  # "1." alone is no step: a step needs words after it


def test_classification_reads_long_adversarial_text_in_linear_time():
    import time

    started = time.monotonic()
    for text in ("first then " * 1_800, "\n" * 19_990 + "A fact.", "1." + " " * 19_990 + "x", "if " * 6_000):
        classify(text)
    assert time.monotonic() - started < 2


@PURE
@given(st.text(max_size=300))
def test_every_text_gets_exactly_one_horn_type(text):
    assert classify(text) in ("FACT", "RULE", "CONSTRAINT", "PROCEDURE", "OPEN_ISSUE")


# ----------------------------------------------------------------------------- extraction

HANDBOOK = """# Dock handbook

## Dock count

The Rotterdam site has fourteen loading docks on the north side.

## Truck arrival

If a truck arrives more than thirty minutes late, the dock lead reassigns its slot.

## Dock safety

Drivers must never stand behind a reversing truck at the dock.

## Unloading

1. Chock the wheels of the trailer.
2. Open the dock leveller.
3. Scan the pallet labels.

## Night docks

It is not yet decided whether docks stay open after midnight?

Gates close early.

See appendix B.
"""


def test_markdown_gives_one_claim_per_paragraph_and_list_each_with_its_own_question():
    doc = extract(Path("dock-handbook.md"), HANDBOOK)
    assert (doc.title, doc.media_type) == ("Dock handbook", "text/markdown")
    assert [(u.horn_type, u.topic) for u in doc.units] == [
        ("FACT", "Dock count"), ("RULE", "Truck arrival"), ("CONSTRAINT", "Dock safety"),
        ("PROCEDURE", "Unloading"), ("OPEN_ISSUE", "Night docks")]
    assert [u.question for u in doc.units] == [
        "What does the Rotterdam site have?",
        "What happens if a truck arrives more than thirty minutes late?",
        "May drivers stand behind a reversing truck at the dock?",
        "How do you unload?",
        "It is not yet decided whether docks stay open after midnight?"]  # no template over a heading
    for unit in doc.units:  # each span is its own text, for the review screen's highlight
        assert doc.content[unit.span[0]:unit.span[1]] == unit.text
    assert doc.units[3].text == "1. Chock the wheels of the trailer.\n2. Open the dock leveller.\n3. Scan the pallet labels."
    # A sentence of fewer than MIN_WORDS words is too short to answer: a fragment for the grey queue, and no
    # passage; a pointer elsewhere is navigation, dropped and counted.
    assert [f.text for f in doc.fragments] == ["Gates close early."] and len("Gates close early.".split()) < MIN_WORDS
    assert doc.dropped == {"navigation": 1}
    assert len(doc.passages) == 5


def test_a_heading_that_asks_is_the_question_and_q_a_lines_pair():
    doc = extract(Path("faq.md"), "# FAQ\n\n## Who opens the gate?\n\nThe yard lead opens the gate at six.\n\n"
                                  "Q: Who signs refunds?\nA: The support lead signs refunds.\n\n"
                                  "Question: When is lunch?\n\nAnswer: Lunch is served at noon every day.\n")
    assert [(u.question, u.text) for u in doc.units] == [
        ("Who opens the gate?", "The yard lead opens the gate at six."),
        ("Who signs refunds?", "The support lead signs refunds."),
        ("When is lunch?", "Lunch is served at noon every day.")]


def test_plain_text_titles_sections_and_a_file_named_document():
    doc = extract(Path("notes.txt"), "SHIFT NOTES\n\nHANDOVER\n\nThe night lead writes the handover log at six.\n")
    assert doc.title == "Shift Notes" and doc.media_type == "text/plain"
    assert [(u.horn_type, u.question, u.topic) for u in doc.units] == [
        ("FACT", "What does the night lead write?", "Handover")]
    untitled = extract(Path("yard-rule.txt"), "Drivers must never idle engines in the yard.\n")
    assert untitled.title == "yard rule"  # a first line that is a sentence is content: the file names it
    assert [u.horn_type for u in untitled.units] == ["CONSTRAINT"]
    gates = extract(Path("gates.txt"), "Gate Rules\nIf a gate is blocked, the yard lead opens gate four.\n")
    assert gates.title == "Gate Rules" and gates.units[0].question == "What happens if a gate is blocked?"


def test_json_lines_records_keep_their_question_and_optional_horn_type():
    doc = extract(Path("faq.jsonl"), '{"question": "Who signs refunds?", "answer": "The support lead signs refunds.", '
                                     '"horn_type": "fact"}\n\n{"question": "When are refunds paid?", '
                                     '"answer": "If approved, refunds are paid within five days."}\n')
    assert [(u.question, u.horn_type) for u in doc.units] == [("Who signs refunds?", "FACT"),
                                                             ("When are refunds paid?", "RULE")]
    for unit in doc.units:
        assert doc.content[unit.span[0]:unit.span[1]] == unit.text


def test_questions_keep_the_capitals_of_names_only():
    doc = extract(Path("sites.md"), "# Sites\n\n## Cold room\n\nThe cold room of the warehouse "
                                    "in Rotterdam holds 1,800 square metres.\n\n## Docks\n\nThe RTM-1 "
                                    "site has fourteen docks and one cold room.\n\n## Boards\n\n"
                                    "Every change to the docks goes to the Change Board on Mondays.\n\n"
                                    "Pedestrians must not cross the yard in the Rotterdam warehouse.\n")
    assert [u.question for u in doc.units] == ["What does the cold room of the warehouse in Rotterdam hold?",
                                               "What does the RTM-1 site have?",
                                               "Where does every change to the docks go?",
                                               "May pedestrians cross the yard in the Rotterdam warehouse?"]


@pytest.mark.parametrize("name,content,line,words", [
    ("a.odt", "x", None, "unsupported file type .odt"),
    ("a", "x", None, "unsupported file type (none)"),
    ("a.pdf", "x", None, "not a PDF pypdf can read"),
    ("a.md", "# Only a heading\n", None, "nothing to review"),
    ("a.md", "line one\nline\x00two\n", 2, "NUL character (U+0000) at character 14"),
    ("a.txt", "bad \udcff byte", 1, "lone surrogate (U+DCFF)"),
    ("a.jsonl", "{bad\n", 1, "malformed JSON"),
    ("a.jsonl", '[1]\n', 1, "each line must be a JSON object"),
    ("a.jsonl", '{"question": "q"}\n', 1, 'missing "answer"'),
    ("a.jsonl", '{"question": " ", "answer": "a"}\n', 1, 'missing "question"'),
    ("a.jsonl", "\n\n", None, "no records"),
    ("a.jsonl", '{"question": "q", "answer": "a", "horn_type": "OPINION"}', 1, "unknown horn_type 'OPINION'"),
    ("a.jsonl", '{"question": "q", "answer": "a\\u0000"}', 1, '"answer" holds a NUL'),
    ("a.jsonl", "[" * 100 + "]" * 100, 1, "nested deeper than 64 levels"),
    ("a.jsonl", '{"question": "q", "answer": "a", "score": NaN}', 1, "NaN is not a number JSON allows"),
    ("a.jsonl", '{"question": "q", "answer": "a", "score": -1e400}', 1, "-1e400 is out of range for a number"),
    ("a.jsonl", json.dumps({"question": "q" * 2_001, "answer": "a"}), 1, "a question is at most 2,000 characters"),
    ("a.md", "x" * 20_001, 1, "an answer is at most 20,000 characters"),
])
def test_a_document_with_nothing_readable_is_refused_whole_with_its_line(name, content, line, words):
    with pytest.raises(ExtractError, match=re.escape(words)) as raised:
        extract(Path(name), content)
    assert raised.value.line == line


def test_a_json_lines_line_with_a_number_json_does_not_allow_is_skipped_and_the_good_lines_go_in():
    doc = extract(Path("a.jsonl"), '{"question": "q", "answer": "a"}\n{"question": "q", "answer": "a", "score": NaN}')
    assert [u.text for u in doc.units] == ["a"]
    assert doc.skipped == [(2, "NaN is not a number JSON allows")]


def test_headings_and_names_that_made_patterns_backtrack_are_read_in_linear_time():
    import time

    started = time.monotonic()
    extract(Path("blanks.md"), "# a" + " " * 20_000 + "b\n\nThe gate closes at ten every night.\n")
    # A heading over the limit of a question is left out with its line; the text under it goes in.
    words = extract(Path("words.md"), "## " + "Gate " * 3_000 + "?\n\nThe Gate Team closes the north gate at ten.\n")
    assert words.skipped == [(1, "a heading is at most 2,000 characters; this one has 15,001")]  # the "?" too
    assert [u.text for u in words.units] == ["The Gate Team closes the north gate at ten."]
    names = extract(Path("names.md"), "## " + "Gate " * 300 + "\n\nThe Gate Team closes the north gate at ten.\n")
    assert names.units[0].question == "What does the Gate Team close?"
    assert time.monotonic() - started < 5


# ----------------------------------------------------------------------------- wording

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def iso(delta: timedelta) -> str:
    return (NOW + delta).isoformat()


@pytest.mark.parametrize("seconds,said", [(None, "—"), (-5, "<1m"), (0, "<1m"), (59.9, "<1m"), (60, "1m"),
                                          (3599, "59m"), (3600, "1h"), (86399, "23h"), (86400, "1d"),
                                          (10 * 86400, "10d")])
def test_a_span_is_coarse_enough_to_read_at_a_glance(seconds, said):
    assert fmt.span(seconds) == said


def test_ages_and_deadlines_in_words():
    assert fmt.age(iso(-timedelta(minutes=3)), NOW) == "3m"
    assert fmt.ago(iso(-timedelta(seconds=20)), NOW) == "just now"
    assert fmt.ago(iso(-timedelta(hours=2, minutes=5)), NOW) == "2h ago"
    assert fmt.age(None, NOW) == fmt.ago("not a time", NOW) == fmt.until("", NOW) == ""
    assert fmt.parse_time("2026-03-01T12:00:00+00:00") == NOW and fmt.parse_time("yesterday") is None
    assert fmt.until(iso(-timedelta(seconds=1)), NOW) == "overdue"
    assert fmt.until(iso(timedelta(seconds=30)), NOW) == "<1m"
    assert fmt.until(iso(timedelta(minutes=2, seconds=1)), NOW) == "3m"  # rounded up
    assert fmt.until(iso(timedelta(minutes=59, seconds=30)), NOW) == "1h"  # 60m is an hour
    assert fmt.until(iso(timedelta(days=6, hours=1)), NOW) == "7d"


def test_clip_plural_and_keys():
    assert fmt.clip("  one\n two\tthree  ", 40) == "one two three"
    assert fmt.clip("abcdefghij", 5) == "abcd…" and len(fmt.clip("x" * 100, 10)) == 10
    assert fmt.clip(None, 5) == ""
    assert (fmt.plural(1, "work item"), fmt.plural(3, "work item"), fmt.plural(2, "entry", "entries")) == (
        "1 work item", "3 work items", "2 entries")
    keys = {fmt.new_idempotency_key() for _ in range(100)}
    assert len(keys) == 100 and all(re.fullmatch("[0-9a-f]{32}", k) for k in keys)


def test_a_decision_and_a_registry_move_say_what_they_did():
    assert wording.decision_said("approve", 2, {"answer": {"id": 2}}) == "Approved candidate 2: answer 2 published"
    assert wording.decision_said("revise", 4, {"answer": {"id": 3, "supersedes_id": 1}}) == (
        "Revised candidate 4: answer 3 published, superseding disputed answer 1")
    assert wording.decision_said("escalate", 5, {"work_item": {"id": 9}}) == "Escalated candidate 5: work item 9 created"
    assert wording.decision_said("reject", 6, {"retired": {"id": 7}}) == "Rejected candidate 6: disputed answer 7 retired"
    assert wording.decision_said("reject", 6, {}) == "Rejected candidate 6"
    assert wording.release_said({"id": 8, "horn_type": "FACT", "state": "PENDING"}) == (
        "Released candidate 8: back at the head of the FACT queue.")
    assert wording.registry_move_said("supersede", 1, {"id": 5}) == "Published answer 5, superseding answer 1."
    assert wording.registry_move_said("dispute", 1, {"id": 1, "horn_type": "RULE"}) == (
        "Answer 1 is DISPUTED; its candidate is back at the head of the RULE queue for re-review.")
    assert wording.registry_move_said("retire", 3, {"id": 3}) == (
        "Answer 3 is RETIRED: out of search and readout, kept for audit.")


# ----------------------------------------------------------------------------- terminal-safe text
# Moved from tests/test_terminal_safe.py, which keeps what the CLI and the screens show.

CLEAR = "\x1b[2J"                   # clear the screen
TITLE = "\x1b]0;pwned\x07"          # set the window title
CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"  # OSC 52: write "pwned" to the clipboard
HIDDEN = "\x1b[8mhidden\x1b[0m"     # concealed text
SEQUENCES = (CLEAR, TITLE, CLIPBOARD, HIDDEN)
SHOWN = tuple(visible(s) for s in SEQUENCES)  # "\\x1b[2J" …: backslash text
EVIL = f"{CLEAR} title {TITLE} clipboard {CLIPBOARD} {HIDDEN} end"
# What JSON leaves raw unless told: C1 CSI, DEL, a bidi override; and a lone CR.
OTHERS = "csi \x9b2J del \x7f rlo \u202eabc\u202c cr a\rb"
# What must never reach a terminal from stored text (newline and tab aside).
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def forbidden_in(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(text)})


@pytest.mark.parametrize("char, shown", [
    ("\x1b", "\\x1b"), ("\x07", "\\x07"), ("\x00", "\\x00"), ("\x08", "\\x08"), ("\x0b", "\\x0b"),
    ("\x0c", "\\x0c"), ("\x1f", "\\x1f"), ("\r", "\\r"),               # C0 (CR alone moves the cursor)
    ("\x7f", "\\x7f"),                                                # DEL
    ("\x80", "\\x80"), ("\x85", "\\x85"), ("\x9b", "\\x9b"), ("\x9f", "\\x9f"),  # C1: U+009B is CSI
    ("\u202a", "\\u202a"), ("\u202e", "\\u202e"), ("\u2066", "\\u2066"), ("\u2069", "\\u2069"),  # bidi
    ("\u200e", "\\u200e"), ("\u200f", "\\u200f"), ("\u061c", "\\u061c"),  # bidi marks
    ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),                     # line and paragraph separators
    ("\udcff", "\\udcff"),                                            # a lone surrogate (cannot be printed)
])
def test_each_class_of_control_becomes_a_visible_escape(char, shown):
    assert visible(f"a{char}b") == f"a{shown}b"
    assert not forbidden_in(visible(f"a{char}b"))


def test_plain_text_comes_back_unchanged():
    for text in ["", "The Rotterdam warehouse has 14 loading docks.", "naïve café — 漢字 👍🏽 👨‍👩‍👧",
                 "C:\\path\\x1b is only backslash text", "[bold]markup is not a control[/]", "tab\tand\nlines"]:
        assert visible(text) == text
    assert visible(None) == ""


def test_newlines_and_tabs_stay_in_multi_line_text_and_crlf_is_a_newline():
    assert visible("one\ntwo\n\tthree") == "one\ntwo\n\tthree"
    assert visible("one\r\ntwo\r\n") == "one\ntwo\n"
    assert visible("over\rwrite") == "over\\rwrite"


def test_one_line_output_shows_newlines_and_tabs_too():
    assert visible("a\nb\tc\r\nd", multiline=False) == "a\\nb\\tc\\r\\nd"
    assert visible("plain words", multiline=False) == "plain words"


def test_the_four_attacks_become_backslash_text():
    assert SHOWN == ("\\x1b[2J", "\\x1b]0;pwned\\x07", "\\x1b]52;c;cHduZWQ=\\x07", "\\x1b[8mhidden\\x1b[0m")
    shown = visible(EVIL + OTHERS)
    assert not forbidden_in(shown)
    assert visible(shown) == shown  # safe output stays as it is


def test_json_escapes_what_json_leaves_raw_and_still_round_trips():
    value = {"text": EVIL + OTHERS + "\u2028\u2066é漢", "n": [1, None, "\x7f"]}
    document = dumps(value)
    assert not forbidden_in(document)
    assert "\\u009b" in document and "\\u007f" in document and "\\u202e" in document
    assert "é漢" in document  # the rest stays readable UTF-8
    assert json.loads(document) == value
    assert dumps({"plain": "words"}) == json.dumps({"plain": "words"}, ensure_ascii=False)


@PURE
@given(st.text())
def test_visible_text_drives_no_terminal_and_stays_as_it_is(text):
    for multiline in (True, False):
        shown = visible(text, multiline=multiline)
        assert not forbidden_in(shown) and not re.search("[\ud800-\udfff]", shown)
        assert visible(shown, multiline=multiline) == shown
        if not multiline:
            assert "\n" not in shown and "\t" not in shown
    document = dumps({"t": text})
    assert not forbidden_in(document) and json.loads(document) == {"t": text}


# ----------------------------------------------------------------------------- how results print

def test_a_table_lines_up_what_is_printed_and_clips_long_cells():
    table = Table([{"id": 1, "state": "PENDING", "text": "short"},
                   {"id": 22, "state": None, "text": "x" * 100, "extra": "not a column"}],
                  ["id", "state", "text"], title="Candidates")
    lines = render_text(table).splitlines()
    assert lines[0] == "Candidates"
    assert lines[1] == "ID  STATE    TEXT"
    assert lines[2] == "1   PENDING  short"
    assert lines[3] == "22           " + "x" * 59 + "…"
    assert render_text(Table([], ["id"], title="Grey queue")) == "Grey queue\n(none)"
    assert render_text(Table([], ["id"])) == "(none)"
    assert json_form(table) == table.rows


def test_stored_controls_in_any_result_print_as_visible_escapes():
    evil = {"id": 1, "text": f"{CLEAR}line one\nline two", "tags": [TITLE], "none": None}
    table = render_text(Table([evil], ["id", "text", "tags"]))
    assert "\\x1b[2J" in table and "line one line two" in table  # one line per row
    record = render_text(evil)
    assert record.splitlines()[1] == "text  \\x1b[2Jline one"
    assert 'tags  ["\\u001b]0;pwned\\u0007"]' in record  # a list prints as JSON, escaped
    assert not forbidden_in(table + record + render_text([evil, evil]) + render_text(Text({"a": 1}, EVIL)))
    assert render_text(Text({"a": 1}, "plain")) == "plain" and json_form(Text({"a": 1}, "plain")) == {"a": 1}
    assert render_text(f"{CLEAR}") == "\\x1b[2J" and json_form({"a": 1}) == {"a": 1}
    assert render_text([{"a": 1}, {"a": 2}]) == "a  1\n\na  2"


# ----------------------------------------------------------------------------- subjects and contradictions

@pytest.mark.parametrize("question,subject", [
    ("What is established about dock count?", "dock count"),
    ("What rule applies to Truck Arrival?", "truck arrival"),
    ("what is forbidden regarding dock safety?", "dock safety"),
    ("What are the steps for unloading?", "unloading"),
    ("What is still unsettled about night docks?", "night docks"),
    ("  Who   opens the\ngate? ", "who opens the gate"),
    ("Q" * 300 + "?", "q" * 120),
])
def test_the_subject_of_an_answer_is_its_templated_topic_else_its_question(question, subject):
    assert subject_of(question) == subject


# ----------------------------------------------------------------------------- limits

def test_text_limits_name_what_and_how_long():
    assert limits.text(None, "a question", limits.QUESTION) is None
    assert limits.text("  " + "q" * limits.QUESTION + "  ", "a question", limits.QUESTION).strip() == "q" * 2_000
    with pytest.raises(InvalidInput, match="a question is at most 2,000 characters; this one has 2,001"):
        limits.text("q" * 2_001, "a question", limits.QUESTION)
    with pytest.raises(InvalidInput, match=re.escape("a reason holds a NUL character (U+0000) at character 3")):
        limits.text("ab\x00", "a reason")
    with pytest.raises(InvalidInput, match=re.escape("holds a lone surrogate (U+D800) at character 1")):
        limits.text("\ud800", "a reason")
    with pytest.raises(InvalidInput, match="a reason is text, got int"):
        limits.text(5, "a reason")
    assert limits.first_refused("abc") == -1 and limits.first_refused("ab\udfffc\x00") == 2
    assert limits.too_long("an answer", 10, 10) is None


def test_machine_made_text_is_scrubbed_and_clipped():
    assert limits.scrub("a\x00b\ud800c") == "ab\ufffdc"
    assert limits.clip("  short  ", 10) == "short"
    assert limits.clip("ab    cd", 5) == "ab…" and len(limits.clip("x" * 50, 12)) == 12


@pytest.mark.parametrize("value,bounds,said", [
    ("0", limits.TTL_SECONDS, "--ttl is 1–31,536,000 seconds, got 0"),
    (2_147_483_648, limits.VERSION, "--ttl is 1–2,147,483,647 seconds, got 2147483648"),
    ("-1", limits.OFFSET, "--ttl is 0 or more, at most 1,000,000,000 seconds, got -1"),
    ("9" * 5_000, limits.OFFSET, "got a number of 5,000 digits"),
    ("ten", limits.TTL_SECONDS, "--ttl is a whole number, 1–31,536,000 seconds; got 'ten'"),
    (True, limits.TTL_SECONDS, "got True"),
    (1.5, limits.TTL_SECONDS, "got 1.5"),
    ("x" * 100, limits.TTL_SECONDS, "got '" + "x" * 38 + "…"),
])
def test_numbers_out_of_range_name_the_option_and_its_range(value, bounds, said):
    with pytest.raises(InvalidInput, match=re.escape(said)):
        limits.number(value, "--ttl", bounds, "seconds")


def test_numbers_within_range_come_back_as_ints():
    assert limits.number(" 42 ", "--limit", limits.LIST_LIMIT) == 42
    assert limits.number(3.0, "--limit", limits.LIST_LIMIT) == 3
    assert limits.number("0", "--offset", limits.OFFSET) == 0
    assert limits.optional_number(None, "--limit", limits.LIST_LIMIT) is None
    assert limits.said((1, 64), "processes") == "1–64 processes"


def test_the_cli_option_types_use_the_same_ranges():
    from r2k.app.cli import bounded_int

    ttl = bounded_int("--ttl", limits.TTL_SECONDS, "seconds")
    assert ttl("60") == 60
    with pytest.raises(Exception, match="1–31,536,000 seconds"):
        ttl("0")


def test_ids_and_horn_types_from_what_is_typed():
    assert parse_id("12", "candidate") == 12
    with pytest.raises(InvalidInput, match="a candidate id is a number, got 'abc'"):
        parse_id("abc", "candidate")
    with pytest.raises(InvalidInput, match="an answer id is 1–9,223,372,036,854,775,807, got 0"):
        parse_id(0, "answer")
    with pytest.raises(InvalidInput, match="got 92233720368547758070"):
        parse_id(str(limits.ID[1]) + "0", "answer")
    assert parse_horn_type(" open-issue ") == parse_horn_type("open issue") == "OPEN_ISSUE"
    with pytest.raises(InvalidInput, match="unknown Horn type 'OPINION'"):
        parse_horn_type("OPINION")


def test_search_filters_match_literally():
    assert limits.literal_pattern("100%_a\\b") == "%100\\%\\_a\\\\b%"
    assert limits.literal_pattern("plain") == "%plain%"


def test_json_depth_is_checked_before_the_parser_recurses():
    assert limits.loads_json("[" * 64 + "]" * 64) is not None
    with pytest.raises(limits.JSONTooDeep, match="deeper than 64 levels"):
        limits.loads_json("[" * 65 + "]" * 65)
    with pytest.raises(limits.JSONTooDeep):
        limits.loads_json("[" * 100_000)  # would exhaust the stack in json.loads
    # Brackets inside strings are text, not nesting; an unclosed string is one token.
    assert limits.loads_json(json.dumps({"a": "[" * 1_000})) == {"a": "[" * 1_000}
    limits.json_depth_ok('"' + "[" * 1_000)
    with pytest.raises(json.JSONDecodeError):
        limits.loads_json('{"a": 1')


# ----------------------------------------------------------------------------- the audit's Merkle tree

def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 section 2.1, over leaves already hashed: split at the largest power of two below n."""
    if not leaves:
        return sha(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return sha(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def test_the_buckets_and_the_root_are_rfc_6962_merkle_tree_hashes():
    # Moved from tests/test_audit.py.
    for n in range(40):
        leaves = [os.urandom(32) for _ in range(n)]
        assert audit.tree_hash(leaves) == mth(leaves), n
    assert audit.leaf_hash("candidate", "1", 3, "ab") == sha(b'\x00["candidate","1",3,"ab"]')
    digests = {3: os.urandom(32), 4095: os.urandom(32)}
    tree = audit.BucketTree(digests)
    expected = mth([sha(b"\x00" + digests.get(b, sha(b""))) for b in range(audit.BUCKETS)])
    assert tree.root == expected.hex()
    digests[7] = os.urandom(32)
    tree.update({7: digests[7]})
    assert tree.root == mth([sha(b"\x00" + digests.get(b, sha(b""))) for b in range(audit.BUCKETS)]).hex()


@PURE
@given(st.dictionaries(st.integers(0, 15), st.binary(min_size=32, max_size=32), max_size=16),
       st.lists(st.dictionaries(st.integers(0, 15), st.binary(min_size=32, max_size=32), max_size=4), max_size=5))
def test_updating_the_bucket_tree_gives_the_root_built_from_scratch(first, updates):
    tree = audit.BucketTree(first, buckets=16)
    digests = dict(first)
    for update in updates:
        tree.update(update)
        digests.update(update)
    assert tree.root == audit.BucketTree(digests, buckets=16).root
    assert tree.root == mth([sha(b"\x00" + digests.get(b, sha(b""))) for b in range(16)]).hex()


def test_leaves_and_buckets():
    # The leaf is the canonical JSON of (type, id, seq, hash), non-ASCII kept as UTF-8.
    assert audit.leaf_hash("grey_entry", "é", 1, "") == sha(b"\x00" + '["grey_entry","é",1,""]'.encode())
    assert audit.leaf_hash("candidate", "1", 3, "ab") != audit.leaf_hash("candidate", "1", 4, "ab")
    buckets = {audit.bucket_of("candidate", str(i)) for i in range(2_000)}
    assert buckets <= set(range(audit.BUCKETS)) and len(buckets) > 1_000  # spread over the buckets
    assert audit.bucket_of("candidate", "7") == audit.bucket_of("candidate", "7")
    assert audit.bucket_of("candidate", "7", 16) < 16
    # A bucket's digest reads its leaves in (type, id) order, whatever order they came in.
    leaves = {("candidate", "2"): os.urandom(32), ("candidate", "10"): os.urandom(32), ("answer", "9"): os.urandom(32)}
    assert audit.bucket_digest(leaves) == mth([leaves[k] for k in sorted(leaves)])
    assert audit.bucket_digest(dict(reversed(list(leaves.items())))) == audit.bucket_digest(leaves)
    assert audit.bucket_digest({}) == sha(b"")
    for bad in (0, 3, 12):
        with pytest.raises(InvalidInput, match="power of two"):
            audit.BucketTree(buckets=bad)


def test_a_checkpoint_record_is_checked_by_its_hash_signer_and_signature(tmp_path):
    from r2k.core.events import Signer

    signer, other = Signer(tmp_path / "key.pem"), Signer(tmp_path / "other.pem")
    record = {"number": 1, "watermark": 10, "events": 10, "chains": 3, "buckets": audit.BUCKETS, "root": "ab",
              "prev_hash": None, "delta_digest": audit.delta_digest([["candidate", "1", 3, "h"]]),
              "created_at": "2026-03-01T12:00:00+00:00", "key_id": signer.key_id}
    record["hash"] = audit.record_hash(record)
    record["signature"] = signer.sign(record["hash"]).hex()
    trust = {signer.key_id: signer.public_key}
    assert audit.record_problems(record, trust) == []
    assert audit.header({**record, "delta": [1]}) == record  # everything but the delta
    assert audit.delta_digest([["a", "1", 1, "h"]]) != audit.delta_digest([["a", "1", 2, "h"]])

    assert audit.record_problems({**record, "events": 9}, trust) == [
        "its content does not match its hash (altered after it was signed)"]
    assert audit.record_problems(record, {other.key_id: other.public_key}) == [
        f"it is signed by untrusted key {signer.key_id}: not in the trust store"]
    forged = {**record, "signature": other.sign(record["hash"]).hex()}
    assert audit.record_problems(forged, trust) == ["its signature does not verify"]
    assert audit.record_problems({**record, "signature": "not hex"}, trust) == ["its signature does not verify"]
    assert audit.record_problems({"number": 1}, trust) == ["it is not a whole checkpoint record"]
    assert audit.record_problems([record], trust) == ["it is not a whole checkpoint record"]


# ----------------------------------------------------------------------------- the command line, the schema
# Moved from tests/test_foundation.py: none of them reaches a server.

def test_help_lists_the_commands():
    result = r2k("--help")
    assert result.returncode == 0
    for name in ("services", "db", "users", "audit", "replay", "demo", "ingest", "candidates", "queue",
                 "registry", "workitems", "worker", "grey"):
        assert name in result.stdout


def test_every_command_and_option_says_what_it_is_for():
    import argparse

    from r2k.app.cli import build_parser

    def commands(parser, path=()):
        for action in parser._actions:  # argparse keeps its subcommands only here
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from commands(sub, (*path, name))
        yield path, parser

    silent = [f"r2k {' '.join(path)} {action.option_strings[0] if action.option_strings else action.dest}"
              for path, parser in commands(build_parser()) for action in parser._actions
              if not isinstance(action, argparse._SubParsersAction) and not action.help]
    assert silent == []
    assert "only this Horn type" in r2k("candidates", "list", "--help").stdout


def test_a_command_builds_only_its_own_part_of_the_command_tree():
    """cli.MODULES says which module registers which top-level command, in the help's order: it must
    say what the modules really register, or a command would be built without its parser."""
    import argparse
    import importlib

    from r2k.app import cli

    for module, names in cli.MODULES.items():
        top = cli.Parser(prog="r2k")
        sub = top.add_subparsers(dest="command", parser_class=cli.Parser)
        importlib.import_module(f"r2k.app.commands.{module}").register(cli.Commands(sub))
        assert tuple(sub.choices) == names, module
    whole = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(whole.choices) == tuple(n for names in cli.MODULES.values() for n in names)
    assert cli.command_named(["--json", "--as", "users", "candidates", "list"]) == "candidates"
    assert cli.command_named(["--as=ada", "queue", "stats"]) == "queue"
    assert cli.command_named(["--json"]) is None
    assert cli.command_named(["-h", "users"]) is None  # the top level's help: every command listed
    assert cli.command_named(["users", "--help"]) == "users"
    # A command's tree holds its module's commands alone; help and unknown commands get the whole.
    only = next(a for a in cli.parser(["--json", "users", "list"])._actions
                if isinstance(a, argparse._SubParsersAction))
    assert tuple(only.choices) == cli.MODULES["users"]
    for argv in (["--help"], [], ["frobnicate"]):
        every = next(a for a in cli.parser(argv)._actions if isinstance(a, argparse._SubParsersAction))
        assert len(every.choices) == len(cli.OWNER)
    # The other commands' trees are not even imported, and no handler or service is before one runs.
    assert loaded_by("cli.parser(['users', 'list']).parse_args(['users', 'list'])",
                     ("r2k.app.commands.", "r2k.app.handlers.", "r2k.core.services")) == ["r2k.app.commands.users"]


def loaded_by(statement: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules of these prefixes that a fresh interpreter holds after `from r2k.app import cli`
    and `statement`."""
    code = (f"import sys; from r2k.app import cli; {statement}; "
            f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip())


def test_every_command_names_a_handler_that_exists_and_help_loads_none():
    """A command's handler is "module:function" of app/handlers/, imported when it runs: every one
    the whole tree names resolves, and building that tree (what `r2k --help` does) loads no handler
    and no database driver."""
    import argparse

    from r2k.app import cli

    def leaves(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    yield from leaves(child)
        if parser.get_default("handler") is not None:
            yield parser.get_default("handler")

    named = list(leaves(cli.build_parser()))
    assert len(named) > 80 and all(isinstance(h, str) for h in named)
    assert all(callable(cli.handler_named(h)) for h in named)
    assert loaded_by("cli.build_parser().format_help()",
                     ("r2k.app.handlers.", "psycopg", "redis", "neo4j", "falkordb", "rq", "pydantic")) == []


def test_migrations_head_matches_the_scripts():
    from alembic.script import ScriptDirectory

    from r2k.core import migrations

    script = ScriptDirectory.from_config(migrations.alembic_config("postgresql://x/y"))
    assert script.get_current_head() == migrations.HEAD


# ----------------------------------------------------------------------------- claim settles

def test_claim_settles_wait_for_a_pop_then_go_out_by_themselves_in_order():
    """A claim's settle waits a little to ride on the next pop (`take`); one that no pop takes goes
    out by itself, in the order of the claims; one a failed step took goes out again, first."""
    import threading
    import time

    from r2k.core.adapters.redis_queues import ClaimSettles

    sent, arrived = [], threading.Event()

    def send(settles):
        sent.append(list(settles))
        arrived.set()

    alone = ClaimSettles(send, wait=0.05)
    started = time.monotonic()
    alone.add(("k", 3, "c", "m3"))
    assert arrived.wait(5)
    assert sent == [[("k", 3, "c", "m3")]] and time.monotonic() - started >= 0.04  # after the wait, not before
    time.sleep(0.3)  # nothing more for a while: the thread goes idle, and the next settle wakes it
    arrived.clear()
    started = time.monotonic()
    alone.add(("k", 7, "c", "m7"))
    assert arrived.wait(5)
    assert sent[-1] == [("k", 7, "c", "m7")] and time.monotonic() - started >= 0.04
    alone.close()

    sent.clear()
    settles = ClaimSettles(send, wait=3600)  # here only a pop, a flush or the close sends them
    settles.add(("k", 1, "c", "m1"))
    settles.add(("k", 2, "c", "m2"))
    assert settles.take() == [("k", 1, "c", "m1"), ("k", 2, "c", "m2")]  # a pop took both
    settles.add(("k", 4, "c", "m4"))
    settles.put_back([("k", 5, "c", "m5")])  # an earlier one a failed pop took
    settles.close()  # a command ending sends what waits, without waiting
    assert sent == [[("k", 5, "c", "m5"), ("k", 4, "c", "m4")]]
    settles.add(("k", 6, "c", "m6"))  # after the close: at once
    assert sent[1] == [("k", 6, "c", "m6")] and settles.take() == []


def test_a_claim_settle_that_cannot_be_sent_is_logged_not_raised(caplog):
    from r2k.core.adapters.redis_queues import ClaimSettles

    def send(settles):
        raise ConnectionError("Redis is away")

    settles = ClaimSettles(send, wait=3600)
    settles.add(("k", 1, "c", "m"))
    settles.close()
    assert "1 claim settle(s) did not reach Redis" in caplog.text and "Redis is away" in caplog.text


def test_a_state_filter_takes_any_case_and_underscores_and_names_the_states_otherwise():
    from r2k.core.services.common import one_state

    assert one_state("in_review", ["PENDING", "IN_REVIEW"], "candidate state") == "IN_REVIEW"
    assert one_state(" In Review ", ["PENDING", "IN_REVIEW"], "candidate state") == "IN_REVIEW"
    assert one_state("under_review", ["Pending", "UnderReview"], "grey state") == "UnderReview"
    with pytest.raises(InvalidInput, match=r"unknown grey state 'nope': expected one of Pending, UnderReview"):
        one_state("nope", ["Pending", "UnderReview"], "grey state")


# ----------------------------------------------------------------------------- what the front ends hold

def test_the_workstations_own_notices_have_the_channels_one_shape():
    from r2k.core import notices
    from r2k.core.services.session import notice

    fields = {"entity", "id", "action", "state", "version", "actor"}
    assert notice("actor") == {"entity": "actor", "id": None, "action": None, "state": None, "version": None,
                               "actor": None}
    assert notice("*", action="reconnected") == json.loads(notices.shaped("*", action="reconnected"))
    assert set(notice("worker")) == fields
    assert notice("candidate", 3, "claim", "IN_REVIEW", 2, "ada") == json.loads(
        notices.shaped("candidate", 3, "claim", "IN_REVIEW", 2, "ada"))


def test_a_command_lets_the_checkpoint_it_started_finish_and_loads_no_audit_to_do_so(monkeypatch):
    from r2k.core.services import session

    waited = []
    monkeypatch.setattr(audit, "wait_pending", lambda timeout=30.0: waited.append(timeout))
    session.finish_checkpoint()
    assert waited == [30.0]
    # A process that never loaded the audit module (a read-only command) does not load it at its end.
    code = ("import sys; from r2k.core.services import session; session.finish_checkpoint(); "
            "assert 'r2k.core.audit' not in sys.modules, 'loaded'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_workstation_logs_what_failed_quietly_for_an_outage_and_loudly_otherwise(caplog):
    import logging

    from redis.exceptions import ConnectionError as RedisConnectionError

    from r2k.app.workstation_log import log_failure

    with caplog.at_level(logging.DEBUG, logger="r2k.app.workstation_log"):
        log_failure(None, "the unattended sweep did not run", RedisConnectionError("Connection refused"))
        log_failure(None, "the unattended sweep did not run", KeyError("lease"))
    outage, other = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "r2k.app.workstation_log"]
    assert outage == (logging.DEBUG, "the unattended sweep did not run: ConnectionError: Connection refused")
    assert other == (logging.WARNING, "the unattended sweep did not run: KeyError: 'lease'")


def test_a_failure_that_repeats_is_a_warning_once_then_debug_lines(caplog):
    import logging

    from r2k.app.workstation_log import log_failure

    with caplog.at_level(logging.DEBUG, logger="r2k.app.workstation_log"):
        for _ in range(3):  # a look every few seconds that keeps failing the same way
            log_failure(None, "looking after a worker, in this test", KeyError("pid"))
        log_failure(None, "looking after a worker, in this test", KeyError("other"))
    levels = [r.levelno for r in caplog.records if r.name == "r2k.app.workstation_log"]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG, logging.WARNING]


def test_the_workstations_log_lines_go_to_a_private_file_in_the_data_dir_not_the_terminal(tmp_path, capfd):
    import logging

    from r2k.app.workstation_log import LOG_NAME, keep_log

    levels = {name: logging.getLogger(name).level for name in ("", "r2k")}
    handler = keep_log(tmp_path)
    try:
        logging.getLogger("r2k.app.workstation_log").warning("the unattended sweep did not run: KeyError: 'lease'")
        logging.getLogger("r2k.core.somewhere").info("an info line of r2k's")
        logging.getLogger("psycopg.pool").info("a library's info line")
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    path = tmp_path / "logs" / LOG_NAME
    text = path.read_text()
    assert f"pid {os.getpid()} WARNING r2k.app.workstation_log: the unattended sweep did not run" in text
    assert "an info line of r2k's" in text and "a library's info line" not in text
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert "unattended sweep" not in capfd.readouterr().err  # Textual holds the terminal: nothing there


def test_the_grey_detail_says_when_for_every_move_only_the_automation_makes():
    """`grey show` and the workstation say what an entry can become next without a person: every move
    the grey machine leaves to the system, from every state it leaves from, has its words."""
    from r2k.core.machines import WHO
    from r2k.core.machines.grey import GREY
    from r2k.core.services.grey_entries.grey import AUTOMATION_WHEN

    system_only = {(m.action, state) for m in GREY.moves if m.who is WHO.SYSTEM for state in m.sources}
    assert system_only <= set(AUTOMATION_WHEN)
    assert all(GREY.is_legal(action, state) for action, state in AUTOMATION_WHEN)
