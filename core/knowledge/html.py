"""HTML, read by an HTML5 parser (selectolax's Lexbor): the main content, without navigation and
boilerplate.

Scripts, styles, forms, `<nav>`, page `<header>`/`<footer>`, `<aside>` (a footnote's excepted),
sidebars, breadcrumbs, tables of contents, permalink marks and "skip to content" links are
dropped; the main content is `<main>` (or the element that plays its part in Sphinx, Docutils and
DocBook output), else the body. The stored text is a rendering (core/knowledge/documents.py).
"""
from __future__ import annotations

import codecs
import re
from bisect import bisect_right

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .documents import (CODE, DEFINITION, FOOTNOTE, LABEL, LIST, MARKUP, NAVIGATION, PARAGRAPH, TABLE, Document,
                        Unreadable, Writer, list_text, squeeze, table_text)

MEDIA_TYPE = "text/html"

_MARKUP = "script, style, noscript, template, iframe, object, embed, svg, canvas, form, button, select, input, img"
_NAVIGATION = ", ".join([
    "nav", "aside:not(.footnote):not(.footnote-list)", "[role=navigation]", "[role=banner]", "[role=contentinfo]",
    "[role=complementary]", "[role=search]", "a.headerlink", "a.permalink",
    ".sphinxsidebar", ".sidebar", "div.related", "div.footer", ".navheader", ".navfooter", ".nav-panel",
    "div.header", ".breadcrumb", ".breadcrumbs", ".toc", "#toc", ".contents.topic", "div.contents", "nav.contents",
    "table.menu", "ul.mini-toc", ".skip-link", ".skiplink", ".visually-hidden", ".sr-only", "#searchbox",
    ".cookie-banner",
])
_MAIN = ["main", "[role=main]", "div.body", "div.document", "article", "#content", "div.content", "body"]
_SKIP_LINK = re.compile(r"^(skip|jump) to (the )?(main )?(content|navigation|main)", re.I)
_NAV_WORDS = frozenset({"next", "previous", "prev", "up", "home", "top", "back to top", "contents", "index",
                        "table of contents", "search", "menu", "next page", "previous page", "print"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset({"p", "ul", "ol", "dl", "pre", "table", "blockquote", "div", "section", "article", "main",
                     "figure", "details", "center", "address", "hr", "dd", "dt", "li", "header", "footer",
                     "aside", "fieldset", "body", "html", *(_HEADINGS)})
_CONTAINERS = frozenset({"div", "section", "article", "main", "blockquote", "details", "center", "header",
                         "footer", "body", "html", "span", "figure", "aside", "summary"})
_ADMONITION = re.compile(r"\b(admonition|note|warning|tip|caution|important|attention|hint|danger|error|seealso)\b")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def decode(raw: bytes) -> str:
    """The page's text: its byte order mark, else the charset its <meta> declares, else UTF-8."""
    if raw.startswith(codecs.BOM_UTF8):
        return raw[3:].decode("utf-8", "strict")
    declared = _CHARSET.search(raw[:4096])
    encoding = "utf-8"
    if declared:
        try:
            encoding = codecs.lookup(declared.group(1).decode("ascii")).name
        except LookupError:
            pass
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise Unreadable(f"not {encoding} text, as the page declares (byte 0x{raw[exc.start]:02x} at offset "
                         f"{exc.start})" if declared else
                         f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})", line) from None


def _lines(source: str, tree: LexborHTMLParser) -> dict[int, int]:
    """The line of each block element in the file: the n-th element of a tag is taken to be the n-th
    place its start tag is written (the parser keeps no positions)."""
    starts = [0] + [m.end() for m in re.finditer("\n", source)]
    found: dict[int, int] = {}
    for tag in ("p", "ul", "ol", "dl", "pre", "table", "h1", "h2", "h3", "h4", "h5", "h6"):
        places = [m.start() for m in re.finditer(rf"<{tag}[\s>/]", source, re.I)]
        for index, node in enumerate(tree.css(tag)):
            if index < len(places):
                found[node.mem_id] = _bisect(starts, places[index])
    return found


def _bisect(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset)


def read(raw: bytes, title: str) -> Document:
    source = decode(raw)
    tree = LexborHTMLParser(source)
    lines = _lines(source, tree)
    page_title = tree.css_first("title")
    writer = Writer((squeeze(page_title.text()) if page_title else "") or title, MEDIA_TYPE)
    for node in tree.css(_MARKUP):
        if node.tag in ("script", "style"):
            writer.drop(MARKUP)
        node.decompose()
    for node in tree.css("header, footer"):
        inside = node.parent
        while inside is not None and inside.tag not in ("main", "article"):
            inside = inside.parent
        if inside is None:
            writer.drop(NAVIGATION)
            node.decompose()
    for node in tree.css(_NAVIGATION):
        writer.drop(NAVIGATION)
        node.decompose()
    for node in tree.css("a"):
        if _SKIP_LINK.match(squeeze(node.text())):
            writer.drop(NAVIGATION)
            node.decompose()
    main = next((node for selector in _MAIN if (node := tree.css_first(selector)) is not None), None)
    if main is None:
        main = tree.root
    _Walk(writer, lines).container(main, admonition=False)
    return writer.finish()


class _Walk:
    def __init__(self, writer: Writer, lines: dict[int, int]):
        self.writer = writer
        self.lines = lines

    def line(self, node: LexborNode) -> int:
        return self.lines.get(node.mem_id, 0)

    def container(self, node: LexborNode, admonition: bool) -> None:
        """A container's children in order: runs of inline content between blocks are paragraphs."""
        self.container_of([c for c in node.iter(include_text=True) if c.tag != "-comment"], admonition)

    def paragraph(self, text: str, line: int, kind: str = PARAGRAPH) -> None:
        text = squeeze(text)
        if not text:
            return
        if text.lower().rstrip(":.»«›‹>< |") in _NAV_WORDS:
            self.writer.drop(NAVIGATION)
            return
        self.writer.block(kind, text, line, plain=text)

    def block(self, node: LexborNode, admonition: bool) -> None:
        tag = node.tag
        classes = node.attributes.get("class") or ""
        if tag in _HEADINGS:
            if admonition:  # an admonition's title ("Note"): a label, not a section
                self.writer.drop(LABEL)
            else:
                self.writer.heading(_HEADINGS[tag], node.text(deep=True), self.line(node))
        elif tag == "p":
            if "admonition-title" in classes or "rubric" in classes and admonition:
                self.writer.drop(LABEL)
            else:
                self.paragraph(node.text(deep=True), self.line(node))
        elif tag in ("ul", "ol"):
            self.list(node)
        elif tag == "dl":
            if "footnote" in classes or "citation" in classes:
                self.footnote(node)
            else:
                self.definitions(node, admonition)
        elif tag == "pre":
            text = node.text(deep=True).strip("\n")
            if text.strip():
                self.writer.block(CODE, text, self.line(node), plain=text)
        elif tag == "table":
            if "footnote" in classes or "citation" in classes:
                self.footnote(node)
            else:
                self.table(node, admonition)
        elif "footnote" in classes or "citation" in classes:
            self.footnote(node)
        elif tag in _CONTAINERS or tag in ("li", "dd", "dt", "fieldset", "address"):
            self.container(node, admonition or bool(_ADMONITION.search(classes)))

    def footnote(self, node: LexborNode) -> None:
        text = squeeze(node.text(deep=True))
        if text:
            self.writer.block(FOOTNOTE, text, self.line(node), plain=text)

    def list(self, node: LexborNode) -> None:
        items = [squeeze(li.text(deep=True)) for li in node.iter() if li.tag == "li"]
        items = [item for item in items if item]
        if not items:
            return
        links = [li for li in node.iter() if li.tag == "li"]
        if all(_only_links(li) for li in links):  # a menu or a table of contents: navigation
            self.writer.drop(NAVIGATION)
            return
        ordered = node.tag == "ol"
        self.writer.block(LIST, list_text(items, ordered), self.line(node), plain=" ".join(items),
                          items=tuple(items), ordered=ordered)

    def definitions(self, node: LexborNode, admonition: bool) -> None:
        """Each term with its definition: a definition keeps its term. A definition that holds more
        than a paragraph (an API entry's methods) gives its first paragraph to its term, and the
        rest is read as blocks of their own."""
        terms: list[str] = []
        after_definition = False
        for child in node.iter():
            if child.tag == "dt":
                if after_definition:
                    terms, after_definition = [], False
                terms.append(squeeze(child.text(deep=True)).rstrip("\u00b6#").strip())
            elif child.tag == "dd":
                after_definition = True
                self.definition(" / ".join(t for t in terms if t), child, node, admonition)

    def definition(self, term: str, dd: LexborNode, dl: LexborNode, admonition: bool) -> None:
        parts = [c for c in dd.iter(include_text=True)
                 if not (c.tag == "-text" and not (c.text_content or "").strip()) and c.tag != "-comment"]
        if not any(c.tag in ("dl", "ul", "ol", "pre", "table", "div", "section") for c in parts):
            words = squeeze(dd.text(deep=True))
            if term and words:
                self.writer.block(DEFINITION, f"{term}: {words}", self.line(dl), plain=f"{term}: {words}",
                                  term=term)
            elif words:
                self.paragraph(words, self.line(dl))
            return
        first = parts[0] if parts and parts[0].tag == "p" else None
        words = squeeze(first.text(deep=True)) if first is not None else ""
        if term and words:
            self.writer.block(DEFINITION, f"{term}: {words}", self.line(dl), plain=f"{term}: {words}", term=term)
        self.container_of(parts[1:] if words else parts, admonition)

    def container_of(self, nodes: list[LexborNode], admonition: bool) -> None:
        run: list[str] = []
        for child in nodes:
            if child.tag == "-text" or child.tag not in _BLOCKS:
                run.append(child.text_content or "" if child.tag == "-text" else child.text(deep=True))
                continue
            self.paragraph(" ".join(run), 0)
            run = []
            self.block(child, admonition)
        self.paragraph(" ".join(run), 0)

    def table(self, node: LexborNode, admonition: bool) -> None:
        rows = [tr for part in [node, *(c for c in node.iter() if c.tag in ("thead", "tbody", "tfoot"))]
                for tr in part.iter() if tr.tag == "tr"]
        cells = [[c for c in tr.iter() if c.tag in ("td", "th")] for tr in rows]
        if any(_lays_out(c) for row in cells for c in row):
            for row in cells:  # a table that lays out blocks: its cells are read as blocks
                for cell in row:
                    self.container(cell, admonition)
            return
        texts = [[squeeze(c.text(deep=True)) for c in row] for row in cells]
        texts = [r for r in texts if any(r)]
        if texts:
            text = table_text(texts)
            self.writer.block(TABLE, text, self.line(node), plain=text, items=tuple(" | ".join(r) for r in texts))


def _lays_out(cell: LexborNode) -> bool:
    """Whether a table's cell holds blocks (lists, code, paragraphs) rather than a cell's text: a
    cell of one paragraph (Sphinx writes `<td><p>…</p></td>`) is text."""
    inner = cell.css("p, div, ul, ol, pre, table, dl")
    return any(c.tag != "p" for c in inner) or len(inner) > 1


def _only_links(li: LexborNode) -> bool:
    """Whether a list item is links and nothing else (a table of contents' entry)."""
    text = squeeze(li.text(deep=True))
    linked = squeeze(" ".join(a.text(deep=True) for a in li.css("a")))
    return bool(text) and len(linked) >= len(text) - 3
