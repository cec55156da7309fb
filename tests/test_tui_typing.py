"""Nothing typed is lost: keys typed ahead of a modal reach it in order, whatever their timing, and
what is published is what was typed (checked in the registry, not only on the screen)."""
from __future__ import annotations

import pytest
from textual.widgets import TextArea

from r2k.app.screens.review import ReviewScreen
from r2k.app.widgets.modals import ChoiceModal, TextModal
from r2k.core.services.answering import workitems
from r2k.core.services.answers import registry
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import candidate_views, claims
from tests.conftest import error_of, r2k
from tests.test_tui_validation import seed_facts, showing
from tests.tui import (after, candidate_on, keys_together, make_app, message, open_modal, review_settled, text_of,
                       wait_for)


async def open_review(pilot, horn: str = "FACT") -> ReviewScreen:
    """The review screen of a queue, opened as the queue picker opens it; once it shows its candidate."""
    app = pilot.app
    await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
    app.push_screen(ReviewScreen(horn))
    await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen) and review_settled(app.screen),
                   what=f"the {horn} review screen")
    return app.screen


async def one_write(pilot, data: str) -> None:
    """`data` as the terminal sends it in one read (a fast typist, a key macro, keys bundled over
    SSH): parsed by Textual's own terminal parser, every key queued before the app handles the first."""
    from textual._xterm_parser import XTermParser

    driver = pilot.app._driver
    for event in XTermParser().feed(data):
        event.set_sender(pilot.app)
        driver.send_message(event)
    await pilot.pause()


def published_text(ctx, candidate_id: int) -> str | None:
    """The text of the registry's answer for a candidate (None: none published)."""
    rows = [a for a in registry.search(ctx, "", limit=100) if a["candidate_id"] == candidate_id]
    return rows[0]["text"] if rows else None


async def test_a_revision_typed_in_one_write_publishes_the_typed_text(ctx, people):
    ids = seed_facts(ctx, people, 3)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        # e, the words, ctrl+s (\x13): one read from the terminal.
        await one_write(pilot, "e Checked\x13")
        await showing(pilot, screen, ids[1])
        assert candidate_views.get(ctx, ids[0])["text"] == "A plain fact number 1. Checked"
        assert published_text(ctx, ids[0]) == "A plain fact number 1. Checked"

        # The same burst as key events queued together.
        await keys_together(pilot, "e", "space", "O", "K", "ctrl+s")
        await showing(pilot, screen, ids[2], "the third candidate")
        assert published_text(ctx, ids[1]) == "A plain fact number 2. OK"


async def test_keys_pressed_one_by_one_as_fast_as_pilot_can(ctx, people):
    """The same burst when each key is handled before the next arrives (pilot.press)."""
    ids = seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        await pilot.press("e", "space", "O", "K", "ctrl+s")
        await showing(pilot, screen, ids[1])
        assert published_text(ctx, ids[0]) == "A plain fact number 1. OK"


def untouched(ctx, candidate_id: int, version: int) -> None:
    """The candidate is still claimed by alice at `version`, and nothing was published for it."""
    row = candidate_views.get(ctx, candidate_id)
    assert (row["state"], row["version"], row["claimed_by"]) == ("IN_REVIEW", version, "alice")
    assert published_text(ctx, candidate_id) is None
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM validation_records WHERE candidate_id = %s", (candidate_id,)) == 0


async def test_a_revision_identical_to_the_text_is_refused_in_place(ctx, people):
    ids = seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        version = candidate_views.get(ctx, ids[0])["version"]
        await one_write(pilot, "e\x13")  # e, then ctrl+s with nothing changed
        modal = await wait_for(pilot, lambda: isinstance(app.screen, TextModal) and
                               "approve it" in text_of(app, "#modal-error") and app.screen, what="the refusal")
        assert "nothing to revise" in text_of(app, "#modal-error")
        untouched(ctx, ids[0], version)
        # A space added and saved is the same text (the ends are trimmed): still refused.
        await one_write(pilot, " \x13")
        await pilot.pause()
        assert app.screen is modal and "approve it" in text_of(app, "#modal-error")
        untouched(ctx, ids[0], version)
        # escape (the only change is a space: asked), discard, then a approves it as it is.
        await keys_together(pilot, "escape")  # a terminal sends a lone ESC once no more bytes follow
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal), what="the discard question")
        await one_write(pilot, "da")
        await showing(pilot, screen, ids[1])
        assert published_text(ctx, ids[0]) == "A plain fact number 1."


def test_the_core_refuses_a_revision_identical_to_the_text(ctx, people):
    seed_facts(ctx, people, 1)
    c = claims.claim_next(ctx, people["alice"], "FACT")
    result = r2k("--as", "alice", "candidates", "revise", str(c["id"]), "--text", "  A plain fact number 1. ")
    assert result.returncode != 0
    error = error_of(result)
    assert error["status"] == 400
    assert error["message"] == (f"the revised text is candidate {c['id']}'s text as it stands: nothing was revised; "
                                f"to publish it as it is, approve it (candidates approve {c['id']})")
    untouched(ctx, c["id"], c["version"])


async def test_escape_with_changes_asks_before_discarding(ctx, people):
    ids = seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        version = candidate_views.get(ctx, ids[0])["version"]
        # Without changes escape just closes.
        await open_modal(pilot, "e", TextModal)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, (TextModal, ChoiceModal)), what="the editor closed")

        # With changes it asks; k (or escape) keeps editing, with the text as typed.
        await keys_together(pilot, "e", "space", "m", "o", "r", "e", "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal), what="the discard question")
        assert "Discard your changes?" in text_of(app, "#choice-title")
        await pilot.press("k")
        editor = await wait_for(pilot, lambda: isinstance(app.screen, TextModal) and app.screen, what="the editor")
        assert editor.query_one("#text", TextArea).text == "A plain fact number 1. more"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal), what="asked again")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, TextModal), what="still editing")
        # d discards: nothing is decided.
        await keys_together(pilot, "escape", "d")  # (in one read, ESC d would be alt+d)
        await wait_for(pilot, lambda: not isinstance(app.screen, (TextModal, ChoiceModal)), what="the editor closed")
        untouched(ctx, ids[0], version)


async def test_decision_keys_pressed_while_one_is_saved_say_they_were_ignored(ctx, people):
    ids = seed_facts(ctx, people, 3)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        await one_write(pilot, "aaa")
        await showing(pilot, screen, ids[1])
        said = await after(pilot, "ignored")
        assert said.startswith(f"Approved candidate {ids[0]}")
        assert "2 key presses made while saving it ignored" in said
        assert published_text(ctx, ids[0]) == "A plain fact number 1."
        untouched(ctx, ids[1], candidate_views.get(ctx, ids[1])["version"])  # approved once, not three times

        # While a decision is being saved the line says so at once. The save is held for real: another
        # transaction holds the candidate's row, as a colleague's slower save of it would.
        with holding_row(ctx, "candidates", ids[1]) as held:
            await pilot.press("a")
            await wait_for(pilot, held.waited_on, what="the approval waiting for the candidate's row")
            await pilot.press("a")
            assert message(app) == "Still saving the last decision… (1 key press ignored)"
            assert candidate_on(screen) == ids[1]  # still showing the one being saved
            assert candidate_views.get(ctx, ids[1])["state"] == "IN_REVIEW"  # not saved yet
        said = await after(pilot, "1 key press made")  # the row is free: the save ends
        assert said.startswith(f"Approved candidate {ids[1]}") and "1 key press made while saving it ignored" in said
        await showing(pilot, screen, ids[2])
        assert candidate_views.get(ctx, ids[1])["state"] == "APPROVED"
        assert candidate_views.get(ctx, ids[2])["state"] == "IN_REVIEW"  # the ignored key approved nothing


class holding_row:
    """A transaction of its own holding `table`'s row `row_id` (`SELECT … FOR UPDATE`) until the block
    ends; `waited_on()`: is a backend waiting for it (pg_blocking_pids names this one)?"""

    def __init__(self, ctx, table: str, row_id: int):
        import psycopg

        self.holder = psycopg.connect(ctx.database_url, autocommit=False)
        self.watcher = psycopg.connect(ctx.database_url, autocommit=True)
        self.holder.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", (row_id,))
        self.pid = self.holder.info.backend_pid

    def waited_on(self) -> bool:
        return self.watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                                    (self.pid,)).fetchone()[0] > 0

    def __enter__(self) -> "holding_row":
        return self

    def __exit__(self, *exc) -> None:
        self.holder.rollback()
        self.holder.close()
        self.watcher.close()


# --------------------------------------------------------------------------- leaving safely

def claimed_by_alice(ctx) -> list[int]:
    return [c["id"] for c in candidate_views.list_candidates(ctx, "IN_REVIEW", claimed_by="alice")]


def reopened(services):
    """A Context again once the workstation has quit (it closes its own on the way out)."""
    from r2k.core.bootstrap import bootstrap

    return bootstrap(services, pool_size=2)


async def quit_asking(pilot) -> ChoiceModal:
    app = pilot.app
    await pilot.press("ctrl+q")
    return await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal) and app.screen, what="the quit question")


async def test_quitting_with_a_claim_held_releases_it_by_default(ctx, people, services):
    ids = seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        assert claimed_by_alice(ctx) == [ids[0]]
        await quit_asking(pilot)
        question = text_of(app, "#choice-question")
        assert f"You hold candidate {ids[0]} claimed" in question and "up to 30 minutes" in question
        assert "Release and quit (r)" in str(app.screen.focused.label)  # the default: enter takes it
        # s (or escape) stays, nothing released.
        await pilot.press("s")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceModal), what="the question gone")
        assert app.is_running and claimed_by_alice(ctx) == [ids[0]]
        await quit_asking(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.is_running, what="the app to quit")
    ctx = reopened(services)
    assert claimed_by_alice(ctx) == []
    row = candidate_views.get(ctx, ids[0])
    assert (row["state"], row["claimed_by"]) == ("PENDING", None)
    assert [h["action"] for h in candidate_views.history(ctx, ids[0])][-1] == "release"
    ctx.close()


async def test_quitting_can_keep_the_claims_leased(ctx, people, services):
    ids = seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        await quit_asking(pilot)
        await pilot.press("k")
        await wait_for(pilot, lambda: not app.is_running, what="the app to quit")
    ctx = reopened(services)
    assert claimed_by_alice(ctx) == [ids[0]]
    ctx.close()


async def test_quitting_without_claims_asks_nothing(ctx, people):
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: not app.is_running, what="the app to quit")


# --------------------------------------------------------------------------- words

def test_messages_name_things_in_words_not_tables(ctx, people):
    """"grey entry 1" and "work item 1", never the tables' "grey_entry 1" / "work_item 1"."""
    entry = grey.add(ctx, people["root"], "Backup rotation schedule")
    item = workitems.create(ctx, people["root"], "What is the VPN timeout?")
    said = {
        "state": r2k("--as", "sam", "grey", "escalate", str(entry["id"]), "--reason", "needs an expert"),
        "version": r2k("--as", "sam", "workitems", "close", str(item["id"]), "--reason", "dup",
                       "--expected-version", "7"),
        "missing": r2k("--as", "sam", "grey", "show", "99"),
        "rework": r2k("--as", "sam", "workitems", "rework", str(item["id"]), "--reason", "too vague"),
    }
    messages = {name: error_of(result)["message"] for name, result in said.items()}
    assert messages["state"].startswith(f"grey entry {entry['id']} is Pending: 'escalate' is not allowed")
    assert messages["version"].startswith(f"work item {item['id']} is at version 1, not 7")
    assert messages["missing"] == "no grey entry 99"
    assert messages["rework"].startswith(f"work item {item['id']} is NEW: 'rework' is not allowed")
    for result in said.values():
        assert "grey_entry" not in result.stderr and "work_item" not in result.stderr
    assert grey.get(ctx, entry["id"])["version"] == 1 and workitems.get(ctx, item["id"])["version"] == 1


async def test_the_screens_say_grey_entry_and_work_item(ctx, people):
    from r2k.app.screens.grey import GreyQueueScreen
    from r2k.app.screens.workitems import WorkItemsScreen
    from tests.tui import highlight, loaded

    entry = grey.add(ctx, people["root"], "Backup rotation schedule")
    item = workitems.create(ctx, people["root"], "What is the VPN timeout?")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        for screen_type, row_id, action, words in ((GreyQueueScreen, entry["id"], "escalate", "grey entry"),
                                                    (WorkItemsScreen, item["id"], "rework", "work item")):
            app.push_screen(screen_type())
            await wait_for(pilot, lambda: isinstance(app.screen, screen_type) and loaded(app.screen),
                           what=screen_type.__name__)
            await highlight(pilot, row_id)
            getattr(app.screen, f"action_{action}")()  # a move its state cannot take: the core's refusal in place
            said = await after(pilot, "is not allowed")
            assert f"{words} {row_id} is" in said and "_" not in said.split(" is ")[0]


# --------------------------------------------------------------------------- versions and links

async def test_the_chain_shows_a_word_diff_between_versions(ctx, people):
    from r2k.app.screens.registry import RegistryScreen, word_diff
    from tests.test_tui_registry import highlight_answer, publish
    from tests.tui import chain_on, loaded

    answers = publish(ctx, people)
    first = registry.supersede(ctx, people["alice"], answers[0]["id"], "The Rotterdam warehouse has 16 loading docks.",
                               "two docks added")
    second = registry.supersede(ctx, people["alice"], first["id"], "The Rotterdam warehouse has 16 docks \x1b[31m.",
                                "shorter")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        app.push_screen(RegistryScreen())
        screen = await wait_for(pilot, lambda: isinstance(app.screen, RegistryScreen) and loaded(app.screen)
                                and app.screen, what="the registry")
        await highlight_answer(pilot, screen, second["id"])
        await wait_for(pilot, lambda: chain_on(screen)[0] == [answers[0]["id"], first["id"], second["id"]],
                       what="the chain")
        chain = screen.query_one("#chain").content
        lines = chain.plain.splitlines()
        changes = [line.strip() for line in lines if line.strip().startswith("changes:")]
        assert changes == ["changes: The Rotterdam warehouse has [-14-] {+16+} loading docks.",
                           "changes: … warehouse has 16 [-loading docks.-] {+docks \\x1b[31m.+}"]
        assert "\x1b" not in chain.plain  # stored text: the control shown, never sent
        # In the styles of styles/registry.tcss: the added words bold, the removed struck through.
        styles = {chain.plain[span.start:span.end]: span.style for span in chain.spans}
        assert styles["{+16+}"].bold and styles["[-14-]"].strike
    assert word_diff("same words", "same  words").plain == "(the same text)"


async def test_a_work_item_and_its_generated_candidate_link_to_each_other(ctx, people, tmp_path, services):
    from r2k.app.screens.workitems import WorkItemsScreen
    from r2k.core.services.answering import generation
    from tests.conftest import r2k_json
    from tests.test_tui_workitems import QUESTION, corpus
    from tests.tui import highlight, loaded

    corpus(ctx, people, tmp_path)
    item = workitems.create(ctx, people["root"], QUESTION)
    assert workitems.show(ctx, item["id"])["generated_candidate"] is None
    generation.generate_answer(ctx, item["id"])
    made = workitems.show(ctx, item["id"])["generated"][-1]["candidate_id"]
    # The command line, both ways.
    assert r2k_json("--as", "sam", "workitems", "show", str(item["id"]))["generated_candidate"] == {
        "id": made, "state": "PENDING"}
    assert f"generated_candidate  {{\"id\": {made}" in r2k("--as", "sam", "workitems", "show", str(item["id"])).stdout
    assert r2k_json("--as", "sam", "candidates", "show", str(made))["work_item"] == {
        "id": item["id"], "state": "READY_FOR_REVIEW", "link": "generated from"}
    shown = r2k("--as", "sam", "candidates", "show", str(made)).stdout
    assert f"Work item generated from work item {item['id']} (READY_FOR_REVIEW)" in shown
    horn = candidate_views.get(ctx, made)["horn_type"]
    judge = next(name for name in ("alice", "vera") if horn in people[name].horn_types)
    claims.claim(ctx, people[judge], made)  # the review screen carries on with it

    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        app.push_screen(WorkItemsScreen())
        await wait_for(pilot, lambda: isinstance(app.screen, WorkItemsScreen) and loaded(app.screen), what="the list")
        await highlight(pilot, item["id"])
        assert f"Generated candidate {made} (IN_REVIEW)" in text_of(app, "#wi-detail")

    # The review screen names the work item its candidate came from.
    app = make_app(reopened(services), judge)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot, horn)
        assert candidate_on(screen) == made
        assert f"Generated from work item {item['id']} (READY_FOR_REVIEW)" in text_of(app, "#horn")


# --------------------------------------------------------------------------- the hold itself

async def test_a_key_stopped_on_its_way_holds_up_nothing(monkeypatch):
    """A bound key that a screen handles itself and stops never comes back to the app: the keys
    after it go on at once (not after the hold's limit), and still in order."""
    from textual import events as ev
    from textual.app import App
    from textual.binding import Binding
    from textual.screen import ModalScreen, Screen
    from textual.widgets import Input

    from r2k.app import typeahead
    from r2k.app.typeahead import TypeAhead

    # The hold's limit made a minute, longer than wait_for waits: keys held to the limit fail the
    # test however slow the machine, and a slow machine fails nothing else.
    monkeypatch.setattr(typeahead, "HOLD_LIMIT", 60.0)

    class Ask(ModalScreen):
        def compose(self):
            yield Input(id="box")

        def on_mount(self):
            self.query_one(Input).focus()

    class Main(Screen):
        BINDINGS = [Binding("b", "nothing", "Nothing", id="nothing"), Binding("r", "ask", "Ask", id="ask")]

        def on_key(self, event: ev.Key) -> None:
            if event.key == "b":
                event.stop()  # taken here: never reaches the app's bindings

        def action_ask(self):
            self.app.push_screen(Ask())

    class Tiny(TypeAhead, App):
        def on_mount(self):
            self.push_screen(Main())

    app = Tiny()
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, Main), what="the screen")
        await one_write(pilot, "brxy")
        await wait_for(pilot, lambda: isinstance(app.screen, Ask) and app.screen.query_one(Input).value == "xy",
                       what="the typed-ahead keys in the box")


# --------------------------------------------------------------------------- bursts with editing keys

LONG = ("Dock 4 of the Rotterdam warehouse takes reefer trailers only; the night shift checks the seals, "
        "and the Stowage backup starts at noon.")


def seed_long(ctx, people) -> int:
    """One FACT candidate whose text is longer than eighty characters (and a second to carry on with)."""
    from r2k.core.services.validation import candidates

    first = candidates.add(ctx, people["root"], "Which trailers does dock 4 take?", LONG, "FACT")["id"]
    candidates.add(ctx, people["root"], "Fact question 2?", "A plain fact number 2.", "FACT")
    return first


async def test_editing_keys_typed_in_one_burst_publish_the_text_typed(ctx, people):
    """The issue's bursts, each queued whole before the app handles its first key: what is published
    is the text the editor shows after every key, in order."""
    first = seed_long(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == first
        await keys_together(pilot, "e", *["backspace"] * 3, "X", "Y", "Z", "ctrl+s")
        await wait_for(pilot, lambda: published_text(ctx, first) is not None, what="the revision published")
        assert published_text(ctx, first) == LONG[:-3] + "XYZ"
        assert not isinstance(app.screen, TextModal)


async def test_ctrl_end_and_backspaces_in_one_burst(ctx, people):
    first = seed_long(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        await keys_together(pilot, "e", "ctrl+home", "ctrl+end", *["backspace"] * 10, "X", "Y", "Z", "ctrl+s")
        await wait_for(pilot, lambda: published_text(ctx, first) is not None, what="the revision published")
        assert published_text(ctx, first) == LONG[:-10] + "XYZ"


async def test_eighty_backspaces_and_a_new_sentence_in_one_burst(ctx, people):
    first = seed_long(ctx, people)
    sentence = " The seals are checked at six."
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        await keys_together(pilot, "e", "ctrl+end", *["backspace"] * 80,
                            *[{" ": "space", ".": "full_stop"}.get(c, c) for c in sentence], "ctrl+s")
        await wait_for(pilot, lambda: published_text(ctx, first) is not None, what="the revision published")
        assert published_text(ctx, first) == LONG[:-80] + sentence


async def test_the_grey_add_dialog_keeps_its_fields_apart_in_a_burst(ctx, people):
    from r2k.app.screens.grey import GreyQueueScreen
    from tests.tui import open_screen

    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_screen(pilot, "Y", GreyQueueScreen)
        await keys_together(pilot, "plus", *"Aisle", "space", *"heat", "enter", *"27", "space", *"or", "space",
                            *"32", "enter")
        await wait_for(pilot, lambda: grey.list_entries(ctx), what="the entry added")
        entry = grey.get(ctx, 1)
        assert (entry["subject"], entry["detail"]) == ("Aisle heat", "27 or 32")


# --------------------------------------------------------------------------- the dialogs drawn whole

def drawn(app) -> str:
    """The screen on top as the terminal shows it, line by line."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


@pytest.mark.parametrize("width", [200, 80])
async def test_the_quit_question_draws_every_answer_whole(ctx, people, width):
    seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(width, 45)) as pilot:
        await open_review(pilot)
        modal = await quit_asking(pilot)
        await pilot.pause()
        shown = drawn(app)
        for choice in modal.choices:
            label = f"{choice.label} ({choice.key})"
            assert label in shown, f"{label!r} cut at {width} columns"
            button = modal.query_one(f"#choice-{choice.value}")
            assert button.region.right <= width and button.content_region.width >= len(label)
        await pilot.press("s")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceModal), what="the question gone")


async def test_nothing_to_revise_goes_once_the_text_is_changed(ctx, people):
    ids = seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        await keys_together(pilot, "e", "ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, TextModal) and "nothing to revise" in
                       text_of(app, "#modal-error"), what="the refusal")
        await keys_together(pilot, "space")  # the same text once trimmed: still nothing to revise
        assert "nothing to revise" in text_of(app, "#modal-error")
        await keys_together(pilot, "backspace", "backspace", "X")
        assert app.screen.query_one("#text", TextArea).text == "A plain fact number 1X"
        assert text_of(app, "#modal-error") == ""
        await keys_together(pilot, "backspace", "full_stop")  # as it stands again: said only once saved
        assert text_of(app, "#modal-error") == ""
        await keys_together(pilot, "ctrl+s")
        assert "nothing to revise" in text_of(app, "#modal-error")
        # A reason left out is said until one is typed.
        await keys_together(pilot, "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, TextModal), what="the editor closed")
        await keys_together(pilot, "r", "ctrl+s")
        await wait_for(pilot, lambda: "A reason is needed" in text_of(app, "#modal-error"), what="the reason asked")
        assert "or esc to cancel" in text_of(app, "#modal-error")
        await keys_together(pilot, "W")
        assert text_of(app, "#modal-error") == ""
        untouched(ctx, ids[0], candidate_views.get(ctx, ids[0])["version"])
