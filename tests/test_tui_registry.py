"""The registry browser: search as you type, the status filter, dispute, supersede (with its chain), retire."""
from __future__ import annotations

from textual.widgets import DataTable, Input, Select, Static

from r2k.app.screens.registry import RegistryScreen
from r2k.app.widgets.modals import ReasonModal, TextModal
from r2k.core.services.answers import registry
from r2k.core.services.queue import candidate_views, claims
from r2k.core.services.validation import candidates
from tests.tui import after, chain_on, make_app, message, open_modal, open_screen, shows, text_of, type_text, wait_for

ANSWERS = [
    ("How many loading docks does Rotterdam have?", "The Rotterdam warehouse has 14 loading docks."),
    ("Who may drive a forklift?", "Only staff with a valid forklift certification may drive a forklift."),
    ("When is the dock leveller lowered?", "If a trailer is at the dock, the leveller is lowered first."),
]


def publish(ctx, people) -> list[dict]:
    """Three approved answers, approved by alice through the validation queue (ids 1, 2, 3)."""
    for question, text in ANSWERS:
        candidates.add(ctx, people["root"], question, text, "FACT")
    out = []
    for _ in ANSWERS:
        claimed = claims.claim_next(ctx, people["alice"], "FACT")
        out.append(candidates.approve(ctx, people["alice"], claimed["id"])["answer"])
    return out


def shown_ids(screen) -> list[int]:
    table = screen.query_one("#results", DataTable)
    return [int(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def open_registry(pilot) -> RegistryScreen:
    return await open_screen(pilot, "G", RegistryScreen)


async def highlight_answer(pilot, screen, answer_id: int) -> None:
    await pilot.press("down")  # the results have the focus: the cursor moves (placed below)
    table = screen.query_one("#results", DataTable)
    assert screen.focused is table
    table.move_cursor(row=table.get_row_index(str(answer_id)))
    await shows(pilot, "#detail-body", f"Answer {answer_id}  ", what=f"answer {answer_id}")


async def test_search_as_you_type_finds_an_approved_answer(ctx, people):
    answers = publish(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        assert shown_ids(screen) == [3, 2, 1]  # an empty query lists the newest first
        assert isinstance(app.focused, DataTable)  # the results: ? and the keys for everywhere act at once
        await pilot.press("slash")  # / reaches the search box
        assert app.focused is screen.query_one("#search", Input)
        await type_text(pilot, "forkl")  # half a word: prefix matching while typing
        await wait_for(pilot, lambda: shown_ids(screen) == [answers[1]["id"]], what="the forklift answer")
        assert screen.query_one("#results", DataTable).border_title == "1 approved answer"
        detail = screen.query_one("#detail-body", Static).content.plain
        assert "Only staff with a valid forklift certification" in detail
        await type_text(pilot, "ift certification")  # t, s and d are letters here, not the table's keys
        await wait_for(pilot, lambda: screen.query_one("#search", Input).value == "forklift certification"
                       and shown_ids(screen) == [answers[1]["id"]], what="the whole words")
        assert app.screen is screen  # no retire or dispute modal opened
        await pilot.press("enter")  # to the results, where the keys act
        assert isinstance(app.focused, DataTable)
        await pilot.press("slash")  # and back
        await pilot.press("ctrl+a", "ctrl+k")  # clear the search
        await wait_for(pilot, lambda: shown_ids(screen) == [3, 2, 1], what="everything again")
        assert screen.query_one("#results", DataTable).border_title == "3 approved answers"
        assert registry.show(ctx, answers[1]["id"])["status"] == "APPROVED"


async def test_results_page_fifty_at_a_time(ctx, people):
    for i in range(1, 56):
        candidates.add(ctx, people["root"], f"Which bay holds pallet {i}?", f"Bay {i} holds pallet {i}.", "FACT")
    for _ in range(55):
        candidates.approve(ctx, people["alice"], claims.claim_next(ctx, people["alice"], "FACT")["id"])
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        table = screen.query_one("#results", DataTable)
        assert shown_ids(screen) == list(range(55, 5, -1))  # the newest 50
        assert table.border_title == "Approved answers 1–50 · ] next 50"
        await pilot.press("right_square_bracket")
        await shows(pilot, "#results", "Approved answers 51–55", what="the next page")
        assert shown_ids(screen) == [5, 4, 3, 2, 1]
        assert table.border_title == "Approved answers 51–55 · [ previous 50"
        await pilot.press("right_square_bracket")
        assert "last page" in message(app)
        await pilot.press("left_square_bracket")
        await shows(pilot, "#results", "Approved answers 1–50", what="the page before")
        assert shown_ids(screen)[0] == 55
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: shown_ids(screen) == [5, 4, 3, 2, 1], what="the second page again")
        await pilot.press("slash")
        await type_text(pilot, "pallet")  # a new search starts at its first page
        await wait_for(pilot, lambda: len(shown_ids(screen)) == 50, what="the first page of the search")
        assert table.border_title == "Approved answers 1–50 · ] next 50"


async def test_dispute_sends_its_candidate_back_for_re_review(ctx, people):
    answers = publish(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        await highlight_answer(pilot, screen, answers[0]["id"])
        await open_modal(pilot, "d", ReasonModal)
        await type_text(pilot, "the new building has 16 docks")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "is DISPUTED" in message(app), what="the dispute")
        assert registry.show(ctx, answers[0]["id"])["status"] == "DISPUTED"
        candidate = candidate_views.get(ctx, answers[0]["candidate_id"])
        assert candidate["state"] == "DISPUTED"
        stats = {row["horn_type"]: row for row in candidate_views.queue_stats(ctx)}
        assert stats["FACT"]["disputed"] == 1 and stats["FACT"]["queued"] == 1
        # The default filter shows approved answers only: the disputed one left the list.
        await wait_for(pilot, lambda: answers[0]["id"] not in shown_ids(screen), what="the list without it")

        screen.query_one("#status", Select).value = "DISPUTED"
        await wait_for(pilot, lambda: shown_ids(screen) == [answers[0]["id"]], what="the disputed filter")

        # The validator who claims next gets it first, for re-review (the app closes ctx on exit).
        assert claims.claim_next(ctx, people["bob"], "FACT")["id"] == answers[0]["candidate_id"]


async def test_supersede_publishes_a_new_version_and_shows_the_chain(ctx, people):
    answers = publish(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        await highlight_answer(pilot, screen, answers[0]["id"])
        modal = await open_modal(pilot, "p", TextModal)
        assert modal.query_one("#text").text == ANSWERS[0][1]
        await pilot.press("ctrl+s")  # no reason yet: told so, nothing sent
        assert app.screen is modal
        assert "A reason is needed" in str(modal.query_one("#modal-error", Static).content)
        modal.query_one("#text").text = "The Rotterdam warehouse has 16 loading docks."
        modal.query_one("#reason", Input).focus()
        await type_text(pilot, "two docks added in 2024")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "Published answer 4, superseding answer 1" in message(app), what="the new one")
        await wait_for(pilot, lambda: text_of(app, "#detail-body").startswith("Answer 4  ")
                       and chain_on(screen) == ([1, 4], 4), what="the chain of the new version")
        chain = screen.query_one("#chain", Static).content.plain
        assert chain.index("answer 1") < chain.index("answer 4")  # oldest first
        assert "SUPERSEDED" in chain and "(this one)" in chain.split("answer 4")[1]
        assert registry.show(ctx, 1)["status"] == "SUPERSEDED"
        new = registry.show(ctx, 4)
        assert (new["status"], new["supersedes_id"], new["text"]) == (
            "APPROVED", 1, "The Rotterdam warehouse has 16 loading docks.")


async def test_retire_and_cancel(ctx, people):
    answers = publish(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        assert text_of(app, "#detail-body").startswith(f"Answer {answers[2]['id']}  ")
        await open_modal(pilot, "t", ReasonModal)
        await pilot.press("escape")  # cancel: nothing changes
        await wait_for(pilot, lambda: app.screen is screen, what="back on the registry")
        assert registry.show(ctx, answers[2]["id"])["status"] == "APPROVED"

        await open_modal(pilot, "t", ReasonModal)
        await type_text(pilot, "the trailer rule moved to the handbook")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "is RETIRED" in message(app), what="the retirement")
        assert registry.show(ctx, answers[2]["id"])["status"] == "RETIRED"
        await wait_for(pilot, lambda: shown_ids(screen) == [2, 1], what="the list without it")


async def test_the_list_follows_others_live(ctx, people):
    publish(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        registry.dispute(ctx, people["bob"], 2, "contradicts the training register")  # someone else
        await wait_for(pilot, lambda: shown_ids(screen) == [3, 1], what="the live list")


async def test_a_specialist_is_refused_in_place(ctx, people):
    publish(ctx, people)
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)
        await pilot.press("d")  # not offered to a specialist: said at once, with no reason to type first
        await wait_for(pilot, lambda: "Not allowed" in message(app), what="the 403 message")
        assert app.screen is screen and "may not dispute" in message(app)
        assert screen.query_one("#message", Static).has_class("error")
        assert registry.show(ctx, 3)["status"] == "APPROVED"


async def test_an_unexpected_error_is_said_in_place_and_the_app_carries_on(ctx, people, monkeypatch):
    publish(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_registry(pilot)

        def broken(*args, **kwargs):
            raise RuntimeError("the index is on fire")

        monkeypatch.setattr(registry, "search", broken)
        await pilot.press("slash")
        await type_text(pilot, "dock")
        await after(pilot, "RuntimeError: the index is on fire")
        assert screen.query_one("#message", Static).has_class("error")
        assert app.is_running and app.screen is screen
        monkeypatch.undo()
        await pilot.press("ctrl+a", "ctrl+k")  # clear the search: it works again
        await wait_for(pilot, lambda: shown_ids(screen) == [3, 2, 1], what="the results again")


# --------------------------------------------------------------------------- snapshot

async def settle_registry(pilot):
    screen = await open_registry(pilot)
    await wait_for(pilot, lambda: chain_on(screen) == ([3, 4], 4), what="the chain")
    await pilot.pause()


def test_snapshot_registry(ctx, people, snap_compare):
    publish(ctx, people)
    registry.supersede(ctx, people["alice"], 3, "If a trailer is at the dock, the leveller is lowered and the "
                       "wheels are chocked first.", "chocks are now required")
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=(140, 45), run_before=settle_registry)
