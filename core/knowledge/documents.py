"""The structure every reader produces (docs/architecture.md, "Documents and extraction").

A Document is its text as stored (`content`: the file's own text for Markdown, reStructuredText's
rendering, plain text; the text rendered from HTML, PDF and Word files), its title, and its
sections in order. A Section has its heading path (outermost first) and its blocks. A Block is
one paragraph, list (with the line that introduces it), definition (with its term), table, code
block, footnote or front matter, with its span in `content` and its line in the file as given.
Readers say what they drop (navigation, markup, bare headings) and what they skip over a limit.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field

from ..domain import limits

# The kinds of block. Only the first three are statements; the rest are context: never a heading,
# never a candidate (a table's row may be, when it reads as one statement: core/knowledge/claims.py).
PARAGRAPH, LIST, DEFINITION = "paragraph", "list", "definition"
TABLE, CODE, FOOTNOTE, FRONT_MATTER = "table", "code", "footnote", "front matter"
STATEMENTS = frozenset({PARAGRAPH, LIST, DEFINITION})

# Why a piece of a document was dropped: counted in the ingest summary, never stored as an unknown.
BARE_HEADING = "heading without a body"
MARKUP = "markup"
NAVIGATION = "navigation"
SYMBOLS = "lone symbols"
LABEL = "label without a statement"
LEANING = "statement leaning on text it lost"


@dataclass
class Block:
    kind: str
    text: str        # as stored: content[start:end] for the file's own text, else the rendered text
    start: int       # the span in Document.content: where a validator sees it
    end: int
    line: int        # 1-based, in the file as given (0 when the format has no lines)
    plain: str = ""  # the words without markup: what questions and Horn types are read from
    items: tuple[str, ...] = ()  # a list's items, a table's rows (cells joined by " | "), plain
    ordered: bool = False        # a numbered list
    intro: str = ""              # the line introducing a list or a code block, plain
    term: str = ""               # a definition's term, plain
    notes: tuple[str, ...] = ()  # the footnotes it cites, plain: they go with it
    question: str = ""           # the question the document itself asks of it (Q:/A:, JSON Lines)
    horn_type: str = ""          # the Horn type the document gives it (JSON Lines)

    def __post_init__(self) -> None:
        if not self.plain:
            self.plain = self.text


@dataclass
class Section:
    heading: tuple[str, ...]  # the heading path, outermost first; () before the first heading
    line: int
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Document:
    title: str
    media_type: str
    content: str
    sections: list[Section] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)              # reason -> how many
    skipped: list[tuple[int | None, str]] = field(default_factory=list)  # (line, reason) of parts left out

    def blocks(self):
        for section in self.sections:
            for block in section.blocks:
                yield section, block


class Unreadable(ValueError):
    """A file that cannot be read as its type; `line` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


_SPACE = re.compile(r"\s+")


def squeeze(text: str) -> str:
    """Runs of white space as one blank: a plain text of a block laid out over lines."""
    return _SPACE.sub(" ", text).strip()


class Lines:
    """Line numbers of offsets in a text, found by bisection (linear in the text once)."""

    def __init__(self, content: str):
        self.content = content
        self.starts = [0] + [m.end() for m in re.finditer("\n", content)]

    def line(self, offset: int) -> int:
        return bisect_right(self.starts, offset)

    def span(self, lines: list[int]) -> tuple[int, int]:
        """The characters of lines [first, last): leading and trailing blanks left out."""
        first, last = lines
        start = self.starts[first] if first < len(self.starts) else len(self.content)
        end = self.starts[last] if last < len(self.starts) else len(self.content)
        text = self.content[start:end]
        stripped = text.strip()
        if not stripped:
            return start, start
        lead = len(text) - len(text.lstrip())
        return start + lead, start + lead + len(stripped)


class Outline:
    """Builds a Document's sections as a reader meets headings and blocks, in document order.

    The first level-1 heading met before any statement is the title, not a section; a heading
    whose section has no block and no subsection is dropped and counted."""

    def __init__(self, doc: Document, title_from_heading: bool = True):
        self.doc = doc
        self.stack: list[tuple[int, str]] = []
        self.title_open = title_from_heading
        self.doc.sections.append(Section((), 1))

    def heading(self, level: int, text: str, line: int) -> None:
        text = squeeze(text).rstrip("\u00b6#").strip()  # "¶", "#": permalink marks of generated HTML
        if not text:
            return
        why = limits.too_long("a heading", limits.QUESTION, len(text))
        if why:  # a heading no reader could take in: left out, its section read under the heading above it
            self.doc.skipped.append((line or None, why))
            return
        if self.title_open and level == 1 and not any(b.kind in STATEMENTS for s in self.doc.sections for b in s.blocks):
            self.doc.title, self.title_open = text, False
            return
        self.title_open = False
        self.stack = [(lv, t) for lv, t in self.stack if lv < level] + [(level, text)]
        self.doc.sections.append(Section(tuple(t for _, t in self.stack), line))

    def add(self, block: Block) -> None:
        if block.kind in STATEMENTS:
            self.title_open = False  # front matter or code before the first heading leaves it the title
        self.doc.sections[-1].blocks.append(block)

    def finish(self) -> Document:
        sections = self.doc.sections
        for i, section in enumerate(sections):
            if section.heading and not section.blocks:
                after = sections[i + 1].heading if i + 1 < len(sections) else ()
                if after[:len(section.heading)] != section.heading or len(after) <= len(section.heading):
                    self.doc.dropped[BARE_HEADING] += 1
        self.doc.sections = [s for s in sections if s.blocks]
        return self.doc


class Rendering:
    """The stored text of a format whose bytes are not text a validator reads (HTML, PDF, Word,
    reStructuredText): headings as `#` lines, blocks between blank lines, each block's span where
    it is written."""

    def __init__(self):
        self.parts: list[str] = []
        self.length = 0

    def write(self, text: str) -> tuple[int, int]:
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        return start, self.length

    def text(self) -> str:
        return "".join(self.parts) + ("\n" if self.parts else "")


class Writer:
    """An Outline over a Rendering: what the HTML, reStructuredText, PDF and Word readers write to."""

    def __init__(self, title: str, media_type: str):
        self.doc = Document(title=title, media_type=media_type, content="")
        self.rendering = Rendering()
        self.outline = Outline(self.doc)

    def heading(self, level: int, text: str, line: int = 0) -> None:
        text = squeeze(text)
        if text:
            self.rendering.write("#" * min(max(level, 1), 6) + " " + text)
            self.outline.heading(level, text, line)

    def block(self, kind: str, text: str, line: int = 0, **fields) -> None:
        text = text.strip("\n")
        if not text.strip():
            return
        if kind == CODE:  # fenced, so that the stored text reads as Markdown: a `#` line in it is code
            fields.setdefault("plain", text)
            text = f"```\n{text}\n```"
        start, end = self.rendering.write(text)
        self.outline.add(Block(kind, text, start, end, line, **fields))

    def drop(self, reason: str) -> None:
        self.doc.dropped[reason] += 1

    def skip(self, line: int | None, reason: str) -> None:
        self.doc.skipped.append((line, reason))

    def finish(self) -> Document:
        self.doc.content = self.rendering.text()
        return self.outline.finish()


def list_text(items: list[str], ordered: bool, intro: str = "") -> str:
    """A list as it is rendered: its intro line, then one item a line, numbered or bulleted."""
    lines = [intro] if intro else []
    lines += [f"{i}. {item}" if ordered else f"- {item}" for i, item in enumerate(items, start=1)]
    return "\n".join(lines)


def table_text(rows: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(cells) + " |" for cells in rows)
