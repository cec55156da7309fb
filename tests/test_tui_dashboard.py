"""The workstation shell: the dashboard shows live counts, `?` lists the keys, the palette opens screens."""
from __future__ import annotations

from textual.widgets import DataTable

from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.tui import loaded, make_app, settle_dashboard, wait_for


def seed(ctx, people):
    for i in range(3):
        candidates.add(ctx, people["root"], f"Fact question {i}?", f"A plain fact number {i}.", "FACT")
    for i in range(2):
        candidates.add(ctx, people["root"], f"Rule question {i}?", f"If it rains, rule {i} applies.", "RULE")
    claims.claim_next(ctx, people["alice"], "FACT")
    claims.claim_next(ctx, people["alice"], "FACT")
    candidates.approve(ctx, people["alice"], 1)


async def test_dashboard_counts_match_the_rows_and_help_lists_the_keys(ctx, people):
    seed(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: loaded(app.screen), what="counts")
        table = app.screen.query_one("#candidates", DataTable)
        assert table.get_cell("FACT", "PENDING") == "1"
        assert table.get_cell("FACT", "IN_REVIEW") == "1"
        assert table.get_cell("FACT", "APPROVED") == "1"
        assert table.get_cell("RULE", "PENDING") == "2"
        assert "alice" in app.sub_title

        # Someone else acts: the count follows without a key press (pub/sub).
        candidates.add(ctx, people["root"], "One more?", "Another plain fact.", "FACT")
        await wait_for(pilot, lambda: table.get_cell("FACT", "PENDING") == "2", what="live update")

        await pilot.press("question_mark")
        from r2k.app.screens.help import HelpScreen

        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        keys = app.screen.query_one(DataTable)
        described = {keys.get_row_at(i)[1] for i in range(keys.row_count)}
        assert {"Queues", "Registry", "Refresh", "Help", "Quit"} <= described
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")
        await pilot.press("ctrl+q")  # alice holds candidate 2: asked whether to release it
        from r2k.app.widgets.modals import ChoiceModal

        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal), what="the quit question")
        await pilot.press("k")  # keep it leased
        await wait_for(pilot, lambda: not app.is_running, what="the app to quit")
    assert app.return_code == 0


async def test_unknown_user_is_told_plainly(ctx, people):
    app = make_app(ctx, "mallory")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.actor_error, what="actor error")
        assert "unknown user 'mallory'" in app.actor_error
        assert "unknown user" in app.sub_title


def test_snapshot_dashboard(ctx, people, snap_compare):
    seed(ctx, people)
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=(140, 45), run_before=settle_dashboard)


def test_snapshot_help(ctx, people, snap_compare):
    async def open_help(pilot):
        await settle_dashboard(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=(140, 45), run_before=open_help)


async def test_the_workstations_own_notices_reach_the_screens_in_the_channels_shape(ctx, people):
    from r2k.app.messages import Reconnected, WorkerChildChanged

    app = make_app(ctx, "alice")
    told = []
    broadcast = app._broadcast

    def recorded(event):
        told.append(event)
        broadcast(event)

    app._broadcast = recorded
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: any(e["entity"] == "actor" for e in told), what="the actor notice")
        app.post_message(WorkerChildChanged())
        app.post_message(Reconnected())
        await wait_for(pilot, lambda: {e["entity"] for e in told} >= {"actor", "worker", "*"}, what="all three")
    assert all(set(e) == {"entity", "id", "action", "state", "version", "actor"} for e in told), told
    assert {"entity": "*", "id": None, "action": "reconnected", "state": None, "version": None, "actor": None} in told
