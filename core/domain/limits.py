"""What r2k accepts, in one place: the size of each kind of text and of each kind of file a caller
names, the characters PostgreSQL refuses, how deep JSON may nest and that its numbers are finite, and
the range of every number a caller gives.

Core's services check them, so the CLI, the workstation and the workers all get the same 400; the
CLI's option types (`app.cli.bounded_int`) use the same ranges, and README's "Limits" states them.
The limits are generous for people and bounded for the database: text goes into PostgreSQL's
full-text index, whose values cannot exceed 1 MB, and into signed events.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from ..errors import InvalidInput

# Characters of text (after surrounding blanks are stripped).
QUESTION = 2_000       # a question is a sentence or two; the demo's longest is under 100
ANSWER = 20_000        # candidate, revised, superseding and generated text: ~3,000 words, pages of steps
REASON = 2_000         # a reason, a note or a resolution: a paragraph for the next reader
GREY_SUBJECT = 2_000   # an unknown is a question (a work item's question becomes one), so as long
GREY_DETAIL = 20_000   # what is known so far: as much as an answer
SOURCE_REF = 2_000     # where a candidate comes from: a path, a URL, a citation
QUERY = 1_000          # a search or a filter is words, not a document
DOCUMENT_BYTES = 2 * 1024 * 1024  # a stored document's text; a long handbook is a few hundred KB of text
PACKED_DOCUMENT_BYTES = 32 * 1024 * 1024  # an HTML, PDF or Word file: markup and pictures around its text
# A file to ingest, of any format: one whose text is over DOCUMENT_BYTES once read is stored in parts of
# whole sections (core/knowledge/extract.py, `extract_parts`), so a manual of 10 MB goes in; a file over this is refused.
FILE_BYTES = PACKED_DOCUMENT_BYTES
JSON_DEPTH = 64        # a JSON Lines record is flat; 64 levels leave room for any metadata in it


class FileKind(NamedTuple):
    """A kind of file a caller names (core/domain/files.py): what it is called, and the most it may hold."""

    noun: str
    bytes: int

    def said(self) -> str:
        """"a key file is at most 16 KB (16,384 bytes)"."""
        unit, size = ("MB", self.bytes / 2**20) if self.bytes >= 2**20 else ("KB", self.bytes / 2**10)
        return f"{self.noun} is at most {size:g} {unit} ({self.bytes:,} bytes)"


# Files a caller names, each read whole: as much as the kind needs, and no more.
ARTICLE_FILE = FileKind("an article file", 512 * 1024)   # --body-file: 100,000 characters of 4 bytes at most
KEY_FILE = FileKind("a key file", 16 * 1024)             # --key-file, the signing key: an RSA-16384 key is 3 KB
KEYS_FILE = FileKind("a keys file", 4 * 2**20)           # R2K_TRUSTED_KEYS, --authorized-keys: thousands of keys
ANCHOR_FILE = FileKind("an anchor file", 16 * 2**20)     # --anchor: a checkpoint, or checkpoint lines and deltas
KEYMAP_FILE = FileKind("a keymap file", 64 * 1024)       # R2K_KEYMAP_FILE: a line per binding
IDS_FILE = FileKind("an ids file", 4 * 2**20)             # --from-file: 100,000 ids a line each, with room for notes

# Numbers: (lowest, highest), inclusive.
SEARCH_LIMIT = (1, 1_000)          # results of one search page
LIST_LIMIT = (1, 10_000)           # rows of one list
BULK_IDS = 100_000                 # ids one bulk action takes: a day's triage of a large import
OFFSET = (0, 1_000_000_000)        # rows skipped: any page a person reaches
TTL_SECONDS = (1, 31_536_000)      # a grey entry may wait up to a year unresolved
MAX_ATTEMPTS = (1, 100)            # automated retries; backoff caps at an hour, so 100 is four days
VERSION = (1, 2_147_483_647)       # a row's version is an int4 column
PROCESSES = (1, 64)                # worker processes on one machine
SSH_IDLE = (5, 604_800)            # seconds an SSH session may sit idle (--idle, R2K_SSH_IDLE_SECONDS): up to a week
ID = (1, 9_223_372_036_854_775_807)  # ids are bigserial

_REFUSED = re.compile("[\x00\ud800-\udfff]")


def first_refused(value: str) -> int:
    """Where the first character PostgreSQL refuses in text is, or -1."""
    found = _REFUSED.search(value)
    return -1 if found is None else found.start()


def refused_character(value: str) -> str | None:
    """Why PostgreSQL would refuse `value` as text, or None: a NUL, or a lone surrogate (what
    Python makes of undecodable bytes, never a character of UTF-8)."""
    found = _REFUSED.search(value)
    if found is None:
        return None
    at = f"at character {found.start() + 1:,}"
    if found.group() == "\x00":
        return f"holds a NUL character (U+0000) {at}, which text cannot hold"
    return f"holds a lone surrogate (U+{ord(found.group()):04X}) {at}, which is not a character"


def refused_in(value: Any, path: str = "") -> str | None:
    """Why a JSON value (parsed input, an event's payload) cannot be stored or hashed, naming where:
    "metadata.note holds a NUL character (U+0000) at character 3, …", a key that holds one, or a
    number that is not finite ("metadata.score is not a finite number (nan)"; JSON has no NaN or
    Infinity, and jsonb refuses them). None when every string and number in it can be stored."""
    if isinstance(value, str):
        why = refused_character(value)
        return f"{path or 'the value'} {why}" if why else None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path or 'the value'} is not a finite number ({value!r})"
    if isinstance(value, dict):
        for key, item in value.items():
            why = refused_character(key) if isinstance(key, str) else None
            if why:
                return f"{path or 'the value'} has a key that {why}"
            found = refused_in(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            found = refused_in(item, f"{path}[{n}]")
            if found:
                return found
    return None


def too_long(what: str, limit: int, length: int) -> str | None:
    """"a question is at most 2,000 characters; this one has 5,013", or None within the limit."""
    if length <= limit:
        return None
    return f"{what} is at most {limit:,} characters; this one has {length:,}"


def text(value: Any, what: str, limit: int | None = None) -> Any:
    """`value` (a string or None) unchanged, when PostgreSQL can store it and, stripped, it is at most
    `limit` characters; otherwise a 400 that names `what` ("a question") and the limit."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} is text, got {type(value).__name__}")
    why = refused_character(value)
    if why:
        raise InvalidInput(f"{what} {why}")
    if limit is not None:
        why = too_long(what, limit, len(value.strip()))
        if why:
            raise InvalidInput(why)
    return value


def scrub(value: str) -> str:
    """Machine-made text (an LLM's answer) made storable: NULs dropped, lone surrogates replaced."""
    return _REFUSED.sub(lambda m: "" if m.group() == "\x00" else "\ufffd", value)


def clip(value: str, limit: int) -> str:
    """Text r2k writes itself (a grey subject made of a title and a heading) cut to `limit`."""
    value = value.strip()
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def said(bounds: tuple[int, int], unit: str = "") -> str:
    low, high = bounds
    unit = f" {unit}" if unit else ""
    if low == 0:
        return f"0 or more, at most {high:,}{unit}"
    return f"{low:,}–{high:,}{unit}"


def number(value: Any, what: str, bounds: tuple[int, int], unit: str = "") -> int:
    """`value` as an int within `bounds`, else a 400 naming `what` ("--ttl") and the range:
    "--ttl is 1–31,536,000 seconds, got 2147483648"."""
    if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
        number_ = None
    elif isinstance(value, (int, float)):
        number_ = int(value)
    else:
        digits = str(value).strip()
        try:
            number_ = int(digits)
        except ValueError:  # not digits, or more digits than Python converts (out of range, then)
            number_ = None
            if re.fullmatch(r"[+-]?[0-9]+", digits):
                raise InvalidInput(f"{what} is {said(bounds, unit)}, got a number of {len(digits):,} digits") \
                    from None
    if number_ is None:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
        raise InvalidInput(f"{what} is a whole number, {said(bounds, unit)}; got {shown}")
    if not bounds[0] <= number_ <= bounds[1]:
        digits = str(number_)
        shown = digits if len(digits) <= 40 else f"{digits[:20]}… ({len(digits):,} digits)"
        raise InvalidInput(f"{what} is {said(bounds, unit)}, got {shown}")
    return number_


def optional_number(value: Any, what: str, bounds: tuple[int, int], unit: str = "") -> int | None:
    return None if value is None else number(value, what, bounds, unit)


def literal_pattern(value: str) -> str:
    """A LIKE pattern that matches `value` literally anywhere: %, _ and \\ lose their meaning."""
    return "%" + re.sub(r"([\\%_])", r"\\\1", value) + "%"


class JSONTooDeep(ValueError):
    pass


# A string (its closing quote optional, so an unclosed one is one token, not a rescan per quote)
# or a bracket.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def json_depth_ok(text: str, depth: int = JSON_DEPTH) -> None:
    """Raise JSONTooDeep when `text` nests arrays and objects deeper than `depth`: the parser recurses
    once per level, and a line of 100,000 brackets would exhaust the stack (RecursionError)."""
    if text.count("[") + text.count("{") <= depth:
        return
    level = 0
    for token in _JSON_TOKEN.finditer(text):
        mark = token.group()
        if mark in "[{":
            level += 1
            if level > depth:
                raise JSONTooDeep(f"JSON nested deeper than {depth} levels")
        elif mark in "]}":
            level -= 1


class NotFinite(ValueError):
    pass


def _constant(name: str):
    raise NotFinite(f"{name} is not a number JSON allows")


def _finite(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):  # 1e999: a finite literal Python reads as infinity
        raise NotFinite(f"{digits[:40]} is out of range for a number")
    return value


def loads_json(text: str, depth: int = JSON_DEPTH) -> Any:
    """json.loads, refusing nesting deeper than `depth` first (JSONTooDeep, a ValueError), and numbers
    that are not finite (NotFinite, a ValueError): Python's json reads NaN, Infinity and 1e999, which
    JSON does not allow and jsonb refuses."""
    json_depth_ok(text, depth)
    return json.loads(text, parse_constant=_constant, parse_float=_finite)
