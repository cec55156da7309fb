"""Review features on the workstation (docs/architecture.md, "Guidelines", "Comments", "Bulk actions"):
the queue's guidelines beside the candidate, mentions told live, comments on a candidate, bulk marks."""
from __future__ import annotations

from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBlock

from r2k.core.services.session import CHANNEL
from r2k.core.services.validation import guidelines
from tests.test_tui_validation import open_review, seed_facts
from tests.tui import candidate_on, make_app, message, text_of, wait_for

# A terminal title change (OSC 0) and a bell, as an admin's file might carry them.
HOSTILE = "\x1b]0;pwned\x07"


def guidelines_text(app) -> str:
    """What the guidelines pane draws: its head line, then the Markdown's blocks as text."""
    screen = app.screen
    if not screen.has_class("guidelines-open"):
        return ""
    blocks = [str(block.render()) for block in screen.query_one("#guidelines", Markdown).query(MarkdownBlock)]
    return "\n".join([text_of(app, "#guidelines-head"), *[b for b in blocks if b]])


async def listening(pilot, count: int = 1) -> None:
    """Wait until the app hears notices (a pub/sub notice is not stored)."""
    redis = pilot.app.ctx.redis
    await wait_for(pilot, lambda: dict(redis.pubsub_numsub(CHANNEL)).get(CHANNEL.encode(), 0) >= count,
                   what="the app subscribed")


# --------------------------------------------------------------------------- guidelines

async def test_h_shows_the_queues_guidelines_as_markdown_and_follows_a_new_version(ctx, people):
    ids = seed_facts(ctx, people, 1)
    guidelines.set_guidelines(ctx, people["root"], "FACT",
                              f"# Judging facts\n\nA fact names **one** number.{HOSTILE}\n\n- check the unit\n")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(120, 45)) as pilot:
        screen = await open_review(pilot)
        await listening(pilot)
        assert candidate_on(screen) == ids[0]
        assert guidelines_text(app) == ""  # hidden until asked for
        await pilot.press("h")
        text = await wait_for(pilot, lambda: "version 1" in (t := guidelines_text(app)) and t, what="the guidelines")
        assert "FACT guidelines, version 1 by root" in text
        assert "Judging facts" in text and "check the unit" in text
        assert "# Judging" not in text and "**" not in text  # drawn as Markdown, not as its source
        # The stored controls are shown as escapes, never sent to the terminal.
        assert "\\x1b]0;pwned\\x07" in text and "\x1b" not in text and "\x07" not in text
        assert candidate_on(screen) == ids[0]  # the candidate stays claimed and shown

        # An admin writes a new version elsewhere: the open pane shows it.
        guidelines.set_guidelines(ctx, people["root"], "FACT", "A fact is checked against **two** sources.")
        text = await wait_for(pilot, lambda: "version 2" in (t := guidelines_text(app)) and t, what="version 2")
        assert "checked against two sources" in text and "Judging facts" not in text

        await pilot.press("h")  # hides it again
        assert guidelines_text(app) == ""
        assert not screen.query_one("#review-guidelines").display


async def test_a_queue_without_guidelines_says_so(ctx, people):
    seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice", listen=False)
    async with app.run_test(size=(120, 45)) as pilot:
        await open_review(pilot)
        await pilot.press("h")
        text = await wait_for(pilot, lambda: "No guidelines yet" in (t := guidelines_text(app)) and t,
                              what="the empty pane")
        assert "No guidelines yet for the FACT queue" in text
        assert message(app) == "" or "guidelines" not in message(app)


# --------------------------------------------------------------------------- mentions

def toasts(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_a_mention_by_someone_else_is_told_at_once_and_terminal_safe(ctx, people):
    from r2k.core.services.validation import comments

    (cid,) = seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(120, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        await listening(pilot)
        # Not news for alice: her own comment naming herself, and bob's naming sam alone.
        comments.add(ctx, people["alice"], "candidate", cid, "note to self @alice")
        comments.add(ctx, people["bob"], "candidate", cid, "@sam have a look")
        comments.add(ctx, people["bob"], "candidate", cid, f"@alice is this right?{HOSTILE}")
        said = await wait_for(pilot, lambda: [t for t in toasts(app) if "mentioned you" in t], what="the mention")
        await wait_for(pilot, lambda: all(w.is_finished for w in app.workers if w.group == "mentions"),
                       what="every comment read")
        assert toasts(app).count(said[0]) == 1 and len([t for t in toasts(app) if "mentioned" in t]) == 1
        assert said[0] == f"bob mentioned you on candidate {cid}: @alice is this right?\\x1b]0;pwned\\x07"
        assert "\x1b" not in said[0]


# --------------------------------------------------------------------------- comments

async def test_comments_pane_lists_adds_and_follows_the_candidates_comments(ctx, people):
    from r2k.app.widgets.modals import ReasonModal
    from r2k.core.services.validation import comments
    from tests.tui import after, open_modal, type_text

    (cid,) = seed_facts(ctx, people, 1)
    comments.add(ctx, people["bob"], "candidate", cid, f"Check the unit.{HOSTILE}")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(120, 45)) as pilot:
        screen = await open_review(pilot)
        await listening(pilot)
        assert text_of(app, "#comments") == ""  # hidden until asked for
        await pilot.press("M")
        text = await wait_for(pilot, lambda: "Check the unit" in (t := text_of(app, "#comments")) and t,
                              what="the comments")
        assert "bob" in text and "UTC" in text
        assert "\\x1b]0;pwned\\x07" in text and "\x1b" not in text
        assert f"Comments on candidate {cid} (1)" in str(screen.query_one("#review-comments").border_title)

        # escape cancels: nothing is added
        await open_modal(pilot, "L", ReasonModal)
        await type_text(pilot, "never mind")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="the modal closed")
        assert len(comments.list_comments(ctx, "candidate", cid)) == 1

        await open_modal(pilot, "L", ReasonModal)
        await type_text(pilot, "Looks right to me @bob")
        await pilot.press("ctrl+s")
        await after(pilot, f"Comment added to candidate {cid}.")
        await wait_for(pilot, lambda: "Looks right to me @bob" in text_of(app, "#comments"), what="the new comment")
        stored = comments.list_comments(ctx, "candidate", cid)
        assert [(c["author"], c["body"], c["mentions"]) for c in stored][1:] == [("alice", "Looks right to me @bob", ["bob"])]
        assert candidate_on(screen) == cid  # still claimed and shown

        # someone else comments: the open pane shows it live
        comments.add(ctx, people["sam"], "candidate", cid, "Agreed.")
        await wait_for(pilot, lambda: "Agreed." in text_of(app, "#comments"), what="sam's comment, live")
        assert f"Comments on candidate {cid} (3)" in str(screen.query_one("#review-comments").border_title)

        await pilot.press("M")
        assert text_of(app, "#comments") == ""


# --------------------------------------------------------------------------- bulk marks (grey queue)

def id_cells(app) -> dict[int, str]:
    """entry id -> its id cell as drawn (a mark shows before a marked entry's id)."""
    from tests.tui import cell_text

    table = app.screen.query_one("#grey-table")
    return {int(key.value): cell_text(table.get_row(key)[0]) for key in table.rows}


async def test_marked_grey_entries_take_one_move_each_after_a_confirmation_naming_the_count(ctx, people):
    from r2k.app.screens.grey import GreyQueueScreen
    from r2k.app.widgets.modals import ChoiceModal, FieldsModal
    from r2k.core.services.grey_entries import grey
    from tests.tui import after, answer_modal, highlight, open_modal, open_screen

    root = people["root"]
    e1, e2, e3, e4 = [grey.add(ctx, root, f"Unknown number {i}", "")["id"] for i in range(1, 5)]
    grey.transition(ctx, root, e3, "assign", assignee="root")  # UnderReview: it cannot be dismissed
    app = make_app(ctx, "sam", listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_screen(pilot, "Y", GreyQueueScreen)
        await highlight(pilot, e1)
        await pilot.press("space")
        await highlight(pilot, e3)
        await pilot.press("space")
        assert id_cells(app) == {e1: f"●{e1}", e2: str(e2), e3: f"●{e3}", e4: str(e4)}
        assert "2 entries marked" in message(app)

        # The confirmation names the count; escape there changes nothing.
        modal = await open_modal(pilot, "b", FieldsModal)
        assert "Dismiss 2 marked entries?" in modal.form_title
        await pilot.press("escape")
        await after(pilot, "Cancelled: nothing changed.")
        assert {e: grey.get(ctx, e)["state"] for e in (e1, e3)} == {e1: "Pending", e3: "UnderReview"}
        assert screen.marked == {e1, e3}

        await pilot.press("b")
        await answer_modal(pilot, "duplicates")
        said = await after(pilot, "Dismiss: 1 done, 1 failed.")
        assert f"entry {e3}:" in said and f"entry {e1}:" not in said  # the failure, by item
        states = {e: grey.get(ctx, e)["state"] for e in (e1, e2, e3, e4)}
        assert states == {e1: "Dismissed", e2: "Pending", e3: "UnderReview", e4: "Pending"}
        assert grey.get(ctx, e1)["reason"] == "duplicates"
        await wait_for(pilot, lambda: all("●" not in c for c in id_cells(app).values()), what="the marks cleared")

        # * marks every entry shown, and again unmarks them; a move without questions still confirms.
        await pilot.press("asterisk")
        assert screen.marked == {e1, e2, e3, e4} and "4 entries marked" in message(app)
        await pilot.press("asterisk")
        assert screen.marked == set()
        await pilot.press("asterisk")
        choice = await open_modal(pilot, "i", ChoiceModal)
        assert choice.title_text == "Assign 4 marked entries?"
        await pilot.press("n")
        await after(pilot, "Cancelled: nothing changed.")
        assert grey.get(ctx, e2)["state"] == "Pending"
        await open_modal(pilot, "i", ChoiceModal)
        await pilot.press("y")
        said = await after(pilot, "Assign: 2 done, 2 failed.")
        assert f"entry {e1}:" in said and f"entry {e3}:" in said
        assert {e: grey.get(ctx, e)["assignee"] for e in (e2, e4)} == {e2: "sam", e4: "sam"}


async def test_the_grey_detail_has_the_entrys_comments_and_follows_the_highlight(ctx, people):
    from r2k.app.screens.grey import GreyQueueScreen
    from r2k.app.widgets.modals import ReasonModal
    from r2k.core.services.grey_entries import grey
    from r2k.core.services.validation import comments
    from tests.tui import after, highlight, open_modal, open_screen, type_text

    root = people["root"]
    e1, e2 = [grey.add(ctx, root, f"Unknown number {i}", "")["id"] for i in (1, 2)]
    comments.add(ctx, root, "grey", e1, f"Ask the network team.{HOSTILE}")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_screen(pilot, "Y", GreyQueueScreen)
        await listening(pilot)
        await highlight(pilot, e1)
        await pilot.press("M")
        text = await wait_for(pilot, lambda: "Ask the network team" in (t := text_of(app, "#comments")) and t,
                              what="entry 1's comments")
        assert f"Comments on entry {e1} (1)" in text and "\\x1b]0;pwned\\x07" in text and "\x1b" not in text
        await highlight(pilot, e2)  # the pane follows the highlighted entry
        await wait_for(pilot, lambda: "No comments yet." in text_of(app, "#comments"), what="entry 2's (none)")
        assert f"Comments on entry {e2} (0)" in text_of(app, "#comments")

        await open_modal(pilot, "L", ReasonModal)
        await type_text(pilot, "Mine now")
        await pilot.press("ctrl+s")
        await after(pilot, f"Comment added to entry {e2}.")
        await wait_for(pilot, lambda: "Mine now" in text_of(app, "#comments"), what="the new comment")
        assert [(c["author"], c["body"]) for c in comments.list_comments(ctx, "grey", e2)] == [("sam", "Mine now")]
        assert screen.marked == set()  # a comment marks nothing

        comments.add(ctx, root, "grey", e2, "Thanks.")  # from elsewhere: shown live
        await wait_for(pilot, lambda: "Thanks." in text_of(app, "#comments"), what="root's comment, live")


async def test_the_registry_detail_has_the_answers_comments(ctx, people):
    from r2k.app.widgets.modals import ReasonModal
    from r2k.core.services.validation import comments
    from tests.test_tui_registry import highlight_answer, open_registry, publish
    from tests.tui import after, open_modal, type_text

    answers = publish(ctx, people)
    first, second = answers[0]["id"], answers[1]["id"]
    comments.add(ctx, people["bob"], "answer", first, "Still 14 docks after the move?")
    app = make_app(ctx, "alice", listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        await highlight_answer(pilot, screen, first)
        await pilot.press("M")
        text = await wait_for(pilot, lambda: "Still 14 docks" in (t := text_of(app, "#comments")) and t,
                              what="the answer's comments")
        assert f"Comments on answer {first} (1)" in text and "bob" in text
        await open_modal(pilot, "L", ReasonModal)
        await type_text(pilot, "Yes, checked")
        await pilot.press("enter")
        await after(pilot, f"Comment added to answer {first}.")
        await wait_for(pilot, lambda: "Yes, checked" in text_of(app, "#comments"), what="the new comment")
        assert [c["body"] for c in comments.list_comments(ctx, "answer", first)][-1] == "Yes, checked"
        await highlight_answer(pilot, screen, second)
        await wait_for(pilot, lambda: f"Comments on answer {second} (0)" in text_of(app, "#comments"),
                       what="the next answer's (none)")


async def test_marked_answers_are_retired_each_on_its_own_with_failures_listed(ctx, people):
    from r2k.app.widgets.modals import ReasonModal
    from r2k.core.services.answers import registry
    from tests.test_tui_registry import highlight_answer, open_registry, publish
    from tests.tui import after, cell_text, open_modal, type_text

    a1, a2, a3 = [a["id"] for a in publish(ctx, people)]
    app = make_app(ctx, "alice", listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        table = screen.query_one("#results")
        await highlight_answer(pilot, screen, a1)
        await pilot.press("space")
        await highlight_answer(pilot, screen, a2)
        await pilot.press("space")
        assert {int(k.value): cell_text(table.get_row(k)[0]) for k in table.rows} == {a1: f"●{a1}", a2: f"●{a2}",
                                                                                       a3: str(a3)}
        modal = await open_modal(pilot, "t", ReasonModal)
        assert modal.title_text == "Retire 2 marked answers? Each is its own move"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="back on the registry")
        assert {registry.show(ctx, a)["status"] for a in (a1, a2, a3)} == {"APPROVED"}

        registry.dispute(ctx, people["root"], a2, "someone got there first")  # its version as shown is stale now
        await open_modal(pilot, "t", ReasonModal)
        await type_text(pilot, "moved to the handbook")
        await pilot.press("enter")
        said = await after(pilot, "Retire: 1 done, 1 failed.")
        assert f"answer {a2}:" in said and f"answer {a1}:" not in said
        assert [registry.show(ctx, a)["status"] for a in (a1, a2, a3)] == ["RETIRED", "DISPUTED", "APPROVED"]
        assert screen.marked == set()
