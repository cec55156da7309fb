"""Nothing typed is lost: keys are handled one at a time, each to its end, whatever their timing.

Textual routes each key as soon as it reads it: the app posts it to the focused widget, and the
bindings (an editor's backspace and ctrl+end, a screen's `e`, a dialog's ctrl+s) run only once the
key has bubbled back up to the app. Keys that arrive together (a fast typist, a key macro, keys
bundled over SSH) therefore overtake one another: a letter an editor inserts at once lands before
the backspace ahead of it, which is still on its way up; the keys after `e` reach the screen below
before the editor is open; the text after an enter lands in the field the enter was leaving.

So the app routes the keys it reads (and pastes) strictly one at a time (docs/architecture.md,
"Keys"): a key is routed as Textual would route it, and the next only once

1. the key has been stopped on its way up, or has come back to the app and its binding has run;
2. everything it set off has been handled: the messages it posted (an Input's Submitted, a
   screen's dismiss), the screen it pushed, mounted, and the focus that screen asked for.

A key is thus handled exactly as it would be typed slowly, and `ctrl+s` saves the text the editor
shows once every key before it has been applied. A key nobody answers within HOLD_LIMIT seconds
(an action that never returns) lets the others go on rather than freeze the keyboard.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque

from textual import events

from r2k.app.textual_private import queue_empty, wait_mounted

log = logging.getLogger(__name__)

HOLD_LIMIT = 2.0  # seconds
SETTLE_ROUNDS = 12  # passes over the queues before a key counts as handled (one or two are the rule)


class TypeAhead:
    """An App mixin (first in the bases): the keys read are handled one at a time, in order."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._keys_read: deque[events.Event] = deque()  # read from the terminal, not yet routed
        self._key_arrived = asyncio.Event()
        self._routing: events.Event | None = None  # the key being handled now
        self._routed: asyncio.Future | None = None  # done once that key's handling has ended
        self._dispatcher = None
        self._unhandled = 0  # keys read whose handling has not yet ended

    @property
    def keys_waiting(self) -> int:
        """How many keys read from the terminal are not yet handled to their end (0: all are)."""
        return self._unhandled

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste)):
            if not event.is_forwarded:  # as read from the terminal: in line behind the others
                self._keys_read.append(event)
                self._unhandled += 1
                self._key_arrived.set()
                if self._dispatcher is None:
                    self._dispatcher = self.run_worker(self._dispatch(), name="keys in order", group="keys")
                return
            if event is self._routing:  # back from the focused widget: the bindings run now
                await super().on_event(event)
                self._ended(event)
                return
        await super().on_event(event)

    # -- one key at a time ----------------------------------------------------------------------

    async def _dispatch(self) -> None:
        """The app's keys, each routed once the one before has been handled to its end."""
        while True:
            await self._key_arrived.wait()
            self._key_arrived.clear()
            while self._keys_read:
                key = self._keys_read.popleft()
                try:
                    await self._handle(key)
                except Exception:  # noqa: BLE001 - one key gone wrong never stops the keyboard
                    log.exception("handling the key %r", getattr(key, "key", key))
                finally:
                    self._routing = None
                    self._unhandled -= 1

    async def _handle(self, key: events.Event) -> None:
        """Route `key`, wait until its handling has ended, then until what it set off has settled."""
        self._routing, self._routed = key, asyncio.get_running_loop().create_future()
        if self.call_later(self._route, key):  # in the app's own queue, as Textual routes it
            try:
                await asyncio.wait_for(self._routed, HOLD_LIMIT)
            except asyncio.TimeoutError:
                log.debug("the key %r held the keys after it for %ss", getattr(key, "key", key), HOLD_LIMIT)
        self._routing = None
        await self._settle()

    async def _route(self, key: events.Event) -> None:
        app = self
        try:
            target = app.focused or app.screen  # where App.on_event forwards it
        except Exception:  # noqa: BLE001 - no screen yet: nothing to route to
            self._ended(key)
            return
        await super().on_event(key)  # a priority binding runs here; else the key is posted on
        if key.is_forwarded:
            self._behind(key, target)
        else:
            self._ended(key)  # taken by a priority binding: handled

    def _behind(self, key: events.Event, node) -> None:
        """Once `node` has handled the key, follow it one step up (a callback queued behind it in
        each queue it passes through): a key stopped on its way (a widget took it) has ended once
        the node that stopped it is done with it."""
        if node is None or node is self:
            # Behind the key in the app's queue: if it bubbled back it has ended already (on_event).
            if not self.call_later(self._ended, key):
                self._ended(key)
        elif not node.call_later(self._step, key, node):
            self._ended(key)  # that node is gone, and the key with it

    def _step(self, key: events.Event, node) -> None:
        if key is self._routing:
            self._behind(key, node.parent)

    def _ended(self, key: events.Event) -> None:
        if key is self._routing and self._routed is not None and not self._routed.done():
            self._routed.set_result(None)

    async def _settle(self) -> None:
        """Until the app, its screens and the widgets of the screen on top have handled everything
        queued for them (the messages the key posted, the screen it pushed, mounted and focused)."""
        for _ in range(SETTLE_ROUNDS):
            try:
                screen = self.screen
            except Exception:  # noqa: BLE001 - leaving: no screen
                return
            if not screen.is_mounted:
                try:
                    await asyncio.wait_for(wait_mounted(screen), HOLD_LIMIT)
                except asyncio.TimeoutError:
                    return
            nodes = [self, *self.screen_stack, *screen.walk_children()]
            await self._one_round(nodes)
            if self.screen is screen and screen.is_mounted and all(queue_empty(node) for node in nodes):
                return

    @staticmethod
    async def _one_round(nodes) -> None:
        """Once every node has handled what was queued for it when the round began."""
        waiting = 0
        all_done = asyncio.Event()

        def done() -> None:
            nonlocal waiting
            waiting -= 1
            if waiting == 0:
                all_done.set()

        for node in nodes:
            if node.call_later(done):
                waiting += 1
        if waiting:
            try:
                await asyncio.wait_for(all_done.wait(), HOLD_LIMIT)
            except asyncio.TimeoutError:
                log.debug("%d queues did not answer within %ss", waiting, HOLD_LIMIT)
