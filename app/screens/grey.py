"""The grey queue: triage unknowns with one key per action.

Entries are filtered by state, by "mine" and by text (search as you type); the detail pane shows
the entry, its next moves (yours with the keys in force, the automation's with when they are due)
and its transition history. Every action goes through `core.services.grey_entries.grey.transition` with the
row's version and a fresh idempotency key; the keys of moves the entry or your role refuses are
hidden, and say why when pressed. `+` adds an entry for your review when you may triage
(docs/architecture.md, "Grey queue"). Escalations received since the screen was last viewed show
as a badge.
"""
from __future__ import annotations

from datetime import datetime, timezone
from functools import partial

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import DataTable, Header, Input, Select, Static

from r2k.app.safe import visible
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import age, clip, new_idempotency_key, parse_time, plural, until
from r2k.app.widgets.modals import Choice, ChoiceModal, Field, FieldsModal
from r2k.app.widgets.text import cell, lines, markup, plain
from r2k.core.services import bulk
from r2k.core.services.grey_entries import grey

from .base import Changed, Moved, notice_entity
from .comments import CommentsPane
from .marks import BulkDone, MarkingListScreen, show_bulk_done

SEARCH_DEBOUNCE = 0.3
SUBJECT_WIDTH = 26

# The filter's order: open states, then where entries end; then any other state the machine has.
_FILTER_ORDER = ["Pending", "Processing", "Retrying", "UnderReview", "Escalated", "Resolved", "Rejected", "Failed",
               "Expired", "Dismissed"]
GREY_STATES = [s for s in _FILTER_ORDER if s in grey.allowed.states()] + sorted(grey.allowed.states() - set(_FILTER_ORDER))
EXPIRING = grey.allowed.sources_of("expire")


# ----------------------------------------------------------------------------- the screen

class GreyQueueScreen(CommentsPane, MarkingListScreen):
    COMMENT_KIND, COMMENT_NOUN = "grey", "entry"
    TITLE = "Grey queue"
    RELOAD_ON = ("grey_entry",)
    AUTO_FOCUS = "#grey-table"
    TABLE, COUNT, DETAIL = "grey-table", "grey-count", "grey-detail"
    LIMIT = 200
    NOUN = ("entry", "entries")
    MORE = "the first 200: narrow the filters"
    # Below 130 columns the detail goes under the list (styles/grey.tcss): beside it, it would be
    # too narrow to read at 120 and not there at all at 80.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (130, "-wide")]

    BINDINGS = [
        # The footer shows the moves the highlighted entry allows you (check_action), then the other
        # keys as the width allows (app/widgets/footer.py); ? lists them all. Letters as on every
        # screen (README, "Keys").
        Binding("i", "assign_me", "Assign me", id="assign_me"),
        Binding("A", "assign_other", "Assign…", key_display="A", show=False, id="assign"),
        Binding("u", "unassign", "Release", id="release"),
        Binding("x", "escalate", "Escalate", id="escalate"),
        Binding("X", "deescalate", "De-escalate", key_display="X", id="deescalate"),
        Binding("v", "resolve", "Resolve", id="resolve"),
        Binding("r", "reject", "Reject", id="reject"),
        Binding("o", "reopen", "Reopen", id="reopen"),
        Binding("b", "dismiss_entry", "Dismiss", id="dismiss"),
        Binding("j", "reset", "Reset", show=False, id="reset"),  # Failed entries only
        Binding("plus", "add", "Add", key_display="+", id="add"),
        Binding("l", "toggle_mine", "Mine only", show=False, id="mine_only"),
        Binding("slash", "focus_search", "Search", key_display="/", show=False, id="search"),
        Binding("f", "focus_state", "State filter", show=False, id="state_filter"),
        Binding("space", "mark", "Mark", show=False, id="mark"),
        Binding("M", "comments", "Comments", show=False, id="comments"),
        Binding("L", "comment", "Comment…", show=False, id="comment"),
        Binding("asterisk", "mark_all", "Mark all shown", key_display="*", show=False, id="mark_all"),
        Binding("escape", "back", "Back", id="back"),
    ]

    # The filters (a new one reloads the list): the state (None: all), the words searched (once
    # the typing pauses; None: none), and whether only the acting user's entries are listed.
    state: var[str | None] = var(None, init=False)
    words: var[str | None] = var(None, init=False)
    mine: var[bool] = var(False, init=False)
    # Escalations that arrived while away, or seen arriving here; drawn at every set.
    badge: var[int] = var(0, init=False, always_update=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._left = True                  # away from the screen (not just under a modal)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="grey-filters"):
            yield Select([("All states", "all")] + [(s, s) for s in GREY_STATES], value="all", allow_blank=False,
                         id="grey-state", prompt="State")
            yield Input(placeholder=f"Search subject or detail ({self.key('search')})", id="grey-search")
            yield Static("All assignees", id="grey-mine")
            yield Static("", id="grey-badge")
        with Horizontal(id="grey-body"):
            with Vertical(id="grey-list"):
                yield DataTable(id="grey-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="grey-count")
            with VerticalScroll(id="grey-detail-pane"):
                yield Static("Loading…", id="grey-detail")
                yield Static("", id="comments")  # the entry's comments (app/screens/comments.py)
        yield Static("", id="message")
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p is listed in ?

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
        self.badge = self.app.grey_badge
        self.app.grey_badge = 0

    def _viewing(self) -> bool:
        stack = self.app.screen_stack
        top = stack[-1] if stack else None
        return top is self or (isinstance(top, ModalScreen) and len(stack) > 1 and stack[-2] is self)

    @on(Changed)
    def _count_escalation(self, message: Changed) -> None:
        # WorkstationScreen's handler (also called) schedules the debounced reload.
        event = message.event
        if notice_entity(event) != "grey_entry" or event.get("action") != "escalate" or not self._viewing():
            return
        counted = self.app.grey_badge
        if counted <= 0:
            return  # the app counts escalations for specialists and admins only
        self.app.grey_badge = counted - 1  # seen here
        if event.get("actor") != self.me:
            self.badge += 1

    def watch_badge(self, n: int) -> None:
        text = f"⚑ {plural(n, 'new escalation')}" if n else "no new escalations"
        line = self.query_one("#grey-badge", Static)
        line.update(text)
        line.set_class(n > 0, "active")
        self.title = f"{self.TITLE} · ⚑ {n} new" if n else self.TITLE

    # -- filters -----------------------------------------------------------------------------
    @property
    def me(self) -> str:
        return self.actor.name if self.actor is not None else self.app.user_name

    @on(Select.Changed, "#grey-state")
    def state_picked(self, event: Select.Changed) -> None:
        self.state = None if event.value in ("all", Select.NULL) else event.value

    @on(Input.Changed, "#grey-search")
    def typed(self, event: Input.Changed) -> None:
        self.debounce("search", SEARCH_DEBOUNCE, lambda: setattr(self, "words", event.input.value.strip() or None))

    @on(Input.Submitted, "#grey-search")
    def to_table(self) -> None:
        self.table.focus()

    def watch_state(self) -> None:
        self.load()

    def watch_words(self) -> None:
        self.load()

    def watch_mine(self, mine: bool) -> None:
        line = self.query_one("#grey-mine", Static)
        line.update(plain(f"Mine only ({self.me})" if mine else "All assignees"))
        line.set_class(mine, "active")
        self.load()

    def action_toggle_mine(self) -> None:
        self.mine = not self.mine

    def action_focus_search(self) -> None:
        self.query_one("#grey-search", Input).focus()

    def action_focus_state(self) -> None:
        self.query_one("#grey-state", Select).focus()

    # -- the list and the detail -------------------------------------------------------------
    def list_call(self):
        return partial(grey.list_entries, self.ctx, self.state, self.me if self.mine else None, self.words,
                       limit=self.LIMIT)

    def cells(self, row: dict, now: datetime) -> tuple:
        return (self.id_cell(row["id"]), state_cell(row["state"]), cell(row["subject"], SUBJECT_WIDTH),
                cell(row["assignee"]), f"{row['attempts']}/{row['max_attempts']}",
                until(row["expires_at"], now) if row["state"] in EXPIRING else "")

    def empty_text(self) -> str:
        return "No entries match the filters."

    def detail_call(self, row_id: int):
        return partial(grey.show, self.ctx, row_id)

    def render_detail(self, entry: dict) -> Content:
        return render_entry(entry, self.next_moves(entry))

    def next_moves(self, entry: dict) -> list[Content]:
        """The detail's "Next": the moves the entry's state allows, yours with the keys that make them
        now (a keymap file's included), others' with who may; then what the automation may do and when.
        Where no move is yours, it says so first, and when the automation moves it next."""
        now = datetime.now(timezone.utc)
        m = markup
        state = entry["state"]
        yours, others = [], []
        for action, to, who in grey.allowed.moves_from(state):
            if self.actor is not None and grey.allowed.refusal(action, entry, self.actor) is None:
                keys = " ".join(self.key(b.id) for b in self.BINDINGS if self.MOVES.get(b.action) == action)
                yours.append((keys, action, to))
            else:
                others.append((who, action, to))
        # Yours in the footer's order (the bindings' declared order), so the pane and the footer agree.
        first_key = {self.MOVES[b.action]: i for i, b in reversed(list(enumerate(self.BINDINGS))) if b.action in self.MOVES}
        yours.sort(key=lambda move: first_key.get(move[1], len(first_key)))
        automation = entry.get("automation") or []
        if not (yours or others or automation):
            return [m("[b]Next[/b]     [dim]none: terminal[/dim]")]
        out = []
        if yours:
            out.append(m("[b]Next[/b]"))
            width = max(len(keys) for keys, _, _ in yours)
            out += [m(f"  [b]$keys[/b] {action} → {to}", keys=f"{keys:<{width}}") for keys, action, to in yours]
        else:
            due = next((a for a in automation if a["action"] == "process" and a.get("at")), None)
            said = (f"automation retries {clock(due['at'], now)}; no move is yours until then" if due
                    else f"no move is yours: {others[0][0]} makes these" if others
                    else "no move is yours: the automation works it")
            out.append(m("[b]Next[/b]     $said", said=said))
        for who, action, to in others:
            out.append(m(f"  {action} → {to}  [dim]$who[/dim]", who=who))
        if automation:
            out.append(m("[b]Automation[/b]"))
            width = max(len(f"{a['action']} → {a['to']}") for a in automation)
            for a in automation:
                when = a["when"]
                if a.get("at"):
                    when += f" {clock(a['at'], now)}"
                if a["action"] == "process" and a.get("of"):
                    when += f": attempt {a['attempt']} of {a['of']}"
                out.append(m(f"  {a['action'] + ' → ' + a['to']:<{width}}  [dim]$when[/dim]", when=when))
        return out

    def watch_detail(self, entry: dict | None) -> None:
        super().watch_detail(entry)
        if entry is not None:
            self.query_one("#grey-detail-pane").set_class(entry["state"] == "Escalated", "escalated")
            if self.has_class("comments-open"):  # the pane follows the entry highlighted
                self.load_comments()

    def comment_target(self) -> int | None:
        return self.current_id()

    # -- actions -----------------------------------------------------------------------------
    # The binding's action -> the grey entry's move: keys of moves the highlighted entry cannot take
    # are hidden (base.WorkstationScreen.check_action), and say why when pressed.
    MOVES = {"assign_me": "assign", "assign_other": "assign", "unassign": "unassign", "escalate": "escalate",
             "deescalate": "deescalate", "resolve": "resolve", "reject": "reject", "reopen": "reopen",
             "dismiss_entry": "dismiss", "reset": "reset"}

    def why_not(self, action: str):
        if action not in self.MOVES or self.actor is None or not self.is_mounted:
            return None
        if self.marked:  # a move on the marked entries: each takes it or says why not (bulk_done)
            return None
        row = self.current_row()
        return grey.allowed.refusal(self.MOVES[action], row, self.actor) if row is not None else self.none_selected()

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
        """An entry for your own review when you may triage (it goes to UnderReview at once, and the
        automation never takes it; u gives it back), else one the automation looks into."""
        key = new_idempotency_key()
        if not self.ready():
            return
        assignee = self.me if grey.allowed.refusal("assign", {"state": "Pending"}, self.actor) is None else None

        def add(values: dict) -> None:
            self.move("add", partial(grey.add, self.ctx, self.actor, values["subject"], values.get("detail") or "",
                                     assignee=assignee, idempotency_key=key))

        hint = (f"It goes to your review at once ({self.key('release')} then leaves it to the automation)."
                if assignee else "The automation looks for sources; a specialist triages it.")
        self.ask(FieldsModal("Add a grey entry" + (" for your review" if assignee else ""), [
            Field("subject", "Subject: what is unknown", required=True),
            Field("detail", "Detail")], hint=plain(hint)), add)

    def act(self, action: str, *, ask: list[Field] | None = None, title: str = "", **fields) -> None:
        """One key press: a fresh idempotency key; ask for what the move needs (when the entry's
        state allows it), then send it. A move the state does not allow goes straight to the core,
        whose 422 is shown in place."""
        key = new_idempotency_key()
        if self.marked:
            self.act_on_marked(action, ask or [], key, fields)
            return
        if not self.ready() or (row := self.selected()) is None:
            return
        if not ask or not grey.allowed.may(self.actor, action, row):
            self.send(row, action, key, fields)
            return
        required = grey.allowed.needs(action, row["state"])
        form = [Field(f.name, f.label, required=f.required or f.name in required, placeholder=f.placeholder)
                for f in ask]
        self.ask(FieldsModal(title.format(id=row["id"]), form, hint=plain(row["subject"], 70)),
                 lambda values: self.send(row, action, key, {**fields, **values}))

    def send(self, row: dict, action: str, key: str, fields: dict) -> None:
        self.move(action, partial(grey.transition, self.ctx, self.actor, row["id"], action,
                                  expected_version=row["version"], idempotency_key=key,
                                  **{k: v for k, v in fields.items() if v is not None}))

    @on(Moved)
    def moved(self, message: Moved) -> None:
        entry = message.row
        if message.action == "add":
            self.show_info(f"Entry {entry['id']} added for your review ({entry['state']}): {self.key('release')} "
                           f"leaves it to the automation." if entry.get("assignee") == self.me else
                           f"Entry {entry['id']} added ({entry['state']}): the automation looks for sources first.")
            self._select_id = entry["id"]
            self.load()
            return
        self.show_info(f"Entry {entry['id']}: {message.action} → {entry['state']}"
                       + (f" (assignee {entry['assignee']})" if entry.get("assignee") else "") + ".")
        self.updated(entry)


    # -- bulk moves on the marked entries (marks.py; docs/architecture.md, "Bulk actions") ----
    def act_on_marked(self, action: str, ask: list[Field], key: str, fields: dict) -> None:
        """Confirm with the count (and ask what the move needs, once for all), then make the move on
        each marked entry, each with the version shown, its own event and its own key."""
        if not self.ready():
            return
        versions = self.marked_versions()
        count = plural(len(versions), "marked entry", "marked entries")
        title = f"{action.capitalize()} {count}?"
        hint = plain("Each entry is its own move: one that cannot take it is listed and left as it is. Entries "
                     + ", ".join(map(str, list(versions)[:20])) + (" …" if len(versions) > 20 else ""), 300)

        def go(values: dict | None) -> None:
            self.show_info(f"{action.capitalize()}: {count}…")
            self.send_bulk(self.actor, action, versions, {**fields, **(values or {})}, key)

        if ask:
            self.ask(FieldsModal(title, [Field(f.name, f.label, required=f.required, placeholder=f.placeholder)
                                         for f in ask], hint=hint), go)
            return
        question = Content(f"{action.capitalize()} {count}? Each is its own move.")
        self.app.push_screen(ChoiceModal(title, question, [Choice("go", action.capitalize(), "y"),
                                                           Choice("cancel", "Cancel", "n")], cancel="cancel"),
                             lambda choice: go(None) if choice == "go" else self.show_info("Cancelled: nothing changed."))

    @work(thread=True, group="bulk", exit_on_error=False)
    def send_bulk(self, actor, action: str, versions: dict[int, int], fields: dict, key: str) -> None:
        def one(entry_id: int, item_key: str | None) -> dict:
            return grey.transition(self.ctx, actor, entry_id, action, expected_version=versions[entry_id],
                                   idempotency_key=item_key, **{k: v for k, v in fields.items() if v is not None})

        with self.reporting(action):
            self.reply(BulkDone(action, bulk.each(list(versions), one, idempotency_key=key)))

    @on(BulkDone)
    def bulk_done(self, message: BulkDone) -> None:
        show_bulk_done(self, message, "entry")
        self.detail = None
        self.load()


def state_cell(state: str) -> str:
    return f"[b]⚑ {state}[/b]" if state == "Escalated" else cell(state)


def clock(at: str, now: datetime) -> str:
    """When a due time is: on the local clock and from now within half a day ("at 14:05 (in 7m)", "at
    14:05 (due now)"), else from now only ("in 7d")."""
    when = parse_time(at)
    if when is None:
        return "—"
    left = until(at, now)
    if (when - now).total_seconds() > 12 * 3600:
        return f"in {left}"
    return f"at {when.astimezone().strftime('%H:%M')} ({'due now' if left == 'overdue' else 'in ' + left})"


def render_entry(entry: dict, next_moves: list[Content]) -> Content:
    """The detail pane: markup written here, every stored text put in as plain text with its
    controls made visible; `next_moves`, its "Next" lines (GreyQueueScreen.next_moves)."""
    now = datetime.now(timezone.utc)
    m = markup
    mark = "⚑ " if entry["state"] == "Escalated" else ""
    out = [m(f"[b]{mark}Entry {entry['id']} · $state[/b] [dim]v{entry['version']} · $origin"
             + (f" · work item {entry['work_item_id']}" if entry.get("work_item_id") else "") + "[/dim]",
             state=entry["state"], origin=entry["origin"])]
    # What comes next first, where it shows without scrolling (the pane is short at 80x24).
    out += next_moves
    out += [m(""), m("[b]Subject[/b]  $subject", subject=entry["subject"])]
    if entry.get("detail"):
        out.append(m("[b]Detail[/b]   $detail", detail=entry["detail"]))
    out.append(m(""))
    expires = until(entry.get("expires_at"), now) if entry["state"] in EXPIRING else ""
    out.append(m("[b]Assignee[/b] $assignee    [b]Attempts[/b] "
                 f"{entry['attempts']}/{entry['max_attempts']}    [b]Expires[/b] "
                 + (f"in {expires}" if expires and expires != "overdue" else expires or "—"),
                 assignee=entry.get("assignee") or "—"))
    for label, column in (("Notes", "notes"), ("Reason", "reason"), ("Rejected by", "rejected_by"),
                          ("Resolution", "resolution")):
        if entry.get(column):
            out.append(m(f"[b]{label}[/b]  $value", value=entry[column]))
    out += [m(""), m("[b]History[/b]")]
    for h in entry.get("history") or []:
        # Padded after visible(), so the columns line up with what is drawn.
        out.append(m("  $action $before → $after $actor "
                     f"{age(h['created_at'], now):>4}",
                     action=f"{visible(h['action']):<10}", before=f"{visible(h['from_state'] or '·'):>11}",
                     after=f"{visible(h['to_state']):<11}", actor=f"{clip(visible(h['actor']), 8):<8}"))
        if h.get("reason"):
            out.append(m("  [dim]           $reason[/dim]", reason=clip(h["reason"], 200)))
    return lines(out)
