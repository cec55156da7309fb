"""My work: your decisions today and this week, your rate per hour as a sparkline, your median time
per decision, your approvals later disputed or superseded, and the queues you hold with the time
left at the team's rate; an admin sees every validator side by side too (`core.services.operations.stats`, the
figures `r2k stats` prints)."""
from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.widgets import DataTable, Header, Sparkline, Static

from r2k.app.output import per_decision
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import span
from r2k.app.widgets.text import cell, plain
from r2k.core.services.operations import stats
from r2k.core.services.people import users

from .base import Reply, WorkstationScreen

# Under the sparkline (48 columns wide, two per hour): where the hours fall.
HOURS = "00h" + " " * 9 + "06h" + " " * 9 + "12h" + " " * 9 + "18h" + " " * 6 + "24h"
KINDS = ("approve", "revise", "reject", "escalate")
QUEUE_COLUMNS = (("queue", "Queue", 10), ("depth", "Depth", 7), ("oldest", "Oldest", 7),
                 ("rate", "Team rate", 10), ("left", "Time left", 10))
TEAM_COLUMNS = (("user", "Validator", 12), ("today", "Today", 6), ("approve", "Appr", 5), ("revise", "Rev", 5),
                ("reject", "Rej", 5), ("escalate", "Esc", 5), ("total", "Total", 6), ("median", "Median", 7),
                ("disputed", "Disp", 5), ("superseded", "Supd", 5))


class Figures(Reply):
    """The acting user's figures (`stats.user_stats`), and every validator's for an admin."""

    def __init__(self, mine: dict, team: dict | None):
        super().__init__()
        self.mine = mine
        self.team = team


class MyWorkScreen(WorkstationScreen):
    TITLE = "My work"
    RELOAD_ON = ("candidate", "answer", "actor")
    BINDINGS = [
        Binding("ctrl+r", "reload", "Refresh", id="refresh"),
        Binding("escape", "back", "Back", id="back"),
    ]

    # The figures as last read, drawn by the watcher; the screen has the class "loaded" once they are in
    # (tests and bench/review.py wait for it).
    figures: var[Figures | None] = var(None, init=False, always_update=True, toggle_class="loaded")

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="mywork"):
            yield Static("Loading your figures…", id="mw-title", classes="panel-title")
            with Horizontal(id="mw-panels"):
                yield Static("", id="mw-today", classes="mw-panel")
                yield Static("", id="mw-window", classes="mw-panel")
                yield Static("", id="mw-figures", classes="mw-panel")
            yield Static("Decisions per hour today", id="mw-rate-title", classes="panel-title")
            yield Sparkline([0] * 24, id="mw-sparkline")
            yield Static(HOURS, id="mw-hours", classes="muted")
            yield Static("Your queues", classes="panel-title")
            yield DataTable(id="mw-queues", cursor_type="none", zebra_stripes=True)
            yield Static("Every validator", id="mw-team-title", classes="panel-title")
            yield DataTable(id="mw-team", cursor_type="none", zebra_stripes=True)
            yield Static("", id="message")
        yield Footer()

    def on_mount(self) -> None:
        queues = self.query_one("#mw-queues", DataTable)
        for key, label, width in QUEUE_COLUMNS:
            queues.add_column(label, key=key, width=width)
        team = self.query_one("#mw-team", DataTable)
        for key, label, width in TEAM_COLUMNS:
            team.add_column(label, key=key, width=width)
        for table in (queues, team):
            table.can_focus = False  # read-only figures: keys belong to the screen
        for panel, title in (("#mw-today", "Today"), ("#mw-window", "This week"), ("#mw-figures", "Figures")):
            self.query_one(panel).border_title = title
        self.query_one("#mw-team-title").display = False
        team.display = False
        # Textual then runs WorkstationScreen.on_mount too, which loads the figures.

    def action_reload(self) -> None:
        self.load()

    def load(self) -> None:
        self.fetch_figures()

    @work(thread=True, exclusive=True, group="figures", exit_on_error=False)
    def fetch_figures(self) -> None:
        with self.reporting("figures"):
            actor = self.actor or users.resolve(self.ctx, self.app.user_name)
            mine = stats.user_stats(self.ctx, actor)
            team = stats.team_stats(self.ctx, actor) if actor.role == "admin" else None
            self.reply(Figures(mine, team))

    @on(Figures)
    def show_figures(self, message: Figures) -> None:
        if not message.superseded:
            self.figures = message

    def watch_figures(self, figures: Figures | None) -> None:
        if figures is None:
            return
        s = figures.mine
        self.query_one("#mw-title", Static).update(plain(
            f"My work · {s['user']} · today since {s['today_from']:%H:%M}, and the last {s['since_text']}"))
        self.query_one("#mw-today", Static).update(plain(_kinds(s["today"])))
        window = self.query_one("#mw-window", Static)
        window.border_title = f"Last {s['since_text']}"
        window.update(plain(_kinds(s["window"])))
        a = s["approvals"]
        self.query_one("#mw-figures", Static).update(plain(
            f"Per decision  {per_decision(s['median_seconds'])} (median)\n"
            f"Per hour      {s['rate_per_hour_today']:g} today, {s['hourly'][s['current_hour']]} this hour\n"
            f"Approved      {a['published']} answers\n"
            f"  disputed    {a['disputed']} since\n"
            f"  superseded  {a['superseded']} since"))
        self.query_one("#mw-sparkline", Sparkline).data = s["hourly"]
        self._queues(s["queues"])
        self._team(figures.team)

    def _queues(self, queues: list[dict]) -> None:
        table = self.query_one("#mw-queues", DataTable)
        table.clear()
        for q in queues:
            table.add_row(q["horn_type"], str(q["depth"]), span(q["oldest_age_seconds"]),
                          f"{q['team_rate_per_hour']:g}/h",
                          span(q["time_left_seconds"]) if q["depth"] else "empty", key=q["horn_type"])
        if not queues:
            table.add_row("(none)", "", "", "", "")

    def _team(self, team: dict | None) -> None:
        table = self.query_one("#mw-team", DataTable)
        self.query_one("#mw-team-title").display = team is not None
        table.display = team is not None
        if team is None:
            return
        table.clear()
        for r in team["validators"]:
            table.add_row(cell(r["user"], 12), *(str(r[k]) for k in ("today", *KINDS, "total")),
                          per_decision(r["median_seconds"]), str(r["disputed"]), str(r["superseded"]))


def _kinds(counts: dict) -> str:
    lines = [f"{kind.capitalize():<9}{counts.get(kind, 0):>6}" for kind in KINDS]
    lines += [f"{other.capitalize():<9}{n:>6}" for other, n in counts.items() if other not in (*KINDS, "total")]
    return "\n".join(lines + [f"{'Total':<9}{counts.get('total', 0):>6}"])
