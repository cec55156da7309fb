"""The Textual workstation: the app that installs the screens and the keys for everywhere.

Its jobs each have a module of their own: the screens by name and the command palette
(app/palette.py), what its background workers say (app/messages.py), the workstation's own worker
(app/tending.py), live notices and outages (app/reconnecting.py), mentions and escalations
(app/alerts.py), leaving safely (app/leaving.py) and the log (app/workstation_log.py). Every
database and Redis call runs in a thread worker, which answers with a message; the event loop only
draws. Outages: docs/architecture.md, "Outages".
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive, var

from r2k import styles
from r2k.core.bootstrap import bootstrap
from r2k.core.errors import R2KError, exit_code
from r2k.core.services.people import users
from r2k.core.services.queue import queue_index
from r2k.core.services.session import Context, notice, service_error

from .alerts import Alerts
from .keymap import KeymapError, load
from .leaving import Leaving
from .messages import ActorKnown, ActorUnknown, ServiceDown
from .output import error_line
from .palette import ScreensProvider, screen_class
from .reconnecting import Reconnecting
from .safe import visible
from .screens.base import Changed, notice_entity
from .screens.help import HelpScreen
from .tending import WorkerTending
from .typeahead import TypeAhead
from .worker_child import TICK, WorkerChild, wanted
from .workstation_log import keep_log

STYLES = sorted(Path(styles.__file__).resolve().parent.glob("*.tcss"))


class R2KApp(TypeAhead, WorkerTending, Reconnecting, Alerts, Leaving, App):
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
        self.ctx = ctx or bootstrap(pool_size=6)
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
            self.worker_child = WorkerChild(self.user_name, self.ctx.settings.data_dir)
            self.tend_worker()
            self.set_interval(TICK, self.tend_worker)

    @work(thread=True, group="actor", exclusive=True, exit_on_error=False)
    def resolve_actor(self) -> None:
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

    def _broadcast(self, event: dict) -> None:
        for screen in self.screen_stack:
            screen.post_message(Changed(event))
        if notice_entity(event) == "grey_entry" and event.get("action") == "escalate":
            self._grey_escalated(event)
        if notice_entity(event) == "comment" and event.get("action") == "add":
            self._commented(event)

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
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def on_unmount(self) -> None:
        self.stop_worker()
        self.ctx.close()


def run_tui(user: str | None = None) -> int:
    try:
        keymap = load()  # before any service starts: a bad keymap changes nothing
    except KeymapError as exc:
        print(f"r2k: {exc}", file=sys.stderr)
        return exit_code(400)  # invalid input, as the CLI's
    try:
        ctx = bootstrap(pool_size=6)
        ctx.db  # start or reach the services before the screen opens; a 503 is said plainly
        queue_index.reconcile_if_lost(ctx)  # Redis lost its data since last time: rebuild the queues
    except R2KError as exc:
        print(error_line(exc.as_dict()), file=sys.stderr)  # one readable line, as the CLI's errors
        return exit_code(exc.status)
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
