"""Textual's private names r2k uses, all in app/textual_private.py: each still means what the
footer, `?` help, the keymap file and key-at-a-time typing rely on. Textual is pinned to the version
these pass on; on a Textual that moves or renames one, this file fails first, naming it."""
from __future__ import annotations

import asyncio
import re

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static

from r2k.app import textual_private as private
from tests.conftest import ROOT
from tests.tui import wait_for


class Box(Widget, can_focus=True):
    BINDINGS = [Binding("x", "mark", "Mark", id="mark")]


class Ping(Message):
    pass


class Panel(Screen):
    BINDINGS = [Binding("a", "approve", "Approve", id="approve"), Binding("r", "reject", "Reject", id="reject"),
                Binding("h", "hidden", "Hidden", id="hidden")]

    def compose(self) -> ComposeResult:
        yield Box(id="box")
        yield Static("panel")
        yield Footer()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # As a review screen's: a move refused now is shown "not now" (False), one never offered is hidden (None).
        return {"reject": False, "hidden": None}.get(action, True)


class Probe(App):
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", id="quit")]

    def on_mount(self) -> None:
        self.push_screen(Panel())


def test_textual_is_pinned_to_one_version_and_it_is_the_one_installed():
    import textual

    pins = re.findall(r'"textual==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pins == [textual.__version__], (pins, textual.__version__)


def test_a_class_s_merged_bindings_hold_its_own_and_those_it_inherits():
    merged = private.class_bindings(Panel)
    keys = set(merged.key_to_bindings)
    assert {"a", "r"} <= keys and "tab" in keys  # Screen's own focus keys, inherited
    assert [b.id for b in merged.key_to_bindings["a"]] == ["approve"]


def test_a_one_character_key_is_named_as_textual_names_it():
    assert private.character_to_key("+") == "plus" and private.character_to_key("?") == "question_mark"
    assert private.character_to_key("a") == "a"


def test_the_footer_key_widget_is_a_widget_taking_a_key_and_its_description():
    assert issubclass(private.FooterKey, Widget)
    key = private.FooterKey("a", "a", "Approve", "app.approve")
    assert (key.key, key.description, key.action) == ("a", "Approve", "app.approve")


async def test_the_binding_chain_walks_from_the_focused_widget_to_the_app_with_the_keymap_applied():
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Panel)
        app.set_keymap({"approve": "y"})
        assert private.app_keymap(app) == {"approve": "y"}
        chain = private.binding_chain(screen)
        nodes = [node for node, _ in chain]
        assert nodes[0] is screen.query_one("#box") and nodes[-1] is app and screen in nodes
        own = dict(chain)[screen]
        assert [b.id for b in own.key_to_bindings["y"]] == ["approve"] and "a" not in own.key_to_bindings
        assert "a" in private.node_bindings(screen).key_to_bindings  # a node's own, before the keymap


async def test_a_screen_s_mounted_event_and_a_node_s_message_queue_say_when_keys_may_go_on():
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = Panel()
        app.push_screen(screen)
        await asyncio.wait_for(private.wait_mounted(screen), 5)
        assert screen.is_mounted
        await pilot.pause()
        assert private.queue_empty(screen)
        screen.post_message(Ping())
        assert not private.queue_empty(screen)
        await pilot.pause()
        assert private.queue_empty(screen)


async def test_an_action_s_state_is_what_its_check_action_says_with_its_namespace_resolved():
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        assert [private.action_state(app, action, screen) for action in ("approve", "reject", "hidden")] == \
            [True, False, None]
        assert private.action_state(app, "screen.reject", app) is False  # "screen." names the screen from anywhere
        assert private.action_state(app, "app.reject", screen) is True  # the app's check_action allows all


async def test_the_footer_is_ready_once_textual_has_handed_it_the_screen_s_bindings():
    assert private.footer_bindings_ready(Footer()) is False  # not yet mounted: it draws no key
    app = Probe()
    async with app.run_test() as pilot:
        footer = (await wait_for(pilot, lambda: isinstance(app.screen, Panel), what="the panel")) and \
            app.screen.query_one(Footer)
        await wait_for(pilot, lambda: private.footer_bindings_ready(footer), what="the footer handed its bindings")
        # and once it is, it draws them: the screen's keys as FooterKey widgets
        await wait_for(pilot, lambda: "a" in {key.key for key in footer.query(private.FooterKey)}, what="Approve drawn")


def textual_private_names() -> set[str]:
    """Every underscore name Textual's app, screens, widgets and DOM nodes define at class level."""
    import textual.widgets
    from textual.dom import DOMNode
    from textual.screen import ModalScreen

    classes = [App, Screen, ModalScreen, Widget, DOMNode] + [getattr(textual.widgets, name)
                                                              for name in textual.widgets.__all__]
    return {name for cls in classes for name in dir(cls) if name.startswith("_") and not name.startswith("__")}


def test_no_module_but_the_adapter_touches_textual_s_private_names():
    # The names a read of the app found, anywhere; and in app/ (core and workers import no Textual) any
    # other underscore name a Textual class defines, read or called on any object or overridden by a
    # method: an app class doing so reaches into Textual as surely as one naming textual._x.
    textual_names = "|".join(sorted(name[1:] for name in textual_private_names()))
    known = re.compile(r"\._(binding_chain|merged_bindings|merge_bindings|bindings|keymap|mounted_event|"
                       r"message_queue|check_action_state|bindings_ready)\b|_character_to_key|textual\.[a-z_.]*\._[a-z]")
    textual_s = re.compile(rf"\._({textual_names})\b|^\s+def _({textual_names})\(")
    offenders = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for folder in ("app", "core", "workers")
                 for path in sorted((ROOT / folder).rglob("*.py")) if path.name != "textual_private.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if (known.search(line.split("#")[0]) or folder == "app" and textual_s.search(line.split("#")[0]))
                 and not line.lstrip().startswith(('"', "(`"))]
    assert offenders == []
