"""The review screen: claim the next candidate of one Horn type and decide it with single keys.

Every decision sends a fresh idempotency key (one per key press) and the version as shown, and
the next candidate is claimed and read in the same worker, so it appears without another key.
While a call is in flight further decision keys are ignored, and the message line says so: a
bounced key never decides twice, and never vanishes unsaid.
"""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from functools import partial

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import var
from textual.widgets import Header, Markdown, Static

from r2k.app.keymap import key_of
from r2k.app.safe import visible
from r2k.app.textual_private import binding_chain
from r2k.app.widgets.footer import Footer
from r2k.app.widgets.format import ago, new_idempotency_key, parse_time
from r2k.app.widgets.modals import ReasonModal, TextModal
from r2k.app.wording import decision_said, release_said
from r2k.core.domain import HORN_MEANING
from r2k.core.errors import ValidationStateError
from r2k.core.services.queue import candidate_views, claims, skip, undo
from r2k.core.services.validation import candidates, guidelines

from .base import Changed, Failed, Moved, Reply, Shown, WorkstationScreen, notice_entity, plain_words
from .comments import CALLS as COMMENT_CALLS, CommentsPane

SAME_TEXT = ("This is the answer as it stands: nothing to revise. To publish it as it is, approve it "
             "({cancel}, then {approve}); or change the text.")  # the keys in force, filled in by action_revise
BLANK_LINES = re.compile(r"\n[ \t]*(\n[ \t]*)+")
SIDE_CALLS = ("guidelines", *COMMENT_CALLS)  # a pane's read or a comment: never the review group's
DECISIONS = ("approve", "revise", "reject", "escalate")
DOING = {"approve": "Approving", "revise": "Revising", "reject": "Rejecting", "escalate": "Escalating",
         "release": "Releasing", "claim": "Claiming", "refresh": "Reading it again",
         "undo": "Undoing your last decision", "skip": "Skipping"}


# --------------------------------------------------------------------------- helpers

def lease_text(expires: datetime | None, now: datetime) -> Text:
    if expires is None:
        return Text("")
    left = int((expires - now).total_seconds())
    if left <= 0:
        return Text("lease expired: the claim may go back to the queue", style="bold red")
    minutes, seconds = divmod(left, 60)
    return Text(f"lease {minutes:02d}:{seconds:02d} left", style="bold yellow" if left < 120 else "")


def sources_text(sources: list[dict]) -> Text:
    """Each source's title and path, then its excerpt with the matching passage highlighted
    (stored text: controls shown as visible escapes)."""
    if not sources:
        return Text("No source passages: this candidate was added by hand.", style="dim")
    out = Text()
    for number, source in enumerate(sources, 1):
        if number > 1:
            out.append("\n\n")
        excerpt = source.get("excerpt")
        if excerpt is None:
            out.append(f"[{number}] ", style="bold")
            out.append(visible(str(source.get("ref") or source.get("path") or "a reference without a document")))
            continue
        out.append(f"[{number}] {visible(source.get('title')) or 'untitled'}", style="bold")
        if source.get("path"):
            out.append(f"  {visible(source['path'])}", style="dim")
        out.append("\n")
        start, end = (source.get("match") or [0, 0])[:2]
        start, end = max(0, min(start, len(excerpt))), max(0, min(end, len(excerpt)))
        # A CR LF line ending stays in one part, so it reads as a line break and not as a lone CR.
        start -= excerpt[start - 1:start + 1] == "\r\n"
        end -= excerpt[end - 1:end + 1] == "\r\n"
        # Blank lines are squeezed in each part separately, so the match keeps its own offsets.
        out.append(squeeze(visible(excerpt[:start])).lstrip())
        out.append(squeeze(visible(excerpt[start:end])), style="bold black on yellow")
        out.append(squeeze(visible(excerpt[end:])).rstrip())
    return out


def presses(count: int) -> str:
    return "1 key press" if count == 1 else f"{count} key presses"


def squeeze(text: str) -> str:
    return BLANK_LINES.sub("\n", text)


def history_text(history: list[dict], now: datetime) -> Text:
    out = Text()
    for i, event in enumerate(history):
        if i:
            out.append("\n")
        out.append(f"{visible(event['action']):<14}", style="bold")
        if event.get("from") or event.get("to"):
            out.append(visible(f" {event.get('from') or '—'} → {event.get('to') or '—'}"))
        out.append(f"  by {visible(event.get('actor')) or 'system'}", style="cyan")
        out.append(f"  {ago(event.get('at'), now)}", style="dim")
        if event.get("reason"):
            out.append(f"  reason: {visible(event['reason'])}")
        if event.get("revised_text"):
            out.append(f"  revised to: {visible(event['revised_text'])}", style="italic")
    return out or Text("No history.", style="dim")


# --------------------------------------------------------------------------- what the workers say

class CandidateClaimed(Reply):
    """A claim came back: the candidate now this validator's, as a reviewer reads it (None: the
    queue is empty); `resumed` when it was theirs already."""

    def __init__(self, shown: dict | None, resumed: bool = False):
        super().__init__()
        self.shown = shown
        self.resumed = resumed


class Decided(Reply):
    """A decision was made: `result` is the core's review loop's (`decided`, then `next`, or the
    `error` that kept the next from being claimed)."""

    def __init__(self, action: str, candidate_id: int, result: dict):
        super().__init__()
        self.action = action
        self.candidate_id = candidate_id
        self.result = result


class GuidelinesRead(Reply):
    """The guidelines in force for the queue (None: it has none yet)."""

    def __init__(self, guidelines: dict | None):
        super().__init__()
        self.guidelines = guidelines


class Undone(Reply):
    """The last decision was undone: `result` is the core's (`undone`, the new candidate `shown`,
    the claim on screen `released`, or the `error` that kept it from being released)."""

    def __init__(self, result: dict):
        super().__init__()
        self.result = result


class Skipped(Reply):
    """A candidate was skipped: `result` is the core's (`skipped`, then `next`, or the `error` that
    kept the next from being claimed)."""

    def __init__(self, result: dict):
        super().__init__()
        self.result = result


# --------------------------------------------------------------------------- the screen

class ReviewScreen(CommentsPane, WorkstationScreen):
    COMMENT_KIND, COMMENT_NOUN = "candidate", "candidate"
    TITLE = "Review"
    BINDINGS = [
        Binding("a", "approve", "Approve", id="approve"),
        Binding("e", "revise", "Revise", id="revise"),
        Binding("r", "reject", "Reject", id="reject"),
        Binding("x", "escalate", "Escalate", id="escalate"),
        Binding("u", "release", "Release", show=False, id="release"),
        Binding("n", "claim_next", "Claim next", id="claim_next"),
        Binding("s", "skip", "Skip", show=False, id="skip"),
        Binding("z", "undo", "Undo", show=False, id="undo"),
        Binding("h", "guidelines", "Guidelines", show=False, id="guidelines"),
        Binding("M", "comments", "Comments", show=False, id="comments"),
        Binding("L", "comment", "Comment…", show=False, id="comment"),
        Binding("escape", "back", "Back", id="back"),
    ]
    # The keys that act on the candidate -> the candidate's move each makes (skip: as its release; undo:
    # the last decision's, docs/architecture.md "Undo and skip"). The footer shows each one allowed.
    MOVES = {"approve": "approve", "revise": "revise", "reject": "reject", "escalate": "escalate",
             "release": "release", "claim_next": "claim", "skip": "release", "undo": "undo"}

    # The candidate as shown (its version is the one a decision sends); None: the idle pane says why.
    # Redrawn on every set, so a candidate read again shows as it now stands.
    current: var[dict | None] = var(None, init=False, always_update=True, bindings=True)
    idle_text: var[str] = var("", init=False)           # what the idle pane says
    lease_expires: var[datetime | None] = var(None, init=False)  # our own claim's lease, for the countdown
    # A call is in flight: further keys are ignored rather than applied twice.
    busy: var[bool] = var(False)
    # The last decision undo may take back, made here or on another review screen of this app, while
    # its window lasts and nothing seen since has used it (None: nothing): what the footer's undo key
    # follows. The core decides when it is pressed.
    undoable: var[dict | None] = var(None, init=False, bindings=True)
    doing: str = ""  # the call in flight
    ignored = 0  # keys pressed while it was in flight

    def __init__(self, horn_type: str):
        super().__init__()
        self.horn = horn_type
        self.lease_timer = None
        self._opened = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="review-top"):
            yield Static("", id="review-head")
            yield Static("", id="lease")
        with VerticalScroll(id="review-body"):
            yield Static("", id="horn")
            yield Static("", id="question")
            yield Static("", id="answer-text")
            yield Static("", id="sources")
            yield Static("", id="history")
        # The queue's guidelines (docs/architecture.md, "Guidelines"), shown while toggled on, idle too.
        with VerticalScroll(id="review-guidelines"):
            yield Static("", id="guidelines-head")
            yield Markdown("", id="guidelines", open_links=False)
        # The candidate's comments (docs/architecture.md, "Comments"), shown while toggled on.
        with VerticalScroll(id="review-comments"):
            yield Static("", id="comments")
        yield Static("", id="idle")
        yield Static("", id="message")
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p is listed in ? (80 columns: README, Keys)

    def on_mount(self) -> None:
        self.title = f"Review · {self.horn} queue"
        for widget_id, title in (("horn", "Horn type"), ("question", "Question"), ("answer-text", "Answer"),
                                 ("sources", "Sources"), ("history", "History")):
            self.query_one(f"#{widget_id}", Static).border_title = title
        self.query_one("#review-guidelines", VerticalScroll).border_title = "Guidelines"
        self.query_one("#review-comments", VerticalScroll).border_title = "Comments"
        self.add_class("idle")
        self.idle_text = f"Claiming the next {self.horn} candidate…"
        # The countdown only redraws one label from the lease already read: no database call.
        self.lease_timer = self.set_interval(1.0, self.tick_lease)
        self.follow_undo(getattr(self.app, "undo_offer", None))
        # WorkstationScreen.on_mount (called after this one) claims

    # -- loading -------------------------------------------------------------------------------

    def load(self) -> None:
        # Only the first show claims by itself; afterwards claiming is the validator's key (n).
        if self._opened:
            return
        self._opened = True
        if self.actor is None:
            self.show_idle(f"Still finding out who you are: {self.key('claim_next')} to try again, "
                           f"{self.key('back')} to go back.")
            return
        self.start("claim")
        self.open_queue(self.actor, new_idempotency_key())

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def open_queue(self, actor, key: str) -> None:
        with self.reporting("claim"):
            result = claims.resume_or_claim(self.ctx, actor, self.horn, idempotency_key=key)
            self.reply(CandidateClaimed(result["shown"], resumed=result["resumed"]))

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def claim_next_candidate(self, actor, key: str) -> None:
        with self.reporting("claim"):
            self.reply(CandidateClaimed(claims.next_for_review(self.ctx, actor, self.horn, idempotency_key=key)))

    @on(CandidateClaimed)
    def show_claimed(self, message: CandidateClaimed) -> None:
        self.busy = False
        shown = message.shown
        if shown is None:
            self.show_empty()
            return
        self.render_candidate(shown)
        if message.resumed:
            self.show_info(f"You already had candidate {shown['id']} claimed: carrying on with it.")
        else:
            self.show_info("")

    # -- keys ----------------------------------------------------------------------------------

    def holds_claim(self) -> bool:
        """Whether the candidate shown is claimed by this validator now."""
        cur = self.current
        return bool(cur and cur["state"] == "IN_REVIEW" and self.actor and cur.get("claimed_by") == self.actor.name)

    def why_not(self, action: str):
        """The keys are offered for a candidate that can take them (approve and revise never for an
        OPEN_ISSUE), through the core's rules (base.WorkstationScreen.check_action); claim next while
        nothing is claimed here; undo while the last decision may be undone."""
        if self.actor is None or self.busy or action not in self.MOVES:
            return None  # busy: ready_for says what is in flight
        if action == "claim_next":  # offered while nothing is claimed here
            return self.still_claimed() if self.holds_claim() else None
        if action == "undo":
            return None if self.undoable else (f"Nothing to undo: undo takes back your last decision here within "
                                               f"{self.ctx.settings.undo_seconds:g} s, while nothing has used it.")
        if self.current is None:
            return self.nothing_claimed()
        return candidates.allowed.refusal(self.MOVES[action], self.current, self.actor)

    def nothing_claimed(self) -> str:
        return f"Nothing is claimed: {self.key('claim_next')} claims the next candidate."

    def still_claimed(self) -> str:
        return (f"Candidate {self.current['id']} is still claimed by you: decide it, or {self.key('release')} to "
                f"release it first.")

    def ready_for(self, action: str) -> bool:
        """Whether a key may act now; says why not in the message line."""
        if self.busy:  # a call is in flight: ignore the key rather than apply anything twice, and say so
            self.ignored += 1
            doing = "saving the last decision" if self.doing in DECISIONS else DOING.get(self.doing, "busy").lower()
            self.show_info(f"Still {doing}… ({presses(self.ignored)} ignored)")
            return False
        if self.actor is None:
            self.show_error(self.app.actor_error or "Still finding out who you are; try again in a moment.", 403)
            return False
        if action == "claim":
            if self.holds_claim():
                self.show_info(self.still_claimed())
                return False
            return True
        if not self.holds_claim():
            self.show_info(self.nothing_claimed())
            return False
        return True

    def action_claim_next(self) -> None:
        if not self.ready_for("claim"):
            return
        self.start("claim")
        self.claim_next_candidate(self.actor, new_idempotency_key())

    def action_approve(self) -> None:
        self.decide("approve")

    def action_revise(self) -> None:
        if not self.ready_for("revise"):
            return
        cur = self.current
        cid = cur["id"]
        if why_not := candidates.revision_refused(cur):  # refused before any typing, not after
            self.show_error(ValidationStateError("candidate", cid, cur["state"], "revise", why_not).message, 422)
            return
        unchanged = SAME_TEXT.format(cancel=key_of(self.app, TextModal, "cancel"), approve=self.key("approve"))
        self.app.push_screen(TextModal(f"Revise candidate {cid}", cur["text"], unchanged=unchanged),
                             lambda text: text is not None and self.decide("revise", text=text))

    def action_reject(self) -> None:
        self.ask_reason("reject", "Reject", "Why is this answer wrong?")

    def action_escalate(self) -> None:
        self.ask_reason("escalate", "Escalate", "What is missing? A specialist will rework it")

    def ask_reason(self, action: str, verb: str, placeholder: str) -> None:
        if not self.ready_for(action):
            return
        cid = self.current["id"]
        self.app.push_screen(ReasonModal(f"{verb} candidate {cid}", "Reason", placeholder),
                             lambda reason: reason is not None and self.decide(action, reason=reason))

    def decide(self, action: str, **fields) -> None:
        if not self.ready_for(action):
            return
        self.start(action)
        self.send_decision(self.actor, self.current, action, new_idempotency_key(), fields)

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def send_decision(self, actor, candidate: dict, action: str, key: str, fields: dict) -> None:
        with self.reporting(action):
            result = claims.decide_and_next(self.ctx, actor, candidate["id"], action, idempotency_key=key,
                                            expected_version=candidate["version"], **fields)
            self.reply(Decided(action, candidate["id"], result))

    @on(Decided)
    def decided(self, message: Decided) -> None:
        self.busy = False
        result = message.result
        said = decision_said(message.action, message.candidate_id, result["decided"])
        self.offer_undo(message.candidate_id, result["decided"])
        if self.ignored:
            said += f" ({presses(self.ignored)} made while saving it ignored)"
        shown = result["next"]
        if shown is not None:
            self.render_candidate(shown)
            self.show_info(f"{said}. Now showing candidate {shown['id']}.")
        elif result["error"]:
            message, status = result["error"]["message"], result["error"]["status"]
            self.show_idle(f"{said}. The next candidate could not be claimed: {self.key('claim_next')} to try again.")
            # The lead words (403, 503 …) belong to the reason, not to the decision said first.
            self.show_error(f"{said}; the next one could not be claimed. {plain_words(message, status)}")
        else:
            self.show_empty()
            self.show_info(f"{said}.")

    def action_release(self) -> None:
        if not self.ready_for("release"):
            return
        cur = self.current
        self.start("release")
        self.move("release", partial(candidates.release, self.ctx, self.actor, cur["id"],
                                     expected_version=cur["version"], idempotency_key=new_idempotency_key()))

    @on(Moved)
    def released(self, message: Moved) -> None:
        if message.action != "release":
            return
        self.busy = False
        row = message.row
        self.show_idle(f"Candidate {row['id']} is back at the head of the {self.horn} queue.\n\n"
                       f"{self.key('claim_next')} claims the next candidate, {self.key('back')} goes back to the queues.")
        self.show_info(release_said(row))

    def action_back(self) -> None:
        note = None
        if self.holds_claim():
            left = lease_text(self.lease_expires, datetime.now(timezone.utc)).plain
            note = (f"Candidate {self.current['id']} stays claimed by you ({left}): open the {self.horn} queue "
                    f"to carry on, and {self.key('release')} there releases it.")
        self.app.pop_screen()
        screen = self.app.screen
        if note and hasattr(screen, "show_info"):
            screen.show_info(note)

    # -- the queue's guidelines (docs/architecture.md, "Guidelines") ---------------------------

    def action_guidelines(self) -> None:
        """Show or hide the guidelines in force for this queue; each show reads them again."""
        self.toggle_class("guidelines-open")
        if self.has_class("guidelines-open"):
            self.query_one("#guidelines-head", Static).update(Text(f"Reading the {self.horn} guidelines…", style="dim"))
            self.read_guidelines()

    @work(thread=True, exclusive=True, group="guidelines", exit_on_error=False)
    def read_guidelines(self) -> None:
        with self.reporting("guidelines"):
            self.reply(GuidelinesRead(guidelines.show(self.ctx, self.horn)))

    @on(GuidelinesRead)
    def guidelines_read(self, message: GuidelinesRead) -> None:
        found = message.guidelines
        head = self.query_one("#guidelines-head", Static)
        pane = self.query_one("#guidelines", Markdown)
        close = self.key("guidelines")
        if found is None:
            head.update(Text(f"No guidelines yet for the {self.horn} queue (an admin writes them: "
                             f"r2k queue guidelines {self.horn} --file F). {close} hides this pane.", style="dim"))
            pane.update("")
            return
        head.update(Text.assemble((f"{self.horn} guidelines, version {found['number']}", "bold"),
                                  f" by {visible(found.get('author'), multiline=False)}",
                                  (f" · {close} hides them", "dim")))
        # Stored Markdown: its controls shown as visible escapes before the widget parses it, and no
        # link it holds is opened on a click (open_links=False).
        pane.update(visible(found["body"]))
        self.query_one("#review-guidelines", VerticalScroll).scroll_home(animate=False)

    @on(Changed)
    def _follow_guidelines(self, message: Changed) -> None:
        """An admin wrote a new version: the open pane shows it (the notice carries no text)."""
        event = message.event
        if notice_entity(event) == "guidelines" and event.get("action") == "write" and self.has_class("guidelines-open"):
            self.read_guidelines()

    # -- the candidate's comments (app/screens/comments.py) ------------------------------------

    def comment_target(self) -> int | None:
        return self.current["id"] if self.current is not None else None

    def comments_box(self):
        return self.query_one("#review-comments", VerticalScroll)

    @on(Changed)
    def _follow_claim(self, message: Changed) -> None:
        """The lease sweeper (or an admin) took back the candidate on screen: show where it stands."""
        event = message.event
        self.follow_undo_use(event)
        if notice_entity(event) != "candidate" or self.current is None or self.busy:
            return
        if event.get("id") != self.current["id"]:
            return
        action = event.get("action")
        mine = self.actor is not None and event.get("actor") == self.actor.name
        if action == "release" or (action == "claim" and not mine):
            self.refresh_current()
            self.show_error(f"Candidate {self.current['id']} is no longer claimed by you (its lease ran out, or "
                            f"it was released elsewhere). {self.key('claim_next')} claims the next candidate.", 0)

    # -- undo and skip (docs/architecture.md, "Undo and skip") --------------------------------

    def on_key(self, event) -> None:
        """Undo's key while the footer does not offer it (no decision of yours here is known to be
        undoable) still asks the core, which says why not in its own words: what used the decision,
        who, or that there is none (docs/architecture.md, "Refusals say who and why")."""
        if (not self.undoable and self.actor is not None and not self.busy
                and any(b.action == "undo" for b in self.active_bindings_for(event.key))):
            event.stop()
            self.action_undo()
            return
        super().on_key(event)

    def active_bindings_for(self, key: str):
        for node, bindings in binding_chain(self):
            if node is self:
                return bindings.key_to_bindings.get(key, ())
        return ()

    def action_undo(self) -> None:
        """Undo your last decision: the candidate comes back (as a new one, claimed by you) at once;
        a claim on screen goes back to the head of its queue."""
        if self.busy or self.actor is None:
            self.ready_for("undo")  # says why not
            return
        release = {"id": self.current["id"], "version": self.current["version"]} if self.holds_claim() else None
        self.start("undo")
        self.send_undo(self.actor, release, new_idempotency_key())

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def send_undo(self, actor, release: dict | None, key: str) -> None:
        with self.reporting("undo"):
            self.reply(Undone(undo.undo_and_show(self.ctx, actor, release=release, idempotency_key=key)))

    def offer_undo(self, candidate_id: int, decided: dict) -> None:
        """A decision was made: the footer offers undo for the core's window, until something seen
        here uses the decision (its answer disputed or superseded, its work item taken on)."""
        window = self.ctx.settings.undo_seconds
        offer = {"user": self.actor.name, "candidate": candidate_id, "until": time.monotonic() + window,
                 "answer": (decided.get("answer") or {}).get("id"), "work_item": (decided.get("work_item") or {}).get("id")}
        self.app.undo_offer = offer
        self.follow_undo(offer)

    def follow_undo(self, offer: dict | None) -> None:
        """Offer undo for `offer` (the app's, so another review screen of it knows too) while it lasts."""
        left = offer["until"] - time.monotonic() if offer and self.actor and offer["user"] == self.actor.name else 0
        if left <= 0:
            self.undoable = None
            return
        self.undoable = offer
        self.set_timer(left, lambda: self.undoable is offer and self.drop_undo())

    def drop_undo(self) -> None:
        self.undoable = None
        if getattr(self.app, "undo_offer", None) is not None:
            self.app.undo_offer = None

    def follow_undo_use(self, event: dict) -> None:
        """A notice that something used the last decision: undo can no longer take it back."""
        offer = self.undoable
        if offer is None:
            return
        entity, action, about = notice_entity(event), event.get("action"), event.get("id")
        if (entity == "work_item" and about == offer["work_item"] and action != "create") or \
                (entity == "answer" and about == offer["answer"] and action in ("supersede", "dispute", "retire")):
            self.drop_undo()

    @on(Undone)
    def undone(self, message: Undone) -> None:
        self.busy = False
        self.drop_undo()
        result = message.result
        undone, shown = result["undone"], result["shown"]
        said = f"Undid your {undone['action']} of candidate {undone['candidate']['id']}"
        if undone.get("retired"):
            said += f" (answer {undone['retired']['id']} retired)"
        if undone.get("work_item"):
            said += f" (work item {undone['work_item']['id']} closed)"
        said += f": it is back as candidate {shown['id']}, claimed by you."
        if result["released"]:
            said += f" Candidate {result['released']['id']} went back to the head of its queue."
        self.render_candidate(shown)
        if result["error"]:
            self.show_error(f"{said} The claim on screen could not be given back: "
                            f"{plain_words(result['error']['message'], result['error']['status'])}")
        else:
            self.show_info(said)

    def undo_refused(self, failed: Failed) -> None:
        """Nothing was undone and nothing changed: say why, and what to do instead."""
        hint = f" {self.key('registry')} opens the registry." if "registry" in failed.message else ""
        self.drop_undo()  # the core said no: nothing is left for undo to take back
        self.show_error(f"Nothing was undone: {failed.message}.{hint}", failed.status)
        if self.current is None:
            self.show_idle(f"Nothing is claimed. {self.key('claim_next')} claims the next candidate, "
                           f"{self.key('back')} goes back.")

    def action_skip(self) -> None:
        """Pass the candidate by for you alone: others get it first; n serves it to you again only
        when the queue holds nothing else."""
        if not self.ready_for("skip"):
            return
        cur = self.current
        self.start("skip")
        self.send_skip(self.actor, cur, new_idempotency_key())

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def send_skip(self, actor, candidate: dict, key: str) -> None:
        with self.reporting("skip"):
            self.reply(Skipped(skip.skip(self.ctx, actor, candidate["id"], then_next=True,
                                         expected_version=candidate["version"], idempotency_key=key)))

    @on(Skipped)
    def skipped(self, message: Skipped) -> None:
        self.busy = False
        result = message.result
        cid = result["skipped"]["id"]
        shown = result["next"]
        if shown is not None and shown["id"] == cid:
            self.render_candidate(shown)
            self.show_info(f"Nothing else is in the {self.horn} queue: candidate {cid} again.")
        elif shown is not None:
            self.render_candidate(shown)
            self.show_info(f"Skipped candidate {cid}: others get it first, and you only once the queue "
                           f"holds nothing else. Now showing candidate {shown['id']}.")
        elif result["error"]:
            self.show_idle(f"Skipped candidate {cid}. The next candidate could not be claimed: "
                           f"{self.key('claim_next')} to try again.")
            self.show_error(f"Skipped candidate {cid}; the next one could not be claimed. "
                            f"{plain_words(result['error']['message'], result['error']['status'])}")
        else:
            self.show_empty()
            self.show_info(f"Skipped candidate {cid}.")

    # -- outcomes ------------------------------------------------------------------------------

    def start(self, action: str) -> None:
        self.busy = True
        self.doing, self.ignored = action, 0
        if self.current is None:
            self.idle_text = f"{DOING[action]}…"
        self.show_info(f"{DOING[action]}…")

    def show_failure(self, failed: Failed) -> None:
        if failed.call in SIDE_CALLS:  # a pane's read: the candidate and any call in flight stay as they are
            self.show_error(failed.message, failed.status)
            return
        self.busy = False
        if failed.call == "undo" and failed.status in (403, 404, 409):
            self.undo_refused(failed)
            return
        if failed.call == "refresh":
            return  # what failed first is said already; the candidate stays as shown
        self.show_error(failed.message, failed.status)
        if self.current is None:
            self.show_idle(f"Nothing is claimed. {self.key('claim_next')} to try again, {self.key('back')} to go back.")
        elif failed.status in (403, 409):
            self.refresh_current()  # someone else moved it: show where it stands now

    def refresh_current(self) -> None:
        self.busy = True
        self.doing, self.ignored = "refresh", 0
        self.read_candidate(self.current["id"])

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def read_candidate(self, candidate_id: int) -> None:
        with self.reporting("refresh"):
            self.reply(Shown(candidate_views.show(self.ctx, candidate_id)))

    @on(Shown)
    def refreshed(self, message: Shown) -> None:
        self.busy = False
        self.render_candidate(message.row)

    # -- rendering (cheap: a handful of label updates) -----------------------------------------

    def render_candidate(self, data: dict) -> None:
        self.current = data  # drawn by watch_current

    def show_empty(self) -> None:
        self.show_idle(f"The {self.horn} queue is empty. {self.key('claim_next')} to try again, "
                       f"{self.key('back')} to go back.")

    def show_idle(self, text: str) -> None:
        self.idle_text = text
        self.current = None

    def watch_idle_text(self, text: str) -> None:
        self.query_one("#idle", Static).update(text)

    def watch_current(self, data: dict | None) -> None:
        if data is None:
            self.lease_expires = None
            self.query_one("#review-head", Static).update(Text(f"{self.horn} queue", style="bold"))
            self.add_class("idle")
            if self.has_class("comments-open"):
                self.load_comments()
            return
        now = datetime.now(timezone.utc)
        mine = data["state"] == "IN_REVIEW" and self.actor is not None and data.get("claimed_by") == self.actor.name
        self.lease_expires = parse_time(data.get("lease_expires_at")) if mine else None  # only our own lease
        # Stored text below goes through visible(): a Rich Text reads no markup, but would pass
        # ESC, C1 and bidi controls to the terminal.
        claimant = f" · claimed by {visible(data['claimed_by'])}" if data.get("claimed_by") else ""
        self.query_one("#review-head", Static).update(Text.assemble(
            (f"{visible(data['horn_type'])} queue", "bold"), f" · candidate {data['id']} · {visible(data['state'])}",
            f" · version {data['version']}{claimant}"))
        horn = Text.assemble((visible(data["horn_type"]), "bold"), " — ", HORN_MEANING.get(data["horn_type"], ""))
        if item := data.get("work_item"):  # the link back to the work item it was generated from
            horn.append(f"\n{item['link'].capitalize()} work item {item['id']} ({visible(item['state'])})", style="cyan")
        answer = data.get("answer")
        if answer and answer.get("status") == "DISPUTED":
            # A re-review: say what is at stake, since the keys settle the dispute.
            horn.append(f"\nRe-review: its published answer {answer['id']} is DISPUTED", style="bold yellow")
            if answer.get("reason"):
                horn.append(f" ({visible(answer['reason'])})", style="yellow")
            horn.append(". Approve or revise publishes a new version; reject retires it.", style="yellow")
        self.query_one("#horn", Static).update(horn)
        self.query_one("#question", Static).update(Text(visible(data["question"])))
        self.query_one("#answer-text", Static).update(Text(visible(data["text"])))
        sources = data.get("sources") or []
        panel = self.query_one("#sources", Static)
        panel.border_title = f"Sources ({len(sources)})"
        panel.update(sources_text(sources))
        self.query_one("#history", Static).update(history_text(data.get("history") or [], now))
        self.query_one("#review-body", VerticalScroll).scroll_home(animate=False)
        self.remove_class("idle")
        if self.has_class("comments-open"):  # the pane follows the candidate shown
            self.load_comments()

    def watch_lease_expires(self, expires: datetime | None) -> None:
        self.query_one("#lease", Static).update(lease_text(expires, datetime.now(timezone.utc)))

    def tick_lease(self) -> None:
        if self.lease_expires is not None:
            self.watch_lease_expires(self.lease_expires)
