"""reStructuredText, parsed by docutils into a doctree and read from it.

The document is never let reach anything but its own text: file insertion (`include`, `csv-table`
from a file) and `raw` are disabled, no configuration file is read, and docutils' reports go to a
stream that is thrown away, with its halt level past every report, so a document it finds fault with
is read as far as it parses. Sphinx's own directives and roles, unknown to docutils, become
reports and are dropped as markup. The stored text is a rendering (core/knowledge/documents.py).
"""
from __future__ import annotations

import io

import re

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles

from .documents import (CODE, DEFINITION, FOOTNOTE, FRONT_MATTER, LIST, MARKUP, PARAGRAPH, TABLE, Document,
                        Unreadable, Writer, list_text, squeeze, table_text)

MEDIA_TYPE = "text/x-rst"


# Sphinx's roles and directives, which docutils alone does not know: a role reads as its text (a
# cross reference by its title), a description (`function`, `option`, …) as its signature with its
# body, a note of versions as a paragraph, and what lists or pulls in other files (`toctree`,
# `literalinclude`, `automodule`) as nothing: it is never followed.
_ROLES = """ref doc term func meth class mod attr data exc obj const envvar option program command file
samp kbd menuselection guilabel abbr dfn mimetype newsfragment manpage pep rfc token keyword numref
any download math sub sup strong emphasis literal code""".split()
_DOMAINS = ("py", "c", "cpp", "js", "rst", "std")
_DESCRIPTIONS = """function class method attribute data exception module decorator decoratormethod
staticmethod classmethod property option envvar describe object cmdoption program macro type member
var struct enum enumerator union directive role""".split()
_VERSIONS = {"versionadded": "New in version", "versionchanged": "Changed in version",
             "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}
_BODIES = "seealso only ifconfig glossary hlist tab tabs card centered topic-box admonition-box".split()
_NOTHING = """toctree literalinclude automodule autoclass autofunction automethod autodata autoattribute
autoexception autosummary autoprogram index highlight currentmodule sectionauthor codeauthor tabularcolumns
include-sphinx image-sphinx graphviz inheritance-diagram doctest testsetup testcleanup testcode testoutput
plot jinja mermaid""".split()
_TITLED = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)


class _AnyOptions(dict):
    def __missing__(self, key):
        return directives.unchanged


def _role(name, rawtext, text, lineno, inliner, options=None, content=None):
    titled = _TITLED.match(text)
    words = (titled.group(1) if titled and titled.group(1) else text).lstrip("~!")
    return [nodes.literal(rawtext, words)], []


class _Description(Directive):
    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self):
        term = nodes.term("", " ".join(self.arguments))
        definition = nodes.definition()
        self.state.nested_parse(self.content, self.content_offset, definition)
        item = nodes.definition_list_item("", term, definition)
        item.line = self.lineno
        return [nodes.definition_list("", item)]


class _Versions(Directive):
    has_content = True
    required_arguments = 1
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self):
        said = _VERSIONS.get(self.name, "In version")
        explained = len(self.arguments) > 1 or self.content
        paragraph = nodes.paragraph("", f"{said} {self.arguments[0]}" + (": " if explained else "."))
        paragraph.line = self.lineno
        if len(self.arguments) > 1:  # the explanation on the directive's own lines
            words, _ = self.state.inline_text(self.arguments[1], self.lineno)
            paragraph += words
        body = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, body)
        if body.children and isinstance(body.children[0], nodes.paragraph):
            paragraph += body.children[0].children
            body.children = body.children[1:]
        return [paragraph, *body.children]


class _Body(Directive):
    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self):
        body = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, body)
        return body.children


class _Nothing(Directive):
    has_content = True
    optional_arguments = 10
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self):
        return []


def _register() -> None:
    for name in _ROLES:
        for prefix in ("", *(f"{d}:" for d in _DOMAINS)):
            if not prefix and name in ("sub", "sup", "strong", "emphasis", "literal", "code", "math", "pep", "rfc"):
                continue  # docutils' own
            roles.register_canonical_role(prefix + name, _role)
    for name in _DESCRIPTIONS:
        for prefix in ("", *(f"{d}:" for d in _DOMAINS)):
            directives.register_directive(prefix + name, _Description)
    for name in _VERSIONS:
        directives.register_directive(name, _Versions)
    for name in _BODIES:
        directives.register_directive(name, _Body)
    for name in _NOTHING:
        directives.register_directive(name, _Nothing)


_register()


def _settings() -> dict:
    return {
        "file_insertion_enabled": False,  # no `include`, no `csv-table :file:`: a document reads no local file
        "raw_enabled": False,
        "_disable_config": True,          # no docutils.conf from the working folder or the home folder
        "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(),
        "input_encoding": "unicode", "output_encoding": "unicode",
        "traceback": True, "syntax_highlight": "none", "line_length_limit": 100_000,
        "smart_quotes": False, "embed_stylesheet": False, "pep_references": False, "rfc_references": False,
        "doctitle_xform": False,  # the title is read as the first heading, and a lone section stays a section
    }


def read(content: str, title: str) -> Document:
    try:
        tree = publish_doctree(content, settings_overrides=_settings())
    except Exception as exc:  # docutils on text it cannot parse raises what its parts raise, past the halt level
        raise Unreadable(f"not reStructuredText docutils can read: {squeeze(str(exc))[:200] or type(exc).__name__}") \
            from None
    writer = Writer(title, MEDIA_TYPE)
    _Walk(writer).children(tree, 0)
    return writer.finish()


def _line(node: nodes.Node) -> int:
    while node is not None:
        if getattr(node, "line", None):
            return node.line
        node = node.parent
    return 0


_BEFORE_STOP = re.compile(r"\s+([.,;:!?)])")


def _plain(node: nodes.Node) -> str:
    """A node's words, without the footnote references it makes (their bodies go with it)."""
    parts = []
    block = None
    for text in node.findall(nodes.Text):
        above = list(_ancestors(text, node))
        if any(isinstance(a, (nodes.footnote_reference, nodes.citation_reference, nodes.problematic,
                              nodes.system_message)) for a in above):
            continue
        paragraph = next((a for a in above if isinstance(a, (nodes.Body, nodes.term, nodes.list_item))), None)
        if parts and paragraph is not block:
            parts.append(" ")  # two paragraphs of one item: words apart
        block = paragraph
        parts.append(text.astext())
    return _BEFORE_STOP.sub(r"\1", squeeze("".join(parts)))


def _ancestors(node: nodes.Node, top: nodes.Node):
    node = node.parent
    while node is not None and node is not top:
        yield node
        node = node.parent


class _Walk:
    def __init__(self, writer: Writer):
        self.writer = writer
        self.footnotes: dict[str, str] = {}

    def children(self, node: nodes.Element, level: int) -> None:
        for child in node.children:
            self.node(child, level)

    def notes_of(self, node: nodes.Element) -> tuple[str, ...]:
        found = []
        for ref in node.findall(nodes.footnote_reference):
            target = ref.get("refid")
            if target:
                body = self.footnotes.get(target)
                if body is None:
                    found_node = next((f for f in node.document.findall(nodes.footnote) if target in f["ids"]), None)
                    body = _plain_body(found_node) if found_node is not None else ""
                    self.footnotes[target] = body
                if body:
                    found.append(body)
        return tuple(found)

    def node(self, node: nodes.Node, level: int) -> None:
        w = self.writer
        if isinstance(node, nodes.section):
            title = node.next_node(nodes.title)
            if title is not None:
                w.heading(level + 1, _plain(title), _line(title))
            for child in node.children:
                if child is not title:
                    self.node(child, level + 1)
        elif isinstance(node, nodes.title):
            return  # the document's title, or a section's: read above
        elif isinstance(node, (nodes.system_message, nodes.problematic, nodes.comment, nodes.raw,
                               nodes.substitution_definition, nodes.target, nodes.pending)):
            if isinstance(node, (nodes.system_message, nodes.raw, nodes.problematic)):
                w.drop(MARKUP)
        elif isinstance(node, nodes.paragraph):
            text = _plain(node)
            if text:
                w.block(PARAGRAPH, text, _line(node), plain=text, notes=self.notes_of(node))
        elif isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            items = [_plain(item) for item in node.children if isinstance(item, nodes.list_item)]
            items = [i for i in items if i]
            if items:
                ordered = isinstance(node, nodes.enumerated_list)
                w.block(LIST, list_text(items, ordered), _line(node), plain=" ".join(items), items=tuple(items),
                        ordered=ordered, notes=self.notes_of(node))
        elif isinstance(node, nodes.definition_list):
            for item in node.children:
                if isinstance(item, nodes.definition_list_item):
                    term = _plain(item.next_node(nodes.term) or item)
                    definition = item.next_node(nodes.definition)
                    words = _plain(definition) if definition is not None else ""
                    if term and words:
                        w.block(DEFINITION, f"{term}: {words}", _line(item), plain=f"{term}: {words}", term=term,
                                notes=self.notes_of(item))
        elif isinstance(node, (nodes.field_list, nodes.option_list)):
            for item in node.children:
                name, body = (item.children[0], item.children[-1]) if len(item.children) >= 2 else (item, item)
                term, words = _plain(name), _plain(body)
                if term and words:
                    w.block(DEFINITION, f"{term}: {words}", _line(item), plain=f"{term}: {words}", term=term)
        elif isinstance(node, nodes.docinfo):
            w.block(FRONT_MATTER, squeeze(node.astext()), _line(node))
        elif isinstance(node, (nodes.literal_block, nodes.doctest_block, nodes.line_block)):
            kind = CODE if not isinstance(node, nodes.line_block) else PARAGRAPH
            text = node.astext()
            w.block(kind, text if kind == CODE else squeeze(text), _line(node), plain=squeeze(text))
        elif isinstance(node, nodes.table):
            rows = [[_plain(entry) for entry in row.findall(nodes.entry)] for row in node.findall(nodes.row)]
            rows = [r for r in rows if any(r)]
            if rows:
                text = table_text(rows)
                w.block(TABLE, text, _line(node), plain=text, items=tuple(" | ".join(r) for r in rows))
        elif isinstance(node, (nodes.footnote, nodes.citation)):
            body = _plain_body(node)
            if body:
                w.block(FOOTNOTE, body, _line(node), plain=body)
        elif isinstance(node, nodes.topic) and "contents" in node.get("classes", []):
            w.drop("navigation")
        elif isinstance(node, (nodes.Admonition, nodes.block_quote, nodes.container, nodes.compound, nodes.topic,
                               nodes.sidebar, nodes.rubric, nodes.line, nodes.figure, nodes.legend)):
            if isinstance(node, nodes.rubric):
                return
            for child in node.children:
                self.node(child, level)
        elif isinstance(node, (nodes.image, nodes.transition, nodes.caption)):
            return
        elif isinstance(node, nodes.Element):
            for child in node.children:
                self.node(child, level)


def _plain_body(footnote: nodes.Element) -> str:
    return squeeze(" ".join(_plain(c) for c in footnote.children if not isinstance(c, nodes.label)))
