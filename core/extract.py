"""Split a raw document into candidate answers (question, answer text, span) and fragments.

Pure functions, no I/O. Markdown: `#` is the title, `##`/`###` open sections; each paragraph and each
list block is one candidate (a numbered list is one PROCEDURE); a heading ending in `?` is the
question of the block under it; `Q:`/`A:` lines pair explicitly. Plain text: a first line that reads
like a title (short, not a sentence or a list item) is the title, else the file name is; a line in
capitals or ending in `:` opens a section. JSON Lines: one `{"question", "answer"}`
object per line (optional `horn_type`). A passage too short to state anything (fewer than five
words) becomes a fragment: an unknown for the grey queue, not a candidate.

A document that breaks a limit of `core.domain.limits` (a NUL, a lone surrogate, a question or answer too
long, JSON nested too deep) is refused whole, with the line where it does: never half of it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .domain import limits
from .classify import classify, open_question
from .domain import HORN_TYPES

MIN_WORDS = 5
MEDIA_TYPES = {".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain",
               ".jsonl": "application/jsonl"}


class ExtractError(ValueError):
    """A document that cannot be read as its type; `line` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass
class Unit:
    question: str
    text: str
    horn_type: str
    span: tuple[int, int]
    topic: str


@dataclass
class Extracted:
    title: str
    media_type: str
    content: str
    units: list[Unit] = field(default_factory=list)
    fragments: list[Unit] = field(default_factory=list)
    passages: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, text) for retrieval


QUESTION_FOR = {
    "FACT": "What is established about {topic}?",
    "RULE": "What rule applies to {topic}?",
    "CONSTRAINT": "What is forbidden regarding {topic}?",
    "PROCEDURE": "What are the steps for {topic}?",
    "OPEN_ISSUE": "What is still unsettled about {topic}?",
}


def question_for(horn_type: str, topic: str, text: str, names: frozenset[tuple[str, ...]] = frozenset()) -> str:
    """The question a unit answers, asked about its heading (its topic); `names` are the document's
    names (`_names`), which keep their capitals inside the question."""
    if horn_type == "OPEN_ISSUE":
        asked = open_question(text)
        if asked:
            return asked
    return QUESTION_FOR[horn_type].format(topic=_topic_phrase(topic, names))


_WORD = re.compile(r"[A-Za-z][\w'-]*")
# A run of capitalised words after a lower-case word or a comma: a name ("the Change Board").
_NAME_RUN = re.compile(r"(?<=[a-z,;:)] )[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")


def _names(prose: str) -> frozenset[tuple[str, ...]]:
    """The names the prose uses: runs of capitalised words mid-sentence; a single word only if the
    prose never writes it in lower case ("Rotterdam", not "Warehouse")."""
    lower = {w for w in _WORD.findall(prose) if w[0].islower()}
    runs = {tuple(run.split()) for run in _NAME_RUN.findall(prose)}
    return frozenset(run for run in runs if len(run) > 1 or run[0].lower() not in lower)


def _topic_phrase(topic: str, names: frozenset[tuple[str, ...]] = frozenset()) -> str:
    """A heading as it reads inside a question: "Rotterdam Warehouse" → "Rotterdam warehouse",
    "Change Board" stays when the document names it so; acronyms and codes are kept as written."""
    words = topic.strip().rstrip(":").strip().split()
    out: list[str] = []
    i = 0
    longest = max(map(len, names), default=0)  # no longer run can be a name: linear in the heading
    while i < len(words):
        run = next((k for k in range(min(len(words) - i, longest), 0, -1) if tuple(words[i:i + k]) in names), 0)
        if run:
            out += words[i:i + run]
            i += run
            continue
        word = words[i]
        out.append(word.lower() if word[:1].isupper() and word[1:] == word[1:].lower() else word)
        i += 1
    return " ".join(out) or "this document"


# The closing #s are stripped in code: as `(.*?)\s*#*\s*$` the pattern backtracks cubically
# through a heading with a long run of blanks inside it.
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_Q = re.compile(r"^\s*(?:\*\*)?Q(?:uestion)?:(?:\*\*)?\s*(.+)$", re.I)
_A = re.compile(r"^\s*(?:\*\*)?A(?:nswer)?:(?:\*\*)?\s*(.*)$", re.I)


def _blocks(content: str, heading_of):
    """Yield (kind, text, start, end) for headings, paragraphs and list blocks, with char offsets."""
    lines = content.splitlines(keepends=True)
    pos = 0
    block: list[tuple[str, int]] = []

    def flush():
        if block:
            start = block[0][1]
            end = block[-1][1] + len(block[-1][0].rstrip("\r\n"))
            text = content[start:end]
            yield _block_kind([line for line, _ in block]), text, start, end
            block.clear()

    for line in lines:
        stripped = line.strip()
        heading = heading_of(stripped)
        if not stripped:
            yield from flush()
        elif heading is not None:
            yield from flush()
            start = pos + line.index(stripped)
            yield "heading", heading, start, start + len(stripped)
        else:
            block.append((line, pos))
        pos += len(line)
    yield from flush()


def _block_kind(lines: list[str]) -> str:
    return "list" if lines and _LIST_ITEM.match(lines[0]) and all(
        _LIST_ITEM.match(line) or line.startswith((" ", "\t")) for line in lines) else "para"


def _title_line(line: str) -> bool:
    """Whether a plain-text document's first line names it: short, not a sentence, not a list item."""
    line = line.strip()
    return (0 < len(line) <= 80 and len(line.split()) <= 12 and not line.endswith((".", "!", "?", ";", ","))
            and not _LIST_ITEM.match(line))


def _md_heading(line: str):
    m = _HEADING.match(line)
    return (len(m.group(1)), m.group(2).rstrip().rstrip("#").rstrip()) if m else None


def _txt_heading(line: str):
    letters = [c for c in line if c.isalpha()]
    if len(letters) >= 2 and line.upper() == line and len(line) <= 80 and not line.endswith("."):
        return (2, line.title())
    if line.endswith(":") and len(line.split()) <= 8:
        return (2, line[:-1])
    return None


def _units_from_blocks(content: str, title: str, heading_of, first_line_title: bool) -> Extracted:
    out = Extracted(title=title, media_type="", content=content)
    topic = title
    pending_question: str | None = None
    pending_q_block: tuple[str, int] | None = None
    title_taken = False
    for kind, text, start, end in _blocks(content, heading_of):
        if first_line_title and not title_taken:
            title_taken = True
            if kind == "heading":
                out.title = topic = text[1]
                continue
            first, newline, rest = text.partition("\n")
            if _title_line(first):
                out.title = topic = first.strip()
                if not rest.strip():
                    continue
                # A title line with text right under it: the rest of the block is content.
                start, text = start + len(first) + len(newline), rest
                kind = _block_kind(rest.splitlines())
            # Otherwise the first block is content like any other, and the file name names the document.
        if kind == "heading":
            level, heading = text
            if level == 1 and not title_taken:
                title_taken = True
                out.title = heading
                topic = heading
                continue
            title_taken = True
            topic = heading
            pending_question = heading if heading.endswith("?") else None
            continue
        title_taken = True
        body = text.strip()
        # Q:/A: pairs, in one block or in two consecutive ones.
        lines = body.splitlines()
        q = _Q.match(lines[0])
        if q:
            answer_lines = [i for i, l in enumerate(lines) if _A.match(l)]
            if answer_lines:
                i = answer_lines[0]
                answer = "\n".join([_A.match(lines[i]).group(1)] + lines[i + 1:]).strip()
                a_start = start + text.index(lines[i])
                _add(out, q.group(1).strip(), answer, (a_start, end), topic)
            else:
                pending_q_block = (q.group(1).strip(), start)
            continue
        a = _A.match(lines[0])
        if a and pending_q_block:
            answer = "\n".join([a.group(1)] + lines[1:]).strip()
            _add(out, pending_q_block[0], answer, (start, end), topic)
            pending_q_block = None
            continue
        pending_q_block = None
        out.passages.append((start, end, body))
        if kind == "para" and len(body.split()) < MIN_WORDS:
            out.fragments.append(Unit(question="", text=body, horn_type="", span=(start, end), topic=topic))
            continue
        _add(out, pending_question, body, (start, end), topic)
        pending_question = None
    _ask_by_topic(out)
    return out


def _ask_by_topic(out: Extracted) -> None:
    """Units with no question of their own ask about their heading. Headings are often title case,
    so which of their capitals are names is read from the paragraphs alone."""
    names = _names("\n".join(text for _, _, text in out.passages))
    for unit in out.units:
        if not unit.question:
            unit.question = question_for(unit.horn_type, unit.topic, unit.text, names)


def _add(out: Extracted, question: str | None, text: str, span: tuple[int, int], topic: str,
         horn_type: str | None = None) -> None:
    horn = horn_type or classify(text)
    # No question of its own (""): `_ask_by_topic` asks one once the whole document is read.
    out.units.append(Unit(question=question or "", text=text, horn_type=horn, span=span, topic=topic))


def extract_markdown(content: str, fallback_title: str) -> Extracted:
    out = _units_from_blocks(content, fallback_title, _md_heading, first_line_title=False)
    out.media_type = "text/markdown"
    return out


def extract_text(content: str, fallback_title: str) -> Extracted:
    out = _units_from_blocks(content, fallback_title, _txt_heading, first_line_title=True)
    out.media_type = "text/plain"
    return out


def extract_jsonl(content: str, fallback_title: str) -> Extracted:
    parts: list[str] = []
    records = []
    offset = 0
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = limits.loads_json(line)
        except (limits.JSONTooDeep, limits.NotFinite) as exc:
            raise ExtractError(str(exc), number) from None
        except json.JSONDecodeError as exc:
            raise ExtractError(f"malformed JSON: {exc.msg} at column {exc.colno}", number) from None
        except RecursionError:  # only if the interpreter's stack is smaller than the depth limit
            raise ExtractError("JSON nested too deeply", number) from None
        if not isinstance(obj, dict):
            raise ExtractError("each line must be a JSON object", number)
        question = obj.get("question")
        answer = obj.get("answer", obj.get("text"))
        if not isinstance(question, str) or not question.strip():
            raise ExtractError('missing "question" (a non-empty string)', number)
        if not isinstance(answer, str) or not answer.strip():
            raise ExtractError('missing "answer" (a non-empty string)', number)
        for name, value, what, limit in (("question", question, "a question", limits.QUESTION),
                                         ("answer", answer, "an answer", limits.ANSWER)):
            why = limits.refused_character(value)  # "\u0000" and lone "\ud800" are valid JSON
            if why:
                raise ExtractError(f'"{name}" {why}', number)
            why = limits.too_long(what, limit, len(value.strip()))
            if why:
                raise ExtractError(why, number)
        horn = obj.get("horn_type")
        if horn is not None and (not isinstance(horn, str) or horn.upper() not in HORN_TYPES):
            raise ExtractError(f"unknown horn_type {horn!r}: expected one of {', '.join(HORN_TYPES)}", number)
        block = f"{question.strip()}\n{answer.strip()}"
        answer_start = offset + len(question.strip()) + 1
        records.append((question.strip(), answer.strip(), (answer_start, answer_start + len(answer.strip())),
                        horn.upper() if horn else None))
        parts.append(block)
        offset += len(block) + 2
    if not records:
        raise ExtractError("no records: expected one JSON object per line")
    doc = Extracted(title=fallback_title, media_type="application/jsonl", content="\n\n".join(parts))
    for question, answer, span, horn in records:
        doc.passages.append((span[0], span[1], answer))
        _add(doc, question, answer, span, fallback_title, horn_type=horn)
    return doc


def _line(content: str, offset: int) -> int:
    return content.count("\n", 0, offset) + 1


def _within_limits(doc: Extracted) -> None:
    """Each passage, question and answer of a Markdown or text document within its limit; else the
    first that is not, with its line. (JSON Lines records are checked as they are read.)"""
    for start, _, text in doc.passages:
        why = limits.too_long("an answer", limits.ANSWER, len(text.strip()))
        if why:
            raise ExtractError(why, _line(doc.content, start))
    for unit in doc.units:
        why = (limits.too_long("a question", limits.QUESTION, len(unit.question.strip()))
               or limits.too_long("an answer", limits.ANSWER, len(unit.text.strip())))
        if why:
            raise ExtractError(why, _line(doc.content, unit.span[0]))


def extract(path: Path, content: str) -> Extracted:
    suffix = path.suffix.lower()
    title = path.stem.replace("-", " ").replace("_", " ").strip() or path.name
    if suffix not in MEDIA_TYPES:
        raise ExtractError(f"unsupported file type {suffix or '(none)'}: expected .md, .txt or .jsonl")
    at = limits.first_refused(content)
    if at >= 0:
        raise ExtractError(f"the file {limits.refused_character(content)}", _line(content, at))
    if suffix == ".jsonl":
        doc = extract_jsonl(content, title)
    else:
        doc = (extract_text if suffix == ".txt" else extract_markdown)(content, title)
        _within_limits(doc)
    if not doc.units and not doc.fragments:  # empty, or headings alone: no document to keep
        raise ExtractError("nothing to review in it: no statement, list or question")
    return doc
