"""Keys typed ahead of a modal or an editor reach it, in order, whatever their timing.

Textual routes each key as it reads it: the app posts it to the focused widget (or the screen),
and a key binding runs only once the key has bubbled back up to the app. Keys that arrive
together (a fast typist, a key macro, keys bundled over SSH) are therefore all posted to the
screen below before the first key's action has pushed its modal; the text goes nowhere and the
modal's ctrl+s, bubbling up last, saves the text as it was.

So the app holds the keys that follow a key bound on a screen (or on the app) until that key's
action has run and the screen it opened, if any, is mounted and focused; then it routes them
one by one as if they had just arrived. A key a focused text box takes for itself (a letter in
an editor) is not held behind: it is typed, in order. A held key that something on its way up
stops (it never reaches the app's bindings) lets the others through as soon as it is stopped: a
callback follows it through each queue it passes. A hold never lasts more than HOLD_LIMIT
seconds: a key nobody answers still reaches the screen on top.
"""
from __future__ import annotations

import time
from functools import partial

from textual import events
from textual.app import App
from textual.screen import Screen
from textual.widgets import Input, TextArea

HOLD_LIMIT = 1.0  # seconds
TYPING_KEYS = {"enter", "tab", "backspace", "delete", "space", "left", "right", "up", "down", "home", "end"}


class TypeAhead:
    """An App mixin (first in the bases): keys typed ahead of a key's action wait for it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._held_for: events.Key | None = None  # the key whose action runs now
        self._held_since = 0.0
        self._hold_timer = None
        self._screen_before = None
        self._typed_ahead: list[events.Key] = []  # the keys read since, in order

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            if not event.is_forwarded:  # as read from the terminal
                if self._held_for is not None:
                    self._typed_ahead.append(event)
                    return
                if self._acts(event):
                    target = self.focused or self.screen  # where App.on_event forwards it
                    self._hold(event)
                    await super().on_event(event)
                    # Behind the key in each queue it passes through: a key stopped on its way up
                    # (a widget took it) lets the others through at once, not after HOLD_LIMIT.
                    target.call_later(self._follow, event, target)
                    return
            elif event is self._held_for:  # back from the screen: its binding runs now
                await super().on_event(event)
                self._settle(event)
                return
        await super().on_event(event)

    # -- which keys hold the ones after them ---------------------------------------------------

    def _acts(self, event: events.Key) -> bool:
        """Whether the key runs a screen's or the app's binding once it bubbles back (and so may
        open a modal the next keys are meant for)."""
        app: App = self  # type: ignore[assignment]
        focused = app.focused
        if isinstance(focused, (Input, TextArea)) and (event.is_printable or event.key in TYPING_KEYS):
            return False  # the box takes it: it is typed, in order with the keys after it
        screen = app.screen
        if any(event.key in bindings.key_to_bindings and any(b.priority for b in bindings.key_to_bindings[event.key])
               for _, bindings in screen._binding_chain):
            return False  # a priority binding runs at once, before the key goes anywhere
        for namespace, bindings in screen._modal_binding_chain:
            if event.key in bindings.key_to_bindings:
                return isinstance(namespace, (Screen, App))
        return False

    def _hold(self, event: events.Key) -> None:
        app: App = self  # type: ignore[assignment]
        self._held_for = event
        self._held_since = time.monotonic()
        self._screen_before = app.screen
        self._hold_timer = app.set_timer(HOLD_LIMIT, partial(self._settle, event, True))

    # -- letting them through ------------------------------------------------------------------

    def _follow(self, held: events.Key, node) -> None:
        """Runs in `node`'s queue once it has handled the held key (and posted it to its parent,
        unless it stopped it): follow the key one step up, and at the app settle unless it is back."""
        if self._held_for is not held:
            return
        parent = node.parent
        if parent is None or parent is self:
            self.call_later(self._settle, held)  # behind the key, if it bubbled: it will have settled first
        else:
            parent.call_later(self._follow, held, parent)

    def _settle(self, held: events.Key, timed_out: bool = False) -> None:
        """The held key's action ran (or the hold timed out): once the screen on top is ready for
        keys, route the keys typed meanwhile."""
        if self._held_for is not held:
            return  # that hold is over
        app: App = self  # type: ignore[assignment]
        screen = app.screen
        timed_out = timed_out or time.monotonic() - self._held_since >= HOLD_LIMIT
        if screen is not self._screen_before and not screen.is_mounted and not timed_out:
            app.set_timer(0.005, partial(self._settle, held))  # a screen just pushed: wait for it to mount
            return
        # After the focus the new screen asked for on mount (a call queued on the app before this one).
        app.call_later(self._release, held)

    async def _release(self, held: events.Key) -> None:
        if self._held_for is not held:
            return  # released already (the timeout and the key's return both asked)
        self._held_for = None
        if self._hold_timer is not None:
            self._hold_timer.stop()
        waiting = self._typed_ahead
        while waiting and self._held_for is None:  # until one of them holds the rest in its turn
            await self.on_event(waiting.pop(0))
