"""The Textual workstation (DESIGN §11): screens installed, the command palette, live updates.

Every database and Redis call runs in a thread worker; the event loop only draws. A background
worker listens on the core's pub/sub channel and tells the screens when someone else acted.
"""
from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.reactive import reactive

import styles
from core.context import Context
from core.notices import CHANNEL

from .safe import visible
from .screens.base import Changed

STYLES = sorted(Path(styles.__file__).resolve().parent.glob("*.tcss"))

# name -> (module, class, title, key)
SCREENS = {
    "dashboard": ("app.screens.dashboard", "DashboardScreen", "Dashboard", "D"),
    "queues": ("app.screens.queues", "QueuePickerScreen", "Validation queues", "V"),
    "registry": ("app.screens.registry", "RegistryScreen", "Registry", "G"),
    "workitems": ("app.screens.workitems", "WorkItemsScreen", "Work items", "W"),
    "grey": ("app.screens.grey", "GreyQueueScreen", "Grey queue", "Y"),
}


def screen_class(name: str):
    import importlib

    module, cls, _, _ = SCREENS[name]
    return getattr(importlib.import_module(module), cls)


class ScreensProvider(Provider):
    """The command palette reaches every screen and every action of the current screen."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        for name, (_, _, title, _) in SCREENS.items():
            text = f"Open {title}"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(app.open_screen, name), help=f"go to the {title} screen")
        for key, active in app.screen.active_bindings.items():
            binding = active.binding
            if not binding.description or binding.action in ("command_palette", "quit"):
                continue
            text = f"{binding.description} ({binding.key_display or key})"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(app.run_binding_action, active.node, binding.action),
                          help=f"on {getattr(app.screen, 'TITLE', None) or app.screen.__class__.__name__}")


class R2KApp(App):
    TITLE = "r2k"
    SUB_TITLE = "raw documents to validated knowledge"
    CSS_PATH = STYLES
    COMMANDS = App.COMMANDS | {ScreensProvider}
    ENABLE_COMMAND_PALETTE = True

    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("D", "open_screen('dashboard')", "Dashboard", show=False),
        Binding("V", "open_screen('queues')", "Queues", show=False),
        Binding("G", "open_screen('registry')", "Registry", show=False),
        Binding("W", "open_screen('workitems')", "Work items", show=False),
        Binding("Y", "open_screen('grey')", "Grey queue", show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    # True while a service does not answer: the header says "reconnecting…" and a worker keeps
    # trying; screens carry on and reload once it answers again.
    reconnecting: reactive[bool] = reactive(False)

    def __init__(self, ctx: Context | None = None, user: str | None = None, *, listen: bool = True,
                 sweep_every: float | None = None):
        super().__init__()
        self.ctx = ctx or Context(pool_size=6)
        self.user_name = user or self.ctx.settings.acting_user
        self.actor = None  # resolved in a worker on mount
        self.actor_error: str | None = None
        self._listen = listen
        # Seconds between offers to sweep when no worker runs (0: never); R2K_SWEEP_INTERVAL by default.
        self._sweep_every = self.ctx.settings.sweep_interval if sweep_every is None else sweep_every

    def on_mount(self) -> None:
        self._who = visible(self.user_name, multiline=False)  # as given to --as, checked later
        self.sub_title = self._who
        self.push_screen(screen_class("dashboard")())
        self.resolve_actor()
        if self._listen:
            self.listen()
        if self._sweep_every:
            self.set_interval(self._sweep_every, self.sweep_if_unattended)

    @work(thread=True, group="sweep", exclusive=True)
    def sweep_if_unattended(self) -> None:
        """Expired leases and the like, when no worker is running to sweep them (a demo, say)."""
        from core.services import sweeps

        try:
            sweeps.sweep_if_unattended(self.ctx, self._sweep_every)
        except Exception:  # noqa: BLE001 - a service down: the screens say so; try again next time
            pass

    @work(thread=True, group="actor")
    def resolve_actor(self) -> None:
        from core.errors import R2KError
        from core.services import users

        try:
            actor = users.resolve(self.ctx, self.user_name)
        except R2KError as exc:
            self.call_from_thread(self._actor_failed, exc.message)
            return
        self.call_from_thread(self._actor_resolved, actor)

    def _actor_resolved(self, actor) -> None:
        self.actor = actor
        roles = actor.role + (f" · {', '.join(sorted(actor.horn_types))}" if actor.horn_types else "")
        self._who = visible(f"{actor.name} ({roles})", multiline=False)
        self.watch_reconnecting(self.reconnecting)
        self._broadcast({"entity": "actor"})

    def _actor_failed(self, message: str) -> None:
        self.actor_error = message
        self._who = visible(f"{self.user_name} (unknown user)", multiline=False)
        self.watch_reconnecting(self.reconnecting)
        self.notify(visible(message), severity="error", timeout=10, markup=False)
        self._broadcast({"entity": "actor"})

    @work(thread=True, group="pubsub", exclusive=True)
    def listen(self) -> None:
        """Relay the core's pub/sub notices to the screens; reconnect when Redis comes back."""
        from textual.worker import get_current_worker

        from core.outage import service_error

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
                        except ValueError:
                            continue
                        self.call_from_thread(self._broadcast, event)
                pubsub.close()
            except Exception as exc:  # noqa: BLE001 - Redis away: say so once, try again shortly
                down = service_error(exc, self.ctx)
                if down is not None and not worker.is_cancelled:
                    self.call_from_thread(self.service_down, down.message)
                time.sleep(1.0)

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

    @work(thread=True, group="reconnect", exclusive=True)
    def reconnect(self) -> None:
        """Until PostgreSQL and Redis answer again: wait (bounded backoff), follow each server
        (an embedded one that died is started again), try."""
        from textual.worker import get_current_worker

        from core.outage import service_error
        from core.outage import delays

        worker = get_current_worker()
        for pause in delays():
            if worker.is_cancelled:
                return
            try:
                with self.ctx.db.read() as tx:
                    tx.scalar("SELECT 1")
                self.ctx.redis.ping()
            except Exception as exc:  # noqa: BLE001 - still down: follow it and wait
                down = service_error(exc, self.ctx)
                if down is None or down.part is None:
                    raise
                time.sleep(pause)
                try:
                    self.ctx.follow(down.part)
                except Exception:  # noqa: BLE001 - not back yet
                    pass
                continue
            self.call_from_thread(self._reconnected)
            return

    def _reconnected(self) -> None:
        self.reconnecting = False
        self.notify("Reconnected: the services answer again.", timeout=3)
        self._broadcast({"entity": "*", "action": "reconnected"})

    def _broadcast(self, event: dict) -> None:
        for screen in self.screen_stack:
            screen.post_message(Changed(event))
        if event.get("entity") == "grey_entry" and event.get("action") == "escalate":
            self._grey_escalated(event)

    def _grey_escalated(self, event: dict) -> None:
        """Specialists hear about an escalation at once, wherever they are."""
        if self.actor is None or self.actor.role not in ("specialist", "admin") or event.get("actor") == self.actor.name:
            return
        self.grey_badge = getattr(self, "grey_badge", 0) + 1
        self._say_escalation(event["id"], event.get("actor"))

    @work(thread=True, group="escalation")
    def _say_escalation(self, entry_id: int, actor: str | None) -> None:
        """A notice names the entry, not its text: read the subject and reason, then say them."""
        from core.services import grey

        try:
            entry = grey.get(self.ctx, entry_id)
        except Exception:  # noqa: BLE001 - gone or unreachable: say what the notice said
            entry = {"subject": "", "reason": None}
        # The subject and reason are stored text: plain, not markup, controls made visible.
        said = (f"Grey entry {entry_id} escalated by {actor}: {entry['subject']}"
                + (f" — {entry['reason']}" if entry.get("reason") else ""))
        self.call_from_thread(self.notify, visible(said), title="Escalation", severity="warning", timeout=10,
                              markup=False)

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

    def on_unmount(self) -> None:
        self.ctx.close()


def run_tui(user: str | None = None) -> int:
    from core.errors import R2KError

    try:
        ctx = Context(pool_size=6)
        ctx.db  # start or reach the services before the screen opens; a 503 is said plainly
        from core.services import queue_index

        queue_index.reconcile_if_lost(ctx)  # Redis lost its data since last time: rebuild the queues
    except R2KError as exc:
        import sys

        print(json.dumps(exc.as_dict()), file=sys.stderr)
        from core.errors import exit_code

        return exit_code(exc.status)
    R2KApp(ctx, user).run()
    return 0
