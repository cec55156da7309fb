"""Helpers for driving the workstation with Pilot: wait for conditions, never for fixed times."""
from __future__ import annotations

import asyncio
import time

FIXED_SERVICES = ("● postgres  embedded  postgresql://127.0.0.1/r2k\n● redis     embedded  redis://127.0.0.1/0\n"
                  "● graph     embedded  bolt://127.0.0.1\n● llm       circuit closed")


async def wait_for(pilot, predicate, timeout: float = 10.0, what: str = "condition"):
    """Pump the app until `predicate()` is truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause()
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def make_app(ctx, user: str, **kw):
    """The workstation as `user`; it sweeps only when a test asks (sweep_every), so none races a test."""
    from app.tui import R2KApp

    kw.setdefault("sweep_every", 0)
    return R2KApp(ctx, user, **kw)


async def settle_dashboard(pilot):
    """Wait for the dashboard's counts and replace the machine-specific service lines (ports, pids)."""
    from textual.widgets import Static

    await wait_for(pilot, lambda: pilot.app.screen.has_class("loaded"), what="dashboard counts")
    await wait_for(pilot, lambda: "postgres" in str(pilot.app.screen.query_one("#services", Static).render()),
                   what="service health")
    pilot.app.screen.query_one("#services", Static).update(FIXED_SERVICES)
    await pilot.pause()


# --------------------------------------------------------------------------- reading the screen

def text_of(app, selector: str) -> str:
    """A Static's text as drawn (markup applied)."""
    from textual.widgets import Static

    return str(app.screen.query_one(selector, Static).render())


def message(app) -> str:
    """The message line's text as set (an outcome or an error)."""
    from textual.widgets import Static

    return str(app.screen.query_one("#message", Static).content)


# --------------------------------------------------------------------------- a validator's moves

async def open_screen(pilot, key: str, screen_type, *, ready=lambda screen: screen.has_class("loaded")):
    """Once the app knows who is acting (or that it cannot), press `key` and wait for the screen's data."""
    app = pilot.app
    await wait_for(pilot, lambda: app.actor is not None or app.actor_error, what="the acting user")
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, screen_type) and ready(app.screen),
                   what=f"the {screen_type.__name__}")
    return app.screen


async def type_text(pilot, text: str):
    await pilot.press(*[{" ": "space"}.get(c, c) for c in text])


async def keys_together(pilot, *keys: str):
    """Keys that arrive at once, as typed-ahead keys or a paste do over SSH: all are queued before
    the app handles the first (Pilot's `press` lets the app go idle after each key)."""
    from textual import events

    chars = {"space": " ", "enter": "\r", "tab": "\t"}
    for key in keys:
        event = events.Key(key, chars.get(key, key if len(key) == 1 else None))
        event.set_sender(pilot.app)
        pilot.app._driver.send_message(event)
    await pilot.pause()


async def open_modal(pilot, key: str, modal_type):
    """Press `key` and wait for the modal it opens."""
    app = pilot.app
    await pilot.press(key)
    return await wait_for(pilot, lambda: isinstance(app.screen, modal_type) and app.screen,
                          what=f"the {modal_type.__name__} of {key}")


async def answer_modal(pilot, *texts: str) -> None:
    """Fill a FieldsModal: each text into its field, enter after each; wait for it to close."""
    from app.widgets.modals import FieldsModal

    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, FieldsModal), what="the modal")
    for text in texts:
        if text:
            await pilot.press(*text)
        await pilot.press("enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, FieldsModal), what="the modal closed")


async def after(pilot, words: str) -> str:
    """Wait for the message line to say `words` (the action's outcome or its error)."""
    app = pilot.app
    return await wait_for(pilot, lambda: words in text_of(app, "#message") and text_of(app, "#message"),
                          what=f"message {words!r}")


# --------------------------------------------------------------------------- list and detail screens

async def highlight(pilot, row_id: int) -> None:
    """Put the cursor of a list-and-detail screen (grey queue, work items) on a row; wait for its detail."""
    screen = pilot.app.screen
    table = screen.table
    await wait_for(pilot, lambda: str(row_id) in table.rows, what=f"row {row_id} listed")
    table.move_cursor(row=table.get_row_index(str(row_id)))
    await wait_for(pilot, lambda: screen.detail is not None and screen.detail["id"] == row_id,
                   what=f"the detail of row {row_id}")


async def detail_in(pilot, state: str) -> None:
    """Wait for the detail pane to follow its row into `state`."""
    screen = pilot.app.screen
    await wait_for(pilot, lambda: screen.detail is not None and screen.detail["state"] == state,
                   what=f"the detail in {state}")
