"""Live notices and outages (docs/architecture.md, "Outages"): the core's pub/sub notices relayed to
the screens, and, while a service does not answer, "reconnecting…" in the header and a worker that
follows the servers until they answer again; the screens carry on and reload then."""
from __future__ import annotations

import json
import logging
import time

from textual import work
from textual.worker import get_current_worker

from r2k.core.services.session import CHANNEL, delays, notice, service_error

from .messages import Notice, Reconnected, ServiceDown
from .safe import visible

log = logging.getLogger(__name__)


class Reconnecting:
    """Mixed into the workstation's App, which declares the `reconnecting` reactive and `_broadcast`."""

    @work(thread=True, group="pubsub", exclusive=True, exit_on_error=False)
    def listen(self) -> None:
        """Relay the core's pub/sub notices to the screens; reconnect when Redis comes back."""
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

    def on_notice(self, message: Notice) -> None:
        self._broadcast(message.event)

    def on_service_down(self, message: ServiceDown) -> None:
        self.service_down(message.message)

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
        worker = get_current_worker()
        for pause in delays():
            if worker.is_cancelled:
                return
            # Followed first: a pool asked while its server is away waits for it (seconds), so the
            # server is started again before anything asks.
            for part in ("postgres", "redis"):
                try:
                    self.ctx.reconnect(part)
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

    def on_reconnected(self, _: Reconnected) -> None:
        self.reconnecting = False
        self.notify("Reconnected: the services answer again.", timeout=3)
        self._broadcast(notice("*", action="reconnected"))
        if self.actor is None and self.actor_error is None:
            self.resolve_actor()  # it met the outage
