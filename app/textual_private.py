"""The one place r2k reaches into Textual's private names (docs/architecture.md, "Keys").

The footer, `?` help, the keymap file and strict key-at-a-time typing need what Textual does not
publish: the binding chain a key press walks, the merged bindings of a class, the app's keymap, a
screen's mounted event, a node's message queue, the state an action's `check_action` gives (help's
"not now") and whether the footer has been handed its bindings yet. Textual is pinned to the version tested
(pyproject.toml), and tests/test_textual_private.py fails on a Textual that moves or renames any of
these, so an upgrade breaks here, in one file, not in a screen.
"""
from __future__ import annotations

from textual.keys import _character_to_key
from textual.widgets._footer import FooterKey

__all__ = ["FooterKey", "action_state", "app_keymap", "binding_chain", "character_to_key", "class_bindings",
           "footer_bindings_ready", "node_bindings", "queue_empty", "wait_mounted"]


def binding_chain(screen) -> list:
    """(node, bindings) from the focused widget up to the app, keymap applied, as a key press walks it."""
    return screen._binding_chain


def class_bindings(node_class):
    """A class's bindings merged with those it inherits, as Textual merges them (not yet keymapped)."""
    return node_class._merged_bindings or node_class._merge_bindings()


def node_bindings(node):
    """A live node's own bindings (not yet keymapped)."""
    return node._bindings


def app_keymap(app) -> dict:
    """The keymap the app applies (binding id -> keys), as `App.set_keymap` stored it."""
    return app._keymap


def character_to_key(character: str) -> str:
    """A one-character key as Textual names it ("+" -> "plus")."""
    return _character_to_key(character)


async def wait_mounted(screen) -> None:
    """Until the screen is mounted."""
    await screen._mounted_event.wait()


def queue_empty(node) -> bool:
    """Whether nothing is waiting in the node's message queue."""
    return node._message_queue.empty()


def action_state(app, action: str, node) -> bool | None:
    """What the action's `check_action` says, the action named as a binding names it (its namespace, if
    any, resolved from `node`): True may run, False shown but not now, None hidden."""
    return app._check_action_state(action, node)


def footer_bindings_ready(footer) -> bool:
    """Whether Textual's footer has been handed the screen's bindings (until then it draws no key)."""
    return footer._bindings_ready
