"""Plain text: blocks between blank lines. A first line that reads like a title (short, not a
sentence or a list item) is the title, else the file name is; a line in capitals, or a short line
ending in `:` that no list follows, opens a section; a block of item lines is a list (loose too:
items apart by blank lines are one list while they follow on).
"""
from __future__ import annotations

import re

from .documents import LIST, PARAGRAPH, Block, Document, Lines, Outline, squeeze

MEDIA_TYPE = "text/plain"

LIST_ITEM = re.compile(r"^[^\S\n]*(?:[-*+\u2022]|\(?(\d+|[a-z])[.)])[^\S\n]+(?=\S)")


def _line_blocks(content: str):
    """(text, start, end) of each run of non-blank lines, with its offsets."""
    pos = 0
    start = end = None
    for line in content.splitlines(keepends=True):
        if line.strip():
            if start is None:
                start = pos + (len(line) - len(line.lstrip()))
            end = pos + len(line.rstrip())
        elif start is not None:
            yield content[start:end], start, end
            start = None
        pos += len(line)
    if start is not None:
        yield content[start:end], start, end


def is_list(text: str) -> bool:
    lines = text.splitlines()
    return bool(lines) and bool(LIST_ITEM.match(lines[0])) and all(
        LIST_ITEM.match(line) or line.startswith((" ", "\t")) for line in lines)


def items_of(text: str) -> tuple[list[str], bool]:
    """A list block's items (plain, one per item line with its continuation lines) and whether it is numbered."""
    items: list[str] = []
    numbered = 0
    for line in text.splitlines():
        marker = LIST_ITEM.match(line)
        if marker:
            numbered += bool(marker.group(1))
            items.append(line[marker.end():].strip())
        elif items:
            items[-1] = squeeze(f"{items[-1]} {line}")
    return items, bool(items) and numbered == len(items)


def title_line(line: str) -> bool:
    """Whether a plain-text document's first line names it: short, not a sentence, not a list item."""
    line = line.strip()
    return (0 < len(line) <= 80 and len(line.split()) <= 12 and not line.endswith((".", "!", "?", ";", ",", ":"))
            and not LIST_ITEM.match(line))


def _heading(line: str, list_follows: bool) -> str | None:
    if "\n" in line:
        return None
    letters = [c for c in line if c.isalpha()]
    if len(letters) >= 2 and line.upper() == line and len(line) <= 80 and not line.endswith("."):
        return line.title()
    if line.endswith(":") and len(line.split()) <= 8 and not list_follows:
        return line[:-1].strip()
    return None


def read(content: str, title: str) -> Document:
    doc = Document(title=title, media_type=MEDIA_TYPE, content=content)
    outline = Outline(doc, title_from_heading=False)
    lines = Lines(content)
    blocks = list(_line_blocks(content))
    first = True
    pending: list[tuple[str, int, int]] = []  # a list read so far, block by block (a loose list)

    def flush():
        if pending:
            start, end = pending[0][1], pending[-1][2]
            items, ordered = items_of("\n".join(t for t, _, _ in pending))
            outline.add(Block(LIST, content[start:end], start, end, lines.line(start), plain=" ".join(items),
                              items=tuple(items), ordered=ordered))
            pending.clear()

    for index, (text, start, end) in enumerate(blocks):
        if first:
            first = False
            head, newline, rest = text.partition("\n")
            if title_line(head) and not (not rest and index + 1 < len(blocks) and is_list(blocks[index + 1][0])):
                doc.title = head.strip().title() if head.isupper() else head.strip()
                if not rest.strip():
                    continue
                # A title line with text right under it: the rest of the block is content.
                start, text = start + len(head) + len(newline), rest.strip("\n")
                start += len(text) - len(text.lstrip())
                text = text.strip()
        if is_list(text):
            pending.append((text, start, end))
            continue
        flush()
        list_follows = index + 1 < len(blocks) and is_list(blocks[index + 1][0])
        heading = _heading(text, list_follows)
        if heading is not None:
            outline.heading(2, heading, lines.line(start))
            continue
        outline.add(Block(PARAGRAPH, text, start, end, lines.line(start), plain=squeeze(text)))
    flush()
    return outline.finish()

