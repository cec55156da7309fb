"""Keys: the command palette reaches the actions of the screen below it; everywhere keys work from
every screen; a keymap file rebinds by id; one letter means one thing; only possible moves are offered."""
from __future__ import annotations

from textual.command import CommandPalette

from r2k.app.screens.review import ReviewScreen
from r2k.app.widgets.modals import ReasonModal
from tests.test_tui_validation import open_review, seed_facts
from tests.tui import make_app, wait_for


def palette_hits(app) -> list[str]:
    from textual.command import CommandList

    options = app.screen.query_one(CommandList)
    return [str(getattr(options.get_option_at_index(i).prompt, "plain", options.get_option_at_index(i).prompt))
            for i in range(options.option_count)]


async def palette_search(pilot, words: str, expect: str) -> list[str]:
    """Open the palette, type `words`, wait for a hit naming `expect`; the hits."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the command palette")
    await pilot.press(*words)
    return await wait_for(pilot, lambda: (hits := palette_hits(app)) and any(expect in h for h in hits) and hits,
                          what=f"a palette hit {expect!r} for {words!r}")


async def test_the_palette_finds_the_actions_of_the_screen_below_it_and_runs_them(ctx, people):
    seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_review(pilot)
        hits = await palette_search(pilot, "escal", "Escalate")
        assert any("Escalate" in h for h in hits)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the palette closed")

        await palette_search(pilot, "claim", "Claim next")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the palette closed")

        await palette_search(pilot, "rej", "Reject")
        await pilot.press("enter")  # runs it on the review screen: its reason modal opens
        await wait_for(pilot, lambda: isinstance(app.screen, ReasonModal), what="the reject modal")
