"""Terminal-safe text: stored text never drives the terminal that shows it.

Anyone who can put text into the database (an ingested document, a candidate added by hand, a grey
entry) could otherwise clear a validator's screen, retitle the window, write the clipboard (OSC 52),
hide text or reorder it. Every CLI output and every TUI widget that shows stored text goes through
`visible`; `--json` goes through `dumps`. Plain Python: the CLI imports it without Textual.
"""
from __future__ import annotations

import json
import re
from typing import Any

# C0 controls but newline and tab, DEL, C1 controls (U+009B is CSI to some terminals), the Arabic
# letter mark, the left-to-right and right-to-left marks, the line and paragraph separators, the
# bidi embeddings and overrides, the bidi isolates, and lone surrogates (not characters: printing
# one fails).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
# Also newline and tab, for output that must stay on one line.
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
# What JSON (with ensure_ascii=False) leaves raw of the above: it escapes C0 itself.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str | None, *, multiline: bool = True) -> str:
    """`text` with every character that could drive a terminal shown as a visible escape.

    Rules:
    - kept as they are: every printable character and the space, so plain text comes back
      unchanged; with `multiline` (the default) also newline and tab, and a CR LF line ending
      becomes a newline;
    - shown as Python writes them in a string literal: CR as ``\\r`` (alone it moves the cursor back
      over the line), the other C0 controls, DEL and the C1 controls as ``\\xNN`` (ESC as ``\\x1b``,
      BEL as ``\\x07``, CSI as ``\\x9b``), and as ``\\uNNNN``: the bidi embeddings, overrides and
      isolates (U+202A–U+202E, U+2066–U+2069), the bidi marks (U+200E, U+200F, U+061C), the line
      and paragraph separators (U+2028, U+2029) and lone surrogates;
    - without `multiline`, newline and tab too (``\\n``, ``\\t``), for a title or other one line.

    A backslash already in the text is left alone, so stored ``\\x1b`` and an escaped ESC look the
    same: the point is that nothing reaches the terminal as a control, not a reversible encoding
    (`--json` is that). Zero-width and other format characters that move no cursor and reorder
    nothing (U+200B, U+200D in emoji, U+FEFF) are kept. None gives "". The result is safe again:
    visible(visible(t)) == visible(t).
    """
    if not text:
        return ""
    if multiline:
        if _UNSAFE.search(text) is None:
            return text
        return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))
    if _UNSAFE_ONE_LINE.search(text) is None:
        return text
    return _UNSAFE_ONE_LINE.sub(_escape, text)


def _json_escape(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe_json(text: str) -> str:
    """JSON text already made (by `json.dumps(..., ensure_ascii=False)`) with what `dumps` escapes
    escaped too: the same document, terminal-safe."""
    return _JSON_UNSAFE.sub(_json_escape, text)


def dumps(value: Any, **kwargs: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **kwargs)`, with what JSON leaves raw and a terminal
    may act on (DEL, C1 controls, bidi controls, line separators, lone surrogates) escaped as
    ``\\uNNNN`` too. Those characters only occur inside JSON strings, so the document is still valid
    JSON and parses back to the same strings; the rest of the text stays readable UTF-8."""
    return _JSON_UNSAFE.sub(_json_escape, json.dumps(value, ensure_ascii=False, **kwargs))
