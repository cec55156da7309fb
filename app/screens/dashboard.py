"""The dashboard: live counts of everything in flight, and the services' health."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.reactive import var
from textual.widgets import DataTable, Header, Static

from r2k.app.safe import visible
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import clip, plural
from r2k.app.widgets.text import lines as text_lines, markup
from r2k.core.domain import HORN_TYPES
from r2k.core.services.operations import dashboard

from .base import Changed, Reply, WorkstationScreen, notice_entity

CANDIDATE_STATES = ["PENDING", "IN_REVIEW", "APPROVED", "REVISED", "REJECTED", "ESCALATED", "DISPUTED", "CLOSED",
                    "SUPERSEDED", "RETIRED"]
WORK_ITEM_STATES = ["NEW", "GENERATING", "PENDING_VALIDATION", "IN_CLASSIFICATION", "READY_FOR_REVIEW", "VALIDATED",
                    "NEEDS_REWORK", "ESCALATED", "CLOSED"]
GREY_STATES = ["Pending", "Processing", "Retrying", "UnderReview", "Escalated", "Resolved", "Rejected", "Failed",
               "Expired", "Dismissed"]
TASK_STATES = ["DRAFT", "AI_ANALYSIS", "PEER_REVIEW", "RESOLUTION_REQUIRED", "APPROVED", "PUBLISHED", "DEPRECATED"]
SHORT = {"PENDING_VALIDATION": "PEND_VALID", "IN_CLASSIFICATION": "IN_CLASSIF", "READY_FOR_REVIEW": "READY",
         "RESOLUTION_REQUIRED": "RESOLUTION"}


class Counted(Reply):
    """Everything in flight, counted by state (`dashboard.counts`)."""

    def __init__(self, counts: dict):
        super().__init__()
        self.counts = counts


class Probed(Reply):
    """How each service answers (`dashboard.health`)."""

    def __init__(self, health: dict):
        super().__init__()
        self.health = health


class DashboardScreen(WorkstationScreen):
    TITLE = "Dashboard"
    RELOAD_ON = ("*",)
    # The keys for everywhere, shown here (same ids, so a keymap moves both); README, "Keys".
    BINDINGS = [
        Binding("V", "app.open_screen('queues')", "Queues", id="queues"),
        Binding("G", "app.open_screen('registry')", "Registry", id="registry"),
        Binding("W", "app.open_screen('workitems')", "Work items", id="workitems"),
        Binding("Y", "app.open_screen('grey')", "Grey queue", id="grey"),
        Binding("ctrl+r", "reload", "Refresh", id="refresh"),
    ]

    # The counts and the services' health as last read, drawn by their watchers. The screen has the
    # class "loaded" once counts are in: bench/startup.py times the first frame by it.
    counts: var[dict | None] = var(None, init=False, always_update=True, toggle_class="loaded")
    health: var[dict | None] = var(None, init=False, always_update=True)

    def __init__(self):
        super().__init__()
        self._health_started = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="dashboard"):
            yield Static("Candidates by Horn type and state", classes="panel-title")
            yield DataTable(id="candidates", cursor_type="none", zebra_stripes=True)
            with Grid(id="small-counts"):
                yield CountsPanel("Work items", WORK_ITEM_STATES, id="work-items")
                yield CountsPanel("Grey queue", GREY_STATES, id="grey")
                yield CountsPanel("Article tasks", TASK_STATES, id="tasks")
                yield CountsPanel("Registry answers", ["APPROVED", "DISPUTED", "SUPERSEDED", "RETIRED"], id="answers")
            yield Static("Overlap: agreement of independent reviews, last 30 days", classes="panel-title")
            yield Static("", id="agreement")
            yield Static("Services", classes="panel-title")
            yield Static("checking…", id="services")
            yield Static("", id="message")
        yield Footer(show_command_palette=False)  # ctrl+p is listed in ? (80 columns: README, Keys)

    def on_mount(self) -> None:
        table = self.query_one("#candidates", DataTable)
        table.can_focus = False  # a read-only summary: keys belong to the screen
        table.add_column("Horn type", key="horn")
        for state in CANDIDATE_STATES:
            table.add_column(SHORT.get(state, state), key=state)
        for horn in HORN_TYPES:
            table.add_row(horn, *["·"] * len(CANDIDATE_STATES), key=horn)
        # Textual then runs WorkstationScreen.on_mount too, which loads the counts.

    def action_reload(self) -> None:
        self.load()
        self.load_health()

    def load(self) -> None:
        self.fetch_counts()
        if not self._health_started:
            self._health_started = True
            self.load_health()
            self.set_interval(10, self.load_health)  # health is probed, not notified: a slow, cheap poll

    def load_health(self) -> None:
        self.fetch_health()

    @work(thread=True, exclusive=True, group="counts", exit_on_error=False)
    def fetch_counts(self) -> None:
        with self.reporting("counts"):
            self.reply(Counted(dashboard.counts(self.ctx, self.actor)))

    @work(thread=True, exclusive=True, group="health", exit_on_error=False)
    def fetch_health(self) -> None:
        with self.reporting("health"):
            self.reply(Probed(dashboard.health(self.ctx, self.app.worker_status())))

    @on(Changed)
    def _worker_moved(self, message: Changed) -> None:
        # The workstation's own worker started or ended: who serves the jobs, said at once.
        if notice_entity(message.event) == "worker":
            self.load_health()

    @on(Counted)
    def show_counts(self, message: Counted) -> None:
        if not message.superseded:
            self.counts = message.counts

    @on(Probed)
    def show_health(self, message: Probed) -> None:
        if not message.superseded:
            self.health = message.health

    def watch_counts(self, counts: dict | None) -> None:
        if counts is None:
            return
        table = self.query_one("#candidates", DataTable)
        for horn in HORN_TYPES:
            for state in CANDIDATE_STATES:
                table.update_cell(horn, state, str(counts["candidates"][horn].get(state, 0)))
        self.query_one("#work-items", CountsPanel).show(counts["work_items"])
        self.query_one("#grey", CountsPanel).show(counts["grey"])
        self.query_one("#tasks", CountsPanel).show(counts["tasks"])
        self.query_one("#answers", CountsPanel).show(counts["answers"])
        self.query_one("#agreement", Static).update(agreement_lines(counts.get("overlap")))

    def watch_health(self, health: dict | None) -> None:
        if health is None:
            return
        # The urls and details (a driver's error message, say) go in as plain text, never as markup.
        lines = []
        for part in health["services"]:
            if part["answers"]:
                mark, where, detail = "[green]●[/]", part.get("listens") or part["url"], part["detail"]
            elif part["mode"] == "embedded" and not part["url"]:
                # Not a fault: an embedded part starts on first use (the graph, when workers sync it).
                mark, where, detail = "[yellow]○[/]", "not started", "starts on first use"
            else:
                mark, where, detail = "[red]●[/]", part["url"] or "not running", part["detail"]
            lines.append(markup(f"{mark} $name $mode $where  [dim]$detail[/]", name=f"{visible(part['name']):<9}",
                                mode=f"{visible(part['mode']):<9}", where=where, detail=detail))
        breaker = health.get("breaker")
        if breaker:
            mark = {"closed": "[green]●[/]", "half_open": "[yellow]●[/]"}.get(breaker["state"], "[red]●[/]")
            lines.append(markup(f"{mark} {'llm':<9} circuit {breaker['shown']}  [dim]$url · "
                                f"{breaker['failures']} consecutive failures[/]", url=breaker["url"]))
        if health.get("jobs"):
            # Who serves the jobs, in words (core/services/operations/workers_live.py): a log path or host is text.
            depth = health.get("queues") or {}
            mark = "[green]●[/]" if health.get("workers") else "[yellow]●[/]"
            lines.append(markup(f"{mark} $jobs  [dim]queued: $queued[/]", jobs=health["jobs"],
                                queued=", ".join(f"{k} {v}" for k, v in depth.items())))
        self.query_one("#services", Static).update(text_lines(lines))


PAIRS_SHOWN = 3  # pairs of validators on an admin's dashboard, the most rounds first


def agreement_lines(overlap: dict | None) -> Text:
    """The overlap pane: what awaits adjudication, and each queue's agreement (alpha, percent)."""
    if not overlap:
        return Text("")
    out = Text()
    waiting = overlap["adjudication"]
    out.append(f"awaiting adjudication: {waiting}", style="" if waiting else "dim")
    if not overlap["queues"]:
        out.append("  ·  no review rounds closed (a queue takes one review unless configured)", style="dim")
    for q in overlap["queues"]:
        alpha = "—" if q["alpha"] is None else f"{q['alpha']:g}"
        percent = "—" if q["percent"] is None else f"{q['percent']:g} %"
        out.append(f"\n{q['horn_type']:<11}{q['units']} rounds · alpha {alpha} · {percent} agreeing")
    pairs = sorted(overlap.get("pairs") or [], key=lambda p: (-p["units"], p["pair"]))
    for p in pairs[:PAIRS_SHOWN]:
        alpha = "—" if p["alpha"] is None else f"{p['alpha']:g}"
        percent = "—" if p["percent"] is None else f"{p['percent']:g} %"
        out.append(f"\n{clip(' · '.join(visible(n, multiline=False) for n in p['pair']), 24):<25}"
                   f"{p['units']} rounds · alpha {alpha} · {percent}")
    if len(pairs) > PAIRS_SHOWN:
        out.append(f"\n… {plural(len(pairs) - PAIRS_SHOWN, 'more pair')}: r2k stats agreement", style="dim")
    return out


class CountsPanel(Static):
    """A titled list of state: count, zeros dimmed."""

    def __init__(self, title: str, states: list[str], **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self.states = states

    def on_mount(self) -> None:
        self.border_title = self.title
        self.show({})

    def show(self, counts: dict) -> None:
        known = [s for s in self.states] + sorted(set(counts) - set(self.states))
        # A grid, not padded text: in a narrow terminal (80 columns over SSH) a long state name is cut
        # short with an ellipsis and its count stays on its line, instead of wrapping under it.
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_column(justify="right", no_wrap=True)
        for state in known:
            style = "" if counts.get(state) else "dim"
            grid.add_row(Text(visible(state), style=style), Text(str(counts.get(state, 0)), style=style))
        self.update(grid)
