"""Word `.docx`, read by python-docx: paragraphs by their style (a "Heading N" or "Title" is a
heading, a "List …" style or a numbered paragraph a list item), tables as tables. Footnotes live
outside the body and are not read.

A .docx is a zip: one whose parts would unpack past `MAX_UNPACKED` bytes, or at a ratio no document
has (`MAX_RATIO`), is refused before it is opened (a zip bomb). The stored text is a rendering.
"""
from __future__ import annotations

import io
import re
import zipfile

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from .documents import LIST, PARAGRAPH, TABLE, Document, Unreadable, Writer, list_text, squeeze, table_text

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MAX_UNPACKED = 64 * 2**20  # the parts of a long report with its pictures are a few MB
MAX_RATIO = 200            # XML compresses about 10:1; a zip bomb a thousand or more
_HEADING_STYLE = re.compile(r"^heading\s*(\d)", re.I)


def _check_zip(raw: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            members = archive.infolist()
            if "word/document.xml" not in archive.namelist():
                raise Unreadable("not a Word document: the file has no word/document.xml")
    except zipfile.BadZipFile:
        raise Unreadable("not a Word document: the file is not a readable zip (corrupt?)") from None
    total = sum(m.file_size for m in members)
    if total > MAX_UNPACKED:
        raise Unreadable(f"a Word document unpacks to at most {MAX_UNPACKED // 2**20} MB; this one to {total:,} bytes")
    for member in members:
        if member.compress_size and member.file_size / member.compress_size > MAX_RATIO and member.file_size > 2**20:
            raise Unreadable(f"{member.filename} unpacks {member.file_size / member.compress_size:.0f} times its size "
                             "(a zip bomb?)")


def read(raw: bytes, title: str) -> Document:
    _check_zip(raw)
    try:
        document = docx.Document(io.BytesIO(raw))
        parts = list(document.iter_inner_content())
        core_title = document.core_properties.title or ""
    except Unreadable:
        raise
    except Exception as exc:  # python-docx raises what lxml and zipfile raise on a broken part: KeyError, XMLSyntaxError, …
        raise Unreadable(f"not a Word document python-docx can read: {squeeze(str(exc))[:200] or type(exc).__name__}") \
            from None
    writer = Writer(squeeze(core_title) or title, MEDIA_TYPE)
    items: list[str] = []
    ordered = False

    def flush():
        nonlocal ordered
        if items:
            writer.block(LIST, list_text(items, ordered), 0, plain=" ".join(items), items=tuple(items), ordered=ordered)
            items.clear()
            ordered = False

    for part in parts:
        if isinstance(part, Table):
            flush()
            rows = [[squeeze(cell.text) for cell in row.cells] for row in part.rows]
            rows = [_unmerged(r) for r in rows if any(r)]
            if rows:
                text = table_text(rows)
                writer.block(TABLE, text, 0, plain=text, items=tuple(" | ".join(r) for r in rows))
            continue
        if not isinstance(part, Paragraph):
            continue
        text = squeeze(part.text)
        style = (part.style.name if part.style is not None else "") or ""
        heading = _HEADING_STYLE.match(style)
        if not text:
            continue
        if heading or style.lower() == "title":
            flush()
            writer.heading(int(heading.group(1)) + 1 if heading else 1, text, 0)
        elif style.lower().startswith("list") or part._p.pPr is not None and part._p.pPr.numPr is not None:
            if not items:
                ordered = "number" in style.lower() or _numbered(part)
            items.append(text)
        else:
            flush()
            writer.block(PARAGRAPH, text, 0, plain=text)
    flush()
    return writer.finish()


def _unmerged(cells: list[str]) -> list[str]:
    """A row's cells without the copies python-docx gives a merged cell."""
    out: list[str] = []
    for cell in cells:
        if not out or cell != out[-1]:
            out.append(cell)
    return out


def _numbered(paragraph) -> bool:
    """Whether a numbered paragraph's numbering is digits (not bullets), as far as its level says."""
    try:
        numbering = paragraph.part.numbering_part.element
        num_id = paragraph._p.pPr.numPr.numId.val
        level = paragraph._p.pPr.numPr.ilvl.val if paragraph._p.pPr.numPr.ilvl is not None else 0
    except (AttributeError, KeyError, NotImplementedError):
        return False
    ns = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
    for num in numbering.iter(f"{ns}num"):
        if num.get(f"{ns}numId") == str(num_id):
            abstract = num.find(f"{ns}abstractNumId").get(f"{ns}val")
            for definition in numbering.iter(f"{ns}abstractNum"):
                if definition.get(f"{ns}abstractNumId") == abstract:
                    for lvl in definition.iter(f"{ns}lvl"):
                        if lvl.get(f"{ns}ilvl") == str(level):
                            fmt = lvl.find(f"{ns}numFmt")
                            return fmt is not None and fmt.get(f"{ns}val") not in ("bullet", "none")
    return False
