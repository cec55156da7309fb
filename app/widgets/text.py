"""Stored text into widgets: shown as it is, never read as markup, never reaching the terminal as a
control.

Textual strips only BEL, backspace, vertical tab, form feed and CR from what it draws: ESC, DEL,
C1 and bidi controls reach the terminal raw, so stored text goes through `visible` first. And a
plain string given to a Static, a Label or `notify` is read as Textual markup, a DataTable's
string cell as Rich markup: a stored "[link=…]" would become a link, and a stored "[/]" or a lone
"[" stops the app with a MarkupError. `textual.markup.escape` does not prevent that (Textual opens a
tag at any "[" it escapes not), so stored text goes into Textual markup as a template variable,
which Textual inserts without reading it. A Rich Text built in code reads no markup: `visible` is
enough there.
"""
from __future__ import annotations

from rich.markup import escape as rich_escape
from textual.content import Content

from r2k.app.safe import visible
from r2k.app.widgets.format import clip


def plain(text: str | None, width: int | None = None) -> Content:
    """Text for a widget's content, as it is: no markup, controls as visible escapes; with
    `width`, one line of at most that many characters."""
    shown = visible(text)
    return Content(clip(shown, width) if width is not None else shown)


def markup(template: str, **stored: object) -> Content:
    """Content from markup written here, with stored text filled in for its `$name` variables:
    each value is put in as plain text, its controls as visible escapes."""
    return Content.from_markup(template, **{name: visible("" if value is None else str(value))
                                            for name, value in stored.items()})


def lines(parts: list[Content]) -> Content:
    """Contents one under the other."""
    return Content("\n").join(parts)


def cell(text: str | None, width: int | None = None) -> str:
    """A DataTable string cell (read as Rich markup): controls as visible escapes, square brackets
    escaped; with `width`, folded to one line of at most that many characters."""
    shown = visible(text)
    if width is not None:
        shown = clip(shown, width)
    escaped = rich_escape(shown)
    # Rich doubles a lone trailing backslash for a tag that might follow; a cell is the whole markup.
    return escaped[:-1] if escaped.endswith("\\\\") and not shown.endswith("\\\\") else escaped
