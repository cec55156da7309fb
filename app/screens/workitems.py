"""Work items: the generation pipeline as it runs.

A table of items (filtered by state, updated live as workers move them), the LLM circuit
breaker and the live worker count, and a detail pane with the highlighted item's question,
history and generated attempts (prompt, sources, model, text). Keys create, (re)generate,
rework and close items; the core's errors are shown in place.
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
from textual.widgets import DataTable, Header, Select, Static

from r2k.app.keymap import key_of
from r2k.app.safe import visible
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import age, clip, new_idempotency_key, plural
from r2k.app.widgets.modals import Field, FieldsModal, TextModal
from r2k.app.widgets.text import cell, lines, markup, plain
from r2k.app.wording import resubmit_said
from r2k.core.services import bulk
from r2k.core.services.answering import generation, workitems
from r2k.core.services.operations import workers_live
from r2k.core.services.validation import candidates

from .base import Changed, Failed, Moved, Reply, notice_entity
from .marks import BulkDone, MarkingListScreen, show_bulk_done

STATUS_EVERY = 5.0     # the breaker and the worker count live in Redis: a cheap, slow poll
PROMPT_SHOWN = 1500
SOURCE_SHOWN = 240
QUESTION_WIDTH = 64


WORK_ITEM_STATES = workitems.allowed.pipeline()  # in the order the pipeline reaches them
# A move's action -> what the message line says it did to the item.
DONE = {"create": "created", "generate": "queued for generation", "rework": "sent back for rework",
        "close": "closed"}


class PipelineStatus(Reply):
    """The LLM circuit breaker and the live worker count (`pipeline_status`)."""

    def __init__(self, status: dict):
        super().__init__()
        self.status = status


class EscalatedFound(Reply):
    """The ESCALATED candidate a work item holds (`candidates.escalated_for_item`), to resubmit."""

    def __init__(self, item: dict, key: str, candidate: dict | None):
        super().__init__()
        self.item = item
        self.key = key
        self.candidate = candidate


# A work item whose escalated candidate may be resubmitted: the states a work item may close from.
RESUBMITS_FROM = ("NEW", "NEEDS_REWORK", "ESCALATED")


class WorkItemsScreen(MarkingListScreen):
    TITLE = "Work items"
    RELOAD_ON = ("work_item",)
    AUTO_FOCUS = "#wi-table"
    TABLE, COUNT, DETAIL = "wi-table", "wi-count", "wi-detail"
    LIMIT = 200
    NOUN = ("work item", "work items")
    MORE = "the newest 200: filter by state to see others"

    BINDINGS = [
        Binding("plus", "new_item", "Add", key_display="+", id="add"),
        Binding("g", "generate", "Generate", id="generate"),
        Binding("k", "rework", "Rework", id="rework"),
        Binding("c", "close_item", "Close", id="close"),
        Binding("R", "resubmit", "Resubmit", id="resubmit"),
        Binding("f", "focus_state", "State filter", show=False, id="state_filter"),
        Binding("space", "mark", "Mark", show=False, id="mark"),
        Binding("asterisk", "mark_all", "Mark all shown", key_display="*", show=False, id="mark_all"),
        Binding("ctrl+r", "reload", "Refresh", show=False, id="refresh"),
        Binding("escape", "back", "Back", id="back"),
    ]

    # The binding's action -> the work item's move (generate and resubmit: their services' rules).
    MOVES = {"generate": "generate", "rework": "rework", "close_item": "close", "resubmit": "resubmit"}

    # The state filter (None: all states); a new one reloads the list.
    state: var[str | None] = var(None, init=False)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="wi-bar"):
            yield Select([("All states", "all")] + [(s, s) for s in WORK_ITEM_STATES], value="all",
                         allow_blank=False, id="wi-state", prompt="State")
            yield Static("LLM circuit …", id="wi-breaker")
            yield Static("workers …", id="wi-workers")
        with Vertical(id="wi-body"):
            with Vertical(id="wi-list"):
                yield DataTable(id="wi-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="wi-count")
            with VerticalScroll(id="wi-detail-pane"):
                yield Static("Loading…", id="wi-detail")
        yield Static("", id="message")
        yield Footer(show_command_palette=False)  # ctrl+p is listed in ? (80 columns: README, Keys)

    def on_mount(self) -> None:
        table = self.query_one("#wi-table", DataTable)
        table.add_column("id", key="id", width=4)
        table.add_column("state", key="state", width=18)
        table.add_column("reason", key="reason", width=18)
        table.add_column("src", key="sources", width=3)
        table.add_column("try", key="attempts", width=3)
        table.add_column("age", key="age", width=4)
        table.add_column("question", key="question", width=QUESTION_WIDTH)
        self.load_status()
        self.set_interval(STATUS_EVERY, self.load_status)
        # WorkstationScreen.on_mount (called after this one) loads the list

    @on(Changed)
    def _follow_pipeline(self, message: Changed) -> None:
        # WorkstationScreen's handler (also called) reloads the list; a worker moving an item
        # may also have tripped or closed the breaker.
        if notice_entity(message.event) == "work_item" and self.is_current:
            self.load_status()

    # -- the breaker and the workers ---------------------------------------------------------
    def load_status(self) -> None:
        self.fetch_status()

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def fetch_status(self) -> None:
        with self.reporting("status"):
            self.reply(PipelineStatus(pipeline_status(self.ctx)))

    @on(PipelineStatus)
    def show_status(self, message: PipelineStatus) -> None:
        if message.superseded:
            return
        status = message.status
        breaker = status["breaker"]
        line = self.query_one("#wi-breaker", Static)
        text = f"LLM circuit {breaker['shown']} · {breaker['failures']}/{breaker['threshold']} failures"
        if breaker["state"] != "closed" and breaker.get("last_error"):
            text += " · last: $error"
        line.update(markup(text + "  [dim]$url[/dim]", error=clip(breaker.get("last_error"), 40),
                           url=clip(breaker["url"], 40)))
        for name in ("closed", "open", "half_open"):
            line.set_class(breaker["state"] == name, f"breaker-{name}")
        workers = status["workers"]
        box = self.query_one("#wi-workers", Static)
        box.update(f"{plural(workers, 'worker')} live")
        box.set_class(workers == 0, "none")

    def show_failure(self, failed: Failed) -> None:
        if failed.call == "status":
            self.query_one("#wi-breaker", Static).update("LLM circuit unknown")
            self.query_one("#wi-workers", Static).update("workers unknown")
        super().show_failure(failed)

    # -- the list and the detail -------------------------------------------------------------
    @on(Select.Changed, "#wi-state")
    def state_picked(self, event: Select.Changed) -> None:
        self.state = None if event.value in ("all", Select.NULL) else event.value

    def watch_state(self) -> None:
        self.load()

    def action_reload(self) -> None:
        self.load()
        self.load_status()

    def list_call(self):
        return partial(workitems.list_items, self.ctx, self.state, limit=self.LIMIT)

    def cells(self, row: dict, now: datetime) -> tuple:
        # The last move's reason (a rework's, `no_content`), else the validator's escalation reason.
        return (self.id_cell(row["id"]), cell(row["state"]), cell(row["reason"] or row.get("escalation_reason"), 18),
                "" if row["source_count"] is None else str(row["source_count"]), str(row["attempts"]),
                age(row["created_at"], now), cell(row["question"], QUESTION_WIDTH))

    def empty_text(self) -> str:
        state = self.state
        return "No work items" + (f" in {state}." if state else f" yet: {self.key('add')} creates one.")

    def detail_call(self, row_id: int):
        return partial(workitems.show, self.ctx, row_id)

    def render_detail(self, item: dict) -> Content:
        return render_item(item)

    # -- actions -----------------------------------------------------------------------------
    def action_new_item(self) -> None:
        key = new_idempotency_key()
        if not self.ready():
            return

        def create(values: dict) -> None:
            self.move("create", partial(workitems.create, self.ctx, self.actor, values["question"],
                                        idempotency_key=key))

        self.ask(FieldsModal("New work item: a question that needs a generated answer",
                             [Field("question", "Question", required=True)]), create)

    def why_not(self, action: str):
        """Generate, rework and close are offered for an item whose state allows them, to a user with
        the authority (base.WorkstationScreen.check_action); generate's rule lives in its service."""
        if action not in self.MOVES or self.actor is None or not self.is_mounted:
            return None
        if self.marked:  # close is made on each marked item, which takes it or says why not (bulk_done)
            return None if action == "close_item" else self.marks_said(len(self.marked))
        row = self.current_row()
        if row is None:
            return self.none_selected()
        if action == "resubmit":
            return resubmit_refusal(self.actor, row)
        if action == "generate":
            return workitems.generate_refusal(self.actor, row)
        return workitems.allowed.refusal(self.MOVES[action], row, self.actor)

    def action_generate(self) -> None:
        if not self.ready() or (row := self.selected()) is None:
            return
        self.move("generate", partial(workitems.generate, self.ctx, self.actor, row["id"]))

    def action_rework(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (row := self.selected()) is None:
            return
        if not workitems.allowed.is_legal("rework", row["state"]):
            # Straight to the core: its 422 names the state and what is allowed from it.
            self.move("rework", partial(workitems.rework, self.ctx, self.actor, row["id"], None,
                                        expected_version=row["version"], idempotency_key=key))
            return

        def rework(values: dict) -> None:
            self.move("rework", partial(workitems.rework, self.ctx, self.actor, row["id"], values["reason"],
                                        expected_version=row["version"], idempotency_key=key))

        self.ask(FieldsModal(f"Rework item {row['id']}: what should the next attempt fix?",
                             [Field("reason", "Reason (goes into the prompt)", required=True)],
                             hint=plain(row["question"], 70)), rework)

    def action_close_item(self) -> None:
        key = new_idempotency_key()
        if self.marked:
            self.close_marked(key)
            return
        if not self.ready() or (row := self.selected()) is None:
            return

        def send(reason: str | None) -> None:
            self.move("close", partial(workitems.close, self.ctx, self.actor, row["id"], reason=reason,
                                       expected_version=row["version"], idempotency_key=key))

        move = workitems.allowed.may(self.actor, "close", row)
        if not move:
            send(None)  # the core says why not (422 or 403), in place
            return
        self.ask(FieldsModal(f"Close item {row['id']} (final)", [Field("reason", "Why close")],
                             hint=plain(row["question"], 70)), lambda values: send(values.get("reason")))

    def action_resubmit(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (row := self.selected()) is None:
            return
        if (why := resubmit_refusal(self.actor, row)) is not None:
            self.show_info(why)
            return
        self.find_escalated(row, key)

    @work(thread=True, exclusive=True, group="resubmit", exit_on_error=False)
    def find_escalated(self, item: dict, key: str) -> None:
        with self.reporting("resubmit"):
            self.reply(EscalatedFound(item, key, candidates.escalated_for_item(self.ctx, item["id"])))

    @on(EscalatedFound)
    def ask_resubmit(self, message: EscalatedFound) -> None:
        """The candidate's text in the editor; saved, it goes back to its queue and the item closes."""
        item, found = message.item, message.candidate
        if found is None:
            self.show_info(f"Work item {item['id']} holds no ESCALATED candidate to resubmit.")
            return

        def send(text: str | None) -> None:
            if text is None:
                self.show_info("Cancelled: nothing changed.")
                return
            self.move("resubmit", partial(candidates.resubmit, self.ctx, self.actor, found["id"], text,
                                          expected_version=found["version"], idempotency_key=message.key))

        self.app.push_screen(TextModal(f"Resubmit candidate {found['id']} with reworked text: back to the "
                                       f"{found['horn_type']} queue; work item {item['id']} closes", found["text"],
                                       unchanged=f"That is the text as it stands: rework it, or "
                                                 f"{key_of(self.app, TextModal, 'cancel')} to cancel."),
                             send)

    @on(Moved)
    def acted(self, message: Moved) -> None:
        if message.action == "resubmit":
            self.show_info(resubmit_said(message.row) + ".")
            if message.row.get("work_item"):
                self.updated(message.row["work_item"], select=True)
            else:
                self.load()
            return
        item = message.row
        self.show_info(f"Work item {item['id']} {DONE[message.action]} ({item['state']}).")
        self.updated(item, select=True)

    def action_focus_state(self) -> None:
        self.query_one("#wi-state", Select).focus()

    # -- close on the marked items (marks.py; docs/architecture.md, "Bulk actions") ------------
    def marks_said(self, n: int) -> str:
        return (f"{plural(n, *self.NOUN)} marked: {self.key('close')} closes each, {self.key('mark')} unmarks one."
                if n else "No work item marked.")

    def close_marked(self, key: str) -> None:
        """One reason for all, asked with the count; then close on each marked item, each with the
        version shown, its own event and its own key."""
        if not self.ready():
            return
        versions = self.marked_versions()
        count = plural(len(versions), "marked work item", "marked work items")
        hint = plain("Each item is its own move: one that cannot take it is listed and left as it is. Items "
                     + ", ".join(map(str, list(versions)[:20])) + (" …" if len(versions) > 20 else ""), 300)

        def go(values: dict) -> None:
            self.show_info(f"Close: {count}…")
            self.send_close(self.actor, versions, values.get("reason"), key)

        self.ask(FieldsModal(f"Close {count}? (final)", [Field("reason", "Why close")], hint=hint), go)

    @work(thread=True, group="bulk", exit_on_error=False)
    def send_close(self, actor, versions: dict[int, int], reason: str | None, key: str) -> None:
        def one(item_id: int, item_key: str | None) -> dict:
            return workitems.close(self.ctx, actor, item_id, reason=reason, expected_version=versions[item_id],
                                   idempotency_key=item_key)

        with self.reporting("close"):
            self.reply(BulkDone("close", bulk.each(list(versions), one, idempotency_key=key)))

    @on(BulkDone)
    def bulk_done(self, message: BulkDone) -> None:
        show_bulk_done(self, message, "work item")
        self.detail = None
        self.load()


def resubmit_refusal(actor, item: dict) -> str | None:
    """Why `actor` may not resubmit the escalated candidate of `item` (None: the key is offered).
    Who may is the candidate machine's rule; the core decides on the candidate as it is (candidates.resubmit)."""
    if not candidates.allowed.may(actor, "resubmit", item, state="ESCALATED"):
        return f"Only a specialist or an admin may resubmit an escalated candidate ({actor.name} is a {actor.role})."
    if item["state"] not in RESUBMITS_FROM or (item["state"] != "ESCALATED" and not item.get("candidate_id")):
        return f"Work item {item['id']} is {item['state']}: it holds no escalated candidate to resubmit."
    return None


def pipeline_status(ctx) -> dict:
    """The breaker's state and the live worker count (a worker killed without a word not counted:
    core/services/operations/workers_live.py): a few Redis reads, in a worker thread."""
    return {"breaker": generation.breaker_status(ctx), "workers": workers_live.serving(ctx)["count"]}


def render_item(item: dict) -> Content:
    """The detail pane: markup written here, every stored text put in as plain text with its
    controls made visible."""
    now = datetime.now(timezone.utc)
    m = markup
    out = [m(f"[b]Work item {item['id']} · $state[/b] [dim]v{item['version']} · by $by"
             f" {age(item['created_at'], now)} ago[/dim]", state=item["state"], by=item["created_by"]),
           m(""), m("[b]Question[/b]  $question", question=item["question"])]
    facts = [f"attempts {item['attempts']}", f"sources {item['source_count'] if item['source_count'] is not None else '—'}"]
    if item.get("horn_type"):
        facts.append("Horn type $horn")
    if item.get("candidate_id"):
        facts.append(f"from candidate {item['candidate_id']}")
    out.append(m("[dim]" + " · ".join(facts) + "[/dim]", horn=item.get("horn_type")))
    if made := item.get("generated_candidate"):  # the link to the candidate its generation made
        out.append(m(f"[b]Generated candidate {made['id']}[/b] ($state)",
                     state=made["state"]))
    if item.get("reason"):
        out.append(m("[b]Reason[/b]    $reason", reason=item["reason"]))
    if item.get("escalation_reason") and item["escalation_reason"] != item.get("reason"):
        # What the validator said escalating the candidate the item answers (also in the prompt).
        out.append(m("[b]Escalated[/b] $why", why=item["escalation_reason"]))
    generated = item.get("generated") or []
    for g in reversed(generated):
        out += [m(""), m(f"[b]Generated, attempt {g['attempt']}[/b] [dim]$state · model $model"
                         + (f" · candidate {g['candidate_id']}" if g.get("candidate_id") else "")
                         + (" · $horn" if g.get("horn_type") else "") + "[/dim]",
                         state=g["state"], model=g["model"], horn=g.get("horn_type")),
                m("$text", text=g["text"]), m(""), m(f"[b]Sources[/b] ({len(g.get('sources') or [])})")]
        for number, source in enumerate(g.get("sources") or [], start=1):
            out.append(m(f"  [b]\\[{number}][/b] $title", title=source.get("title") or ""))
            if source.get("text"):
                out.append(m("      [dim]$text[/dim]", text=clip(source["text"], SOURCE_SHOWN)))
        prompt = g.get("prompt") or ""
        out += [m(""), m("[b]Prompt[/b]"),
                m("$prompt", prompt=prompt if len(prompt) <= PROMPT_SHOWN else prompt[:PROMPT_SHOWN] + "…")]
    if not generated:
        out += [m(""), m("[dim]Nothing generated yet.[/dim]")]
    out += [m(""), m("[b]History[/b]")]
    for h in item.get("history") or []:
        # Padded after visible(), so the columns line up with what is drawn.
        out.append(m(f"  $action $before → $after $actor {age(h['at'], now):>4}"
                     + ("  [dim]$reason[/dim]" if h.get("reason") else ""),
                     action=f"{visible(h['action']):<9}", before=f"{visible(h['from'] or '·'):>18}",
                     after=f"{visible(h['to']):<18}", actor=f"{visible(h['actor']):<7}",
                     reason=clip(h.get("reason"), 50)))
    return lines(out)
