"""Articles: durable article tasks (docs/architecture.md, "Durable tasks") by state, or those assigned
to me; the detail shows the article as written (stored text escaped), the claims the analysis flagged
beside the registry answers they contradict, the reviewers and their decisions, and the event timeline
with each event's signature status. One key per move; each press sends its own idempotency key and
the version as shown, so a repeated press never applies twice and a stale one is a 409 said in place.
"""
from __future__ import annotations

from datetime import datetime, timezone
from functools import partial

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import var
from textual.widgets import DataTable, Header, Select, Static

from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import age, clip, new_idempotency_key, plural
from r2k.app.widgets.modals import Field, FieldsModal, ReasonModal
from r2k.app.widgets.text import cell, lines, markup, plain
from r2k.core.services import tasks
from r2k.core.services.tasks import STATES, approved_already, headed_by_title

from .base import ListDetailScreen, Moved

TITLE_WIDTH = 22
ARTICLE_LINES = 200  # of the article in the detail pane; the rest is said, not dropped silently


class ArticlesScreen(ListDetailScreen):
    TITLE = "Articles"
    RELOAD_ON = ("task",)
    AUTO_FOCUS = "#art-table"
    TABLE, COUNT, DETAIL = "art-table", "art-count", "art-detail"
    LIMIT = 200
    NOUN = ("article", "articles")
    MORE = "the first 200: filter by state"

    BINDINGS = [
        # Letters as on every screen (README, "Keys"); the footer shows the moves the highlighted
        # article and the acting user can make.
        Binding("S", "submit", "Submit", key_display="S", id="submit"),
        Binding("A", "assign", "Assign…", key_display="A", id="assign"),
        Binding("a", "approve", "Approve", id="approve"),
        Binding("r", "reject", "Reject", id="reject"),
        Binding("v", "resolve", "Resolve", id="resolve"),
        Binding("w", "deprecate", "Deprecate", id="deprecate"),
        Binding("l", "toggle_mine", "Mine only", show=False, id="mine_only"),
        Binding("f", "focus_state", "State filter", show=False, id="state_filter"),
        Binding("escape", "back", "Back", id="back"),
    ]

    state: var[str | None] = var(None, init=False)
    mine: var[bool] = var(False, init=False)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="art-filters"):
            yield Select([("All states", "all")] + [(s, s) for s in STATES], value="all", allow_blank=False,
                         id="art-state", prompt="State")
            yield Static("All articles", id="art-mine")
        with Horizontal(id="art-body"):
            with Vertical(id="art-list"):
                yield DataTable(id="art-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="art-count")
            with VerticalScroll(id="art-detail-pane"):
                yield Static("Loading…", id="art-detail")
        yield Static("", id="message")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#art-table", DataTable)
        table.add_column("id", key="id", width=4)
        table.add_column("state", key="state", width=19)
        table.add_column("title", key="title", width=TITLE_WIDTH)
        table.add_column("score", key="score", width=5)
        table.add_column("✓", key="approvals", width=2)

    # -- filters -----------------------------------------------------------------------------
    @property
    def me(self) -> str:
        return self.actor.name if self.actor is not None else self.app.user_name

    @on(Select.Changed, "#art-state")
    def state_picked(self, event: Select.Changed) -> None:
        self.state = None if event.value in ("all", Select.NULL) else event.value

    def watch_state(self) -> None:
        self.load()

    def watch_mine(self, mine: bool) -> None:
        line = self.query_one("#art-mine", Static)
        line.update(plain(f"Assigned to me ({self.me})" if mine else "All articles"))
        line.set_class(mine, "active")
        self.load()

    def action_toggle_mine(self) -> None:
        self.mine = not self.mine

    def action_focus_state(self) -> None:
        self.query_one("#art-state", Select).focus()

    # -- the list and the detail -------------------------------------------------------------
    def list_call(self):
        return partial(tasks.list_tasks, self.ctx, self.state, self.me if self.mine else None, limit=self.LIMIT)

    def cells(self, row: dict, now: datetime) -> tuple:
        score = row.get("ai_confidence_score")
        return (str(row["id"]), cell(row["state"]), cell(row["title"], TITLE_WIDTH),
                "" if score is None else f"{score:.2f}", str(len(row.get("approvals") or [])))

    def empty_text(self) -> str:
        return "No articles match the filters."

    def detail_call(self, row_id: int):
        return partial(tasks.show, self.ctx, row_id)

    def render_detail(self, task: dict) -> Content:
        return render_task(task)

    # -- actions -----------------------------------------------------------------------------
    MOVES = {"submit": "submit", "assign": "assign", "approve": "note_approval", "reject": "reject",
             "resolve": "resolve", "deprecate": "deprecate"}

    def why_not(self, action: str):
        if action not in self.MOVES or self.actor is None or not self.is_mounted:
            return None
        row = self.current_row()
        if row is None:
            return self.none_selected()
        if "reviewers" not in row or (row["reviewers"] and isinstance(row["reviewers"][0], str)):
            return None  # the detail (with its reviewers) is on its way: the core decides
        if action == "approve" and (again := approved_already(self.actor, row)) is not None:
            return again
        return tasks.allowed.refusal(self.MOVES[action], row, self.actor)

    def action_submit(self) -> None:
        key = new_idempotency_key()
        if self.ready() and (row := self.selected()) is not None:
            self.move("submit", partial(tasks.submit, self.ctx, self.actor, row["id"],
                                        expected_version=row["version"], idempotency_key=key))

    def action_assign(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (row := self.selected()) is None:
            return

        def assign(values: dict) -> None:
            names = [n.strip() for n in (values.get("reviewers") or "").split(",") if n.strip()]
            self.move("assign", partial(tasks.assign, self.ctx, self.actor, row["id"], names,
                                        expected_version=row["version"], idempotency_key=key))

        self.ask(FieldsModal(f"Assign reviewers to article {row['id']}",
                             [Field("reviewers", "Reviewers (user names, comma-separated)", required=True)],
                             hint=plain(row["title"], 70)), assign)

    def action_approve(self) -> None:
        key = new_idempotency_key()
        if self.ready() and (row := self.selected()) is not None:
            self.move("approve", partial(tasks.review, self.ctx, self.actor, row["id"], "approve",
                                         expected_version=row["version"], idempotency_key=key))

    def action_reject(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (row := self.selected()) is None:
            return
        self.ask(ReasonModal(f"Reject article {row['id']}", "Why it needs resolution"),
                 lambda reason: self.move("reject", partial(tasks.review, self.ctx, self.actor, row["id"], "reject",
                                                            reason, expected_version=row["version"],
                                                            idempotency_key=key)))

    def action_resolve(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (row := self.selected()) is None:
            return
        self.ask(FieldsModal(f"Resolve article {row['id']} (back to peer review)",
                             [Field("note", "What was resolved", required=True)], hint=plain(row["title"], 70)),
                 lambda values: self.move("resolve", partial(tasks.resolve, self.ctx, self.actor, row["id"],
                                                             values["note"], expected_version=row["version"],
                                                             idempotency_key=key)))

    def action_deprecate(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (row := self.selected()) is None:
            return
        self.ask(ReasonModal(f"Deprecate article {row['id']} (terminal)", "Why it is deprecated"),
                 lambda reason: self.move("deprecate", partial(tasks.deprecate, self.ctx, self.actor, row["id"],
                                                               reason, expected_version=row["version"],
                                                               idempotency_key=key)))

    @on(Moved)
    def moved(self, message: Moved) -> None:
        task = message.row
        stale = sorted({f["why"] for f in task.get("flagged_claims") or [] if f.get("kind") == "not_current"})
        if message.action == "approve" and task["state"] == "RESOLUTION_REQUIRED" and stale:
            # The approval's check of the sources turned it into a rejection (tasks.not_current).
            self.show_error(f"Article {task['id']} was not approved: it cites answers no longer current "
                            f"({'; '.join(stale)}). It needs resolution against the registry as it is now "
                            f"(v{task['version']}).")
        else:
            self.show_info(f"Article {task['id']}: {message.action} → {task['state']} (v{task['version']}).")
        self.updated(task)


FLAG_KIND = {"contradicted": "✗ contradicted", "unsupported": "? unsupported", "not_current": "⚠ source not current"}


def render_task(task: dict) -> Content:
    """The detail pane: markup written here, every stored text put in as plain text with its controls
    made visible (the article's Markdown is shown as written, never interpreted)."""
    now = datetime.now(timezone.utc)
    m = markup
    score = task.get("ai_confidence_score")
    out = [m(f"[b]Article {task['id']} · $state v{task['version']}[/b] [dim]by $author"
             + (f" · supersedes {task['supersedes_id']}" if task.get("supersedes_id") else "")
             + (f" · superseded by {task['superseded_by']}" if task.get("superseded_by") else "") + "[/dim]",
             state=task["state"], author=task["created_by"]),
           m("[b]$title[/b]", title=task["title"]),
           m("[b]Confidence[/b] " + ("—" if score is None else f"{score:.2f}")
             + ("" if not task.get("analysis") else f"  [dim]({plural(task['analysis']['claims'], 'claim')}, "
                                                    f"{len(task['analysis']['supported'])} supported)[/dim]"))]
    if task.get("deprecation_reason"):
        out.append(m("[b]Deprecated[/b] $why", why=task["deprecation_reason"]))
    if task.get("resolution_note"):
        out.append(m("[b]Resolution[/b] $note", note=task["resolution_note"]))
    flagged = task.get("flagged_claims") or []
    out += [m(""), m(f"[b]Flagged claims[/b] ({len(flagged)})" if flagged else "[b]Flagged claims[/b] none")]
    for f in flagged:
        out.append(m(f"  [b]{FLAG_KIND.get(f['kind'], f['kind'])}[/b]  $claim", claim=clip(f["claim"], 300)))
        if f.get("kind") == "contradicted":
            out.append(m(f"      [dim]registry answer {f.get('answer_id')}:[/dim] $text", text=clip(f.get("answer_text"), 300)))
        if f.get("kind") in ("contradicted", "not_current") and f.get("why"):
            out.append(m("      [dim]$why[/dim]", why=f["why"]))
    out += [m(""), m("[b]Reviewers[/b]" + ("" if task.get("reviewers") else "  [dim]none assigned[/dim]"))]
    decisions = task.get("decisions") or []
    approved = {a["reviewer"] for a in task.get("approvals") or []}
    for r in task.get("reviewers") or []:
        last = next((d for d in reversed(decisions) if d["reviewer"] == r["name"]), None)
        said = "approved (counts now)" if r["name"] in approved else (last["decision"] + "d" if last else "no decision yet")
        out.append(m("  $name  [dim]$said[/dim]", name=r["name"], said=said))
    for d in decisions:
        out.append(m(f"    [dim]{age(d['at'], now):>3}[/dim] $who $what" + ("  [dim]$why[/dim]" if d.get("reason") else ""),
                     who=d["reviewer"], what=d["decision"], why=d.get("reason") or ""))
    published = task.get("rendered")
    out += [m(""), m("[b]Article, as published (its sources' registry status now)[/b]" if published
                     else "[b]Article[/b] [dim](the sources its claims rest on, with their registry status)[/dim]")]
    # What `tasks export` prints; its title is the line above the article already, so it is shown once.
    article = (task.get("article") or published or task.get("body") or "").splitlines()
    if article and headed_by_title(article[0], task["title"]):
        article = article[2:] if len(article) > 1 and not article[1].strip() else article[1:]
    out += [m("  $line", line=line) for line in article[:ARTICLE_LINES]]
    if len(article) > ARTICLE_LINES:
        out.append(m(f"  [dim]… {len(article) - ARTICLE_LINES} more lines: r2k tasks export {task['id']}[/dim]"))
    out += [m(""), m("[b]Events[/b] [dim](signatures under the trusted keys)[/dim]")]
    for e in task.get("events") or []:
        mark = "✓" if e["signature"] == "verified" else "✗"
        out.append(m(f" {mark}{e['seq']:>3} $type $actor [dim]{age(e['at'], now):>3}[/dim] $sig",
                     type=f"{e['type']:<20}", actor=f"{clip(e['actor'], 8):<8}", sig=e["signature"]))
    return lines(out)
