"""Leaving safely (README, "Keys"): quitting with claims held asks whether to release them (the
default) or keep them leased until the lease runs out."""
from __future__ import annotations

import logging

from textual import work

from r2k.core.services.queue import claims

from .keymap import key_of
from .messages import ClaimsHeld, LeftSafely
from .safe import visible
from .widgets.modals import Choice, ChoiceModal
from .workstation_log import said

log = logging.getLogger(__name__)


class Leaving:
    """Mixed into the workstation's App: its ctrl+q (`action_quit`)."""

    async def action_quit(self) -> None:
        """Quitting with claims held asks whether to release them (the default) or keep them
        leased; without an acting user, or while that is asked already, it just quits."""
        if self.actor is None:
            self.exit()
        elif not isinstance(self.screen, ChoiceModal) or self.screen.id != "quit-question":
            self.read_held_claims(self.actor)

    @work(thread=True, group="quit", exclusive=True, exit_on_error=False)
    def read_held_claims(self, actor) -> None:
        try:
            rows = claims.held(self.ctx, actor)
        except Exception as exc:  # noqa: BLE001 - a service down: nothing can be released now; just leave
            # Its claims stay leased until they run out, unasked: worth a warning, outage or not.
            log.warning("quitting without asking about %s's claims: they could not be read (%s)", actor.name,
                        said(exc))
            rows = []
        self.post_message(ClaimsHeld(rows))

    def on_claims_held(self, message: ClaimsHeld) -> None:
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
        try:
            self.post_message(LeftSafely(claims.release_held(self.ctx, actor)))
        except Exception as exc:  # noqa: BLE001 - said; the user decides again
            self.post_message(LeftSafely([], getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"))

    def on_left_safely(self, message: LeftSafely) -> None:
        if message.error is None:
            self.exit()
            return
        self.notify(visible(f"The claims could not be released: {message.error}. {key_of(self, self, 'quit')} to "
                            "try again."),
                    title="Still here", severity="error", timeout=10, markup=False)
