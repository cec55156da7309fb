"""Markdown, read by a CommonMark parser (markdown-it-py) with tables, footnotes, definition lists
and front matter (mdit-py-plugins): a `# line` inside a fenced block is code, not a heading.

The stored text is the file's own; each block's span is its lines in it.
"""
from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from .documents import (CODE, DEFINITION, FOOTNOTE, FRONT_MATTER, LIST, MARKUP, PARAGRAPH, TABLE, Block,
                        Document, Lines, Outline, squeeze)

MEDIA_TYPE = "text/markdown"

_PARSER = (MarkdownIt("commonmark", {"html": True}).enable("table")
           .use(front_matter_plugin).use(footnote_plugin).use(deflist_plugin))


def _plain(inline: Token | None, notes: list[str] | None = None) -> str:
    """An inline token's words: code spans kept, links by their text, footnote references noted."""
    if inline is None:
        return ""
    out: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif child.type == "image":
            out.append(child.content)
        elif child.type == "footnote_ref" and notes is not None:
            notes.append(child.meta.get("label", ""))
    return squeeze("".join(out))


def _closing(tokens: list[Token], i: int) -> int:
    """The index of the token closing the one opened at i."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def read(content: str, title: str) -> Document:
    doc = Document(title=title, media_type=MEDIA_TYPE, content=content)
    outline = Outline(doc)
    source = Lines(content)
    env: dict = {}
    tokens = _PARSER.parse(content, env)
    footnotes = _footnotes(tokens)
    _walk(tokens, 0, len(tokens), outline, source, footnotes, doc)
    return outline.finish()


def _footnotes(tokens: list[Token]) -> dict[str, str]:
    notes: dict[str, str] = {}
    label = None
    for token in tokens:
        if token.type == "footnote_open":
            label = token.meta.get("label", "")
            notes[label] = ""
        elif token.type == "footnote_close":
            label = None
        elif label is not None and token.type == "inline":
            notes[label] = squeeze(f"{notes[label]} {_plain(token)}")
    return notes


def _walk(tokens, i, stop, outline: Outline, source: Lines, footnotes: dict[str, str], doc: Document) -> None:
    while i < stop:
        token = tokens[i]
        kind = token.type
        end = _closing(tokens, i) if token.nesting == 1 else i
        if kind == "heading_open":
            outline.heading(int(token.tag[1]), _plain(tokens[i + 1]), token.map[0] + 1)
        elif kind == "paragraph_open":
            notes: list[str] = []
            plain = _plain(tokens[i + 1], notes)
            _add(outline, source, PARAGRAPH, token.map, plain=plain,
                 notes=tuple(footnotes[n] for n in notes if footnotes.get(n)))
        elif kind in ("bullet_list_open", "ordered_list_open"):
            items = _items(tokens, i, end)
            _add(outline, source, LIST, token.map, plain=" ".join(items), items=tuple(items),
                 ordered=kind == "ordered_list_open")
        elif kind == "dl_open":
            _definitions(tokens, i, end, outline, source)
        elif kind in ("fence", "code_block"):
            _add(outline, source, CODE, token.map, plain=token.content.strip())
        elif kind == "table_open":
            rows = _rows(tokens, i, end)
            _add(outline, source, TABLE, token.map, plain=" ".join(rows), items=tuple(rows))
        elif kind == "front_matter":
            _add(outline, source, FRONT_MATTER, token.map, plain=token.content.strip())
        elif kind == "footnote_block_open":
            for j in range(i, end):
                if tokens[j].type == "paragraph_open" and tokens[j].map:
                    _add(outline, source, FOOTNOTE, tokens[j].map, plain=_plain(tokens[j + 1]))
        elif kind == "blockquote_open":
            _walk(tokens, i + 1, end, outline, source, footnotes, doc)  # a quotation's paragraphs are paragraphs
        elif kind == "html_block":
            doc.dropped[MARKUP] += 1
        i = end + 1


def _add(outline: Outline, source: Lines, kind: str, lines, **fields) -> None:
    if not lines:
        return
    start, end = source.span(lines)
    if end > start:
        outline.add(Block(kind, source.content[start:end], start, end, lines[0] + 1, **fields))


def _items(tokens: list[Token], i: int, end: int) -> list[str]:
    """A list's items, each as plain words (a nested list's words are part of its item)."""
    items: list[str] = []
    depth = 0
    for token in tokens[i + 1:end]:
        if token.type == "list_item_open":
            depth += 1
            if depth == 1:
                items.append("")
        elif token.type == "list_item_close":
            depth -= 1
        elif token.type in ("inline", "fence", "code_block") and items:
            words = _plain(token) if token.type == "inline" else squeeze(token.content)
            items[-1] = squeeze(f"{items[-1]} {words}")
    return items


def _rows(tokens: list[Token], i: int, end: int) -> list[str]:
    rows: list[list[str]] = []
    for token in tokens[i + 1:end]:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(_plain(token))
    return [" | ".join(cells) for cells in rows]


def _definitions(tokens: list[Token], i: int, end: int, outline: Outline, source: Lines) -> None:
    """Each term with its definition, one block: a definition keeps its term."""
    term, first = "", None
    j = i + 1
    while j < end:
        token = tokens[j]
        if token.type == "dt_open":
            term, first = _plain(tokens[j + 1]), token.map
        elif token.type == "dd_open":
            close = _closing(tokens, j)
            words = " ".join(_plain(t) for t in tokens[j:close] if t.type == "inline")
            lines = [first[0] if first else token.map[0], token.map[1]]
            _add(outline, source, DEFINITION, lines, plain=squeeze(f"{term}: {words}"), term=term)
            j = close
        j += 1
