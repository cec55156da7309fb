"""The grey queue (DESIGN §5.5, seed 003): triage unknowns with one key per action.

Entries are filtered by state, by "mine" and by text (search as you type); the detail pane shows
the entry, its valid next actions and its transition history. Every action goes through
`core.services.grey.transition` with the row's version and a fresh idempotency key; a move the
entry's state does not allow is still sent, so the core's 422 is shown in place. Escalations
received since the screen was last viewed show as a badge.

`FieldsModal`, the small form modal asking for a reason, an assignee or a subject, lives here
until the shared modals land in app/widgets; the work-item screen uses it too.
"""
from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, Input, Select, Static

from core.errors import ValidationStateError
from core.machines.grey import GREY

from .base import WorkstationScreen

LIMIT = 200
SEARCH_DEBOUNCE = 0.3
DETAIL_DEBOUNCE = 0.1
SUBJECT_WIDTH = 26

# The seed's order (seed 003), then anything the machine gained since.
_SEED_ORDER = ["Pending", "Processing", "Retrying", "UnderReview", "Escalated", "Resolved", "Rejected", "Failed",
               "Expired", "Dismissed"]
GREY_STATES = [s for s in _SEED_ORDER if s in GREY.states] + sorted(GREY.states - set(_SEED_ORDER))
EXPIRING = {m_source for m in GREY.moves if m.action == "expire" for m_source in m.sources}

# action -> the key that makes it (shown in the detail's "next" line)
ACTION_KEYS = {"assign": "a/A", "unassign": "u", "escalate": "e", "deescalate": "d", "resolve": "s",
               "reject": "r", "reopen": "o", "dismiss": "x", "reset": "t"}


# ----------------------------------------------------------------------------- small helpers

def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


def span(seconds: float) -> str:
    """A human duration, coarse enough to read at a glance: <1m, 3m, 2h, 4d."""
    s = max(0.0, seconds)
    if s < 60:
        return "<1m"
    if s < 3600:
        return f"{int(s // 60)}m"
    if s < 86400:
        return f"{int(s // 3600)}h"
    return f"{int(s // 86400)}d"


def ago(value: str | None, now: datetime | None = None) -> str:
    """How long ago an ISO time was ("3m"); empty when unknown."""
    at = parse_time(value)
    if at is None:
        return ""
    return span(((now or datetime.now(timezone.utc)) - at).total_seconds())


def until(value: str | None, now: datetime | None = None) -> str:
    """How long until an ISO time ("7d", rounded up), or "overdue"."""
    at = parse_time(value)
    if at is None:
        return ""
    seconds = (at - (now or datetime.now(timezone.utc))).total_seconds()
    if seconds <= 0:
        return "overdue"
    if seconds < 60:
        return "<1m"
    for unit, size, below in (("m", 60, 3600), ("h", 3600, 86400), ("d", 86400, math.inf)):
        whole = math.ceil(seconds / size)
        if whole * size < below:
            return f"{whole}{unit}"
    return ""


def clip(text: str | None, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def new_key() -> str:
    """One idempotency key per key press (DESIGN §6)."""
    return uuid.uuid4().hex


# ----------------------------------------------------------------------------- the form modal

@dataclass(frozen=True)
class Field:
    name: str
    label: str
    required: bool = False
    placeholder: str = ""
    value: str = ""


class FieldsModal(ModalScreen):
    """Ask for one or more short texts. Enter moves on (and confirms on the last field); escape
    cancels with nothing changed. Dismisses with {name: text or None}, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, fields: list[Field], *, hint: str = ""):
        super().__init__()
        self.form_title = title
        self.fields = fields
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(classes="fields-modal"):
            yield Static(self.form_title, classes="fields-title")
            if self.hint:
                yield Static(self.hint, classes="fields-hint")
            for f in self.fields:
                yield Static(f"{f.label} {'(required)' if f.required else '(optional)'}", classes="fields-label")
                yield Input(value=f.value, placeholder=f.placeholder, id=f"field-{f.name}")
            yield Static("", classes="fields-error")
            yield Static("Enter: next field / confirm  ·  Escape: cancel, nothing changes", classes="fields-keys")

    def on_mount(self) -> None:
        self.query(Input).first().focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        inputs = list(self.query(Input))
        position = inputs.index(event.input)
        if position < len(inputs) - 1:
            inputs[position + 1].focus()
            return
        self.submit()

    def submit(self) -> None:
        values: dict[str, str | None] = {}
        for f in self.fields:
            box = self.query_one(f"#field-{f.name}", Input)
            text = box.value.strip()
            if f.required and not text:
                self.query_one(".fields-error", Static).update(f"{f.label} is required (escape cancels).")
                box.focus()
                return
            values[f.name] = text or None
        self.dismiss(values)

    def action_cancel(self) -> None:
        self.dismiss(None)


# ----------------------------------------------------------------------------- the screen

class GreyQueueScreen(WorkstationScreen):
    TITLE = "Grey queue"
    RELOAD_ON = ("grey",)
    AUTO_FOCUS = "#grey-table"

    BINDINGS = [
        Binding("a", "assign_me", "Assign me"),
        Binding("A", "assign_other", "Assign…", key_display="A"),
        Binding("u", "unassign", "Unassign"),
        Binding("e", "escalate", "Escalate"),
        Binding("d", "deescalate", "De-escalate"),
        Binding("s", "resolve", "Resolve"),
        Binding("r", "reject", "Reject"),
        Binding("o", "reopen", "Reopen"),
        Binding("x", "dismiss_entry", "Dismiss"),
        Binding("t", "reset", "Reset", show=False),  # Failed entries only; listed in the ? help
        Binding("plus", "add", "Add", key_display="+", show=False),
        Binding("m", "toggle_mine", "Mine"),
        Binding("slash", "focus_search", "Search", key_display="/", show=False),
        Binding("f", "focus_state", "State filter", show=False),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mine = False
        self.rows: dict[int, dict] = {}
        self.entry: dict | None = None      # the detail shown, from grey.show
        self.badge = 0
        self._seq = 0
        self._select_id: int | None = None
        self._search_timer = None
        self._detail_timer = None
        self._left = True                  # away from the screen (not just under a modal)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="grey-filters"):
            yield Select([("All states", "all")] + [(s, s) for s in GREY_STATES], value="all", allow_blank=False,
                         id="grey-state", prompt="State")
            yield Input(placeholder="Search subject or detail (/)", id="grey-search")
            yield Static("All assignees", id="grey-mine")
            yield Static("", id="grey-badge")
        with Horizontal(id="grey-body"):
            with Vertical(id="grey-list"):
                yield DataTable(id="grey-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="grey-count")
            with VerticalScroll(id="grey-detail-pane"):
                yield Static("Loading…", id="grey-detail")
        yield Static("", id="message")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#grey-table", DataTable)
        table.add_column("id", key="id", width=4)
        table.add_column("state", key="state", width=13)
        table.add_column("subject", key="subject", width=SUBJECT_WIDTH)
        table.add_column("assignee", key="assignee", width=9)
        table.add_column("tries", key="tries", width=5)
        table.add_column("expires", key="expires", width=7)
        self.view_badge()
        # WorkstationScreen.on_mount (called after this one) loads the list

    # -- the badge -------------------------------------------------------------------------
    def on_screen_resume(self) -> None:
        if self._left:
            self.view_badge()

    def on_screen_suspend(self) -> None:
        self._left = not isinstance(self.app.screen, ModalScreen)

    def view_badge(self) -> None:
        """Viewing the screen: show what arrived while away, and reset the app's count."""
        self._left = False
        self.badge = getattr(self.app, "grey_badge", 0) or 0
        self.app.grey_badge = 0
        self.show_badge()

    def _viewing(self) -> bool:
        stack = self.app.screen_stack
        top = stack[-1] if stack else None
        return top is self or (isinstance(top, ModalScreen) and len(stack) > 1 and stack[-2] is self)

    def on_changed(self, message) -> None:
        # WorkstationScreen.on_changed (also called) schedules the debounced reload.
        event = message.event
        if event.get("kind") != "grey" or event.get("action") != "escalate" or not self._viewing():
            return
        counted = getattr(self.app, "grey_badge", 0) or 0
        if counted <= 0:
            return  # the app counts escalations for specialists and admins only
        self.app.grey_badge = counted - 1  # seen here
        if event.get("actor") != self.me:
            self.badge += 1
            self.show_badge()

    def show_badge(self) -> None:
        n = self.badge
        text = f"⚑ {n} new escalation{'' if n == 1 else 's'}" if n else "no new escalations"
        line = self.query_one("#grey-badge", Static)
        line.update(text)
        line.set_class(n > 0, "active")
        self.title = f"{self.TITLE} · ⚑ {n} new" if n else self.TITLE

    # -- filters -----------------------------------------------------------------------------
    @property
    def me(self) -> str:
        return self.actor.name if self.actor is not None else self.app.user_name

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "grey-state":
            self.load()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "grey-search":
            return
        if self._search_timer is not None:
            self._search_timer.stop()
        self._search_timer = self.set_timer(SEARCH_DEBOUNCE, self._search_now)

    def _search_now(self) -> None:
        self._search_timer = None
        self.load()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "grey-search":
            self.query_one("#grey-table", DataTable).focus()

    def action_toggle_mine(self) -> None:
        self.mine = not self.mine
        self.query_one("#grey-mine", Static).update(f"Mine only ({self.me})" if self.mine else "All assignees")
        self.query_one("#grey-mine", Static).set_class(self.mine, "active")
        self.load()

    def action_focus_search(self) -> None:
        self.query_one("#grey-search", Input).focus()

    def action_focus_state(self) -> None:
        self.query_one("#grey-state", Select).focus()

    def action_back(self) -> None:
        table = self.query_one("#grey-table", DataTable)
        if self.focused is not table:
            table.focus()  # leave the filters first
            return
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.open_screen("dashboard")

    # -- the list ----------------------------------------------------------------------------
    def filters(self) -> tuple[str | None, str | None, str | None]:
        state = self.query_one("#grey-state", Select).value
        text = self.query_one("#grey-search", Input).value.strip()
        return (None if state in ("all", Select.NULL) else state, self.me if self.mine else None, text or None)

    def load(self) -> None:
        from core.services import grey

        self._seq += 1
        seq = self._seq
        state, assignee, text = self.filters()
        self.call(grey.list_entries, self.ctx, state, assignee, text, limit=LIMIT,
                  on_done=lambda rows: self.show_rows(rows, seq), group="grey-list")

    def show_rows(self, rows: list[dict], seq: int) -> None:
        if seq != self._seq:
            return  # a newer load is on its way
        table = self.query_one("#grey-table", DataTable)
        keep = self._select_id or self.current_id()
        self._select_id = None
        now = datetime.now(timezone.utc)
        table.clear()
        self.rows = {}
        for row in rows:
            self.rows[row["id"]] = row
            table.add_row(str(row["id"]), state_cell(row["state"]), escape(clip(row["subject"], SUBJECT_WIDTH)),
                          escape(row["assignee"] or ""), f"{row['attempts']}/{row['max_attempts']}",
                          until(row["expires_at"], now) if row["state"] in EXPIRING else "",
                          key=str(row["id"]))
        if keep in self.rows:
            table.move_cursor(row=table.get_row_index(str(keep)), animate=False)
        more = " (the first 200: narrow the filters)" if len(rows) >= LIMIT else ""
        self.query_one("#grey-count", Static).update(f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'}{more}")
        self.add_class("loaded")
        self.load_detail()

    def current_id(self) -> int | None:
        table = self.query_one("#grey-table", DataTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
        except Exception:
            return None
        return int(key) if key is not None else None

    def current_row(self) -> dict | None:
        entry_id = self.current_id()
        if entry_id is None:
            return None
        row = self.rows.get(entry_id)
        if self.entry is not None and self.entry["id"] == entry_id and (
                row is None or self.entry["version"] >= row["version"]):
            return self.entry
        return row

    # -- the detail --------------------------------------------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "grey-table":
            return
        if self.entry is not None and event.row_key.value == str(self.entry["id"]):
            return
        if self._detail_timer is not None:
            self._detail_timer.stop()
        self._detail_timer = self.set_timer(DETAIL_DEBOUNCE, self.load_detail)

    def load_detail(self) -> None:
        from core.services import grey

        self._detail_timer = None
        entry_id = self.current_id()
        if entry_id is None:
            self.entry = None
            self.query_one("#grey-detail", Static).update("No entries match the filters.")
            return
        self.call(grey.show, self.ctx, entry_id, on_done=self.show_detail, group="grey-detail")

    def show_detail(self, entry: dict) -> None:
        if entry["id"] != self.current_id():
            return
        self.entry = entry
        self.query_one("#grey-detail", Static).update(render_entry(entry))
        self.query_one("#grey-detail-pane").set_class(entry["state"] == "Escalated", "escalated")

    # -- actions -----------------------------------------------------------------------------
    def action_assign_me(self) -> None:
        self.act("assign", assignee=self.me)

    def action_assign_other(self) -> None:
        self.act("assign", ask=[Field("assignee", "Assign to (user name)", required=True),
                                Field("notes", "Notes for the reviewer")], title="Assign entry {id} for review")

    def action_unassign(self) -> None:
        self.act("unassign")

    def action_escalate(self) -> None:
        self.act("escalate", ask=[Field("reason", "Why escalate", required=True)],
                 title="Escalate entry {id} (notifies specialists)")

    def action_deescalate(self) -> None:
        self.act("deescalate")

    def action_resolve(self) -> None:
        self.act("resolve", ask=[Field("resolution", "Resolution: what settled it")], title="Resolve entry {id}")

    def action_reject(self) -> None:
        self.act("reject", rejected_by=self.me, ask=[Field("reason", "Why reject", required=True)],
                 title="Reject entry {id}")

    def action_reopen(self) -> None:
        self.act("reopen", ask=[Field("reason", "Why reopen")], title="Reopen entry {id}")

    def action_dismiss_entry(self) -> None:
        self.act("dismiss", ask=[Field("reason", "Why dismiss")], title="Dismiss entry {id}")

    def action_reset(self) -> None:
        self.act("reset")

    def action_add(self) -> None:
        key = new_key()
        if not self.ready():
            return

        def done(values: dict | None) -> None:
            if values is None:
                self.show_info("Cancelled: nothing changed.")
                return
            from core.services import grey

            self.call(grey.add, self.ctx, self.actor, values["subject"], values.get("detail") or "",
                      idempotency_key=key, on_done=self.added, group="grey-move")

        self.app.push_screen(FieldsModal("Add a grey entry", [
            Field("subject", "Subject: what is unknown", required=True),
            Field("detail", "Detail")]), done)

    def added(self, entry: dict) -> None:
        self.show_info(f"Entry {entry['id']} added ({entry['state']}).")
        self._select_id = entry["id"]
        self.load()

    def ready(self) -> bool:
        if self.actor is None:
            self.show_error(self.app.actor_error or "Still finding out who you are; try again in a moment.", 403
                            if self.app.actor_error else 0)
            return False
        return True

    def act(self, action: str, *, ask: list[Field] | None = None, title: str = "", **fields) -> None:
        """One key press: a fresh idempotency key; ask for what the move needs (when the entry's
        state allows it), then send it. A move the state does not allow goes straight to the core,
        whose 422 is shown in place."""
        key = new_key()
        if not self.ready():
            return
        row = self.current_row()
        if row is None:
            self.show_error("No entry selected.")
            return
        try:
            allowed = GREY.find(action, row["state"], row["id"])
            allowed = allowed.who(self.actor, row)
        except ValidationStateError:
            allowed = False
        if not ask or not allowed:
            self.send(row, action, key, fields)
            return
        required = set(GREY.find(action, row["state"]).needs)
        form = [Field(f.name, f.label, required=f.required or f.name in required, placeholder=f.placeholder)
                for f in ask]

        def done(values: dict | None) -> None:
            if values is None:
                self.show_info("Cancelled: nothing changed.")
                return
            self.send(row, action, key, {**fields, **values})

        self.app.push_screen(FieldsModal(title.format(id=row["id"]), form,
                                         hint=escape(clip(row["subject"], 70))), done)

    def send(self, row: dict, action: str, key: str, fields: dict) -> None:
        from core.services import grey

        self.call(grey.transition, self.ctx, self.actor, row["id"], action, expected_version=row["version"],
                  idempotency_key=key, **{k: v for k, v in fields.items() if v is not None},
                  on_done=lambda moved: self.moved(action, moved), group="grey-move")

    def moved(self, action: str, entry: dict) -> None:
        self.show_info(f"Entry {entry['id']}: {action} → {entry['state']}"
                       + (f" (assignee {entry['assignee']})" if entry.get("assignee") else "") + ".")
        if entry["id"] in self.rows:  # the next key press uses the new state and version at once
            self.rows[entry["id"]] = {**self.rows[entry["id"]], **entry}
        self.entry = None
        self.load()


def state_cell(state: str) -> str:
    return f"[b]⚑ {state}[/b]" if state == "Escalated" else state


def render_entry(entry: dict) -> str:
    """The detail pane's text (Textual markup; every stored text escaped)."""
    now = datetime.now(timezone.utc)
    e = escape
    mark = "⚑ " if entry["state"] == "Escalated" else ""
    lines = [f"[b]{mark}Entry {entry['id']} · {entry['state']}[/b] [dim]v{entry['version']} · {e(entry['origin'])}"
             + (f" · work item {entry['work_item_id']}" if entry.get("work_item_id") else "") + "[/dim]",
             "", f"[b]Subject[/b]  {e(entry['subject'])}"]
    if entry.get("detail"):
        lines.append(f"[b]Detail[/b]   {e(entry['detail'])}")
    lines.append("")
    expires = until(entry.get("expires_at"), now) if entry["state"] in EXPIRING else ""
    lines.append(f"[b]Assignee[/b] {e(entry.get('assignee') or '—')}    [b]Attempts[/b] "
                 f"{entry['attempts']}/{entry['max_attempts']}    [b]Expires[/b] "
                 + (f"in {expires}" if expires and expires != "overdue" else expires or "—"))
    for label, column in (("Notes", "notes"), ("Reason", "reason"), ("Rejected by", "rejected_by"),
                          ("Resolution", "resolution")):
        if entry.get(column):
            lines.append(f"[b]{label}[/b]  {e(entry[column])}")
    lines.append("")
    moves = entry.get("transitions") or []
    lines.append("[b]Next[/b]" if moves else "[b]Next[/b]     [dim]none: terminal[/dim]")
    for m in moves:
        lines.append(f"  [b]{ACTION_KEYS.get(m['action'], '?'):>3}[/b] {m['action']} → {m['to']}")
    lines += ["", "[b]History[/b]"]
    for h in entry.get("history") or []:
        lines.append(f"  {h['action']:<10} {(h['from_state'] or '·'):>11} → {h['to_state']:<11} "
                     f"{e(clip(h['actor'], 8)):<8} {ago(h['created_at'], now):>4}")
        if h.get("reason"):
            lines.append(f"  [dim]           {e(clip(h['reason'], 200))}[/dim]")
    return "\n".join(lines)
