"""How command results print: a whole JSON document with --json, readable text otherwise.

Both are terminal-safe: stored text reaches the terminal with its controls shown as visible
escapes (`render_text`), or escaped as JSON allows (`app.safe.dumps`).
"""
from __future__ import annotations

from typing import Any

from .safe import dumps, visible


class Table:
    """A list result with the columns to show in text mode (JSON shows whole rows)."""

    def __init__(self, rows: list[dict], columns: list[str], title: str | None = None):
        self.rows, self.columns, self.title = rows, columns, title


class Text:
    """A result shown as prepared text, with its JSON form alongside."""

    def __init__(self, data: Any, text: str):
        self.data, self.text = data, text


def _cell(value: Any, width: int = 60) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        value = dumps(value)
    # Escaped before measuring, so the columns line up with what is printed.
    text = visible(str(value)).replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def render_text(result: Any) -> str:
    """The text form of a command's result, safe to print: controls are visible escapes."""
    if isinstance(result, Text):
        return visible(result.text)
    if isinstance(result, Table):
        if not result.rows:
            return (result.title + "\n" if result.title else "") + "(none)"
        cells = [[_cell(r.get(c)) for c in result.columns] for r in result.rows]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(result.columns)]
        lines = [result.title] if result.title else []
        lines.append("  ".join(c.upper().ljust(w) for c, w in zip(result.columns, widths)).rstrip())
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
        return "\n".join(lines)
    if isinstance(result, dict):
        width = max((len(k) for k in result), default=0)
        return "\n".join(f"{visible(k).ljust(width)}  {_cell(v, 400) if not isinstance(v, str) else visible(v)}"
                         for k, v in result.items())
    if isinstance(result, list):
        return "\n".join(render_text(r) + ("\n" if isinstance(r, dict) else "") for r in result).rstrip()
    return visible(str(result))


def json_form(result: Any) -> Any:
    if isinstance(result, Table):
        return result.rows
    if isinstance(result, Text):
        return result.data
    return result

