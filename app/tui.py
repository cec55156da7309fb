"""The Textual workstation: screens installed, the command palette, live updates.

Every database and Redis call runs in a thread worker, which answers with a message; the event
loop only draws. A background worker listens on the core's pub/sub channel and tells the screens
when someone else acted. Outages: docs/architecture.md, "Outages".
"""
from __future__ import annotations

import json
import logging
import time
from functools import partial
from pathlib import Path

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.message import Message
from textual.reactive import reactive, var

from r2k import styles
from r2k.core.services.session import CHANNEL, Context, notice, service_error

from .keymap import key_of
from .safe import visible
from .typeahead import TypeAhead
from .screens.base import Changed, notice_entity

STYLES = sorted(Path(styles.__file__).resolve().parent.glob("*.tcss"))

# The workstation's log lines go to `logs/workstation.log` in the data dir (`keep_log`, from
# run_tui): while Textual runs it holds the terminal, so a line on stderr would be lost.
log = logging.getLogger(__name__)
LOG_NAME = "workstation.log"
SAID_AGAIN = 600.0  # seconds: the same failure again within this is logged at debug level only


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


_last_said: dict[str, tuple[str, float]] = {}


def log_failure(ctx, what: str, exc: BaseException) -> None:
    """Say in the log what failed: a service that does not answer at debug level (frequent while it is
    away, and the header says "reconnecting…"), anything else as a warning with its traceback, once
    (a look every few seconds that keeps failing the same way repeats it at debug level)."""
    said, now = _said(exc), time.monotonic()
    last = _last_said.get(what)
    if service_error(exc, ctx) is not None or (last and last[0] == said and now - last[1] < SAID_AGAIN):
        log.debug("%s: %s", what, said)
        return
    if len(_last_said) >= 100:  # one `what` names an entry (a grey entry read): forget the oldest
        _last_said.pop(next(iter(_last_said)))
    _last_said[what] = (said, now)
    log.warning("%s: %s", what, said, exc_info=exc)


def keep_log(data_dir) -> logging.Handler | None:
    """Write the log (r2k's lines from INFO, R2K_DEBUG: from DEBUG; the libraries' from WARNING) to
    `logs/workstation.log` in the data dir (0600, as the worker's log), each line with its process id:
    several workstations (SSH sessions, say) share the file."""
    import os

    from .worker_child import log_path, open_log

    try:
        stream = os.fdopen(open_log(log_path(data_dir, LOG_NAME)), "a", buffering=1)
    except OSError as exc:  # said on the terminal, before the screen takes it
        log.warning("no workstation log in %s: %s", data_dir, exc)
        return None
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s pid %(process)d %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > logging.WARNING or root.level == logging.NOTSET:
        root.setLevel(logging.WARNING)
    logging.getLogger("r2k").setLevel(logging.DEBUG if os.environ.get("R2K_DEBUG") else logging.INFO)
    return handler


# name -> (module, class, title, key)
SCREENS = {
    "dashboard": ("r2k.app.screens.dashboard", "DashboardScreen", "Dashboard", "D"),
    "queues": ("r2k.app.screens.queues", "QueuePickerScreen", "Validation queues", "V"),
    "registry": ("r2k.app.screens.registry", "RegistryScreen", "Registry", "G"),
    "workitems": ("r2k.app.screens.workitems", "WorkItemsScreen", "Work items", "W"),
    "grey": ("r2k.app.screens.grey", "GreyQueueScreen", "Grey queue", "Y"),
    "conflicts": ("r2k.app.screens.conflicts", "ConflictsScreen", "Conflicts", "C"),
    "adjudication": ("r2k.app.screens.adjudication", "AdjudicationScreen", "Adjudication", "J"),
    "articles": ("r2k.app.screens.articles", "ArticlesScreen", "Articles", "T"),
    "mywork": ("r2k.app.screens.mywork", "MyWorkScreen", "My work", "m"),
}


def screen_class(name: str):
    import importlib

    module, cls, _, _ = SCREENS[name]
    return getattr(importlib.import_module(module), cls)


class ScreensProvider(Provider):
    """The command palette reaches every screen, and every action the screen it was opened over
    can take now (its bindings, hidden ones too; the palette's own screen has none of its own)."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        for name, (_, _, title, _) in SCREENS.items():
            text = f"Open {title}"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(app.open_screen, name), help=f"go to the {title} screen")
        below = self.screen  # the screen the palette was opened over, not the palette itself
        where = getattr(below, "TITLE", None) or below.__class__.__name__
        seen = set()
        for active in below.active_bindings.values():
            binding = active.binding
            if (not active.enabled or not binding.description or "open_screen" in binding.action
                    or binding.action in ("command_palette", "quit") or (active.node, binding.action) in seen):
                continue
            seen.add((active.node, binding.action))
            text = f"{binding.description} ({app.get_key_display(binding)})"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(app.run_action, binding.action, active.node),
                          help=f"on {where}")


# --------------------------------------------------------------------------- what the app's workers say

class ActorKnown(Message):
    """The acting user, resolved."""

    def __init__(self, actor):
        super().__init__()
        self.actor = actor


class ActorUnknown(Message):
    """The acting user is not known (the core's words)."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message


class Notice(Message):
    """A pub/sub notice from the core, to relay to the screens."""

    def __init__(self, event: dict):
        super().__init__()
        self.event = event


class ServiceDown(Message):
    """A service did not answer (the 503's words)."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message


class Reconnected(Message):
    """PostgreSQL and Redis answer again."""


class Escalated(Message):
    """A grey entry was escalated by someone else: `entry` as it now reads (None: it could not be read)."""

    def __init__(self, entry_id, actor: str | None, entry: dict | None):
        super().__init__()
        self.entry_id = entry_id
        self.actor = actor
        self.entry = entry


class Mentioned(Message):
    """A comment that mentions the workstation's user, by someone else, as the core reads it."""

    def __init__(self, comment: dict):
        super().__init__()
        self.comment = comment


class ClaimsHeld(Message):
    """Quitting: the claims the user holds now (none: nothing to ask)."""

    def __init__(self, rows: list[dict]):
        super().__init__()
        self.rows = rows


class WorkerChildChanged(Message):
    """The workstation's own worker started or ended (app/worker_child.py)."""


class LeftSafely(Message):
    """Quitting: the claims were given back (`released` ids), or could not be (`error`)."""

    def __init__(self, released: list[int], error: str | None = None):
        super().__init__()
        self.released = released
        self.error = error


class R2KApp(TypeAhead, App):
    TITLE = "r2k"
    SUB_TITLE = "raw documents to validated knowledge"
    CSS_PATH = STYLES
    COMMANDS = App.COMMANDS | {ScreensProvider}
    ENABLE_COMMAND_PALETTE = True

    # The keys for everywhere (README, "Keys"): each has an id a keymap file may rebind (app/keymap.py).
    # f1 is a priority key, so help opens even from a text box, where ? is a character; so do
    # ctrl+p (the command palette, "Open …" for each screen) and ctrl+q.
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
        Binding("f1", "help", "Help", show=False, priority=True, id="help_anywhere"),
        Binding("D", "open_screen('dashboard')", "Dashboard", show=False, id="dashboard"),
        Binding("V", "open_screen('queues')", "Queues", show=False, id="queues"),
        Binding("G", "open_screen('registry')", "Registry", show=False, id="registry"),
        Binding("W", "open_screen('workitems')", "Work items", show=False, id="workitems"),
        Binding("Y", "open_screen('grey')", "Grey queue", show=False, id="grey"),
        Binding("C", "open_screen('conflicts')", "Conflicts", show=False, id="conflicts"),
        Binding("J", "open_screen('adjudication')", "Adjudication", show=False, id="adjudication"),
        Binding("T", "open_screen('articles')", "Articles", show=False, id="articles"),
        Binding("m", "open_screen('mywork')", "My work", show=False, id="my_work"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="quit"),
    ]

    # True while a service does not answer: the header says "reconnecting…" and a worker keeps
    # trying; screens carry on and reload once it answers again.
    reconnecting: reactive[bool] = reactive(False)
    # Escalations a specialist has not seen yet: the grey queue shows them as a badge.
    grey_badge: var[int] = var(0)

    def __init__(self, ctx: Context | None = None, user: str | None = None, *, listen: bool = True,
                 sweep_every: float | None = None, keymap: dict[str, str] | None = None,
                 start_worker: bool = False, leave_on_signals: bool = False):
        super().__init__()
        if keymap:  # checked by app/keymap.py before the workstation opens
            self.set_keymap(keymap)
        self.ctx = ctx or Context(pool_size=6)
        self.user_name = user or self.ctx.settings.acting_user
        self.actor = None  # resolved in a worker on mount
        self.actor_error: str | None = None
        self._listen = listen
        # Seconds between offers to sweep when no worker runs (0: never); R2K_SWEEP_INTERVAL by default.
        self._sweep_every = self.ctx.settings.sweep_interval if sweep_every is None else sweep_every
        # A worker of its own when none is live (app/worker_child.py): `r2k` and `r2k demo` ask for
        # one (unless R2K_START_WORKER=0); a workstation built in a test starts none unless asked.
        self._start_worker = start_worker
        self.worker_child = None
        self._leave_on_signals = leave_on_signals  # the real terminal's workstation (run_tui)
        self.worker_opted_out = False  # R2K_START_WORKER=0 (run_tui): the dashboard says so
        self.undo_offer: dict | None = None  # the last decision undo may take back (app/screens/review.py)

    def on_mount(self) -> None:
        self._who = visible(self.user_name, multiline=False)  # as given to --as, checked later
        self.sub_title = self._who
        self.push_screen(screen_class("dashboard")())
        self.resolve_actor()
        if self._listen:
            self.listen()
        if self._sweep_every:
            self.set_interval(self._sweep_every, self.sweep_if_unattended)
        if self._leave_on_signals:
            self._handle_signals()
        if self._start_worker:
            from .worker_child import TICK, WorkerChild

            self.worker_child = WorkerChild(self.user_name, self.ctx.settings.data_dir)
            self.tend_worker()
            self.set_interval(TICK, self.tend_worker)

    @work(thread=True, group="worker-child", exit_on_error=False)
    def tend_worker(self) -> None:
        """Start the workstation's own worker when none is live; start it again when it ended."""
        child = self.worker_child
        if child is None or self.actor is None:
            return  # it acts as the workstation's user: once known (an unknown one starts none)
        child.user = self.actor.name
        try:
            changed = child.tick(self.ctx)
        except Exception as exc:  # noqa: BLE001 - Redis away: the screens say so; look again next time
            log_failure(self.ctx, "looking after the workstation's worker", exc)
            return
        if changed:
            self.post_message(WorkerChildChanged())

    @on(WorkerChildChanged)
    def _worker_child_changed(self) -> None:
        self._broadcast(notice("worker"))

    def _handle_signals(self) -> None:
        """SIGTERM and SIGHUP (the terminal closed) leave as ctrl+q's last step does: the workstation's
        own worker stopped, the terminal restored."""
        import asyncio
        import signal

        loop = asyncio.get_running_loop()

        def leave(signum: int) -> None:
            self.stop_worker()
            self.exit(return_code=128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, leave, sig)

    def worker_status(self) -> dict | None:
        """The workstation's own worker as the dashboard says it (None: this workstation starts none)."""
        if self.worker_child is not None:
            return self.worker_child.status()
        return {"state": "off"} if self.worker_opted_out else None

    def stop_worker(self) -> None:
        """Stop the workstation's own worker (leaving; also run by run_tui after a crash)."""
        if self.worker_child is not None:
            self.worker_child.stop()

    @work(thread=True, group="sweep", exclusive=True)
    def sweep_if_unattended(self) -> None:
        """Expired leases and the like, when no worker is running to sweep them (a demo, say)."""
        from r2k.core.services import sweeps

        try:
            sweeps.sweep_if_unattended(self.ctx, self._sweep_every)
        except Exception as exc:  # noqa: BLE001 - a service down: the screens say so; try again next time
            log_failure(self.ctx, "the unattended sweep (expired leases and the like) did not run", exc)

    @work(thread=True, group="actor", exclusive=True, exit_on_error=False)
    def resolve_actor(self) -> None:
        from r2k.core.errors import R2KError
        from r2k.core.services import users

        try:
            actor = users.resolve(self.ctx, self.user_name)
        except Exception as exc:  # noqa: BLE001 - said, never a crash
            down = service_error(exc, self.ctx)
            if down is not None:  # asked again once the services answer (_reconnected)
                self.post_message(ServiceDown(down.message))
            else:
                self.post_message(ActorUnknown(exc.message if isinstance(exc, R2KError)
                                               else f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(ActorKnown(actor))

    @on(ActorKnown)
    def _actor_resolved(self, message: ActorKnown) -> None:
        actor = self.actor = message.actor
        roles = actor.role + (f" · {', '.join(sorted(actor.horn_types))}" if actor.horn_types else "")
        self._who = visible(f"{actor.name} ({roles})", multiline=False)
        self.watch_reconnecting(self.reconnecting)
        self._broadcast(notice("actor"))
        if self.worker_child is not None:
            self.tend_worker()  # its worker acts as this user: no need to wait for the next look

    @on(ActorUnknown)
    def _actor_failed(self, unknown: ActorUnknown) -> None:
        message = self.actor_error = unknown.message
        self._who = visible(f"{self.user_name} (unknown user)", multiline=False)
        self.watch_reconnecting(self.reconnecting)
        self.notify(visible(message), severity="error", timeout=10, markup=False)
        self._broadcast(notice("actor"))

    @work(thread=True, group="pubsub", exclusive=True, exit_on_error=False)
    def listen(self) -> None:
        """Relay the core's pub/sub notices to the screens; reconnect when Redis comes back."""
        from textual.worker import get_current_worker

        worker = get_current_worker()
        while not worker.is_cancelled:
            try:
                pubsub = self.ctx.redis.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(CHANNEL)
                while not worker.is_cancelled:
                    message = pubsub.get_message(timeout=0.5)
                    if message and message.get("type") == "message":
                        try:
                            event = json.loads(message["data"])
                        except ValueError:  # not a notice of the core's (anyone with Redis may publish)
                            log.debug("a message on %s that is not JSON, dropped: %.80r", CHANNEL, message["data"])
                            continue
                        self.post_message(Notice(event))
                pubsub.close()
            except Exception as exc:  # noqa: BLE001 - Redis away: say so once, try again shortly
                down = service_error(exc, self.ctx)
                if down is not None and not worker.is_cancelled:
                    self.post_message(ServiceDown(down.message))
                time.sleep(1.0)

    @on(Notice)
    def _relay(self, message: Notice) -> None:
        self._broadcast(message.event)

    @on(ServiceDown)
    def _down(self, message: ServiceDown) -> None:
        self.service_down(message.message)

    # -- outages ---------------------------------------------------------------------------

    def service_down(self, message: str | None) -> None:
        """A service did not answer (a screen's call, or the notice listener): say so once, and
        reconnect in the background while the screens carry on."""
        if self.reconnecting:
            return
        self.reconnecting = True
        if message:
            self.notify(visible(message) + " — reconnecting…", title="Reconnecting", severity="warning",
                        timeout=6, markup=False)
        self.reconnect()

    def watch_reconnecting(self, value: bool) -> None:
        who = getattr(self, "_who", "")
        self.sub_title = f"{who} · reconnecting…" if value else who

    @work(thread=True, group="reconnect", exclusive=True, exit_on_error=False)
    def reconnect(self) -> None:
        """Until PostgreSQL and Redis answer again: follow each server (an embedded one that died
        is started again), try, wait (bounded backoff)."""
        from textual.worker import get_current_worker

        from r2k.core.services.session import delays

        worker = get_current_worker()
        for pause in delays():
            if worker.is_cancelled:
                return
            # Followed first: a pool asked while its server is away waits for it (seconds), so the
            # server is started again before anything asks.
            for part in ("postgres", "redis"):
                try:
                    self.ctx.follow(part)
                except Exception as follow_error:  # noqa: BLE001 - not back yet: the next try follows again
                    log.debug("following %s: %s", part, follow_error)
            try:
                with self.ctx.db.read() as tx:
                    tx.scalar("SELECT 1")
                self.ctx.redis.ping()
            except Exception as exc:  # noqa: BLE001 - still down: wait, follow it again
                down = service_error(exc, self.ctx)
                if down is None or down.part is None:
                    raise
                time.sleep(pause)
                continue
            self.post_message(Reconnected())
            return

    @on(Reconnected)
    def _reconnected(self) -> None:
        self.reconnecting = False
        self.notify("Reconnected: the services answer again.", timeout=3)
        self._broadcast(notice("*", action="reconnected"))
        if self.actor is None and self.actor_error is None:
            self.resolve_actor()  # it met the outage

    def _broadcast(self, event: dict) -> None:
        for screen in self.screen_stack:
            screen.post_message(Changed(event))
        if notice_entity(event) == "grey_entry" and event.get("action") == "escalate":
            self._grey_escalated(event)
        if notice_entity(event) == "comment" and event.get("action") == "add":
            self._commented(event)

    # -- mentions (docs/architecture.md, "Comments") --------------------------------------------

    def _commented(self, event: dict) -> None:
        """A comment was added: one by someone else may mention this user (a notice carries no text)."""
        if self.actor is None or event.get("actor") == self.actor.name:
            return
        self.read_mention(event.get("id"), self.actor.name)

    @work(thread=True, group="mentions", exit_on_error=False)
    def read_mention(self, comment_id, user: str) -> None:
        from r2k.core.services import comments

        try:
            comment = comments.show(self.ctx, comment_id)
        except Exception as exc:  # noqa: BLE001 - gone, or a service down: nothing to tell
            log_failure(self.ctx, f"reading comment {comment_id}", exc)
            return
        if user in (comment.get("mentions") or []) and comment.get("author") != user:
            self.post_message(Mentioned(comment))

    @on(Mentioned)
    def _tell_mention(self, message: Mentioned) -> None:
        from r2k.core.services.comments import ENTITIES

        comment = message.comment
        what = {aggregate: word for aggregate, _, word in ENTITIES.values()}.get(comment["entity_type"],
                                                                                 comment["entity_type"])
        said = f"{comment['author']} mentioned you on {what} {comment['entity_id']}: {comment['body']}"
        if len(said) > 300:
            said = said[:299] + "…"
        # Stored text (the author's name, the comment): plain, not markup, controls made visible.
        self.notify(visible(said), title="Mention", timeout=10, markup=False)

    def _grey_escalated(self, event: dict) -> None:
        """Specialists hear about an escalation at once, wherever they are."""
        if self.actor is None or self.actor.role not in ("specialist", "admin") or event.get("actor") == self.actor.name:
            return
        self.grey_badge += 1  # counted now: the grey queue reads the count as the same notice reaches it
        self.read_escalation(event.get("id"), event.get("actor"))

    @work(thread=True, group="escalations", exit_on_error=False)
    def read_escalation(self, entry_id, actor: str | None) -> None:
        """The subject and reason of an escalated entry, read from the core (a notice carries no text)."""
        from r2k.core.services import grey

        try:
            entry = grey.get(self.ctx, entry_id)
        except Exception as exc:  # noqa: BLE001 - gone, or a service down: the toast still says it happened
            log_failure(self.ctx, f"reading escalated grey entry {entry_id}", exc)
            entry = None
        self.post_message(Escalated(entry_id, actor, entry))

    @on(Escalated)
    def _tell_escalation(self, message: Escalated) -> None:
        entry = message.entry
        said = f"Grey entry {message.entry_id} escalated by {message.actor}"
        if entry is not None:
            # The subject and reason are stored text: plain, not markup, controls made visible.
            said += f": {entry['subject']}" + (f" — {entry['reason']}" if entry.get("reason") else "")
        self.notify(visible(said), title="Escalation", severity="warning", timeout=10, markup=False)

    def action_open_screen(self, name: str) -> None:
        self.open_screen(name)

    def open_screen(self, name: str) -> None:
        cls = screen_class(name)
        for screen in self.screen_stack:
            if isinstance(screen, cls):
                while self.screen is not screen:
                    self.pop_screen()
                return
        self.push_screen(cls())

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    # -- leaving safely -----------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Quitting with claims held asks whether to release them (the default) or keep them
        leased; without an acting user, or while that is asked already, it just quits."""
        from .widgets.modals import ChoiceModal

        if self.actor is None:
            self.exit()
        elif not isinstance(self.screen, ChoiceModal) or self.screen.id != "quit-question":
            self.read_held_claims(self.actor)

    @work(thread=True, group="quit", exclusive=True, exit_on_error=False)
    def read_held_claims(self, actor) -> None:
        from r2k.core.services import claims

        try:
            rows = claims.held(self.ctx, actor)
        except Exception as exc:  # noqa: BLE001 - a service down: nothing can be released now; just leave
            # Its claims stay leased until they run out, unasked: worth a warning, outage or not.
            log.warning("quitting without asking about %s's claims: they could not be read (%s)", actor.name,
                        _said(exc))
            rows = []
        self.post_message(ClaimsHeld(rows))

    @on(ClaimsHeld)
    def _ask_about_claims(self, message: ClaimsHeld) -> None:
        from .widgets.modals import Choice, ChoiceModal

        rows = message.rows
        if not rows:
            self.exit()
            return
        ids = ", ".join(str(row["id"]) for row in rows[:5]) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")
        minutes = self.ctx.settings.claim_lease_seconds // 60
        held = f"candidate {ids}" if len(rows) == 1 else f"{len(rows)} candidates ({ids})"
        question = (f"You hold {held} claimed. Release puts {'it' if len(rows) == 1 else 'them'} back at the head "
                    f"of {'its queue' if len(rows) == 1 else 'their queues'} for others; keep leaves "
                    f"{'it' if len(rows) == 1 else 'them'} yours until the lease runs out (up to {minutes} minutes).")
        self.push_screen(ChoiceModal("Quit r2k?", question,
                                     [Choice("release", "Release and quit", "r"),
                                      Choice("keep", "Keep leased and quit", "k"),
                                      Choice("stay", "Stay", "s")], cancel="stay", id="quit-question"),
                         self._quit_answered)

    def _quit_answered(self, choice: str | None) -> None:
        if choice == "release":
            self.release_and_leave(self.actor)
        elif choice == "keep":
            self.exit()

    @work(thread=True, group="quit", exclusive=True, exit_on_error=False)
    def release_and_leave(self, actor) -> None:
        from r2k.core.services import claims

        try:
            self.post_message(LeftSafely(claims.release_held(self.ctx, actor)))
        except Exception as exc:  # noqa: BLE001 - said; the user decides again
            self.post_message(LeftSafely([], getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"))

    @on(LeftSafely)
    def _left(self, message: LeftSafely) -> None:
        if message.error is None:
            self.exit()
            return
        self.notify(visible(f"The claims could not be released: {message.error}. {key_of(self, self, 'quit')} to "
                            "try again."),
                    title="Still here", severity="error", timeout=10, markup=False)

    def on_unmount(self) -> None:
        self.stop_worker()
        self.ctx.close()


def run_tui(user: str | None = None) -> int:
    import sys

    from r2k.core.errors import R2KError

    from .keymap import KeymapError, load

    try:
        keymap = load()  # before any service starts: a bad keymap changes nothing
    except KeymapError as exc:
        from r2k.core.errors import exit_code

        print(f"r2k: {exc}", file=sys.stderr)
        return exit_code(400)  # invalid input, as the CLI's
    try:
        ctx = Context(pool_size=6)
        ctx.db  # start or reach the services before the screen opens; a 503 is said plainly
        from r2k.core.services import queue_index

        queue_index.reconcile_if_lost(ctx)  # Redis lost its data since last time: rebuild the queues
    except R2KError as exc:
        import sys

        from .output import error_line

        print(error_line(exc.as_dict()), file=sys.stderr)  # one readable line, as the CLI's errors
        from r2k.core.errors import exit_code

        return exit_code(exc.status)
    from .worker_child import wanted

    app = R2KApp(ctx, user, keymap=keymap, start_worker=wanted(), leave_on_signals=True)
    app.worker_opted_out = not wanted()
    kept = keep_log(ctx.settings.data_dir)
    try:
        app.run()
    finally:
        app.stop_worker()  # after a crash too: the workstation's worker never outlives it
        if kept is not None:
            logging.getLogger().removeHandler(kept)
            kept.close()
    return app.return_code or 0
