"""What every workstation screen shares: service calls off the event loop, errors shown in place,
and live reloads when other people act (Redis pub/sub, debounced)."""
from __future__ import annotations

from typing import Any, Callable

from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


class Changed(Message):
    """Someone changed something (a pub/sub notice from the core)."""

    def __init__(self, event: dict):
        super().__init__()
        self.event = event


class ServiceCalls:
    """Mixin: run core calls in thread workers and come back to the event loop with the result."""

    def call(self, fn: Callable, *args: Any, on_done: Callable[[Any], None] | None = None,
             on_error: Callable[[str, int], None] | None = None, group: str = "call", exclusive: bool = False,
             **kwargs: Any) -> None:
        app = self.app

        def job() -> None:
            from core.context import service_error
            from core.errors import R2KError

            try:
                result = fn(*args, **kwargs)
            except R2KError as exc:
                app.call_from_thread(self._failed, exc.message, exc.status, on_error)
                return
            except Exception as exc:  # a dropped connection is a 503 naming the service
                translated = service_error(exc, app.ctx)
                if translated is None:
                    app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}", 500, on_error)
                    return
                app.call_from_thread(self._failed, translated.message, translated.status, on_error)
                return
            if on_done is not None:
                app.call_from_thread(self._succeeded, on_done, result)

        self.run_worker(job, thread=True, group=group, exclusive=exclusive, exit_on_error=False)

    def _succeeded(self, on_done, result) -> None:
        if self.is_attached:
            on_done(result)

    def _failed(self, message: str, status: int, on_error) -> None:
        if not self.is_attached:
            return
        if on_error is not None:
            on_error(message, status)
        else:
            self.show_error(message, status)

    def show_error(self, message: str, status: int = 0) -> None:
        """Say what went wrong, in place (the screen's message line), in a validator's words."""
        text = plain_words(message, status)
        try:
            line = self.query_one("#message", Static)
        except Exception:
            self.app.notify(text, severity="error", timeout=6)
            return
        line.update(text)
        line.set_class(True, "error")
        line.set_class(False, "info")

    def show_info(self, message: str) -> None:
        try:
            line = self.query_one("#message", Static)
        except Exception:
            self.app.notify(message, timeout=3)
            return
        line.update(message)
        line.set_class(False, "error")
        line.set_class(True, "info")


def plain_words(message: str, status: int) -> str:
    lead = {403: "Not allowed: ", 404: "Not found: ", 409: "Someone else got there first: ",
            422: "Not possible now: ", 400: "Missing or invalid: ", 503: "A service is down: "}.get(status, "")
    return lead + message


class WorkstationScreen(ServiceCalls, Screen):
    """A full screen of the workstation. Subclasses implement `load()` and list the pub/sub kinds
    that should reload them in RELOAD_ON."""

    RELOAD_ON: tuple[str, ...] = ()
    DEBOUNCE = 0.25

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._reload_timer = None

    def on_mount(self) -> None:
        self.load()

    def on_screen_resume(self) -> None:
        if getattr(self, "_loaded_once", False):
            self.load()
        self._loaded_once = True

    def load(self) -> None:
        """Fetch this screen's data (in a worker) and show it."""

    def on_changed(self, message: Changed) -> None:
        if message.event.get("kind") in self.RELOAD_ON or "*" in self.RELOAD_ON:
            # Many notices in a burst (an ingest, a worker draining a queue) cost one reload.
            if self._reload_timer is not None:
                self._reload_timer.stop()
            self._reload_timer = self.set_timer(self.DEBOUNCE, self._reload_now)

    def _reload_now(self) -> None:
        self._reload_timer = None
        if self.is_current:
            self.load()

    @property
    def ctx(self):
        return self.app.ctx

    @property
    def actor(self):
        return self.app.actor


class WorkstationModal(ServiceCalls, ModalScreen):
    pass
