"""Stored text never drives a terminal: escape sequences in a candidate, a document, a grey entry, a
work item or an answer show as visible escapes on the CLI and in every TUI screen, --json keeps
them as JSON escapes that parse back to the stored text, and stored Textual markup shows as typed."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import DataTable, TextArea

from r2k.app.safe import visible
from r2k.app.screens.grey import GreyQueueScreen
from r2k.app.screens.registry import RegistryScreen
from r2k.app.screens.workitems import WorkItemsScreen
from r2k.app.widgets.modals import TextModal
from r2k.core.notices import CHANNEL
from r2k.core.services.answering import workitems
from r2k.core.services.answers import registry
from r2k.core.services.documents import ingest
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import candidate_views, claims
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, error_of
from tests.test_tui_validation import open_review
from tests.tui import candidate_on, chain_on, highlight, make_app, open_modal, open_screen, wait_for

CLEAR = "\x1b[2J"                   # clear the screen
TITLE = "\x1b]0;pwned\x07"          # set the window title
CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"  # OSC 52: write "pwned" to the clipboard
HIDDEN = "\x1b[8mhidden\x1b[0m"     # concealed text
SEQUENCES = (CLEAR, TITLE, CLIPBOARD, HIDDEN)
SHOWN = tuple(visible(s) for s in SEQUENCES)  # "\\x1b[2J" …: backslash text
# The clear-screen sequence comes first, so even a clipped table cell shows it.
EVIL = f"{CLEAR} title {TITLE} clipboard {CLIPBOARD} {HIDDEN} end"
# What JSON leaves raw unless told: C1 CSI, DEL, a bidi override; and a lone CR.
OTHERS = "csi \x9b2J del \x7f rlo \u202eabc\u202c cr a\rb"
# A link as Rich markup (DataTable cells) and as Textual markup (Static, notify), styles, a stray close.
MARKUP = '[link=https://evil.example]click me[/link] [link="https://evil.example"]here[/link] [bold red]loud[/] [/]'
# Pieces of it without spaces, so a pane that wraps keeps each on one line.
MARKUP_SHOWN = ("[link=https://evil.example]click", '[link="https://evil.example"]here[/link]', "red]loud[/]")

# What must never reach a terminal from stored text (newline and tab aside).
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def forbidden_in(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(text)})


# The pure tests of `visible` and `dumps` are in tests/test_pure.py (the fast tier).


# --------------------------------------------------------------------------- the CLI

def document(path_name: str = f"evil{CLEAR}.md") -> tuple[str, str]:
    """A Markdown document with the attacks in its title, a heading, a statement and a fragment."""
    return path_name, (f"# Dock {HIDDEN} handbook\n\n## Dock {CLEAR} doors\n\n"
                       f"The Rotterdam warehouse has 14 loading docks {CLEAR} and a cold room {TITLE} of 1,800 "
                       f"square metres {CLIPBOARD} for {HIDDEN} goods.\n\nDoor {TITLE} nine.\n")


def seed_world(ctx, people, tmp_path, monkeypatch) -> dict:
    """Every kind of stored text the CLI shows, each holding the attacks."""
    root, alice = people["root"], people["alice"]
    manual = candidates.add(ctx, root, f"Question {EVIL}?", f"Answer {EVIL} {OTHERS}", "FACT")
    name, content = document()
    (tmp_path / name).write_text(content)
    monkeypatch.chdir(tmp_path)
    ingest.ingest(ctx, root, [Path(name)])
    extracted = next(c for c in candidate_views.list_candidates(ctx, None, None, limit=10) if c["id"] != manual["id"])
    # The hand-made candidate is published, then superseded with a reason: an answer chain.
    assert claims.claim_next(ctx, alice, "FACT")["id"] == manual["id"]
    first = candidates.approve(ctx, alice, manual["id"])["answer"]
    second = registry.supersede(ctx, alice, first["id"], f"Superseding {EVIL}", f"Because {EVIL}")
    # The ingested one is rejected with a reason: its history holds it.
    assert claims.claim_next(ctx, alice, "FACT")["id"] == extracted["id"]
    candidates.reject(ctx, alice, extracted["id"], f"Rejected {EVIL}")
    entry = grey.add(ctx, root, f"Subject {EVIL}", f"Detail {EVIL} {OTHERS}")
    fragment = next(e for e in grey.list_entries(ctx, limit=10) if e["id"] != entry["id"])
    item = workitems.create(ctx, root, f"Work {EVIL}?")
    return {"manual": manual["id"], "extracted": extracted["id"], "first": first["id"], "second": second["id"],
            "entry": entry["id"], "fragment": fragment["id"], "item": item["id"]}


def cli(*args: str) -> subprocess.CompletedProcess:
    """The command line in a subprocess, as bytes: text mode would turn a raw CR into a newline and hide it."""
    result = subprocess.run([sys.executable, "-m", "r2k.app", *args], capture_output=True, env=dict(os.environ),
                            timeout=120, cwd=ROOT)
    result.stdout, result.stderr = result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    return result


def strings_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


# command (with {ids}), the visible escapes its text must show, and (name, how to read it) of the
# stored strings its --json must hold unchanged
CLI_CASES = [
    ("candidates show {manual}", SHOWN, [("question", lambda c, w: candidate_views.get(c, w["manual"])["question"]),
                                         ("text", lambda c, w: candidate_views.get(c, w["manual"])["text"])]),
    ("candidates show {extracted}", SHOWN, [("text", lambda c, w: candidate_views.get(c, w["extracted"])["text"])]),
    ("candidates list", SHOWN[:1], [("question", lambda c, w: candidate_views.get(c, w["manual"])["question"])]),
    ("candidates history {extracted}", SHOWN[:1], [("reason", lambda c, w: f"Rejected {EVIL}")]),
    ("registry search --status ALL", SHOWN[:1], [("text", lambda c, w: registry.show(c, w["second"])["text"])]),
    ("registry show {second}", SHOWN, [("text", lambda c, w: registry.show(c, w["second"])["text"]),
                                       ("reason", lambda c, w: registry.show(c, w["second"])["reason"])]),
    ("registry chain {second}", SHOWN[:1], [("old text", lambda c, w: registry.show(c, w["first"])["text"])]),
    ("grey list", SHOWN[:1], [("subject", lambda c, w: grey.get(c, w["entry"])["subject"])]),
    ("grey show {entry}", SHOWN, [("subject", lambda c, w: grey.get(c, w["entry"])["subject"]),
                                  ("detail", lambda c, w: grey.get(c, w["entry"])["detail"])]),
    ("grey show {fragment}", SHOWN[1:2], [("detail", lambda c, w: grey.get(c, w["fragment"])["detail"])]),
    ("workitems list", SHOWN[:1], [("question", lambda c, w: workitems.get(c, w["item"])["question"])]),
    ("workitems show {item}", SHOWN, [("question", lambda c, w: workitems.get(c, w["item"])["question"])]),
]


@pytest.mark.parametrize("command, shown, stored", CLI_CASES, ids=[c[0].split(" {")[0] for c in CLI_CASES])
def test_cli_text_shows_escapes_and_json_keeps_the_stored_text(ctx, people, tmp_path, monkeypatch,
                                                                command, shown, stored):
    world = seed_world(ctx, people, tmp_path, monkeypatch)
    args = command.format(**world).split()
    result = cli("--as", "root", *args)
    assert result.returncode == 0, result.stderr
    assert not forbidden_in(result.stdout), (forbidden_in(result.stdout), result.stdout)
    assert not forbidden_in(result.stderr), result.stderr
    for text in shown:
        assert text in result.stdout, (text, result.stdout)

    raw = cli("--as", "root", "--json", *args)
    assert raw.returncode == 0, raw.stderr
    assert not forbidden_in(raw.stdout)  # escaped as JSON allows: \u001b, \u009b, \u202e
    strings = strings_in(json.loads(raw.stdout))
    for name, read in stored:
        original = read(ctx, world)
        assert any(ch in original for ch in "\x1b\x07"), name
        assert original in strings, f"the stored {name} is not in the --json output unchanged"


def test_cli_add_echoes_the_new_candidate_safely(ctx, people):
    result = cli("--as", "root", "candidates", "add", "--question", f"Q {EVIL}?", "--text", f"A {EVIL} {OTHERS}",
                 "--horn-type", "FACT")
    assert result.returncode == 0, result.stderr
    assert not forbidden_in(result.stdout + result.stderr)
    assert all(text in result.stdout for text in SHOWN)
    assert "\\x9b2J" in result.stdout and "\\u202e" in result.stdout and "a\\rb" in result.stdout
    assert candidate_views.get(ctx, 1)["text"] == f"A {EVIL} {OTHERS}"  # stored as given: only its showing changes


@pytest.mark.parametrize("args", [
    ["candidates", "list", "--horn-type", f"FACT{CLEAR}{TITLE}"],      # an unknown Horn type
    ["candidates", "show", f"12{CLEAR}{CLIPBOARD}"],                  # a bad id
    ["candidates", "list", f"stray{CLEAR}\x9b\u202e{HIDDEN}"],         # argparse echoes it as it came
], ids=["horn-type", "id", "argument"])
def test_an_error_that_echoes_input_is_safe(ctx, people, args):
    result = cli("--as", "root", *args)
    assert result.returncode != 0
    assert not forbidden_in(result.stderr), result.stderr
    assert not forbidden_in(result.stdout)
    given = args[-1]
    message = error_of(result)["message"]
    assert given in message or visible(given) in message or repr(given)[1:-1] in message, message


def test_ingest_names_a_skipped_file_safely(ctx, people, tmp_path):
    bad = tmp_path / f"notes{CLEAR}{TITLE}\x9b.pdf"
    bad.write_text("not a supported type")
    result = cli("--as", "root", "ingest", str(bad))
    assert result.returncode != 0
    assert not forbidden_in(result.stderr), result.stderr
    assert f"notes{SHOWN[0]}{SHOWN[1]}\\x9b.pdf" in result.stderr  # the "skipped" line names it visibly
    error_of(result)  # the last line is still the JSON error


# --------------------------------------------------------------------------- the TUI

def screen_text(app) -> str:
    """What the compositor would write for the screen on top (toasts included), as text: every
    segment of every line. Styles become escape sequences of Textual's own, so they are checked
    apart: no control segment and no link (a link is an OSC 8 sequence with its address)."""
    lines = []
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            assert segment.control is None, segment
            assert not (segment.style and segment.style.link), f"a link reached the screen: {segment.style.link}"
        lines.append("".join(segment.text for segment in strip))
    return "\n".join(lines)


async def assert_safe_screen(pilot, *shown: str) -> str:
    """Once the screen shows each of `shown` (it redraws as the data arrives): no control character
    in it, now or in any frame drawn meanwhile."""
    seen: list[str] = []

    def drawn() -> bool:
        text = screen_text(pilot.app)
        assert not forbidden_in(text), (forbidden_in(text), text)
        seen.append(text)
        return all(expected in text for expected in shown)

    try:
        await wait_for(pilot, drawn, what="the stored text, shown as escapes")
    except AssertionError:
        last = seen[-1] if seen else ""
        missing = [expected for expected in shown if expected not in last]
        raise AssertionError(f"not on screen: {missing}\n{last}") from None
    return seen[-1]


async def test_the_screen_check_sees_what_textual_lets_through():
    """Without r2k's escaping, Textual draws ESC and bidi controls raw (it strips only BEL, BS, VT, FF
    and CR) and turns stored "[link=…]" markup into a link: the check above catches both."""
    from textual.app import App
    from textual.widgets import Static

    class Bare(App):
        def compose(self):
            yield Static(f"raw {CLEAR} \u202e", id="raw")
            yield Static('[link="https://evil.example"]click[/link]', id="link")

    app = Bare()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        with pytest.raises(AssertionError, match="a link reached the screen"):
            screen_text(app)
        app.query_one("#link", Static).update("")
        await pilot.pause()
        text = screen_text(app)
        assert forbidden_in(text) == ["U+001B", "U+202E"]
        assert "\\x1b" not in text  # shown raw, not as an escape


async def test_review_screen_and_revise_editor_show_escapes(ctx, people):
    stored = f"Answer {EVIL} {OTHERS}"
    candidate = candidates.add(ctx, people["root"], f"Question {EVIL}?", stored, "FACT")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == candidate["id"]
        await assert_safe_screen(pilot, *SHOWN, "\\x9b2J", "\\x7f", "\\u202eabc\\u202c", "a\\rb")

        modal = await open_modal(pilot, "e", TextModal)
        assert modal.query_one(TextArea).text == visible(stored)  # what is saved is what was seen
        await assert_safe_screen(pilot, SHOWN[0], "\\u202e")
        await pilot.press("escape")


async def test_review_screen_shows_a_documents_sources_and_a_dispute_reason_safely(ctx, people, tmp_path,
                                                                                     monkeypatch):
    name, content = document()
    (tmp_path / name).write_text(content)
    monkeypatch.chdir(tmp_path)
    ingest.ingest(ctx, people["root"], [Path(name)])
    alice = people["alice"]
    claimed = claims.claim_next(ctx, alice, "FACT")
    answer = candidates.approve(ctx, alice, claimed["id"])["answer"]
    registry.dispute(ctx, alice, answer["id"], f"Disputed {TITLE} because")  # back for re-review
    app = make_app(ctx, "alice")
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == claimed["id"]
        await assert_safe_screen(pilot, f"Dock {SHOWN[3]} handbook", f"evil{SHOWN[0]}.md",  # title, path
                                 f"docks {SHOWN[0]} and a cold room {SHOWN[1]}",             # the passage
                                 f"Disputed {SHOWN[1]} because")                             # the reason


async def test_registry_shows_results_detail_and_chain_safely(ctx, people):
    alice = people["alice"]
    candidates.add(ctx, people["root"], f"Question {EVIL}?", f"Answer {EVIL}", "FACT")
    claimed = claims.claim_next(ctx, alice, "FACT")
    first = candidates.approve(ctx, alice, claimed["id"])["answer"]
    second = registry.supersede(ctx, alice, first["id"], f"New {EVIL}", f"Because {CLIPBOARD}")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_screen(pilot, "G", RegistryScreen)
        await wait_for(pilot, lambda: chain_on(screen) == ([first["id"], second["id"]], second["id"]),
                       what="the supersede chain")
        await assert_safe_screen(pilot, *SHOWN, f"Because {SHOWN[2]}", f"Question {SHOWN[0]}")


async def test_grey_queue_shows_rows_and_detail_safely(ctx, people):
    entry = grey.add(ctx, people["root"], f"Subject {EVIL}", f"Detail {EVIL} {OTHERS}")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(160, 50)) as pilot:
        await open_screen(pilot, "Y", GreyQueueScreen)
        await highlight(pilot, entry["id"])
        await assert_safe_screen(pilot, *SHOWN, "\\x9b2J", "\\u202eabc")


async def test_work_items_show_rows_and_detail_safely(ctx, people):
    item = workitems.create(ctx, people["root"], f"Work {EVIL}?")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(160, 50)) as pilot:
        await open_screen(pilot, "W", WorkItemsScreen)
        await highlight(pilot, item["id"])
        await assert_safe_screen(pilot, *SHOWN)


async def test_an_escalation_toast_shows_the_subject_safely_and_as_typed(ctx, people):
    """A specialist's toast quotes the entry's subject and the reason: neither is markup nor a control
    (before, an unmatched "[/]" in a subject stopped the app with a MarkupError)."""
    entry = grey.add(ctx, people["root"], f"Subject {CLEAR} {MARKUP}", "detail")
    grey.transition(ctx, people["root"], entry["id"], "assign", assignee="root")
    app = make_app(ctx, "sam", listen=True)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await open_screen(pilot, "Y", GreyQueueScreen)
        await wait_for(pilot, lambda: dict(ctx.redis.pubsub_numsub(CHANNEL)).get(CHANNEL.encode(), 0) >= 1,
                       what="the app subscribed")
        grey.transition(ctx, people["root"], entry["id"], "escalate", reason=f"leak {TITLE}")
        await wait_for(pilot, lambda: any("escalated by root" in n.message for n in app._notifications),
                       what="the toast")
        # Short pieces: the toast is narrow and wraps at spaces.
        await assert_safe_screen(pilot, SHOWN[0], *MARKUP_SHOWN, SHOWN[1])


async def test_stored_markup_shows_as_typed_in_the_registry(ctx, people):
    """Results are DataTable cells, which read a string as markup: a stored "[link=…]" must not become a
    link (an OSC 8 sequence with its address), nor an unmatched "[/]" stop the app."""
    alice = people["alice"]
    candidates.add(ctx, people["root"], f"Question {MARKUP}?", f"Answer {MARKUP}", "FACT")
    claimed = claims.claim_next(ctx, alice, "FACT")
    candidates.approve(ctx, alice, claimed["id"])
    app = make_app(ctx, "alice")
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_screen(pilot, "G", RegistryScreen)
        assert screen.query_one("#results", DataTable).row_count == 1
        await assert_safe_screen(pilot, *MARKUP_SHOWN,
                                 "Question [link=https://evil.example]")  # the results row, clipped to its column


async def test_stored_markup_shows_as_typed_on_the_review_screen(ctx, people):
    candidates.add(ctx, people["root"], f"Question {MARKUP}?", f"Answer {MARKUP}", "FACT")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(160, 50)) as pilot:
        await open_review(pilot)
        await assert_safe_screen(pilot, f"Question {MARKUP_SHOWN[0]}", f"Answer {MARKUP_SHOWN[0]}", *MARKUP_SHOWN)


async def test_stored_markup_shows_as_typed_in_the_grey_queue(ctx, people):
    """The detail pane is markup written in code with the stored text put in as plain text: a "[" left
    open, as in an escape sequence ("\x1b[0m"), no longer swallows the pane's own tags."""
    entry = grey.add(ctx, people["root"], f"Subject {MARKUP} [open", f"Detail {MARKUP} C:\\dir\\")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(160, 50)) as pilot:
        await open_screen(pilot, "Y", GreyQueueScreen)
        await highlight(pilot, entry["id"])
        # Short pieces: the pane wraps at spaces.
        await assert_safe_screen(pilot, f"Subject {MARKUP_SHOWN[0]}", f"Detail {MARKUP_SHOWN[0]}", *MARKUP_SHOWN,
                                 "[open", "C:\\dir\\", "Assignee —")


async def test_an_unknown_user_name_with_controls_is_shown_safely(ctx):
    app = make_app(ctx, f"eve{CLEAR}")
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.actor_error, what="the unknown user")
        await assert_safe_screen(pilot, f"eve{SHOWN[0]} (unknown user)")
