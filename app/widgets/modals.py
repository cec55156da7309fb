"""Modals that ask for a reason or a text (DESIGN §11): escape cancels with nothing changed.

Each dismisses with what was typed, or None when cancelled; the caller makes the core call, so a
modal never touches the database.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static, TextArea


class ReasonModal(ModalScreen[str | None]):
    """Ask for a reason (reject, escalate, dispute, retire). Dismisses with the reason or None."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "submit", "Submit"),
    ]

    def __init__(self, title: str, label: str = "Reason", placeholder: str = ""):
        super().__init__()
        self.title_text = title
        self.label_text = label
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="modal", classes="reason-modal"):
            yield Static(self.title_text, id="modal-title")
            yield Label(self.label_text, classes="modal-label")
            yield Input(placeholder=self.placeholder, id="reason")
            yield Static("", id="modal-error")
            with Horizontal(id="modal-buttons"):
                yield Button("Submit", variant="primary", id="submit")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "submit":
            self.action_submit()
        else:
            self.action_cancel()

    def action_submit(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            # The core would refuse a blank reason anyway; say so here, before anything is sent.
            self.query_one("#modal-error", Static).update("A reason is needed: type one, or escape to cancel.")
            self.query_one("#reason", Input).focus()
            return
        self.dismiss(reason)

    def action_cancel(self) -> None:
        self.dismiss(None)


class TextModal(ModalScreen[object]):
    """Edit a text (revise, supersede), optionally with a reason.

    Dismisses with the text, or (text, reason) when `with_reason`; None when cancelled.
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "submit", "Save", priority=True),
    ]

    def __init__(self, title: str, text: str, with_reason: bool = False, reason_placeholder: str = ""):
        super().__init__()
        self.title_text = title
        self.text = text
        self.with_reason = with_reason
        self.reason_placeholder = reason_placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="modal", classes="text-modal"):
            yield Static(self.title_text, id="modal-title")
            yield Label("Text", classes="modal-label")
            yield TextArea(self.text, id="text", soft_wrap=True)
            if self.with_reason:
                yield Label("Reason", classes="modal-label")
                yield Input(placeholder=self.reason_placeholder, id="reason")
            yield Static("", id="modal-error")
            with Horizontal(id="modal-buttons"):
                yield Button("Save", variant="primary", id="submit")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        area = self.query_one("#text", TextArea)
        area.focus()
        area.move_cursor(area.document.end)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "submit":
            self.action_submit()
        else:
            self.action_cancel()

    def action_submit(self) -> None:
        text = self.query_one("#text", TextArea).text.strip()
        error = self.query_one("#modal-error", Static)
        if not text:
            error.update("The text cannot be empty: type it, or escape to cancel.")
            self.query_one("#text", TextArea).focus()
            return
        if not self.with_reason:
            self.dismiss(text)
            return
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            error.update("A reason is needed: type one, or escape to cancel.")
            self.query_one("#reason", Input).focus()
            return
        self.dismiss((text, reason))

    def action_cancel(self) -> None:
        self.dismiss(None)
