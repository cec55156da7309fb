"""The grey-queue triage screen, as a specialist works it: filter, assign, escalate, reject, reopen,
resolve, dismiss; illegal moves answered in place; escalations reaching another running app."""
from __future__ import annotations

from textual.widgets import DataTable, Input, Select, Static

from r2k.app.screens.grey import GreyQueueScreen
from r2k.app.widgets.modals import FieldsModal
from r2k.core.bootstrap import bootstrap
from r2k.core.notices import CHANNEL
from r2k.core.services.grey_entries import grey
from tests.tui import (after, answer_modal, detail_in, highlight, make_app, open_modal, open_screen, shows, text_of,
                       wait_for)


def table_of(app) -> DataTable:
    return app.screen.query_one("#grey-table", DataTable)


def shown(app) -> dict[int, str]:
    """id -> state cell (plain text) of every listed entry."""
    table = table_of(app)
    return {int(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]).replace("[b]", "").replace("[/b]", "")
            for i in range(table.row_count)}


async def open_grey(pilot) -> GreyQueueScreen:
    return await open_screen(pilot, "Y", GreyQueueScreen)


def seed(ctx, people) -> list[dict]:
    root = people["root"]
    entries = [grey.add(ctx, root, "Backup rotation schedule", "Nobody wrote down how often backups rotate."),
               grey.add(ctx, root, "VPN certificate owner", "Which team renews the VPN certificates?"),
               grey.add(ctx, root, "Printer firmware version", ""),
               grey.add(ctx, root, "Backup encryption key location", "Where is the backup key kept?")]
    return entries


async def test_filter_by_state_text_and_mine(ctx, people):
    e1, e2, e3, e4 = seed(ctx, people)
    grey.transition(ctx, people["sam"], e2["id"], "assign", assignee="sam")
    grey.transition(ctx, people["root"], e3["id"], "assign", assignee="root")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_grey(pilot)
        assert shown(app) == {1: "Pending", 2: "UnderReview", 3: "UnderReview", 4: "Pending"}

        screen.query_one("#grey-state", Select).value = "UnderReview"
        await wait_for(pilot, lambda: set(shown(app)) == {2, 3}, what="state filter")

        screen.query_one("#grey-state", Select).value = "all"
        await wait_for(pilot, lambda: len(shown(app)) == 4, what="all states")
        await pilot.press("slash")
        assert isinstance(screen.focused, Input)
        await pilot.press(*"backup")
        await wait_for(pilot, lambda: set(shown(app)) == {1, 4}, what="text search")
        await pilot.press("escape")  # leaves the search box, not the screen
        assert isinstance(app.screen, GreyQueueScreen) and isinstance(screen.focused, DataTable)

        screen.query_one("#grey-search", Input).value = ""
        await wait_for(pilot, lambda: len(shown(app)) == 4, what="search cleared")
        await pilot.press("l")
        await wait_for(pilot, lambda: set(shown(app)) == {2}, what="mine only")
        assert "Mine only (sam)" in text_of(app, "#grey-mine")
        await pilot.press("l")
        await wait_for(pilot, lambda: len(shown(app)) == 4, what="everyone's again")


async def test_triage_an_entry_through_its_life(ctx, people):
    e1, e2, *_ = seed(ctx, people)
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_grey(pilot)
        await highlight(pilot, e1["id"])

        await pilot.press("i")
        await after(pilot, "assign → UnderReview")
        entry = grey.get(ctx, e1["id"])
        assert (entry["state"], entry["assignee"]) == ("UnderReview", "sam")
        assert [(h["action"], h["from_state"], h["to_state"], h["actor"]) for h in grey.history(ctx, e1["id"])][-1] \
            == ("assign", "Pending", "UnderReview", "sam")
        await wait_for(pilot, lambda: shown(app)[e1["id"]] == "UnderReview", what="list follows")

        # Escape in the modal changes nothing.
        await highlight(pilot, e1["id"])
        version = grey.get(ctx, e1["id"])["version"]
        await open_modal(pilot, "x", FieldsModal)
        await pilot.press(*"abc")
        await pilot.press("escape")
        await after(pilot, "nothing changed")
        assert grey.get(ctx, e1["id"])["version"] == version
        assert grey.get(ctx, e1["id"])["state"] == "UnderReview"

        # A required reason: enter on an empty box keeps the modal open.
        await open_modal(pilot, "x", FieldsModal)
        await pilot.press("enter")
        assert isinstance(app.screen, FieldsModal)
        assert "required" in str(app.screen.query_one(".fields-error", Static).render())
        await pilot.press(*"security", "enter")
        await after(pilot, "escalate → Escalated")
        entry = grey.get(ctx, e1["id"])
        assert (entry["state"], entry["reason"]) == ("Escalated", "security")
        await wait_for(pilot, lambda: shown(app)[e1["id"]] == "⚑ Escalated", what="escalation marked")
        await wait_for(pilot, lambda: "⚑ Entry 1 · Escalated" in text_of(app, "#grey-detail"), what="detail marked")

        await pilot.press("X")
        await after(pilot, "deescalate → UnderReview")
        assert grey.get(ctx, e1["id"])["state"] == "UnderReview"

        await detail_in(pilot, "UnderReview")
        await pilot.press("r")
        await answer_modal(pilot, "dup")
        await after(pilot, "reject → Rejected")
        entry = grey.get(ctx, e1["id"])
        assert (entry["state"], entry["reason"], entry["rejected_by"]) == ("Rejected", "dup", "sam")

        await detail_in(pilot, "Rejected")
        await pilot.press("o")
        await answer_modal(pilot, "not dup")
        await after(pilot, "reopen → Pending")
        entry = grey.get(ctx, e1["id"])
        assert (entry["state"], entry["reason"], entry["rejected_by"]) == ("Pending", "not dup", None)

        await detail_in(pilot, "Pending")
        await pilot.press("i")
        await after(pilot, "assign → UnderReview")
        await detail_in(pilot, "UnderReview")
        await pilot.press("v")
        await answer_modal(pilot, "runbook")
        await after(pilot, "resolve → Resolved")
        entry = grey.get(ctx, e1["id"])
        assert (entry["state"], entry["resolution"]) == ("Resolved", "runbook")

        await highlight(pilot, e2["id"])
        await pilot.press("b")
        await answer_modal(pilot, "")
        await after(pilot, "dismiss → Dismissed")
        assert grey.get(ctx, e2["id"])["state"] == "Dismissed"

        actions = [h["action"] for h in grey.history(ctx, e1["id"])]
        assert actions == ["add", "assign", "escalate", "deescalate", "reject", "reopen", "assign", "resolve"]


async def test_illegal_move_is_answered_in_place_and_changes_nothing(ctx, people):
    e1, *_ = seed(ctx, people)
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_grey(pilot)
        await highlight(pilot, e1["id"])
        for key, action in [("x", "escalate"), ("X", "deescalate"), ("j", "reset"), ("r", "reject")]:
            await pilot.press(key)
            said = await after(pilot, f"'{action}' is not allowed")
            assert said.startswith("Not possible now: grey entry 1 is Pending")
            assert not isinstance(app.screen, FieldsModal)  # no modal for a move that cannot be made
        entry = grey.get(ctx, e1["id"])
        assert (entry["state"], entry["version"]) == ("Pending", 1)
        assert [h["action"] for h in grey.history(ctx, e1["id"])] == ["add"]

        # The reopen reason is required from Rejected, asked for in the modal.
        grey.transition(ctx, people["sam"], e1["id"], "assign", assignee="sam")
        grey.transition(ctx, people["sam"], e1["id"], "reject", reason="noise", rejected_by="sam")
        await wait_for(pilot, lambda: shown(app)[e1["id"]] == "Rejected", what="live update")
        await detail_in(pilot, "Rejected")
        await open_modal(pilot, "o", FieldsModal)
        assert "(required)" in " ".join(str(s.render()) for s in app.screen.query(".fields-label"))
        await pilot.press("escape")
        await after(pilot, "nothing changed")
        assert grey.get(ctx, e1["id"])["state"] == "Rejected"


async def test_a_validators_entry_is_left_to_the_automation(ctx, people):
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_grey(pilot)
        await pilot.press("plus")
        await answer_modal(pilot, "Aisle heat", "")
        await after(pilot, "Entry 1 added (Pending): the automation looks for sources first.")
        entry = grey.get(ctx, 1)
        assert (entry["state"], entry["assignee"], entry["created_by"]) == ("Pending", None, "alice")


async def test_a_validator_is_refused_in_place(ctx, people):
    e1, *_ = seed(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_grey(pilot)
        await highlight(pilot, e1["id"])
        await pilot.press("i")
        said = await after(pilot, "Not allowed")
        assert "specialist" in said
        assert grey.get(ctx, e1["id"])["state"] == "Pending"


async def test_add_and_assign_to_someone(ctx, people):
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_grey(pilot)
        assert "No entries" in text_of(app, "#grey-detail")
        await pilot.press("plus")
        await answer_modal(pilot, "Aisle heat", "27 or 32")
        # A specialist's entry goes to their own review at once: the automation never takes it.
        await after(pilot, "Entry 1 added for your review (UnderReview): u leaves it to the automation.")
        entry = grey.get(ctx, 1)
        assert (entry["subject"], entry["state"], entry["created_by"], entry["assignee"]) == \
            ("Aisle heat", "UnderReview", "sam", "sam")
        assert [h["action"] for h in grey.history(ctx, 1)] == ["add", "assign"]
        await highlight(pilot, 1)
        await pilot.press("u")  # given back: Pending, for the automation or anyone to take
        await after(pilot, "unassign → Pending")
        await detail_in(pilot, "Pending")
        await pilot.press("A")
        await answer_modal(pilot, "bob", "see p4")
        await after(pilot, "assign → UnderReview (assignee bob)")
        entry = grey.get(ctx, 1)
        assert (entry["assignee"], entry["notes"]) == ("bob", "see p4")
        await wait_for(pilot, lambda: "see p4" in text_of(app, "#grey-detail"), what="notes shown")

        # An unknown assignee is the core's 400, in place.
        grey.transition(ctx, people["sam"], 1, "unassign")
        await detail_in(pilot, "Pending")
        await pilot.press("A")
        await answer_modal(pilot, "nobody", "")
        await after(pilot, "not a known user")
        assert grey.get(ctx, 1)["state"] == "Pending"


async def test_escalation_reaches_a_second_running_app(ctx, people):
    """sam watches the grey queue; root escalates in another app: sam gets the toast, the badge and the row."""
    e1, *_ = seed(ctx, people)
    grey.transition(ctx, people["root"], e1["id"], "assign", assignee="root")
    other = bootstrap(ctx.settings, pool_size=4)  # the second workstation has its own connections
    sams = make_app(ctx, "sam", listen=True)
    roots = make_app(other, "root", listen=True)
    async with sams.run_test(size=(140, 45)) as sam:
        screen = await open_grey(sam)
        assert "no new escalations" in text_of(sams, "#grey-badge")
        async with roots.run_test(size=(140, 45)) as root:
            await open_grey(root)
            # Both apps listen before anyone acts (a pub/sub notice is not stored).
            await wait_for(root, lambda: dict(ctx.redis.pubsub_numsub(CHANNEL)).get(CHANNEL.encode(), 0) >= 2,
                           what="both apps subscribed")
            await highlight(root, e1["id"])
            await root.press("x")
            await answer_modal(root, "leak")
            await after(root, "escalate → Escalated")

            await wait_for(sam, lambda: any("escalated by root" in n.message for n in sams._notifications),
                           what="the toast in sam's app")
            await wait_for(sam, lambda: "⚑ 1 new escalation" in text_of(sams, "#grey-badge"), what="the badge")
            assert screen.title == "Grey queue · ⚑ 1 new"
            await wait_for(sam, lambda: shown(sams)[e1["id"]] == "⚑ Escalated", what="the row, live")
            assert sams.grey_badge == 0  # seen: sam is looking at the grey queue
            # root escalated it, so root's own app does not count it as news
            assert "no new escalations" in text_of(roots, "#grey-badge")

        # Away and back: what arrived meanwhile shows, and viewing resets it.
        await sam.press("escape")
        await wait_for(sam, lambda: not isinstance(sams.screen, GreyQueueScreen), what="back to the dashboard")
        grey.transition(ctx, people["root"], e1["id"], "deescalate")
        grey.transition(ctx, people["root"], e1["id"], "escalate", reason="again")
        await wait_for(sam, lambda: getattr(sams, "grey_badge", 0) == 1, what="counted while away")
        await open_grey(sam)
        assert "⚑ 1 new escalation" in text_of(sams, "#grey-badge")
        assert sams.grey_badge == 0


def seed_for_snapshot(ctx, people) -> None:
    e1, e2, e3, e4 = seed(ctx, people)
    sam = people["sam"]
    grey.transition(ctx, sam, e2["id"], "assign", assignee="sam", notes="ask the network team")
    grey.transition(ctx, sam, e2["id"], "escalate", reason="certificates expire next week")
    grey.transition(ctx, sam, e3["id"], "dismiss", reason="not knowledge")


def test_snapshot_grey_queue(ctx, people, snap_compare):
    seed_for_snapshot(ctx, people)

    async def open_it(pilot):
        await open_grey(pilot)
        await shows(pilot, "#grey-detail", "Entry 2 · Escalated", what="escalated entry first, with its detail")
        await pilot.pause()

    assert snap_compare(make_app(ctx, "sam", listen=False), terminal_size=(140, 45), run_before=open_it)
