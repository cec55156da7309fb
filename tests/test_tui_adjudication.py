"""The adjudication screen (docs/architecture.md, "Overlap"): a specialist sees the candidates whose
blind reviews disagreed, each one's reviews side by side, and decides it with one key: a review's
number chooses that review's decision, a, e, r make their own."""
from __future__ import annotations

from r2k.app.screens.adjudication import AdjudicationScreen
from r2k.core.services.queue import candidate_views, claims
from r2k.core.services.validation import candidates, overlap
from tests.tui import after, make_app, open_modal, rendered, shows, text_of, wait_for

HOSTILE = "\x1b]0;pwned\x07"


def disagreed(ctx, people, n: int = 1) -> list[int]:
    """`n` FACT candidates in a queue requiring two reviews: alice approves each, bob rejects it."""
    overlap.configure(ctx, people["root"], "FACT", 2)
    ids = [candidates.add(ctx, people["root"], f"Which dock takes reefers, case {i}?",
                          f"Dock {i} takes reefer trailers.", "FACT")["id"] for i in range(n)]
    for who, action, extra in (("alice", "approve", {}), ("bob", "reject", {"reason": f"dock moved{HOSTILE}"})):
        for _ in ids:
            got = claims.claim_next(ctx, people[who], "FACT")
            candidates.decide(ctx, people[who], got["id"], action, **extra)
    assert {candidate_views.get(ctx, i)["state"] for i in ids} == {"ADJUDICATION"}
    return ids


def listed(screen) -> bool:
    return "adjudication" in rendered(screen.query_one("#adj-count"))


def panes(app) -> list[str]:
    """Each review pane as drawn: its border title, then its text."""
    from textual.widgets import Static

    return [f"{p.border_title}\n{rendered(p.query_one(Static))}" for p in app.screen.query(".adj-review")]


async def test_a_specialist_sees_the_reviews_side_by_side_and_chooses_one_with_its_number(ctx, people):
    first, second = disagreed(ctx, people, 2)
    app = make_app(ctx, "sam", listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        await pilot.press("J")
        await wait_for(pilot, lambda: isinstance(app.screen, AdjudicationScreen) and listed(app.screen),
                       what="the adjudication list")
        assert "2 candidates awaiting adjudication" in text_of(app, "#adj-count")
        await shows(pilot, "#adj-detail", f"Candidate {first}", "ADJUDICATION", "Dock 0 takes reefer trailers.")
        await wait_for(pilot, lambda: len(panes(app)) == 2, what="both reviews")
        one, two = panes(app)
        assert one.startswith("Review 1 (1 chooses it)") and "1. approve  by alice" in one
        assert "2. reject  by bob" in two and "Reason: dock moved\\x1b]0;pwned\\x07" in two
        assert "\x1b" not in one + two  # the stored reason's controls made visible, never sent raw

        await pilot.press("3")  # there is no third review: nothing is decided
        assert candidate_views.get(ctx, first)["state"] == "ADJUDICATION"
        await pilot.press("2")  # bob's review decides it
        await after(pilot, f"Candidate {first} adjudicated (review")
        assert candidate_views.get(ctx, first)["state"] == "REJECTED"
        await wait_for(pilot, lambda: "1 candidate awaiting adjudication" in text_of(app, "#adj-count"),
                       what="the list without it")

        # Their own decision: a, with the second candidate highlighted now.
        await shows(pilot, "#adj-detail", f"Candidate {second}")
        await pilot.press("a")
        await after(pilot, f"Candidate {second} adjudicated (your own decision): APPROVED.")
        assert candidate_views.get(ctx, second)["state"] == "APPROVED"
        await shows(pilot, "#adj-detail", "No candidate awaits adjudication")


async def test_reject_asks_a_reason_and_escape_changes_nothing(ctx, people):
    from r2k.app.widgets.modals import ReasonModal
    from tests.tui import type_text

    (only,) = disagreed(ctx, people)
    app = make_app(ctx, "sam", listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        await pilot.press("J")
        await wait_for(pilot, lambda: isinstance(app.screen, AdjudicationScreen) and len(panes(app)) == 2,
                       what="the reviews")
        await open_modal(pilot, "r", ReasonModal)
        await pilot.press("escape")
        await after(pilot, "Cancelled: nothing changed.")
        assert candidate_views.get(ctx, only)["state"] == "ADJUDICATION"
        await open_modal(pilot, "r", ReasonModal)
        await type_text(pilot, "not our dock")
        await pilot.press("enter")
        await after(pilot, f"Candidate {only} adjudicated (your own decision): REJECTED.")
        assert candidate_views.get(ctx, only)["state"] == "REJECTED"


async def test_a_validator_is_told_adjudication_is_a_specialists(ctx, people):
    disagreed(ctx, people)
    app = make_app(ctx, "alice", listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        await pilot.press("J")
        await wait_for(pilot, lambda: isinstance(app.screen, AdjudicationScreen), what="the screen")
        await after(pilot, "may not adjudicate")
        await pilot.press("a")
        assert {c["state"] for c in candidate_views.list_candidates(ctx, state="ADJUDICATION")} == {"ADJUDICATION"}
