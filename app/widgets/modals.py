"""Modals that ask for a reason, a text or a few short fields: escape cancels with nothing changed.

Each dismisses with what was typed, or None when cancelled; the caller makes the core call, so a
modal never touches the database. A value the modal needs and did not get is said in its error
line, with the box focused, and the modal stays.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Footer, Input, Label, Static, TextArea

from r2k.app.keymap import in_force, key_of
from r2k.app.safe import visible

# Words naming a key take it from the bindings in force ({cancel}: the dialog's cancel key, a
# keymap file's if it moves it), as every screen's do (docs/architecture.md, "Keys").
REASON_NEEDED = "A reason is needed: type one, or {cancel} to cancel."
UNCHANGED = "The text is as it stands: change it, or {cancel} to cancel."


def action_key(app, node, action: str) -> str | None:
    """The key that runs `action` on `node` (a widget's binding without an id: an Input's submit)."""
    for _key, binding in in_force(app, node):
        if binding.action == action:
            return app.get_key_display(binding)
    return None


class FormModal(ModalScreen):
    """What every form modal shares: escape cancels, enter in a box submits, refusals in place.
    Subclasses define `action_submit()` (check the boxes, then dismiss with the answer or `refuse`)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel")]
    ERROR = "#modal-error"  # the error line

    def on_mount(self) -> None:
        self.focus_first()

    def focus_first(self) -> None:
        self.query(Input).first().focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submitted(event.input)

    def submitted(self, box: Input) -> None:
        """Enter in `box`."""
        self.action_submit()

    def refuse(self, message: str, box: Widget, *, holds: Callable[[], bool] | None = None) -> None:
        """Say in place why the dialog stays, and focus `box`. The words last only while they are
        true: `holds` says whether the refusal still stands, asked after each change to a box (by
        default any change ends it), so "nothing to revise" goes once the text is changed."""
        self._refusal_holds = holds or (lambda: False)
        self.query_one(self.ERROR, Static).update(Content(message.replace("{cancel}", self.cancel_key() or "")))
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.boxes_changed()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.boxes_changed()

    def boxes_changed(self) -> None:
        holds = getattr(self, "_refusal_holds", None)
        if holds is not None and not holds():
            self._refusal_holds = None
            self.query_one(self.ERROR, Static).update("")

    def cancel_key(self) -> str | None:
        """The key that cancels this dialog now (escape, unless a keymap file moves it)."""
        return key_of(self.app, self, "cancel")

    def action_cancel(self) -> None:
        self.dismiss(None)


# ----------------------------------------------------------------------------- short fields

@dataclass(frozen=True)
class Field:
    name: str
    label: str
    required: bool = False
    placeholder: str = ""
    value: str = ""


class FieldsModal(FormModal):
    """Ask for one or more short texts (a reason, an assignee, a subject). Enter moves on (and
    confirms on the last field). Dismisses with {name: text or None}, or None when cancelled.
    The title is markup written in code; a hint quoting stored text is given as Content
    (`app.widgets.text.plain`)."""

    ERROR = ".fields-error"

    def __init__(self, title: str, fields: list[Field], *, hint: str | Content = ""):
        super().__init__()
        self.form_title = title
        self.fields = fields
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(classes="fields-modal"):
            yield Static(self.form_title, classes="fields-title")
            if self.hint:
                yield Static(self.hint, classes="fields-hint")
            for f in self.fields:
                yield Static(f"{f.label} {'(required)' if f.required else '(optional)'}", classes="fields-label")
                yield Input(value=f.value, placeholder=f.placeholder, id=f"field-{f.name}")
            yield Static("", classes="fields-error")
            yield Static(Content(f"{action_key(self.app, Input, 'submit')}: next field / confirm  ·  "
                                 f"{self.cancel_key()}: cancel, nothing changes"), classes="fields-keys")

    def submitted(self, box: Input) -> None:
        inputs = list(self.query(Input))
        position = inputs.index(box)
        if position < len(inputs) - 1:
            inputs[position + 1].focus()
            return
        self.action_submit()

    def action_submit(self) -> None:
        values: dict[str, str | None] = {}
        for f in self.fields:
            box = self.query_one(f"#field-{f.name}", Input)
            text = box.value.strip()
            if f.required and not text:
                self.refuse(f"{f.label} is required ({{cancel}} cancels).", box, holds=lambda: not box.value.strip())
                return
            values[f.name] = text or None
        self.dismiss(values)


# ----------------------------------------------------------------------------- dialogs

class DialogModal(FormModal):
    """A titled dialog with its boxes, an error line, Submit (or Save) and Cancel buttons, and a
    footer with ctrl+s. Subclasses yield the boxes from `boxes()`."""

    SUBMIT = "Submit"
    KIND = ""  # a class on the dialog box

    def __init__(self, title: str):
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="modal", classes=self.KIND):
            yield Static(self.title_text, id="modal-title")
            yield from self.boxes()
            yield Static("", id="modal-error")
            with Horizontal(id="modal-buttons"):
                yield Button(self.SUBMIT, variant="primary", id="submit")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def reason_box(self, label: str, placeholder: str) -> ComposeResult:
        yield Label(label, classes="modal-label")
        yield Input(placeholder=placeholder, id="reason")

    def reason(self) -> str | None:
        """The reason typed; None (and said so) when blank: the core would refuse it anyway."""
        box = self.query_one("#reason", Input)
        reason = box.value.strip()
        if not reason:
            self.refuse(REASON_NEEDED, box, holds=lambda: not box.value.strip())
            return None
        return reason

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "submit":
            self.action_submit()
        else:
            self.action_cancel()


class ReasonModal(DialogModal):
    """Ask for a reason (reject, escalate, dispute, retire). Dismisses with the reason or None."""

    BINDINGS = [Binding("ctrl+s", "submit", "Submit", id="submit")]
    KIND = "reason-modal"

    def __init__(self, title: str, label: str = "Reason", placeholder: str = ""):
        super().__init__(title)
        self.label_text = label
        self.placeholder = placeholder

    def boxes(self) -> ComposeResult:
        yield from self.reason_box(self.label_text, self.placeholder)

    def action_submit(self) -> None:
        if (reason := self.reason()) is not None:
            self.dismiss(reason)


class TextModal(DialogModal):
    """Edit a text (revise, supersede), optionally with a reason.

    Dismisses with the text, or (text, reason) when `with_reason`; None when cancelled. The text
    is stored text: the editor shows its controls as visible escapes (a TextArea draws ESC raw), so
    what is saved is what the reviewer saw, escapes and all. Saving the text as it stands is
    refused in place (`unchanged` says what to do instead); escape with changes asks before it
    throws them away.
    """

    # Not a priority binding: one would run before the text area had taken the keys typed just
    # before it (fast typing, a paste, keys arriving together over SSH) and save the text without them.
    BINDINGS = [Binding("ctrl+s", "submit", "Save", id="save")]
    SUBMIT = "Save"
    KIND = "text-modal"

    def __init__(self, title: str, text: str, with_reason: bool = False, reason_placeholder: str = "", *,
                 unchanged: str = UNCHANGED):
        super().__init__(title)
        self.text = text
        self.with_reason = with_reason
        self.reason_placeholder = reason_placeholder
        self.unchanged = unchanged

    def boxes(self) -> ComposeResult:
        yield Label("Text", classes="modal-label")
        yield TextArea(visible(self.text), id="text", soft_wrap=True)
        if self.with_reason:
            yield from self.reason_box("Reason", self.reason_placeholder)

    def focus_first(self) -> None:
        area = self.query_one("#text", TextArea)
        area.focus()
        area.move_cursor(area.document.end)

    def action_submit(self) -> None:
        area = self.query_one("#text", TextArea)
        text = area.text.strip()
        if not text:
            self.refuse("The text cannot be empty: type it, or {cancel} to cancel.", area,
                        holds=lambda: not area.text.strip())
            return
        reason = self.reason() if self.with_reason else None
        if self.with_reason and reason is None:
            return  # said in place
        if text == visible(self.text).strip():
            self.refuse(self.unchanged, area, holds=lambda: area.text.strip() == visible(self.text).strip())
            return
        self.dismiss((text, reason) if self.with_reason else text)

    def changed(self) -> bool:
        """Whether anything was typed that escape would throw away."""
        if self.query_one("#text", TextArea).text != visible(self.text):
            return True
        return self.with_reason and bool(self.query_one("#reason", Input).value.strip())

    def action_cancel(self) -> None:
        if not self.changed():
            self.dismiss(None)
            return

        def answered(choice: str | None) -> None:
            if choice == "discard":
                self.dismiss(None)
            else:
                self.query_one("#text", TextArea).focus()

        self.app.push_screen(ChoiceModal("Discard your changes?", "The text was changed and is not saved.",
                                         [Choice("keep", "Keep editing", "k"), Choice("discard", "Discard", "d")],
                                         cancel="keep"), answered)


# ----------------------------------------------------------------------------- a question

@dataclass(frozen=True)
class Choice:
    value: str
    label: str
    key: str  # one letter that takes it


class ChoiceModal(ModalScreen):
    """Ask one question with a few answers: each a button with its letter; enter takes the focused
    button (the first, the default, to begin with), escape the `cancel` answer. Dismisses with the
    answer's value."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="choice.cancel")]

    def __init__(self, title: str, question: str | Content, choices: list[Choice], *, cancel: str | None = None,
                 id: str | None = None):  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.title_text = title
        self.question = question
        self.choices = choices
        self.cancel_value = cancel

    def compose(self) -> ComposeResult:
        with Vertical(id="choice-box"):
            yield Static(Content(self.title_text), id="choice-title")  # plain text, never markup
            yield Static(Content(self.question) if isinstance(self.question, str) else self.question,
                         id="choice-question")
            with Horizontal(id="choice-buttons"):
                for number, choice in enumerate(self.choices):
                    yield Button(f"{choice.label} ({choice.key})", id=f"choice-{choice.value}",
                                 variant="primary" if number == 0 else "default")

    def on_mount(self) -> None:
        self.query(Button).first().focus()

    def on_key(self, event) -> None:
        for choice in self.choices:
            if event.key == choice.key:
                event.stop()
                self.dismiss(choice.value)
                return

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id.removeprefix("choice-"))

    def action_cancel(self) -> None:
        self.dismiss(self.cancel_value)
