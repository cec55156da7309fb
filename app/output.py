"""How command results print: a whole JSON document with --json, readable text otherwise.

Both are terminal-safe: stored text reaches the terminal with its controls shown as visible
escapes (`render_text`), or escaped as JSON allows (`app.safe.dumps`).
"""
from __future__ import annotations

from typing import Any

from .safe import dumps, visible
from .widgets.format import span


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



# What each status is called in the one line an error prints without --json (docs/architecture.md,
# Command line): a person reads the word, a script the number (and the exit code).
STATUS_WORDS = {400: "invalid input", 403: "forbidden", 404: "not found", 409: "conflict",
                422: "illegal transition", 500: "internal error", 503: "service unavailable"}


def error_line(error: dict) -> str:
    """An error as one readable line: `r2k: forbidden (403): unknown user 'nobody': …`. The message
    is shown with every control, newline and tab included, as a visible escape, so it stays one line."""
    status = error.get("status", 500)
    word = STATUS_WORDS.get(status, "error")
    return f"r2k: {word} ({status}): {visible(str(error.get('message', '')), multiline=False)}"


BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """Values as one line of unicode bars, the highest full; all zero is the lowest bar throughout."""
    top = max(values, default=0)
    if top <= 0:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, round(v / top * (len(BARS) - 1)))] for v in values)


def per_decision(seconds: float | None) -> str:
    """A median time per decision: whole seconds under a minute ("12s"), else as every span is
    written (`widgets.format.span`: 3m, 2h); "—" when there is none."""
    if seconds is None:
        return "—"
    return f"{seconds:.0f}s" if seconds < 60 else span(seconds)
