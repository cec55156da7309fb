"""Helpers for driving the workstation with Pilot: wait for conditions, never for fixed times."""
from __future__ import annotations

import asyncio
import re
import time

# Where the snapshots say the servers listen: the session's data dir is a fresh temporary one (and
# the PostgreSQL cluster's directory is named by a hash of it), so the dashboard is shown as it
# draws an install whose data dir is this path.
SNAPSHOT_DATA_DIR = "/srv/r2k"
SNAPSHOT_CLUSTER = "clusters/0123456789abcdef"


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


async def handled(pilot, timeout: float = 10.0) -> None:
    """Until every key pressed has been handled to its end (app/typeahead.py) and every screen's worker
    (a decision's save, a list's refresh) has ended: what a key did not do by then, it does not do.
    The app's own workers (the keys' dispatcher, the notice listener, the worker child) run for good."""
    app = pilot.app
    await wait_for(pilot, lambda: getattr(app, "keys_waiting", 0) == 0
                   and not [w for w in app.workers if w.node is not app and not w.is_finished],
                   timeout=timeout, what="the keys handled and what they set off ended")


def make_app(ctx, user: str, **kw):
    """The workstation as `user`; it sweeps only when a test asks (sweep_every), so none races a test."""
    from r2k.app.tui import R2KApp

    kw.setdefault("sweep_every", 0)
    return R2KApp(ctx, user, **kw)


async def settle_dashboard(pilot):
    """Wait for the dashboard's counts and its services' health, then have it draw that health as
    it would for an install in SNAPSHOT_DATA_DIR: the product's own lines, only the paths fixed."""
    screen = pilot.app.screen
    await wait_for(pilot, lambda: loaded(screen), what="dashboard counts")
    await shows(pilot, "#services", "postgres", what="service health")
    screen.health = stable_health(screen.health, str(pilot.app.ctx.settings.data_dir))
    await shows(pilot, "#services", SNAPSHOT_DATA_DIR, what="the health redrawn")


def stable_health(health, data_dir: str):
    """`dashboard.health` with this session's data dir (and the cluster directory named by it) as
    SNAPSHOT_DATA_DIR's; everything else as the product read it."""
    if isinstance(health, dict):
        return {k: stable_health(v, data_dir) for k, v in health.items()}
    if isinstance(health, list):
        return [stable_health(v, data_dir) for v in health]
    if isinstance(health, str):
        return re.sub(r"clusters/[0-9a-f]{16}", SNAPSHOT_CLUSTER, health.replace(data_dir, SNAPSHOT_DATA_DIR))
    return health


# --------------------------------------------------------------------------- reading the screen

def displayed(widget) -> bool:
    """Whether the widget is drawn at all (neither it nor a container of it is display: none)."""
    return all(node.display for node in widget.ancestors_with_self if hasattr(node, "display"))


def cell_text(value) -> str:
    """A DataTable cell as drawn: a string cell is Rich markup, a Text its plain text."""
    from rich.text import Text

    if isinstance(value, str):
        return Text.from_markup(value).plain
    return getattr(value, "plain", None) or str(value)


def rendered(widget) -> str:
    """What a widget draws, as text: its border title on the first line, then a Static's content
    (markup applied) or a DataTable's cells row by row; empty when the widget is not displayed."""
    from textual.widgets import DataTable

    if not displayed(widget):
        return ""
    title = str(widget.border_title or "")
    if isinstance(widget, DataTable):
        body = "\n".join(" ".join(cell_text(c) for c in widget.get_row_at(i)) for i in range(widget.row_count))
    else:
        body = str(widget.render())
    return f"{title}\n{body}" if title else body


def text_of(app, selector: str) -> str:
    """The text a widget of the screen on top draws (markup applied)."""
    return rendered(app.screen.query_one(selector))


async def shows(pilot, selector: str, *words: str, what: str = "", timeout: float = 10.0) -> str:
    """Wait until the widget at `selector` (on the screen on top) draws each of `words`; its text."""
    app = pilot.app

    last = [""]

    def drawn():
        try:
            text = last[0] = text_of(app, selector)
        except Exception:  # noqa: BLE001 - not there yet (another screen on top)
            return None
        return text if all(word in text for word in words) else None

    try:
        return await wait_for(pilot, drawn, timeout=timeout, what=what or f"{selector} showing {words!r}")
    except AssertionError as exc:  # say what it drew instead
        raise AssertionError(f"{exc}; it drew: {last[0]!r}") from None


# What each screen draws once its data is in: the placeholders it opens with have gone.
LOADED = {
    "DashboardScreen": lambda s: "·" not in rendered(s.query_one("#candidates")),
    "QueuePickerScreen": lambda s: "·" not in rendered(s.query_one("#queue-table")),
    "RegistryScreen": lambda s: "answer" in str(s.query_one("#results").border_title or ""),
    "WorkItemsScreen": lambda s: "work item" in rendered(s.query_one("#wi-count")),
    "GreyQueueScreen": lambda s: "entr" in rendered(s.query_one("#grey-count")),
}


def loaded(screen) -> bool:
    ready = LOADED.get(type(screen).__name__)
    return bool(ready and ready(screen))


def candidate_on(screen) -> int | None:
    """The candidate the review screen shows (its head line names it); None when it shows none."""
    found = re.search(r"· candidate (\d+) ·", rendered(screen.query_one("#review-head")))
    return int(found[1]) if found else None


def review_settled(screen) -> bool:
    """The review screen shows a candidate, or its idle pane says why none ("Claiming…" is not settled)."""
    idle = rendered(screen.query_one("#idle"))
    return candidate_on(screen) is not None or bool(idle) and not idle.endswith("…")


def chain_on(screen) -> tuple[list[int], int | None]:
    """The registry's supersede chain as shown: the answers listed (oldest first), and the one marked
    as on screen."""
    text = rendered(screen.query_one("#chain"))
    listed = [(int(number), mark == "▶") for mark, number in re.findall(r"^(▶| ) answer (\d+)", text, re.M)]
    return [number for number, _ in listed], next((number for number, here in listed if here), None)


def message(app) -> str:
    """The message line's text as set (an outcome or an error)."""
    from textual.widgets import Static

    return str(app.screen.query_one("#message", Static).content)


# --------------------------------------------------------------------------- a validator's moves

async def open_screen(pilot, key: str, screen_type, *, ready=loaded):
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
    the app handles the first (Pilot's `press` lets the app go idle after each key). Each key is
    named, and given its character, as Pilot's `press` names it ("space", "full_stop", "X", "@")."""
    for event in key_events(*keys):
        event.set_sender(pilot.app)
        pilot.app._driver.send_message(event)
    await pilot.pause()
    # Until the workstation has handled every one of them (app/typeahead.py takes them one at a time).
    await wait_for(pilot, lambda: getattr(pilot.app, "keys_waiting", 0) == 0, what="the keys handled")


def key_events(*keys: str):
    """Key events as the terminal's parser makes them, each with its character (as App._press_keys)."""
    import unicodedata

    from textual import events
    from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

    made = []
    for key in keys:
        if len(key) == 1 and not key.isalnum():
            key = _character_to_key(key)
        try:
            char = unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(key, key)))
        except KeyError:
            char = {"enter": "\r"}.get(key, key if len(key) == 1 else None)  # as the terminal's parser
        made.append(events.Key(key, char))
    return made


async def open_modal(pilot, key: str, modal_type):
    """Press `key` and wait for the modal it opens."""
    app = pilot.app
    await pilot.press(key)
    return await wait_for(pilot, lambda: isinstance(app.screen, modal_type) and app.screen,
                          what=f"the {modal_type.__name__} of {key}")


async def answer_modal(pilot, *texts: str) -> None:
    """Fill a FieldsModal: each text into its field, enter after each; wait for it to close."""
    from r2k.app.widgets.modals import FieldsModal

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

# screen -> (the table, the detail pane, how the detail's first line names a row)
LIST_DETAIL = {"GreyQueueScreen": ("#grey-table", "#grey-detail", "Entry {id} · {state}"),
               "WorkItemsScreen": ("#wi-table", "#wi-detail", "Work item {id} · {state}")}


async def highlight(pilot, row_id: int) -> None:
    """Put the cursor of a list-and-detail screen (grey queue, work items) on a row; wait for the
    detail pane to show that row in the state the list shows it in."""
    screen = pilot.app.screen
    table_id, detail_id, head = LIST_DETAIL[type(screen).__name__]
    table = screen.query_one(table_id)
    await wait_for(pilot, lambda: str(row_id) in table.rows, what=f"row {row_id} listed")
    table.move_cursor(row=table.get_row_index(str(row_id)))

    def shown() -> bool:
        if str(row_id) not in table.rows:
            return False
        state = cell_text(table.get_row(str(row_id))[1]).removeprefix("⚑ ")
        return head.format(id=row_id, state=state) in first_line(text_of(pilot.app, detail_id))

    await wait_for(pilot, shown, what=f"the detail of row {row_id}")


def first_line(text: str) -> str:
    return text.split("\n", 1)[0]


async def detail_in(pilot, state: str) -> None:
    """Wait for the detail pane to follow its row into `state` (its first line names the state)."""
    _, detail_id, _ = LIST_DETAIL[type(pilot.app.screen).__name__]
    await wait_for(pilot, lambda: f" · {state} v" in first_line(text_of(pilot.app, detail_id)),
                   what=f"the detail in {state}")
