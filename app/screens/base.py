"""What every workstation screen shares: service calls off the event loop, errors shown in place,
and live reloads when other people act (Redis pub/sub, debounced)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static

from app.safe import visible
from app.widgets.format import plural
from app.widgets.text import plain


class Changed(Message):
    """Someone changed something (a pub/sub notice from the core)."""

    def __init__(self, event: dict):
        super().__init__()
        self.event = event


class ServiceCalls:
    """Mixin: run core calls in thread workers and come back to the event loop with the result."""

    def call(self, fn: Callable, *args: Any, on_done: Callable[[Any], None] | None = None,
             on_error: Callable[[str, int], None] | None = None, group: str = "call", exclusive: bool = False,
             **kwargs: Any) -> None:
        app = self.app

        def job() -> None:
            from core.outage import service_error
            from core.errors import R2KError

            try:
                result = fn(*args, **kwargs)
            except R2KError as exc:
                app.call_from_thread(self._failed, exc.message, exc.status, on_error)
                return
            except Exception as exc:  # a dropped connection is a 503 naming the service
                translated = service_error(exc, app.ctx)
                if translated is None:
                    app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}", 500, on_error)
                    return
                app.call_from_thread(self._failed, translated.message, translated.status, on_error)
                return
            if on_done is not None:
                app.call_from_thread(self._succeeded, on_done, result)

        self.run_worker(job, thread=True, group=group, exclusive=exclusive, exit_on_error=False)

    def _succeeded(self, on_done, result) -> None:
        if self.is_attached:
            on_done(result)

    def _failed(self, message: str, status: int, on_error) -> None:
        if not self.is_attached:
            return
        if status == 503 and hasattr(self.app, "service_down"):
            self.app.service_down(message)
        if on_error is not None:
            on_error(message, status)
        else:
            self.show_error(message, status)

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


def notice_entity(event: dict) -> str | None:
    """What a live notice is about: the entity of the core's notices (core/notices.py), or the
    workstation's own ("actor", "*")."""
    return event.get("entity")


def plain_words(message: str, status: int) -> str:
    lead = {403: "Not allowed: ", 404: "Not found: ", 409: "Someone else got there first: ",
            422: "Not possible now: ", 400: "Missing or invalid: ", 503: "A service is down: "}.get(status, "")
    return lead + message


class WorkstationScreen(ServiceCalls, Screen):
    """A full screen of the workstation. Subclasses implement `load()` and list the pub/sub kinds
    that should reload them in RELOAD_ON.

    Textual calls every `on_mount` along the class hierarchy, this one after the subclass's: a
    subclass sets up its widgets in its own `on_mount` and leaves the first `load()` to this one."""

    RELOAD_ON: tuple[str, ...] = ()
    DEBOUNCE = 0.25

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._debounced: dict[str, Any] = {}

    def on_mount(self) -> None:
        self.load()

    def on_screen_resume(self) -> None:
        if getattr(self, "_loaded_once", False):
            self.load()
        self._loaded_once = True

    def load(self) -> None:
        """Fetch this screen's data (in a worker) and show it."""

    def on_changed(self, message: Changed) -> None:
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

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows: dict[int, dict] = {}
        self.detail: dict | None = None  # the highlighted row's detail as shown
        self._seq = 0                     # only the newest load may fill the table
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
        self._seq += 1
        seq = self._seq
        self.call(self.list_call(), on_done=lambda rows: self.show_rows(rows, seq), group=f"{self.TABLE}-list")

    def show_rows(self, rows: list[dict], seq: int) -> None:
        if seq != self._seq:
            return  # a newer load is on its way
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
        self.add_class("loaded")
        self.load_detail()

    def current_id(self) -> int | None:
        table = self.table
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
        except Exception:
            return None
        return int(key) if key is not None else None

    def current_row(self) -> dict | None:
        """The highlighted row: its detail when that is as new as the listed row."""
        row_id = self.current_id()
        if row_id is None:
            return None
        row = self.rows.get(row_id)
        if self.detail is not None and self.detail["id"] == row_id and (
                row is None or self.detail["version"] >= row["version"]):
            return self.detail
        return row

    def selected(self) -> dict | None:
        row = self.current_row()
        if row is None:
            self.show_error(f"No {self.NOUN[0]} selected.")
        return row

    def updated(self, row: dict, *, select: bool = False) -> None:
        """A move was made: the next key press uses the new state and version at once; reload."""
        if row["id"] in self.rows:
            self.rows[row["id"]] = {**self.rows[row["id"]], **row}
        if select:
            self._select_id = row["id"]
        self.detail = None
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
        self.call(self.detail_call(row_id), on_done=self.show_detail, group=f"{self.TABLE}-detail")

    def show_detail(self, detail: dict) -> None:
        if detail["id"] != self.current_id():
            return  # the cursor has moved on
        self.detail = detail
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


class WorkstationModal(ServiceCalls, ModalScreen):
    pass
