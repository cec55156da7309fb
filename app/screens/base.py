"""What every workstation screen shares: core calls in thread workers that answer with messages,
errors shown in place, and live reloads when other people act (Redis pub/sub, debounced).

A slow call is a `@work(thread=True)` method: it calls a core service inside `self.reporting(…)`
and hands what came back to the screen with `self.reply(SomeReply(…))`; `@on` handlers update the
widgets on the event loop. Whatever a call raises comes back as `Failed`: the core's refusal is
said in place, in a validator's words, and a 503 also tells the app, which says "reconnecting…" and
reconnects in the background (docs/architecture.md, "Outages"). Nothing a call raises stops the app.
"""
from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from textual import on, work
from textual.message import Message
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import CellDoesNotExist
from textual.worker import NoActiveWorker, get_current_worker

from r2k.app.keymap import key_of
from r2k.app.safe import visible
from r2k.app.textual_private import binding_chain
from r2k.app.widgets.format import plural
from r2k.app.widgets.text import plain
from r2k.core.errors import R2KError
from r2k.core.services.session import service_error


def notice_entity(event: dict) -> str | None:
    """What a live notice is about: the entity of the core's notices (core/notices.py: "candidate",
    "grey_entry", …), or the workstation's own, in the same shape (core.services.session.notice:
    "worker", "actor"; "*" once the services answer again)."""
    return event.get("entity")


class Changed(Message):
    """Someone changed something (a pub/sub notice from the core)."""

    def __init__(self, event: dict):
        super().__init__()
        self.event = event


# ----------------------------------------------------------------------------- replies

class Reply(Message):
    """What a worker hands back to the screen that started it. It stays on that screen (no
    bubbling to the app) and remembers its worker, so a superseded answer can be told apart."""

    def __init_subclass__(cls, bubble: bool | None = False, **kwargs: Any) -> None:
        super().__init_subclass__(bubble=bubble, **kwargs)

    def __init__(self) -> None:
        super().__init__()
        try:
            self.worker = get_current_worker()
        except NoActiveWorker:
            self.worker = None

    @property
    def superseded(self) -> bool:
        """A newer call of the same exclusive group started since: its answer is the one to show."""
        return self.worker is not None and self.worker.is_cancelled


class Failed(Reply):
    """A core call failed. `message` is in the core's words (a 503's names the service), `status`
    its HTTP-style status (500: no refusal of the core's but an unexpected exception); `call` names
    the call, for screens that treat some failures apart."""

    def __init__(self, call: str, message: str, status: int):
        super().__init__()
        self.call = call
        self.message = message
        self.status = status


class Moved(Reply):
    """A move was made (a transition, a new entity, a registry move): `row` as the core returned it,
    with its new state and version; `before`, the row the move was made on."""

    def __init__(self, action: str, row: dict, before: dict | None = None):
        super().__init__()
        self.action = action
        self.row = row
        self.before = before


class Listed(Reply):
    """The rows a list shows, as the core listed them."""

    def __init__(self, rows: list[dict]):
        super().__init__()
        self.rows = rows


class Shown(Reply):
    """One row as its detail view reads it."""

    def __init__(self, row: dict):
        super().__init__()
        self.row = row


def failure(call: str, exc: BaseException, ctx) -> Failed:
    """What a call raised, as the failure to show: the core's refusal as it is; a driver's dropped
    connection as the 503 that names the service; anything else as a 500 naming the exception."""
    if isinstance(exc, R2KError):
        return Failed(call, exc.message, exc.status)
    down = service_error(exc, ctx)
    if down is not None:
        return Failed(call, down.message, down.status)
    return Failed(call, f"{type(exc).__name__}: {exc}", 500)


def plain_words(message: str, status: int) -> str:
    if status == 409:
        # The core's 409 says who moved first, from the event log: you, the system, or someone else
        # (docs/architecture.md, "Keys"); a blanket "someone else" blamed others for your own moves.
        return message[:1].upper() + message[1:]
    lead = {403: "Not allowed: ", 404: "Not found: ", 422: "Not possible now: ", 400: "Missing or invalid: ",
            503: "A service is down: "}.get(status, "")
    return lead + message


# ----------------------------------------------------------------------------- screens

class WorkstationScreen(Screen):
    """A full screen of the workstation. Subclasses implement `load()` and list the notice
    entities that should reload them in RELOAD_ON.

    Textual calls every `on_mount` along the class hierarchy, this one after the subclass's: a
    subclass sets up its widgets in its own `on_mount` and leaves the first `load()` to this one."""

    RELOAD_ON: tuple[str, ...] = ()
    DEBOUNCE = 0.25
    # The actions of the bindings that act on the item on screen -> the move each makes (its machine's
    # action, or the screen's own name for it). The footer shows each one the item allows you, whatever
    # the width (app/widgets/footer.py); `why_not` says why it does not allow the others.
    MOVES: dict[str, str] = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._debounced: dict[str, Any] = {}
        self._loaded_once = False

    def on_mount(self) -> None:
        self.load()

    def on_screen_resume(self) -> None:
        if self._loaded_once:
            self.load()
        self._loaded_once = True

    def load(self) -> None:
        """Fetch this screen's data (in a worker) and show it."""

    # -- core calls ------------------------------------------------------------------------
    def reply(self, message: Reply) -> None:
        """From a worker: hand `message` to this screen, unless the screen has closed meanwhile or
        a newer call of the same group superseded this one."""
        if not message.superseded and self.is_attached:
            self.post_message(message)

    @contextmanager
    def reporting(self, call: str) -> Iterator[None]:
        """Around a core call in a worker: whatever it raises comes back as `Failed`."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - a failed call is said in place, never a crash
            if self.is_attached:  # a closed screen has nobody to tell
                self.reply(failure(call, exc, self.ctx))

    @work(thread=True, group="move", exit_on_error=False)
    def move(self, action: str, call: Callable[[], dict], before: dict | None = None) -> None:
        """Make a move through the core (`call`, with the version as shown and a fresh idempotency
        key); the screen hears `Moved`, or `Failed`. Moves never cancel each other."""
        with self.reporting(action):
            self.reply(Moved(action, call(), before))

    @on(Failed)
    def _call_failed(self, failed: Failed) -> None:
        if failed.status == 503 and hasattr(self.app, "service_down"):
            self.app.service_down(failed.message)
        self.show_failure(failed)

    def show_failure(self, failed: Failed) -> None:
        """What this screen does with a failed call: say it in place, unless a screen says otherwise."""
        self.show_error(failed.message, failed.status)

    # -- the message line ------------------------------------------------------------------
    def show_error(self, message: str, status: int = 0) -> None:
        """Say what went wrong, in place (the screen's message line), in a validator's words.

        Messages are plain text, never markup: they may quote stored text or what was typed."""
        text = plain_words(message, status)
        try:
            line = self.query_one("#message", Static)
        except Exception:
            self.app.notify(visible(text), severity="error", timeout=6, markup=False)
            return
        line.update(plain(text))
        line.set_class(True, "error")
        line.set_class(False, "info")

    def show_info(self, message: str) -> None:
        try:
            line = self.query_one("#message", Static)
        except Exception:
            self.app.notify(visible(message), timeout=3, markup=False)
            return
        line.update(plain(message))
        line.set_class(False, "error")
        line.set_class(True, "info")

    # -- live notices ----------------------------------------------------------------------
    @on(Changed)
    def _reload_on_notice(self, message: Changed) -> None:
        entity = notice_entity(message.event)
        if entity == "*" or entity in self.RELOAD_ON or "*" in self.RELOAD_ON:  # "*": reconnected, reload all
            # Many notices in a burst (an ingest, a worker draining a queue) cost one reload.
            self.debounce("reload", self.DEBOUNCE, self._reload_now)

    def _reload_now(self) -> None:
        if self.is_current:
            self.load()

    def debounce(self, name: str, delay: float, callback: Callable[[], Any]) -> None:
        """Call `callback` once, `delay` seconds after the last request under `name`: a burst
        (keys typed, rows skipped over, notices) costs one call."""
        timer = self._debounced.get(name)
        if timer is not None:
            timer.stop()
        self._debounced[name] = self.set_timer(delay, callback)

    # -- keys the highlighted item cannot take ----------------------------------------------
    def why_not(self, action: str):
        """Why `action` cannot be taken on what the screen shows now (the core's refusal, from
        r2k.core.services.common.refusal, or a message), or None. A screen names its moves."""
        return None

    def key(self, binding_id: str) -> str:
        """The key that runs the binding `binding_id` here now (the screen's, else the app's), written as
        the footer writes it. Every message that names a key asks for it, so a keymap file changes the
        words too (docs/architecture.md, "Keys")."""
        return key_of(self.app, self, binding_id) or key_of(self.app, self.app, binding_id) or binding_id

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A move the highlighted item's state or the user's authority refuses is not offered:
        # hidden from the footer and the command palette (docs/architecture.md, "Keys").
        return not self.why_not(action)

    def on_key(self, event) -> None:
        """A hidden move's key, pressed anyway, says why instead of vanishing."""
        for node, bindings in binding_chain(self):
            if node is not self:
                continue
            for binding in bindings.key_to_bindings.get(event.key, ()):
                reason = self.why_not(binding.action)
                if reason:  # the key still bubbles up to the app, whose bindings skip the refused move
                    if isinstance(reason, str):
                        self.show_info(reason)
                    else:
                        self.show_error(reason.message, reason.status)
                    return

    def action_back(self) -> None:
        # Back to wherever this was opened from (the dashboard sits at the bottom of the stack).
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.open_screen("dashboard")

    @property
    def ctx(self):
        return self.app.ctx

    @property
    def actor(self):
        return self.app.actor


class ListDetailScreen(WorkstationScreen):
    """A table of rows (each with an id and a version) beside the highlighted row's detail.

    A reload keeps the cursor on its row; moving the cursor loads that row's detail once the
    cursor rests. Subclasses name their widgets (TABLE, COUNT, DETAIL ids) and give the core
    calls (`list_call`, `detail_call`) and what to draw (`cells`, `render_detail`, `empty_text`),
    as listed at "what a subclass says" below.
    """

    TABLE = COUNT = DETAIL = ""
    LIMIT = 200
    NOUN = ("row", "rows")  # for the count line and "No … selected."
    MORE = ""               # said after the count when the list stops at LIMIT
    DETAIL_DEBOUNCE = 0.1

    # The highlighted row's detail as shown (None while it is on its way): drawn by watch_detail.
    detail: var[dict | None] = var(None, init=False, bindings=True)  # the footer follows its moves

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows: dict[int, dict] = {}
        self._select_id: int | None = None

    # -- what a subclass says: list_call() -> a no-argument core call listing the rows with the
    # filters as they are now (run in a worker); cells(row, now) -> the table cells;
    # detail_call(row_id) -> a core call reading one row's detail; render_detail(detail) -> its
    # text. They have no stand-ins here: a screen without them fails loudly when it loads.
    def empty_text(self) -> str:
        return f"No {self.NOUN[1]}."

    # -- the list ----------------------------------------------------------------------------
    @property
    def table(self) -> DataTable:
        return self.query_one(f"#{self.TABLE}", DataTable)

    def load(self) -> None:
        self.fetch_rows(self.list_call())  # the filters are read here, on the event loop

    @work(thread=True, exclusive=True, group="list", exit_on_error=False)
    def fetch_rows(self, call: Callable[[], list[dict]]) -> None:
        with self.reporting("list"):
            self.reply(Listed(call()))

    @on(Listed)
    def show_rows(self, message: Listed) -> None:
        if message.superseded:
            return  # a newer load is on its way
        rows = message.rows
        table = self.table
        keep = self._select_id or self.current_id()
        self._select_id = None
        now = datetime.now(timezone.utc)
        table.clear()
        self.rows = {}
        for row in rows:
            self.rows[row["id"]] = row
            table.add_row(*self.cells(row, now), key=str(row["id"]))
        if keep in self.rows:
            table.move_cursor(row=table.get_row_index(str(keep)), animate=False)
        more = f" ({self.MORE})" if len(rows) >= self.LIMIT else ""
        self.query_one(f"#{self.COUNT}", Static).update(plural(len(rows), *self.NOUN) + more)
        self.load_detail()

    def current_id(self) -> int | None:
        table = self.table
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
        except CellDoesNotExist:  # the cursor on no cell (no column yet, or off the rows): nothing highlighted
            return None
        return int(key) if key is not None else None

    def current_row(self) -> dict | None:
        """The highlighted row: its detail when that is as new as the listed row."""
        row_id = self.current_id()
        if row_id is None:
            return None
        row = self.rows.get(row_id)
        detail = self.detail
        if detail is not None and detail["id"] == row_id and (row is None or detail["version"] >= row["version"]):
            return detail
        return row

    def selected(self) -> dict | None:
        row = self.current_row()
        if row is None:
            self.show_error(self.none_selected())
        return row

    def none_selected(self) -> str:
        """Why no move can be made while no row is highlighted (an empty list offers none)."""
        return f"No {self.NOUN[0]} selected."

    def updated(self, row: dict, *, select: bool = False) -> None:
        """A move was made: the next key press uses the new state and version at once; reload."""
        if row["id"] in self.rows:
            self.rows[row["id"]] = {**self.rows[row["id"]], **row}
        if select:
            self._select_id = row["id"]
        self.detail = None  # the pane keeps what it shows until the new detail arrives
        self.load()

    # -- the detail --------------------------------------------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != self.TABLE:
            return
        if self.detail is not None and event.row_key.value == str(self.detail["id"]):
            return
        self.debounce("detail", self.DETAIL_DEBOUNCE, self.load_detail)

    def load_detail(self) -> None:
        row_id = self.current_id()
        if row_id is None:
            self.detail = None
            self.query_one(f"#{self.DETAIL}", Static).update(self.empty_text())
            return
        self.fetch_detail(self.detail_call(row_id))

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def fetch_detail(self, call: Callable[[], dict]) -> None:
        with self.reporting("detail"):
            self.reply(Shown(call()))

    @on(Shown)
    def show_detail(self, message: Shown) -> None:
        if message.superseded or message.row["id"] != self.current_id():
            return  # the cursor has moved on
        self.detail = message.row

    def watch_detail(self, detail: dict | None) -> None:
        if detail is not None:
            self.query_one(f"#{self.DETAIL}", Static).update(self.render_detail(detail))

    # -- keys --------------------------------------------------------------------------------
    def ready(self) -> bool:
        """Whether the acting user is known, so a key may act; says why not in the message line."""
        if self.actor is None:
            self.show_error(self.app.actor_error or "Still finding out who you are; try again in a moment.",
                            403 if self.app.actor_error else 0)
            return False
        return True

    def action_back(self) -> None:
        table = self.table
        if self.focused is not table:
            table.focus()  # leave the filters first
            return
        super().action_back()

    def ask(self, form: ModalScreen, then: Callable[[dict], Any]) -> None:
        """Push a form; escape there says nothing changed, its values go to `then`."""
        def done(values: dict | None) -> None:
            if values is None:
                self.show_info("Cancelled: nothing changed.")
                return
            then(values)

        self.app.push_screen(form, done)
