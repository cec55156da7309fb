"""Adjudication: candidates whose k blind reviews disagreed (docs/architecture.md, "Overlap"), for a
specialist or an admin. The highlighted candidate's reviews stand side by side, one pane each; `1`,
`2`, `3` choose that review's decision, or `a`, `e`, `r` make one's own (approve, revise with a text,
reject with a reason). Each is the candidate's approve, revise or reject from ADJUDICATION through
`core.services.validation.overlap.adjudicate`, with the version as shown and a fresh idempotency key.
"""
from __future__ import annotations

from datetime import datetime
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Header, Static

from r2k.app.safe import visible
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import new_idempotency_key
from r2k.app.widgets.modals import ReasonModal, TextModal
from r2k.app.widgets.text import cell
from r2k.core.services.validation import overlap

from .base import ListDetailScreen, Moved

QUESTION_WIDTH = 52
REVIEWS_WIDTH = 30
CHOICES = 3  # reviews a key chooses (k is rarely above 3; more are chosen with `candidates adjudicate`)


def adjudication_detail(ctx, actor, candidate_id: int) -> dict:
    """The candidate with its round's reviews, as one row (the list's detail has the row's id and version)."""
    found = overlap.adjudication(ctx, actor, candidate_id)
    return {**found["candidate"], "reviews": found["reviews"]}


def review_text(n: int, review: dict) -> Text:
    """One review as its validator made it (through visible()): the decision, the revised text or the reason."""
    out = Text()
    out.append(f"{n}. {visible(review['action'])}", style="bold")
    out.append(f"  by {visible(review['actor'])}\n\n", style="dim")
    if review.get("revised_text"):
        out.append("Revised text:\n", style="italic")
        out.append(visible(review["revised_text"]))
    if review.get("reason"):
        out.append("\nReason: " if review.get("revised_text") else "Reason: ", style="italic")
        out.append(visible(review["reason"]))
    return out


class AdjudicationScreen(ListDetailScreen):
    TITLE = "Adjudication"
    RELOAD_ON = ("candidate",)
    AUTO_FOCUS = "#adj-table"
    TABLE, COUNT, DETAIL = "adj-table", "adj-count", "adj-detail"
    LIMIT = 100
    NOUN = ("candidate awaiting adjudication", "candidates awaiting adjudication")
    MORE = "the oldest 100"

    BINDINGS = [
        Binding("1", "choose(1)", "Choose 1", id="choose_1"),
        Binding("2", "choose(2)", "Choose 2", id="choose_2"),
        Binding("3", "choose(3)", "Choose 3", show=False, id="choose_3"),
        Binding("a", "decide('approve')", "Approve", id="approve"),
        Binding("e", "decide('revise')", "Revise", id="revise"),
        Binding("r", "decide('reject')", "Reject", id="reject"),
        Binding("escape", "back", "Back", id="back"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="adj-list"):
            yield DataTable(id="adj-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="adj-count")
        yield Static("Loading…", id="adj-detail")
        yield Horizontal(id="adj-reviews")
        yield Static("", id="message")
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p is listed in ?

    def on_mount(self) -> None:
        table = self.query_one("#adj-table", DataTable)
        table.add_column("id", key="id", width=5)
        table.add_column("horn", key="horn_type", width=10)
        table.add_column("reviews", key="reviews", width=REVIEWS_WIDTH)
        table.add_column("question", key="question", width=QUESTION_WIDTH)
        # WorkstationScreen.on_mount (called after this one) loads the list

    # -- the list and the detail -------------------------------------------------------------
    def list_call(self):
        return partial(overlap.list_adjudications, self.ctx, self.actor, limit=self.LIMIT)

    def cells(self, row: dict, now: datetime) -> tuple:
        return (str(row["id"]), cell(row["horn_type"]), cell(row["reviews"], REVIEWS_WIDTH),
                cell(row["question"], QUESTION_WIDTH))

    def empty_text(self) -> str:
        return "No candidate awaits adjudication: the reviews of every queue requiring several agree so far."

    def detail_call(self, row_id: int):
        return partial(adjudication_detail, self.ctx, self.actor, row_id)

    def render_detail(self, candidate: dict) -> Text:
        out = Text()
        out.append(f"Candidate {candidate['id']}", style="bold")
        out.append(f"  {visible(candidate['state'])}  {visible(candidate['horn_type'])}  v{candidate['version']}\n",
                   style="dim")
        out.append(visible(candidate["question"]) + "\n", style="italic")
        out.append(visible(candidate["text"]))
        return out

    def watch_detail(self, candidate: dict | None) -> None:
        super().watch_detail(candidate)
        if candidate is None and self.rows:
            return  # the panes keep what they show until the next detail arrives
        panes = self.query_one("#adj-reviews", Horizontal)
        panes.remove_children()
        for n, review in enumerate((candidate or {}).get("reviews") or [], 1):
            pane = VerticalScroll(Static(review_text(n, review)), classes="adj-review")
            pane.border_title = f"Review {n}" + (f" ({self.key(f'choose_{n}')} chooses it)" if n <= CHOICES else "")
            panes.mount(pane)

    # -- keys --------------------------------------------------------------------------------
    def why_not(self, action: str):
        if action not in ("choose", "decide") or self.actor is None or not self.is_mounted:
            return None
        return None if self.current_row() is not None else self.none_selected()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "choose" and parameters:
            reviews = (self.detail or {}).get("reviews")
            if reviews is not None and parameters[0] > len(reviews):
                return False  # no such review for the highlighted candidate: the key is not offered
        return super().check_action(action, parameters)

    def action_choose(self, n: int) -> None:
        key = new_idempotency_key()
        if not self.ready() or (candidate := self.selected()) is None:
            return
        reviews = (self.detail or {}).get("reviews") if (self.detail or {}).get("id") == candidate["id"] else None
        if not reviews:
            self.show_info("The reviews are still on their way: try again in a moment.")
            return
        if n > len(reviews):
            self.show_info(f"Candidate {candidate['id']} has {len(reviews)} reviews.")
            return
        review = reviews[n - 1]
        self.send(candidate, {"choose": review["id"]}, key)

    def action_decide(self, action: str) -> None:
        key = new_idempotency_key()
        if not self.ready() or (candidate := self.selected()) is None:
            return
        if action == "approve":
            self.send(candidate, {"action": "approve"}, key)
        elif action == "revise":
            self.app.push_screen(TextModal(f"Revise candidate {candidate['id']}: your own text decides it",
                                           candidate["text"]),
                                 lambda text: self.send(candidate, {"action": "revise", "text": text}, key)
                                 if text is not None else self.show_info("Cancelled: nothing changed."))
        else:
            self.ask(ReasonModal(f"Reject candidate {candidate['id']}", "Why reject"),
                     lambda reason: self.send(candidate, {"action": "reject", "reason": reason}, key))

    def send(self, candidate: dict, decision: dict, key: str) -> None:
        self.show_info(f"Adjudicating candidate {candidate['id']}…")
        self.move("adjudicate", partial(overlap.adjudicate, self.ctx, self.actor, candidate["id"],
                                        expected_version=candidate["version"], idempotency_key=key, **decision),
                  candidate)

    @on(Moved)
    def adjudicated(self, message: Moved) -> None:
        decided = message.row["candidate"]
        chosen = message.row.get("chosen")
        how = f"review {chosen} chosen" if chosen is not None else "your own decision"
        self.show_info(f"Candidate {decided['id']} adjudicated ({how}): {decided['state']}.")
        self.detail = None
        self.load()
