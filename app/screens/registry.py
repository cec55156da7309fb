"""The registry browser: search as you type, filter by status, read an answer with its supersede
chain and its neighbours in the graph (sources, subjects and the other answers on them, the chain
there, its conflicts), and supersede, dispute or retire it.

Results come 50 at a time from the database's full-text index (`]` and `[` page through them);
nothing is loaded in bulk.
"""
from __future__ import annotations

import difflib
from functools import partial

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import var
from textual.widgets import DataTable, Header, Input, Select, Static

from r2k.app.safe import visible
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import clip, new_idempotency_key, plural
from r2k.app.widgets.modals import ReasonModal, TextModal
from r2k.app.widgets.text import cell
from r2k.app.wording import registry_move_said
from r2k.core.services import bulk
from r2k.core.services.answers import registry
from r2k.core.services.contradictions import conflicts

from .base import Listed, Moved, Reply, WorkstationScreen
from .comments import CommentsPane
from .marks import BulkDone, id_cell, show_bulk_done

LIMIT = 50
QUESTION_WIDTH = 40
FILTERS = ("APPROVED", "DISPUTED", "SUPERSEDED", "RETIRED", "ALL")
HIGHLIGHT_FIRST = "Highlight an answer first (search, then the arrow keys)."
STATUS_STYLE = {"APPROVED": "green", "DISPUTED": "yellow", "SUPERSEDED": "dim", "RETIRED": "red"}


def detail_text(answer: dict) -> Text:
    """An answer as stored (a Rich Text reads no markup; visible() keeps its controls off the terminal)."""
    out = Text()
    out.append(f"Answer {answer['id']}", style="bold")
    out.append(f"  {visible(answer['status'])}", style="bold " + STATUS_STYLE.get(answer["status"], ""))
    out.append(f"  {visible(answer['horn_type'])}  version {answer['version']}\n", style="")
    out.append("Question: ", style="bold")
    out.append(f"{visible(answer['question'])}\n\n")
    out.append(visible(answer["text"]))
    out.append("\n\n")
    out.append(f"published by {visible(answer.get('published_by')) or '—'} from candidate {answer['candidate_id']}"
               + (f", superseding answer {answer['supersedes_id']}" if answer.get("supersedes_id") else ""),
               style="dim")
    if answer.get("reason"):
        out.append("\nreason: ", style="bold")
        out.append(visible(answer["reason"]))
    return out


def word_diff(old: str, new: str, added: Style | str = "", removed: Style | str = "", context: int = 3) -> Text:
    """What changed from `old` to `new`, word by word: removed words as [-…-], added as {+…+} (and
    in the given styles), a few unchanged words around each change, the rest elided as "…".
    Stored text: each word goes through visible()."""
    a, b = old.split(), new.split()
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    out = Text()

    def words(part: list[str], style: Style | str = "") -> None:
        if out:
            out.append(" ")
        out.append(" ".join(visible(w) for w in part), style=style)

    if all(tag == "equal" for tag, *_ in ops):
        return Text("(the same text)", style="dim")
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            same = a[i1:i2]
            head = same[:context] if n else []  # after a change
            tail = same[-context:] if n < len(ops) - 1 else []  # before the next
            if len(same) <= len(head) + len(tail) + 1:
                words(same)
                continue
            if head:
                words(head)
            words(["…"], "dim")
            if tail:
                words(tail)
            continue
        if i2 > i1:
            words(["[-" + " ".join(a[i1:i2]) + "-]"], removed)
        if j2 > j1:
            words(["{+" + " ".join(b[j1:j2]) + "+}"], added)
    return out


def chain_text(chain: list[dict], current_id: int, width: int = 60, added: Style | str = "",
               removed: Style | str = "") -> Text:
    """The versions oldest first, two lines each; the one on screen marked. After the first, each
    version's word diff from the one before it (`word_diff`, in the given styles)."""
    out = Text()
    for i, row in enumerate(chain):
        if i:
            out.append("\n")
        here = row["id"] == current_id
        out.append("▶ " if here else "  ", style="bold")
        out.append(f"answer {row['id']}  ", style="bold" if here else "")
        out.append(visible(row["status"]), style=STATUS_STYLE.get(row["status"], ""))
        out.append(f"  by {visible(row.get('published_by')) or '—'}", style="dim")
        if here:
            out.append("  (this one)", style="bold")
        out.append(f"\n    {clip(visible(row['text']), max(20, width - 4))}", style="" if here else "dim")
        if i:
            out.append("\n    changes: ", style="bold")
            out.append_text(word_diff(chain[i - 1]["text"], row["text"], added, removed))
    return out


def neighbours_text(found: dict) -> Text:
    """An answer's neighbours in the graph (`conflicts.neighbours`); when the graph is down, that
    is said in place of its parts (the conflicts come from PostgreSQL and are shown either way)."""
    out = Text()
    if found["graph"] != "up":
        out.append(f"The graph is {visible(found['graph'])}\n", style="dim")
    else:
        out.append("Sources: ", style="bold")
        # What the graph holds is shown through visible(), ids too (a source's id is whatever its
        # reference said)
        out.append(", ".join(visible(s["title"]) or f"document {visible(str(s['id']))}" for s in found["sources"])
                   or "none")
        out.append("\nSubjects:", style="bold")
        for subject in found["subjects"]:
            out.append("\n  " + visible(subject["name"]))
            others = subject["answers"]
            out.append(("  · also " + ", ".join(f"{visible(str(o['id']))} ({visible(o['status'] or '?')})"
                                                 for o in others))
                       if others else "  · no other answer", style="dim")
        if not found["subjects"]:
            out.append(" none", style="dim")
        out.append("\nChain: ", style="bold")
        out.append(", ".join(f"{c['relation']} {visible(str(c['id']))} ({visible(c['status'] or '?')})"
                             for c in found["chain"])
                   or "no other version")
    out.append("\nConflicts: ", style="bold")
    if not found["conflicts"]:
        out.append("none")
    for c in found["conflicts"]:
        out.append(f"\n  conflict {c['id']} {visible(c['status'])} with answer {c['other_answer_id']}: ")
        out.append(visible(c["detail"]), style="dim")
    return out


class Neighbours(Reply):
    """An answer's neighbours in the graph (`conflicts.neighbours`)."""

    def __init__(self, answer_id: int, found: dict):
        super().__init__()
        self.answer_id = answer_id
        self.found = found


class Chain(Reply):
    """An answer's supersede chain, oldest first (`registry.chain`)."""

    def __init__(self, answer_id: int, chain: list[dict]):
        super().__init__()
        self.answer_id = answer_id
        self.chain = chain


class ResultsTable(DataTable):
    """The results: columns as wide as what they hold (auto width).

    Textual (8.2) measures such columns when the table is next idle, but caches each drawn cell
    without its width: a frame drawn between filling the table and that idle left the rows cut to
    their header widths ("APPROV", "When is") until something else redrew them. Measuring changes
    the table's virtual size, so the drawn cells are dropped then."""

    def watch_virtual_size(self) -> None:
        self.notify_style_update()  # clears the cell and line caches, and refreshes


BULK = ("dispute", "retire")  # the moves made on marked answers (supersede is one answer's new text)


class RegistryScreen(CommentsPane, WorkstationScreen):
    COMMENT_KIND, COMMENT_NOUN = "answer", "answer"
    TITLE = "Registry"
    # The chain's word diff: styled in styles/registry.tcss.
    COMPONENT_CLASSES = {"registry--added", "registry--removed"}
    RELOAD_ON = ("answer", "candidate")
    DEBOUNCE = 0.5
    BINDINGS = [
        Binding("p", "supersede", "Supersede", id="supersede"),
        Binding("d", "dispute", "Dispute", id="dispute"),
        Binding("t", "retire", "Retire", id="retire"),
        Binding("slash", "focus_search", "Search", key_display="/", id="search"),
        Binding("down", "focus_results", "Results", show=False, id="results"),  # from the search box (the table has its own)
        Binding("right_square_bracket", "next_page", "Next 50", key_display="]", id="next_page"),
        Binding("left_square_bracket", "previous_page", "Previous 50", key_display="[", show=False, id="previous_page"),
        Binding("space", "mark", "Mark", show=False, id="mark"),
        Binding("asterisk", "mark_all", "Mark all shown", key_display="*", show=False, id="mark_all"),
        Binding("M", "comments", "Comments", show=False, id="comments"),
        Binding("L", "comment", "Comment…", show=False, id="comment"),
        Binding("escape", "back", "Back", id="back"),
    ]

    MOVES = {"supersede": "supersede", "dispute": "dispute", "retire": "retire"}  # the answer's moves

    # The search: the words typed (once the typing pauses) and the status filter; a new one starts
    # at the first page (watch_words, watch_status).
    words: var[str] = var("", init=False)
    status: var[str] = var("APPROVED", init=False)
    page_start: var[int] = var(0)    # where the page shown starts in the results
    has_more: var[bool] = var(False)  # whether results follow the page shown
    selected_id: var[int | None] = var(None, bindings=True)  # the highlighted answer, which the keys act on

    def __init__(self):
        super().__init__()
        # Answers marked for a bulk dispute or retire (app/screens/marks.py): only rows shown.
        self.marked: set[int] = set()
        self.rows: dict[int, dict] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="registry-bar"):
            yield Input(placeholder=f"Search the registry · enter or {self.key('results')}: the results", id="search")
            yield Select([(s.title() if s != "ALL" else "All statuses", s) for s in FILTERS], value="APPROVED",
                         allow_blank=False, id="status")
        yield ResultsTable(id="results", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="registry-detail"):
            with VerticalScroll(id="detail"):
                yield Static("", id="detail-body")
                yield Static("", id="comments")  # the answer's comments (app/screens/comments.py)
            with VerticalScroll(id="chain-pane"):
                yield Static("", id="chain")
            with VerticalScroll(id="neighbours-pane"):
                yield Static("", id="neighbours")
        yield Static("", id="message")
        yield Footer(show_command_palette=False)  # ctrl+p is listed in ? (80 columns: README, Keys)

    def on_mount(self) -> None:
        table = self.query_one("#results", DataTable)
        table.add_column("Id", key="id")
        table.add_column("Status", key="status")
        table.add_column("Horn type", key="horn")
        table.add_column("Question", key="question")
        table.add_column("Text", key="text")
        self.query_one("#detail", VerticalScroll).border_title = "Answer"
        self.query_one("#chain-pane", VerticalScroll).border_title = "Supersede chain (oldest first)"
        self.query_one("#neighbours-pane", VerticalScroll).border_title = "In the graph"
        self.query_one("#detail-body", Static).update(Text("Nothing selected.", style="dim"))
        # The results have the focus, so `?` and the keys for everywhere act at once (a search box
        # focused first took them as text); `/` reaches the search box, and enter, ↓ or escape
        # leave it for the results again.
        self.query_one("#results", DataTable).focus()
        # WorkstationScreen.on_mount (called after this one) searches

    # -- searching -----------------------------------------------------------------------------

    def load(self) -> None:
        # One row beyond the page says whether there is a next one.
        self.search(self.words, self.status, self.page_start)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def search(self, words: str, status: str, offset: int) -> None:
        with self.reporting("search"):
            self.reply(Listed(registry.search(self.ctx, words, status, limit=LIMIT + 1, offset=offset)))

    def search_anew(self) -> None:
        self.page_start = 0
        self.load()

    def watch_words(self) -> None:
        self.search_anew()

    def watch_status(self) -> None:
        self.search_anew()

    @on(Input.Changed, "#search")
    def typed(self, event: Input.Changed) -> None:
        # Search as you type, once the typing pauses: one query per pause, not one per key.
        self.debounce("search", 0.2, lambda: setattr(self, "words", event.input.value))

    @on(Input.Submitted, "#search")
    def to_results(self) -> None:
        self.query_one("#results", DataTable).focus()

    @on(Select.Changed, "#status")
    def status_picked(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.status = event.value

    @on(Listed)
    def show_results(self, message: Listed) -> None:
        if message.superseded:
            return  # a newer search is on its way
        rows = message.rows
        if not rows and self.page_start:  # the page emptied (answers retired meanwhile): the one before
            self.page_start = max(0, self.page_start - LIMIT)
            self.load()
            return
        self.has_more, rows = len(rows) > LIMIT, rows[:LIMIT]
        table = self.query_one("#results", DataTable)
        keep = self.selected_id
        self.rows = {row["id"]: row for row in rows}
        self.marked &= set(self.rows)  # a bulk move acts on what is shown
        table.clear()
        # The text takes what the other columns leave of the table's width (cells, padding, scrollbar).
        text_width = max(20, table.size.width - 2 * 5 - (6 + 10 + 10 + QUESTION_WIDTH) - 4)
        for row in rows:  # a string cell is read as markup: stored text is escaped
            table.add_row(id_cell(row["id"], self.marked), Text(visible(row["status"]), style=STATUS_STYLE.get(row["status"], "")),
                          cell(row["horn_type"]), cell(row["question"], QUESTION_WIDTH),
                          cell(row["text"], text_width), key=str(row["id"]))
        table.border_title = self.page_title(len(rows))
        if not rows:
            self.selected_id = None
            what = f"matching “{visible(self.words.strip())}”" if self.words.strip() else "yet"
            self.query_one("#detail-body", Static).update(Text(f"No {self.status_label()} answers {what}.",
                                                               style="dim"))
            self.query_one("#chain", Static).update("")
            return
        if keep in self.rows:
            table.move_cursor(row=table.get_row_index(str(keep)), animate=False)
        self.select(int(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value))

    def page_title(self, shown: int) -> str:
        what = f"{self.status_label()} answers".strip()
        if not self.page_start and not self.has_more:
            return plural(shown, what[:-1], what)  # "1 approved answer", "3 approved answers"
        title = f"{what.capitalize()} {self.page_start + 1}–{self.page_start + shown}"
        if self.has_more:
            title += f" · {self.key('next_page')} next {LIMIT}"
        if self.page_start:
            title += f" · {self.key('previous_page')} previous {LIMIT}"
        return title

    def status_label(self) -> str:
        return "" if self.status == "ALL" else self.status.lower()

    # -- the highlighted answer ----------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#results")
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        self.select(int(event.row_key.value))

    def select(self, answer_id: int) -> None:
        answer = self.rows.get(answer_id)
        if answer is None:
            return
        changed = answer_id != self.selected_id
        self.selected_id = answer_id
        self.query_one("#detail-body", Static).update(detail_text(answer))
        if changed:
            self.query_one("#chain", Static).update(Text("…", style="dim"))
            self.query_one("#neighbours", Static).update(Text("…", style="dim"))
        self.read_chain(answer_id)
        self.read_neighbours(answer_id)
        if self.has_class("comments-open"):  # the pane follows the answer highlighted
            self.load_comments()

    def comment_target(self) -> int | None:
        return self.selected_id if self.selected_id in self.rows else None

    @work(thread=True, exclusive=True, group="neighbours", exit_on_error=False)
    def read_neighbours(self, answer_id: int) -> None:
        with self.reporting("neighbours"):
            self.reply(Neighbours(answer_id, conflicts.neighbours(self.ctx, answer_id)))

    @on(Neighbours)
    def show_neighbours(self, message: Neighbours) -> None:
        if message.superseded or message.answer_id != self.selected_id:
            return
        self.query_one("#neighbours", Static).update(neighbours_text(message.found))

    @work(thread=True, exclusive=True, group="chain", exit_on_error=False)
    def read_chain(self, answer_id: int) -> None:
        with self.reporting("chain"):
            self.reply(Chain(answer_id, registry.chain(self.ctx, answer_id)))

    @on(Chain)
    def show_chain(self, message: Chain) -> None:
        if message.superseded:
            return
        panel = self.query_one("#chain", Static)
        panel.update(chain_text(message.chain, message.answer_id, panel.size.width or 60,
                                self.get_component_rich_style("registry--added"),
                                self.get_component_rich_style("registry--removed")))

    # -- keys ----------------------------------------------------------------------------------

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_focus_results(self) -> None:
        if self.focused is self.query_one("#search", Input):
            self.query_one("#results", DataTable).focus()

    def action_back(self) -> None:
        if self.focused is not self.query_one("#results", DataTable):
            self.query_one("#results", DataTable).focus()  # leave the search box (or the filter) first
            return
        super().action_back()

    def action_next_page(self) -> None:
        if not self.has_more:
            self.show_info("This is the last page of results.")
            return
        self.page_start += LIMIT
        self.load()

    def action_previous_page(self) -> None:
        if not self.page_start:
            self.show_info("This is the first page of results.")
            return
        self.page_start = max(0, self.page_start - LIMIT)
        self.load()

    def target(self) -> dict | None:
        answer = self.rows.get(self.selected_id) if self.selected_id is not None else None
        if answer is None:
            self.show_info(HIGHLIGHT_FIRST)
        elif self.actor is None:
            self.show_error(self.app.actor_error or "Still finding out who you are; try again in a moment.", 403)
            return None
        return answer

    def why_not(self, action: str):
        """Supersede, dispute and retire are offered for an answer whose status allows them, to a
        user with the authority (base.WorkstationScreen.check_action)."""
        if action not in self.MOVES or self.actor is None or not self.is_mounted:
            return None
        if self.marked and action in BULK:  # each marked answer takes it or says why not (bulk_done)
            return None
        answer = self.rows.get(self.selected_id) if self.selected_id is not None else None
        if answer is None:
            return HIGHLIGHT_FIRST
        return registry.allowed.refusal(self.MOVES[action], answer, self.actor)

    def action_supersede(self) -> None:
        answer = self.target()
        if answer is None:
            return
        def done(result) -> None:
            if result is None:
                return
            text, reason = result
            self.send_move("supersede", answer, text, reason)

        self.app.push_screen(TextModal(f"Supersede answer {answer['id']}: publish a new version", answer["text"],
                                       with_reason=True, reason_placeholder="Why a new version?"), done)

    def action_dispute(self) -> None:
        self.ask_reason("dispute", "Dispute", "What is wrong with it? Its candidate goes back for re-review")

    def action_retire(self) -> None:
        self.ask_reason("retire", "Retire", "Why take it out of the registry for good?")

    def ask_reason(self, action: str, verb: str, placeholder: str) -> None:
        if self.marked and action in BULK:
            self.act_on_marked(action, verb, placeholder)
            return
        answer = self.target()
        if answer is None:
            return
        self.app.push_screen(ReasonModal(f"{verb} answer {answer['id']}", "Reason", placeholder),
                             lambda reason: reason is not None and self.send_move(action, answer, reason))

    def send_move(self, action: str, answer: dict, *args: str) -> None:
        """One registry move (supersede, dispute, retire) on one answer, in a worker; Moved when done."""
        self.show_info(f"{action.title()} answer {answer['id']}…")
        self.move(action, partial(getattr(registry, action), self.ctx, self.actor, answer["id"], *args,
                                  expected_version=answer["version"], idempotency_key=new_idempotency_key()), answer)

    # -- marks and bulk moves (app/screens/marks.py) -------------------------------------------
    def redraw_marks(self) -> None:
        table = self.query_one("#results", DataTable)
        for answer_id in self.rows:
            if str(answer_id) in table.rows:
                table.update_cell(str(answer_id), "id", id_cell(answer_id, self.marked))
        n = len(self.marked)
        self.show_info(f"{plural(n, 'answer')} marked: {self.key('dispute')} or {self.key('retire')} acts on each, "
                       f"{self.key('mark')} unmarks one." if n else "No answer marked.")
        self.refresh_bindings()

    def action_mark(self) -> None:
        if self.selected_id not in self.rows:
            self.show_info(HIGHLIGHT_FIRST)
            return
        self.marked ^= {self.selected_id}
        self.redraw_marks()

    def action_mark_all(self) -> None:
        """Mark every answer shown; with all of them marked already, unmark them."""
        shown = set(self.rows)
        self.marked = set() if shown and shown <= self.marked else shown
        self.redraw_marks()

    def act_on_marked(self, action: str, verb: str, placeholder: str) -> None:
        """One reason for all, asked with the count; then the move on each marked answer."""
        if self.actor is None:
            self.show_error(self.app.actor_error or "Still finding out who you are; try again in a moment.", 403)
            return
        versions = {answer_id: row["version"] for answer_id, row in self.rows.items() if answer_id in self.marked}
        key = new_idempotency_key()
        title = f"{verb} {plural(len(versions), 'marked answer')}? Each is its own move"
        self.app.push_screen(ReasonModal(title, "Reason", placeholder),
                             lambda reason: reason is not None and self.send_bulk(self.actor, action, versions,
                                                                                   reason, key))

    @work(thread=True, group="bulk", exit_on_error=False)
    def send_bulk(self, actor, action: str, versions: dict[int, int], reason: str, key: str) -> None:
        move = getattr(registry, action)

        def one(answer_id: int, item_key: str | None) -> dict:
            return move(self.ctx, actor, answer_id, reason, expected_version=versions[answer_id],
                        idempotency_key=item_key)

        with self.reporting(action):
            self.reply(BulkDone(action, bulk.each(list(versions), one, idempotency_key=key)))

    @on(BulkDone)
    def bulk_done(self, message: BulkDone) -> None:
        show_bulk_done(self, message, "answer")
        self.load()

    @on(Moved)
    def move_done(self, message: Moved) -> None:
        self.show_info(registry_move_said(message.action, message.before["id"], message.row))
        if message.action == "supersede":
            self.selected_id = message.row["id"]  # follow the new version
        self.load()
