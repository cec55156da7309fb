"""A validator's session: pick a queue, claim, approve, revise, reject, escalate, release; errors in place."""
from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static, TextArea

from r2k.app.screens.queues import QueuePickerScreen
from r2k.app.screens.review import ReviewScreen
from r2k.app.widgets.modals import ChoiceModal, ReasonModal, TextModal
from r2k.core.services.answering import workitems
from r2k.core.services.documents import ingest
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import candidates
from tests.conftest import redis_snapshot
from tests.tui import (after, candidate_on, keys_together, make_app, message, open_modal, open_screen, review_settled,
                       shows, text_of, type_text, wait_for)

HANDBOOK = """# Dock Handbook

## Dock doors

The Rotterdam warehouse has 14 loading docks and a cold room of 1,800 square metres.

## Dock safety

If a trailer is at the dock, the dock leveller is lowered before anyone enters the trailer.

## Telematics

It is not yet decided whether telematics units will score drivers.
"""


def seed_facts(ctx, people, n: int = 3) -> list[int]:
    return [candidates.add(ctx, people["root"], f"Fact question {i}?", f"A plain fact number {i}.", "FACT")["id"]
            for i in range(1, n + 1)]


def ingest_handbook(ctx, people, tmp_path, monkeypatch) -> None:
    """A document with a FACT, a RULE and an OPEN_ISSUE; a relative path so screens render the same anywhere."""
    (tmp_path / "handbook.md").write_text(HANDBOOK)
    monkeypatch.chdir(tmp_path)
    ingest.ingest(ctx, people["root"], [Path("handbook.md")])


def state(ctx, candidate_id: int) -> str:
    return candidate_views.get(ctx, candidate_id)["state"]


async def open_picker(pilot) -> QueuePickerScreen:
    return await open_screen(pilot, "V", QueuePickerScreen)


async def open_review(pilot, horn: str = "FACT"):
    """From the dashboard: v, the Horn type's row, enter; wait until a candidate (or the empty state) shows."""
    picker = await open_picker(pilot)
    table = picker.query_one("#queue-table", DataTable)
    table.move_cursor(row=table.get_row_index(horn))
    await pilot.press("enter")
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen) and review_settled(app.screen),
                   what=f"the {horn} review screen")
    return app.screen


async def showing(pilot, screen, candidate_id: int, what: str = "the next candidate"):
    """Wait for the review screen's head line to name `candidate_id`."""
    await wait_for(pilot, lambda: candidate_on(screen) == candidate_id, what=what)


# --------------------------------------------------------------------------- the loop

async def test_approve_claims_and_shows_the_next_candidate_without_another_key(ctx, people):
    ids = seed_facts(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == ids[0]
        assert state(ctx, ids[0]) == "IN_REVIEW"
        assert candidate_views.get(ctx, ids[0])["claimed_by"] == "alice"
        assert "A plain fact number 1." in text_of(app, "#answer-text")
        assert "lease" in text_of(app, "#lease")

        await pilot.press("a")
        await showing(pilot, screen, ids[1])
        assert state(ctx, ids[0]) == "APPROVED"
        assert state(ctx, ids[1]) == "IN_REVIEW"
        assert "Approved candidate 1: answer 1 published" in message(app)
        assert "A plain fact number 2." in text_of(app, "#answer-text")


async def test_a_double_key_press_decides_once(ctx, people):
    ids = seed_facts(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        # Two presses queued at once: the second arrives while the first call is in flight
        # (Pilot's own press() would wait for the app to settle between them).
        app.simulate_key("a")
        app.simulate_key("a")
        await after(pilot, "Now showing candidate 2.")
        assert candidate_on(screen) == ids[1]
        assert [state(ctx, i) for i in ids] == ["APPROVED", "IN_REVIEW", "PENDING"]
        # The second press was ignored, not sent and refused.
        assert "Approved candidate 1" in message(app)
        assert not app.screen.query_one("#message", Static).has_class("error")
        assert [h["action"] for h in candidate_views.history(ctx, ids[0])] == ["extract", "claim", "approve"]


async def test_when_the_next_claim_fails_the_decision_is_still_reported_made(ctx, people, redis_operator):
    ids = seed_facts(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        limit = redis_operator.config_get("maxmemory")["maxmemory"]
        redis_operator.config_set("maxmemory", 1)  # Redis now refuses every write, the next pop's among them
        try:
            await pilot.press("a")
            await wait_for(pilot, lambda: "could not be claimed" in message(app), what="the error")
        finally:
            redis_operator.config_set("maxmemory", limit)
        assert "Approved candidate 1: answer 1 published; the next one could not be claimed" in message(app)
        assert candidate_on(screen) is None  # the approved candidate no longer shows as if still in review
        assert [state(ctx, i) for i in ids] == ["APPROVED", "PENDING", "PENDING"]
        await pilot.press("n")  # Redis takes writes again
        await showing(pilot, screen, ids[1])


async def test_with_no_worker_running_an_open_workstation_expires_leases(ctx, people):
    ids = seed_facts(ctx, people, 2)
    claims.claim_next(ctx, people["bob"], "FACT")  # bob claims, then walks away
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (ids[0],))
    app = make_app(ctx, "alice", sweep_every=0.2)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: state(ctx, ids[0]) == "PENDING", what="the expired lease swept")
        assert queue_index.queue(ctx).ids("FACT") == ids  # back at the head of its queue
        screen = await open_review(pilot)
        assert candidate_on(screen) == ids[0]


async def test_revise_through_the_modal(ctx, people):
    ids = seed_facts(ctx, people, 3)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        modal = await open_modal(pilot, "e", TextModal)
        area = modal.query_one("#text", TextArea)
        assert area.text == "A plain fact number 1."
        await type_text(pilot, " Checked")  # the cursor starts at the end of the text
        await pilot.press("ctrl+s")
        await showing(pilot, screen, ids[1])
        revised = candidate_views.get(ctx, ids[0])
        assert revised["state"] == "REVISED"
        assert revised["text"] == "A plain fact number 1. Checked"

        # Words typed ahead of ctrl+s (fast typing, a paste over SSH) are all saved.
        modal = await open_modal(pilot, "e", TextModal)
        await keys_together(pilot, "space", "O", "K", "ctrl+s")
        await showing(pilot, screen, ids[2], "the third candidate")
        assert candidate_views.get(ctx, ids[1])["text"] == "A plain fact number 2. OK"

        # The Save button does the same as ctrl+s.
        modal = await open_modal(pilot, "e", TextModal)
        modal.query_one("#text", TextArea).text = "Fact three, reworded."
        await pilot.click("#submit")
        await shows(pilot, "#idle", "The FACT queue is empty", what="the empty queue")
        assert candidate_views.get(ctx, ids[2])["text"] == "Fact three, reworded."
        assert "The FACT queue is empty. n to try again, esc to go back." in text_of(app, "#idle")


async def test_reject_needs_a_reason(ctx, people):
    ids = seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        modal = await open_modal(pilot, "r", ReasonModal)
        await pilot.press("enter")  # blank: told so, and the modal stays
        await pilot.pause()
        assert app.screen is modal
        assert "A reason is needed" in str(modal.query_one("#modal-error", Static).content)
        assert state(ctx, ids[0]) == "IN_REVIEW"

        await type_text(pilot, "the source says 12 docks")
        await pilot.press("enter")
        await showing(pilot, screen, ids[1])
        assert state(ctx, ids[0]) == "REJECTED"
        rejected = [h for h in candidate_views.history(ctx, ids[0]) if h["action"] == "reject"]
        assert rejected[0]["reason"] == "the source says 12 docks"
        assert "Rejected candidate 1" in message(app)


async def test_escalate_creates_a_work_item(ctx, people):
    ids = seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        await open_modal(pilot, "x", ReasonModal)
        await type_text(pilot, "needs the 2024 figures")
        await pilot.press("enter")
        await shows(pilot, "#idle", "The FACT queue is empty", what="the empty queue")
        assert state(ctx, ids[0]) == "ESCALATED"
        items = [w for w in workitems.list_items(ctx) if w["candidate_id"] == ids[0]]
        assert len(items) == 1
        assert f"work item {items[0]['id']} created" in message(app)


async def test_release_puts_it_back_at_the_head(ctx, people):
    ids = seed_facts(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        await pilot.press("u")
        await after(pilot, "Released candidate 1: back at the head of the FACT queue.")  # the CLI's words
        assert state(ctx, ids[0]) == "PENDING"
        assert candidate_on(screen) is None
        assert "back at the head of the FACT queue" in text_of(app, "#idle")

        # Decision keys say plainly that nothing is claimed.
        await pilot.press("a")
        await pilot.pause()
        assert "Nothing is claimed" in message(app)
        assert state(ctx, ids[0]) == "PENDING"

        await pilot.press("n")  # the head of the queue is the one just released
        await showing(pilot, screen, ids[0], "the released candidate again")
        assert state(ctx, ids[0]) == "IN_REVIEW"


async def test_escape_in_a_modal_changes_nothing(ctx, people):
    ids = seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        row_before = candidate_views.get(ctx, ids[0])
        history_before = candidate_views.history(ctx, ids[0])
        redis_before = redis_snapshot(ctx.redis)
        for key, modal in (("e", TextModal), ("r", ReasonModal), ("x", ReasonModal)):
            await open_modal(pilot, key, modal)
            await type_text(pilot, "typed then abandoned")
            await pilot.press("escape")
            if modal is TextModal:  # the editor asks before it throws a changed text away
                await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal), what="the discard question")
                await pilot.press("d")
            await wait_for(pilot, lambda: app.screen is screen, what="back on the review screen")
        assert candidate_views.get(ctx, ids[0]) == row_before
        assert candidate_views.history(ctx, ids[0]) == history_before
        assert redis_snapshot(ctx.redis) == redis_before
        assert candidate_on(screen) == ids[0]
        assert workitems.list_items(ctx) == []


async def test_approving_an_open_issue_is_refused_in_place(ctx, people, tmp_path, monkeypatch):
    ingest_handbook(ctx, people, tmp_path, monkeypatch)
    app = make_app(ctx, "vera")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot, "OPEN_ISSUE")
        shown = candidate_on(screen)
        assert candidate_views.get(ctx, shown)["horn_type"] == "OPEN_ISSUE"
        await pilot.press("a")
        await wait_for(pilot, lambda: "Not possible now" in message(app), what="the 422 message")
        assert "escalate it" in message(app)
        assert app.screen.query_one("#message", Static).has_class("error")
        assert state(ctx, shown) == "IN_REVIEW"
        assert candidate_on(screen) == shown
        screen.show_info("")
        await pilot.press("e")  # revising is refused before the modal asks for any typing
        await wait_for(pilot, lambda: "Not possible now" in message(app), what="the 422 for revise")
        assert "'revise' is not allowed" in message(app) and "escalate it" in message(app)
        assert app.screen is screen
        assert state(ctx, shown) == "IN_REVIEW"

        # The sources show the passage the candidate came from, highlighted.
        sources = screen.query_one("#sources", Static).content
        assert "handbook.md" in sources.plain
        highlighted = [sources.plain[s.start:s.end] for s in sources.spans if "yellow" in str(s.style)]
        assert highlighted == ["It is not yet decided whether telematics units will score drivers."]


async def test_keys_typed_ahead_open_the_queue_they_reach(ctx, people):
    fact = seed_facts(ctx, people, 1)[0]
    rule = candidates.add(ctx, people["root"], "A rule?", "If it rains, the dock closes.", "RULE")["id"]
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        picker = await open_picker(pilot)
        table = picker.query_one("#queue-table", DataTable)
        assert table.cursor_row == table.get_row_index("FACT")  # the first queue alice reviews
        await keys_together(pilot, "down", "enter")  # quicker than the screen draws
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen) and review_settled(app.screen),
                       what="a review screen")
        assert "RULE queue" in text_of(app, "#review-head") and candidate_on(app.screen) == rule
        assert state(ctx, rule) == "IN_REVIEW" and state(ctx, fact) == "PENDING"


async def test_a_partition_without_authority_is_shown_but_closed(ctx, people):
    seed_facts(ctx, people, 1)
    candidates.add(ctx, people["root"], "A rule?", "If it rains, the dock closes.", "RULE")
    app = make_app(ctx, "bob")
    async with app.run_test(size=(140, 45)) as pilot:
        picker = await open_picker(pilot)
        table = picker.query_one("#queue-table", DataTable)
        assert str(table.get_cell("RULE", "authority")) == "no authority"
        assert str(table.get_cell("FACT", "authority")) == "yes"
        assert str(table.get_cell("RULE", "pending")) == "1"
        table.move_cursor(row=table.get_row_index("RULE"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: "no authority for RULE" in message(app), what="the refusal")
        assert isinstance(app.screen, QueuePickerScreen)
        assert state(ctx, 2) == "PENDING"


async def test_the_picker_follows_other_peoples_claims_live(ctx, people):
    seed_facts(ctx, people, 3)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        picker = await open_picker(pilot)
        table = picker.query_one("#queue-table", DataTable)
        assert str(table.get_cell("FACT", "pending")) == "3"
        assert str(table.get_cell("FACT", "oldest")) == "<1m"
        claims.claim_next(ctx, people["bob"], "FACT")  # someone else, elsewhere
        await wait_for(pilot, lambda: str(table.get_cell("FACT", "pending")) == "2", what="the live count")
        assert str(table.get_cell("FACT", "in_review")) == "1"


async def test_going_back_keeps_the_claim_and_coming_back_resumes_it(ctx, people):
    ids = seed_facts(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, QueuePickerScreen), what="the picker")
        assert "Candidate 1 stays claimed by you" in message(app)
        assert state(ctx, ids[0]) == "IN_REVIEW"

        table = app.screen.query_one("#queue-table", DataTable)
        table.move_cursor(row=table.get_row_index("FACT"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen) and app.screen is not screen
                       and candidate_on(app.screen), what="the review screen again")
        assert candidate_on(app.screen) == ids[0]
        assert "carrying on with it" in message(app)
        assert state(ctx, ids[1]) == "PENDING"


async def test_an_empty_queue_says_so_and_n_tries_again(ctx, people):
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) is None
        assert text_of(app, "#idle") == "The FACT queue is empty. n to try again, esc to go back."
        new = candidates.add(ctx, people["root"], "Late fact?", "It arrived later.", "FACT")
        await pilot.press("n")
        await showing(pilot, screen, new["id"], "the new candidate")
        assert text_of(app, "#idle") == ""  # the idle pane gave way to the candidate


async def test_a_stale_version_is_a_conflict_shown_in_place(ctx, people):
    ids = seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice", listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        # Behind the screen's back the claim ends and someone else takes the candidate.
        candidates.release(ctx, people["alice"], ids[0])
        claims.claim(ctx, people["bob"], ids[0])
        await pilot.press("a")
        await wait_for(pilot, lambda: "Someone else got there first" in message(app), what="the 409 message")
        await shows(pilot, "#review-head", "claimed by bob", what="the candidate as it stands")
        assert state(ctx, ids[0]) == "IN_REVIEW"
        assert candidate_views.get(ctx, ids[0])["claimed_by"] == "bob"


async def test_a_disputed_answer_comes_back_first_and_approving_it_publishes_a_new_version(ctx, people):
    from r2k.core.services.answers import registry

    ids = seed_facts(ctx, people, 2)
    claims.claim_next(ctx, people["bob"], "FACT")
    answer = candidates.approve(ctx, people["bob"], ids[0])["answer"]
    registry.dispute(ctx, people["bob"], answer["id"], "the docks were rebuilt")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == ids[0]  # the head of the queue, before candidate 2
        horn = text_of(app, "#horn")
        assert f"Re-review: its published answer {answer['id']} is DISPUTED (the docks were rebuilt)" in horn
        await pilot.press("a")
        await showing(pilot, screen, ids[1])
        assert registry.show(ctx, answer["id"])["status"] == "SUPERSEDED"
        newest = registry.chain(ctx, answer["id"])[-1]
        assert newest["status"] == "APPROVED"
        assert (f"Approved candidate {ids[0]}: answer {newest['id']} published, superseding disputed answer "
                f"{answer['id']}. Now showing candidate {ids[1]}.") in message(app)


async def test_an_unknown_user_opens_no_queue(ctx, people):
    seed_facts(ctx, people, 1)
    app = make_app(ctx, "mallory")
    async with app.run_test(size=(140, 45)) as pilot:
        picker = await open_picker(pilot)
        table = picker.query_one("#queue-table", DataTable)
        assert str(table.get_cell("FACT", "authority")) == "no authority"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "unknown user 'mallory'" in message(app), what="the refusal")
        assert state(ctx, 1) == "PENDING"


async def test_help_lists_the_review_keys(ctx, people):
    from r2k.app.screens.help import HelpScreen

    seed_facts(ctx, people, 1)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_review(pilot)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        keys = app.screen.query_one(DataTable)
        described = {keys.get_row_at(i)[1] for i in range(keys.row_count)}
        assert {"Approve", "Revise", "Reject", "Escalate", "Release", "Claim next", "Back"} <= described


# --------------------------------------------------------------------------- snapshots

async def settle_picker(pilot):
    await open_picker(pilot)
    await pilot.pause()


async def settle_review(pilot):
    screen = await open_review(pilot)
    # The lease counts down every second: freeze it at a fixed value for the picture.
    screen.lease_timer.pause()
    screen.query_one("#lease", Static).update("lease 30:00 left")
    await pilot.pause()


def test_snapshot_queue_picker(ctx, people, snap_compare):
    seed_facts(ctx, people, 3)
    candidates.add(ctx, people["root"], "A rule?", "If it rains, the dock closes.", "RULE")
    claims.claim_next(ctx, people["bob"], "FACT")
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=(140, 45), run_before=settle_picker)


def test_snapshot_review(ctx, people, tmp_path, monkeypatch, snap_compare):
    ingest_handbook(ctx, people, tmp_path, monkeypatch)
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=(140, 45), run_before=settle_review)
