"""Any keys, typed at any speed, give what they give typed slowly (docs/architecture.md, "Keys").

Hypothesis makes key sequences from the keys an editor or a dialog takes (letters, space,
backspace, delete, the cursor and selection keys, ctrl+home and ctrl+end, enter; tab and shift+tab
between the fields of a dialog), after `e` on the review screen and after `+` on the grey queue.
Each runs twice on the workstation under Pilot: once in one burst (every key queued before the
app handles the first), once one key at a time with each settled. What the core then holds (the
answer published, the grey entry stored), and the dialog still open if one is, are the same.
"""
from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings, strategies as st
from textual.widgets import Input, TextArea

from r2k.app.screens.grey import GreyQueueScreen
from r2k.app.screens.review import ReviewScreen
from r2k.app.widgets.modals import FieldsModal, TextModal
from r2k.core.bootstrap import bootstrap
from r2k.core.services.answers import registry
from r2k.core.services.grey_entries import grey
from r2k.core.services.people import users
from r2k.core.services.queue import candidate_views
from r2k.core.services.validation import candidates
from tests.tui import key_events, make_app, open_screen, review_settled, text_of, wait_for

# Letters no screen below the dialog, no app binding and no question (keep k, discard d) takes:
# a key that lands on the screen below once the dialog has closed changes nothing the test reads.
LETTERS = list("cghpqtwy")
EDITING = ["space", "backspace", "delete", "left", "right", "up", "down", "home", "end", "ctrl+home", "ctrl+end",
           "shift+left", "shift+right", "shift+home", "shift+end", "ctrl+left", "ctrl+right", "enter"]
# The review editor: tab would take the focus to its Save button, where space saves and the keys
# after it reach the review screen's decisions; between the fields of a dialog it is the point.
EDITOR_KEYS = st.lists(st.sampled_from(LETTERS * 2 + EDITING), min_size=1, max_size=24)
DIALOG_KEYS = st.lists(st.sampled_from(LETTERS * 2 + EDITING + ["tab", "shift+tab", "enter"] * 2), min_size=1,
                       max_size=24)

TEXT = "Dock 4 takes reefer trailers only.\nThe night shift checks the seals."
CHECKS = settings(max_examples=4, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


async def send(pilot, keys: list[str], burst: bool) -> None:
    """The keys in one burst, or one at a time, each handled to its end before the next is typed;
    back once the app has handled them all."""
    app = pilot.app
    for event in key_events(*keys):
        event.set_sender(app)
        app._driver.send_message(event)
        if not burst:
            await handled(pilot)
    await handled(pilot)


async def handled(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.keys_waiting == 0, what="every key handled")


def dialog_state(app) -> tuple | None:
    """The dialog still open: its boxes' texts, which has the focus, its error line."""
    screen = app.screen
    if isinstance(screen, TextModal):
        focused = app.focused.id if app.focused is not None else None
        return "editor", screen.query_one("#text", TextArea).text, focused, text_of(app, "#modal-error")
    if isinstance(screen, FieldsModal):
        boxes = tuple(box.value for box in screen.query(Input))
        focused = app.focused.id if app.focused is not None else None
        return "fields", boxes, focused, text_of(app, ".fields-error")
    return None


# --------------------------------------------------------------------------- the review editor

async def revise_once(services, keys: list[str], burst: bool) -> tuple:
    ctx = bootstrap(services, pool_size=2)  # the workstation closes its own on the way out
    alice = users.resolve(ctx, "alice")
    cid = candidates.add(ctx, users.resolve(ctx, "root"), "Which trailers does dock 4 take?", TEXT, "FACT")["id"]
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.actor is not None, what="the acting user")
        app.push_screen(ReviewScreen("FACT"))
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen) and review_settled(app.screen),
                       what="the review screen")
        if burst:
            await send(pilot, ["e", *keys, "ctrl+s"], burst=True)
        else:
            await send(pilot, ["e"], burst=False)
            await wait_for(pilot, lambda: isinstance(app.screen, TextModal), what="the editor")
            await send(pilot, [*keys, "ctrl+s"], burst=False)

        def decided() -> bool:
            row = candidate_views.get(ctx, cid)
            return row["state"] != "IN_REVIEW" or (isinstance(app.screen, TextModal) and
                                                  bool(text_of(app, "#modal-error")))

        await wait_for(pilot, decided, what="the revision published or refused")
        open_dialog = dialog_state(app)
    ctx = bootstrap(services, pool_size=2)
    try:
        row = candidate_views.get(ctx, cid)
        published = [a["text"] for a in registry.search(ctx, "", limit=500) if a["candidate_id"] == cid]
        if row["state"] == "IN_REVIEW":  # refused in place: out of the next run's way
            candidates.reject(ctx, alice, cid, "left by the typing property test")
        return row["state"], published, open_dialog and open_dialog[1:]
    finally:
        ctx.close()


def test_the_review_editor_gives_the_same_at_any_speed(ctx, people, services):
    @CHECKS
    @given(keys=EDITOR_KEYS)
    def same(keys):
        burst = asyncio.run(revise_once(services, keys, burst=True))
        slow = asyncio.run(revise_once(services, keys, burst=False))
        assert burst == slow, keys

    same()


# --------------------------------------------------------------------------- the grey queue's Add dialog

async def add_once(services, keys: list[str], burst: bool) -> tuple:
    ctx = bootstrap(services, pool_size=2)
    before = max((e["id"] for e in grey.list_entries(ctx)), default=0)
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_screen(pilot, "Y", GreyQueueScreen)
        if burst:
            await send(pilot, ["plus", *keys], burst=True)
        else:
            await send(pilot, ["plus"], burst=False)
            await wait_for(pilot, lambda: isinstance(app.screen, FieldsModal), what="the Add dialog")
            await send(pilot, keys, burst=False)
        await wait_for(pilot, lambda: isinstance(app.screen, FieldsModal) or
                       any(e["id"] > before for e in grey.list_entries(ctx)), what="the entry added or the dialog")
        open_dialog = dialog_state(app)
    ctx = bootstrap(services, pool_size=2)
    try:
        added = [(entry["subject"], entry["detail"]) for entry in
                 (grey.get(ctx, e["id"]) for e in sorted(grey.list_entries(ctx), key=lambda e: e["id"]))
                 if entry["id"] > before]
        return added, open_dialog
    finally:
        ctx.close()


def test_the_grey_add_dialog_gives_the_same_at_any_speed(ctx, people, services):
    @CHECKS
    @given(subject=st.lists(st.sampled_from(LETTERS), min_size=0, max_size=4), keys=DIALOG_KEYS)
    def same(subject, keys):
        typed = [*subject, *keys]
        burst = asyncio.run(add_once(services, typed, burst=True))
        slow = asyncio.run(add_once(services, typed, burst=False))
        assert burst == slow, typed

    same()
