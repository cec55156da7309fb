"""Your own keys: a TOML file maps binding ids to keys, the way Posting's keymap does.

Every binding of the workstation has an id (`approve`, `help`, …; `?` lists them, README "Keys"
too). One id names the binding on every screen that has it (`reject` on the review screen and
the grey queue), so a letter keeps one meaning. The file is `R2K_KEYMAP_FILE` when that is set,
else `keymap.toml` in the user's config dir (platformdirs: `~/.config/r2k/keymap.toml` on Linux):

    approve = "y"            # one key
    reject = "r,delete"      # several keys, comma-separated

A file is checked whole before the workstation opens: an id no binding has, a value that is not
a key, or two bindings given the same key where both act (on one screen, or one screen and the
keys for everywhere) is one readable line on stderr, and nothing opens (docs/architecture.md,
"Keys").
"""
from __future__ import annotations

import difflib
import functools
import importlib
import os
import re
import tomllib
from pathlib import Path

import platformdirs

from r2k.app.textual_private import app_keymap, character_to_key, class_bindings, node_bindings
from r2k.core.domain import files, limits
from r2k.core.errors import InvalidInput

# The screens whose bindings a keymap may name (module, class); the app's own come first.
SCREEN_CLASSES = [
    ("r2k.app.screens.dashboard", "DashboardScreen"),
    ("r2k.app.screens.queues", "QueuePickerScreen"),
    ("r2k.app.screens.review", "ReviewScreen"),
    ("r2k.app.screens.registry", "RegistryScreen"),
    ("r2k.app.screens.workitems", "WorkItemsScreen"),
    ("r2k.app.screens.grey", "GreyQueueScreen"),
    ("r2k.app.screens.conflicts", "ConflictsScreen"),
    ("r2k.app.screens.adjudication", "AdjudicationScreen"),
    ("r2k.app.screens.articles", "ArticlesScreen"),
    ("r2k.app.screens.mywork", "MyWorkScreen"),
]

# The dialogs, whose keys act with the app's own (escape cancels; ctrl+s submits or saves).
MODAL_CLASSES = [
    ("r2k.app.widgets.modals", "FieldsModal"),
    ("r2k.app.widgets.modals", "ReasonModal"),
    ("r2k.app.widgets.modals", "TextModal"),
    ("r2k.app.widgets.modals", "ChoiceModal"),
]

# Widgets with keys of their own, acting together with their screen's (the queue table's enter).
WIDGET_CLASSES = {"QueuePickerScreen": [("r2k.app.screens.queues", "QueueTable")]}

# A key as Textual names it: a letter or a named key, optionally after modifiers.
_KEY = re.compile(r"^((ctrl|shift|alt|super|meta)\+)*([A-Za-z0-9]|[a-z][a-z0-9_]+|f[0-9]{1,2}|[!-~])$")


class KeymapError(Exception):
    """The keymap file cannot be used: `str()` is the one line to show."""


def keymap_path() -> Path:
    named = os.environ.get("R2K_KEYMAP_FILE")
    if named:
        return Path(named).expanduser()

    return Path(platformdirs.user_config_dir("r2k", appauthor=False)) / "keymap.toml"


def screen_classes() -> list[type]:
    return [getattr(importlib.import_module(module), cls) for module, cls in SCREEN_CLASSES]


def _bindings(node_class) -> list:
    """A class's bindings with those it inherits (Textual's own: tab, ctrl+c, …), as Textual merges them."""
    return [b for bindings in class_bindings(node_class).key_to_bindings.values() for b in bindings]


def scopes() -> list[tuple[str, list]]:
    """(where, bindings) for every place keys act together: each screen with the app's own keys."""
    from .tui import R2KApp

    everywhere = _bindings(R2KApp)
    out = []
    for cls in screen_classes() + [getattr(importlib.import_module(m), c) for m, c in MODAL_CLASSES]:
        widgets = [getattr(importlib.import_module(module), name) for module, name in WIDGET_CLASSES.get(cls.__name__, ())]
        out.append((getattr(cls, "TITLE", None) or cls.__name__,
                    [b for widget in widgets for b in _bindings(widget)] + _bindings(cls) + everywhere))
    return out


def binding_ids() -> dict[str, object]:
    """Every binding id the workstation has -> its binding (the first with that id)."""
    found: dict[str, object] = {}
    for _, bindings in scopes():
        for binding in bindings:
            if binding.id:
                found.setdefault(binding.id, binding)
    return found


def in_force(app, node):
    """The bindings of `node` (a screen, a widget or the app, or the class of a dialog not open yet)
    with the app's keymap applied, as Textual applies it when a key is pressed
    (`Screen._binding_chain`): (key, binding) in the order declared, except that Textual puts a
    remapped binding last (app/widgets/footer.py puts it back)."""
    bindings = (class_bindings(node) if isinstance(node, type) else node_bindings(node)).copy()
    if app_keymap(app):
        bindings.apply_keymap(app_keymap(app))
    return bindings


def declared_order(node) -> dict[str, int]:
    """Where each binding of `node` (or of a class) is declared in its class's BINDINGS: its id, else its
    action, -> its position. The footer and `?` list keys in this order, whatever a keymap file rebinds."""
    return _declared(node if isinstance(node, type) else type(node))


@functools.cache
def _declared(cls: type) -> dict[str, int]:
    order: dict[str, int] = {}
    for position, binding in enumerate(getattr(cls, "BINDINGS", ())):
        if hasattr(binding, "action"):
            order.setdefault(binding.id or binding.action, position)
    return order


def key_of(app, node, binding_id: str) -> str | None:
    """The key that runs the binding `binding_id` of `node` now, written as the footer writes it: the
    first key a keymap file gives it, else its own ("?", "esc", "^q"); None when `node` has none."""
    for _key, binding in in_force(app, node):
        if binding.id == binding_id:
            return app.get_key_display(binding)
    return None


def _flatten(table: dict, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for name, value in table.items():
        full = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, full + "."))
        else:
            flat[full] = value
    return flat


def _keys(value: str) -> list[str]:
    out = []
    for part in value.split(","):
        part = part.strip()
        out.append(character_to_key(part) if len(part) == 1 else part)
    return out


def _name(binding) -> str:
    what = binding.description or binding.action
    return f"{binding.id} ({what})" if binding.id else f"Textual's own {what!r}"


def check(keymap: dict[str, object], where: str = "keymap") -> dict[str, str]:
    """The keymap as Textual takes it (id -> "key,key"), or KeymapError naming the first problem."""
    known = binding_ids()
    clean: dict[str, str] = {}
    for binding_id, value in keymap.items():
        if binding_id not in known:
            close = difflib.get_close_matches(binding_id, list(known), n=1)
            helps = keymap.get("help")  # the file may move help's key too
            help_key = helps.split(",")[0].strip() if isinstance(helps, str) and helps.strip() else "?"
            hint = f" (did you mean {close[0]!r}?)" if close else f" ({help_key} lists the ids of each screen)"
            raise KeymapError(f"{where}: unknown binding id {binding_id!r}{hint}")
        if not isinstance(value, str) or not value.strip():
            raise KeymapError(f"{where}: {binding_id} must be a key in quotes, such as \"y\" or \"ctrl+y\"")
        for key in (k.strip() for k in value.split(",")):
            if not _KEY.match(key):
                raise KeymapError(f"{where}: {binding_id} = {value!r}: {key!r} is not a key "
                                  "(a letter, or a name such as \"f5\", \"ctrl+y\", \"delete\")")
        clean[binding_id] = value
    for scope, bindings in scopes():
        taken: dict[str, object] = {}
        for binding in bindings:
            keys = _keys(clean[binding.id]) if binding.id in clean else _keys(binding.key)
            for key in keys:
                other = taken.get(key)
                if other is not None and other.id != binding.id and (binding.id in clean or other.id in clean):
                    raise KeymapError(f"{where}: {key!r} would be both {_name(other)} and {_name(binding)} on {scope}")
                taken.setdefault(key, binding)
    return clean


def load(path: Path | None = None) -> dict[str, str]:
    """The keymap of `path` (default: keymap_path()), checked; {} when the default file is absent."""
    named = path is not None or bool(os.environ.get("R2K_KEYMAP_FILE"))
    path = path or keymap_path()
    if not path.exists():
        if named:
            raise KeymapError(f"keymap {path}: no such file")
        return {}
    try:  # a regular file of at most a keymap's size: a FIFO would hang the workstation before it opens
        table = tomllib.loads(files.read_text_argument(path, "keymap", limits.KEYMAP_FILE))
    except InvalidInput as exc:
        raise KeymapError(exc.message) from None
    except tomllib.TOMLDecodeError as exc:
        raise KeymapError(f"keymap {path}: not valid TOML ({exc})") from None
    return check(_flatten(table), f"keymap {path}")
