"""PDF: the text layer, read by pypdf. An encrypted PDF (no empty password opens it) or one with no
text layer (a scan) is unreadable, with that reason.

A PDF keeps no paragraphs or headings, only lines on pages: lines that repeat on most pages (running
heads, page numbers) are dropped, a word broken at a line's end is joined, and lines are read into
paragraphs, lists and headings (a numbered heading such as "3.1 Scope", or a short line in capitals).
The stored text is a rendering (core/knowledge/documents.py).
"""
from __future__ import annotations

import io
import logging
import re
from collections import Counter

from pypdf import PdfReader
from pypdf.errors import PdfReadError, PyPdfError

from .documents import LIST, NAVIGATION, PARAGRAPH, Document, Unreadable, Writer, list_text, squeeze
from .text import LIST_ITEM

MEDIA_TYPE = "application/pdf"
MIN_LETTERS = 40  # fewer letters in the whole text layer than this: no text layer to speak of
_NUMBERED = re.compile(r"^(\d+(?:\.\d+){0,4})\.?\s+([A-Z][^.!?]{1,80})$")
_PAGE_NUMBER = re.compile(r"^(page\s+)?\d+(\s*(of|/)\s*\d+)?$", re.I)
_END = (".", "!", "?", ":", ";")


_PYPDF = logging.getLogger("pypdf")


def read(raw: bytes, title: str) -> Document:
    # pypdf logs each flaw it reads past ("Object 6 0 not defined."): a broken file is said once, as the skip.
    level = _PYPDF.level
    _PYPDF.setLevel(logging.CRITICAL)
    try:
        return _read(raw, title)
    finally:
        _PYPDF.setLevel(level)


def _read(raw: bytes, title: str) -> Document:
    try:
        reader = PdfReader(io.BytesIO(raw), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("an encrypted PDF: it needs a password to read")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except Unreadable:
        raise
    except (PdfReadError, PyPdfError) as exc:
        raise Unreadable(f"not a PDF pypdf can read: {squeeze(str(exc))[:200] or type(exc).__name__}") from None
    except Exception as exc:  # a broken file makes pypdf raise what its decoders raise (zlib, struct, KeyError, …)
        raise Unreadable(f"not a PDF pypdf can read: {type(exc).__name__}: {squeeze(str(exc))[:160]}") from None
    letters = sum(ch.isalpha() for page in pages for ch in page)
    if letters < MIN_LETTERS:
        raise Unreadable("a PDF with no text layer (a scan?): there is no text to read")
    writer = Writer(squeeze(meta_title) or title, MEDIA_TYPE)
    lines = _body_lines(pages, writer)
    _paragraphs(lines, writer)
    return writer.finish()


def _body_lines(pages: list[str], writer: Writer) -> list[str]:
    """Every page's lines in order, without the lines most pages repeat (running heads and feet)."""
    split = [[squeeze(line) for line in page.splitlines()] for page in pages]
    seen = Counter(line for page in split for line in set(page) if line)
    repeated = {line for line, n in seen.items() if len(pages) >= 3 and n > len(pages) / 2}
    out: list[str] = []
    for page in split:
        for line in page:
            if line in repeated or _PAGE_NUMBER.match(line):
                writer.drop(NAVIGATION)
                continue
            out.append(line)
        out.append("")  # a page ends a paragraph only if its last line ends a sentence (below)
    return out


def _paragraphs(lines: list[str], writer: Writer) -> None:
    paragraph: list[str] = []
    items: list[str] = []
    ordered = True

    def flush_paragraph():
        if paragraph:
            text = squeeze(" ".join(paragraph))
            writer.block(PARAGRAPH, text, 0, plain=text)
            paragraph.clear()

    def flush_items():
        nonlocal ordered
        if items:
            writer.block(LIST, list_text(items, ordered), 0, plain=" ".join(items), items=tuple(items), ordered=ordered)
            items.clear()
            ordered = True

    for line in lines:
        if not line:
            if paragraph and paragraph[-1].endswith(_END):
                flush_paragraph()
            continue
        numbered = _NUMBERED.match(line)
        if numbered and not paragraph[-1:] or (numbered and paragraph and paragraph[-1].endswith(_END)):
            flush_paragraph()
            flush_items()
            writer.heading(min(numbered.group(1).count(".") + 2, 6), line, 0)
            continue
        if _heading(line) and (not paragraph or paragraph[-1].endswith(_END)):
            flush_paragraph()
            flush_items()
            writer.heading(2, line.title() if line.isupper() else line, 0)
            continue
        marker = LIST_ITEM.match(line)
        if marker:
            flush_paragraph()
            ordered = ordered and bool(marker.group(1))
            items.append(line[marker.end():].strip())
            continue
        if items and not paragraph:
            if items[-1].endswith(_END) and line[:1].isupper():
                flush_items()
            else:
                items[-1] = _join(items[-1], line)
                continue
        if paragraph and paragraph[-1].endswith(_END) and _short(paragraph[-1]):
            flush_paragraph()  # a short line that ends a sentence ends its paragraph
        if paragraph and paragraph[-1].endswith("-") and line[:1].islower():
            paragraph[-1] = paragraph[-1][:-1] + line  # a word broken at the line's end
        else:
            paragraph.append(line)
    flush_paragraph()
    flush_items()


def _join(text: str, line: str) -> str:
    return text[:-1] + line if text.endswith("-") and line[:1].islower() else f"{text} {line}"


def _short(line: str) -> bool:
    return len(line) < 55


def _heading(line: str) -> bool:
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 3 and line.isupper() and len(line) <= 80 and not line.endswith(_END)
