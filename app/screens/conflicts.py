"""Conflicts: open flags of approved answers that contradict each other, both answers side by side
with the disagreeing words highlighted, and of answers whose source statement changed or vanished
when its document was ingested again (kind `source_changed`), the answer beside its source as it
now reads; escalate (the answers DISPUTED, back for re-review) or dismiss with a reason. New flags
appear as detection and ingest make them (live notices).

Every move goes through `core.services.contradictions.conflicts` with the flag's version as shown and a fresh
idempotency key; keys the highlighted flag or the user cannot take are hidden and say why.
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
from r2k.app.widgets.modals import ReasonModal
from r2k.app.widgets.text import cell
from r2k.core.services.contradictions import conflicts
from r2k.core.services.contradictions.conflicts import refusal_for

from .base import ListDetailScreen, Moved

SUBJECT_WIDTH = 20
DETAIL_WIDTH = 39
SOURCE_CHANGED = "source_changed"  # a flag of this kind names one answer; the other side is its source now


def side_text(answer: dict | None, words: list[str], style) -> Text:
    """One answer of the pair as stored (through visible()), its disagreeing words in `style`."""
    out = Text()
    if answer is None:
        out.append("(answer not found)", style="dim")
        return out
    out.append(f"Answer {answer['id']}", style="bold")
    out.append(f"  {visible(answer['status'])}  {visible(answer['horn_type'])}  v{answer['version']}\n", style="dim")
    out.append(visible(answer["question"]) + "\n\n", style="italic")
    body = Text(visible(answer["text"]))
    for word in words or []:
        shown = visible(word)
        if shown:
            body.highlight_words([shown], style)
    out.append_text(body)
    return out


def source_text(flag: dict, escalate: str, dismiss: str) -> Text:
    """What the source of a `source_changed` flag's answer states now that its document was ingested
    again (through visible()): the statement as it now reads, or that it is gone; `escalate` and
    `dismiss`: the keys in force for the two moves."""
    out = Text()
    out.append(f"Document {flag.get('source_document_id')}\n", style="bold")
    if flag.get("source_text") is None:
        out.append("The statement this answer was published from is no longer in the document.", style="italic")
    else:
        out.append("The statement now reads:\n\n", style="italic")
        out.append(visible(flag["source_text"]))
    out.append(f"\n\nEscalate ({escalate}) to send the answer back for re-review; dismiss ({dismiss}) if it still "
               f"holds.", style="dim")
    return out


class ConflictsScreen(ListDetailScreen):
    TITLE = "Conflicts"
    # The disagreeing words: styled in styles/conflicts.tcss.
    COMPONENT_CLASSES = {"conflicts--disagree"}
    RELOAD_ON = ("conflict_flag", "answer")
    AUTO_FOCUS = "#conflicts-table"
    TABLE, COUNT, DETAIL = "conflicts-table", "conflicts-count", "conflicts-detail"
    LIMIT = 200
    NOUN = ("open conflict", "open conflicts")
    MORE = "the newest 200"

    BINDINGS = [
        # Letters as on every screen (README, "Keys").
        Binding("x", "escalate", "Escalate", id="escalate"),
        Binding("b", "dismiss_flag", "Dismiss", id="dismiss"),
        Binding("escape", "back", "Back", id="back"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="conflicts-list"):
            yield DataTable(id="conflicts-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="conflicts-count")
        yield Static("Loading…", id="conflicts-detail")
        with Horizontal(id="conflicts-sides"):
            with VerticalScroll(id="conflicts-answer-pane"):
                yield Static("", id="conflicts-answer")
            with VerticalScroll(id="conflicts-other-pane"):
                yield Static("", id="conflicts-other")
        yield Static("", id="message")
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p is listed in ?

    def on_mount(self) -> None:
        table = self.query_one("#conflicts-table", DataTable)
        table.add_column("id", key="id", width=4)
        table.add_column("kind", key="kind", width=14)
        table.add_column("answers", key="answers", width=11)
        table.add_column("subject", key="subject", width=SUBJECT_WIDTH)
        table.add_column("disagree", key="detail", width=DETAIL_WIDTH)
        self.query_one("#conflicts-answer-pane").border_title = "One answer"
        self.query_one("#conflicts-other-pane").border_title = "The other"
        # WorkstationScreen.on_mount (called after this one) loads the list

    # -- the list and the detail -------------------------------------------------------------
    def list_call(self):
        return partial(conflicts.list_flags, self.ctx, "OPEN", limit=self.LIMIT)

    def cells(self, row: dict, now: datetime) -> tuple:
        answers = str(row["answer_id"]) if row["other_answer_id"] is None else f"{row['answer_id']} ↔ {row['other_answer_id']}"
        return (str(row["id"]), cell(row["kind"]), answers,
                cell(row["subject"], SUBJECT_WIDTH), cell(row["detail"], DETAIL_WIDTH))

    def empty_text(self) -> str:
        return ("No open conflicts: approved answers that contradict each other, or whose source changed, "
                "are flagged here.")

    def detail_call(self, row_id: int):
        return partial(conflicts.show, self.ctx, row_id)

    def render_detail(self, flag: dict) -> Text:
        out = Text()
        out.append(f"Conflict {flag['id']}", style="bold")
        out.append(f"  {visible(flag['status'])}  v{flag['version']}  {visible(flag['kind'])}, found by "
                   f"{visible(flag['judge'])}  ·  subject: ", style="dim")
        out.append(visible(flag["subject"]))
        out.append("\nDisagree: ", style="bold")
        out.append(visible(flag["detail"]))
        return out

    def watch_detail(self, flag: dict | None) -> None:
        super().watch_detail(flag)
        answer = self.query_one("#conflicts-answer", Static)
        other = self.query_one("#conflicts-other", Static)
        if flag is None:
            if not self.rows:
                answer.update("")
                other.update("")
            return
        style = self.get_component_rich_style("conflicts--disagree")
        marks = flag.get("highlights") or {}
        answer.update(side_text(flag.get("answer"), marks.get("answer") or [], style))
        changed = flag.get("kind") == SOURCE_CHANGED
        self.query_one("#conflicts-other-pane").border_title = "Its source now" if changed else "The other"
        other.update(source_text(flag, self.key("escalate"), self.key("dismiss")) if changed else side_text(flag.get("other"), marks.get("other") or [], style))

    # -- keys --------------------------------------------------------------------------------
    MOVES = {"escalate": "escalate", "dismiss_flag": "dismiss"}

    def why_not(self, action: str):
        if action not in self.MOVES or self.actor is None or not self.is_mounted:
            return None
        row = self.current_row()
        return refusal_for(self.actor, row, self.MOVES[action]) if row is not None else self.none_selected()

    def action_escalate(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (flag := self.selected()) is None:
            return
        self.show_info(f"Escalating conflict {flag['id']}…")
        self.move("escalate", partial(conflicts.escalate, self.ctx, self.actor, flag["id"],
                                      expected_version=flag["version"], idempotency_key=key), flag)

    def action_dismiss_flag(self) -> None:
        key = new_idempotency_key()
        if not self.ready() or (flag := self.selected()) is None:
            return

        def send(values) -> None:
            self.move("dismiss", partial(conflicts.dismiss, self.ctx, self.actor, flag["id"], values["reason"],
                                         expected_version=flag["version"], idempotency_key=key), flag)

        if flag.get("kind") == SOURCE_CHANGED:
            modal = ReasonModal(f"Dismiss conflict {flag['id']}", "Why does the answer still hold?",
                                "The answer is flagged again if its source changes again")
        else:
            modal = ReasonModal(f"Dismiss conflict {flag['id']}", "Why do they not contradict each other?",
                                "The pair is not flagged again unless one of the answers changes")
        self.ask(modal, lambda reason: send({"reason": reason}))

    @on(Moved)
    def moved(self, message: Moved) -> None:
        flag = message.row
        if message.action == "escalate":
            disputed = flag.get("disputed") or []
            if len(disputed) == 1:
                said = f"answer {disputed[0]} is DISPUTED, back for re-review"
            else:
                said = (f"answers {' and '.join(str(i) for i in disputed)} are DISPUTED, back for re-review"
                        if disputed else "its answers were already disputed")
            self.show_info(f"Conflict {flag['id']} escalated: {said}.")
        elif flag.get("kind") == SOURCE_CHANGED:
            self.show_info(f"Conflict {flag['id']} dismissed: the answer stands on its source as it now reads.")
        else:
            self.show_info(f"Conflict {flag['id']} dismissed: the pair is not flagged again unless an answer changes.")
        self.updated(flag)
