"""JSON Lines: one record a line, `{"question": "...", "answer": "...", "horn_type": "..."}`
(`text` for `answer` too; `horn_type` optional: FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE).

A line that is not such a record is skipped with its line and reason; the good lines go in. The
stored text is each record as a "question\\nanswer" block, blocks apart by a blank line.
"""
from __future__ import annotations

import json

from ..domain import HORN_TYPES, formats, limits
from .documents import PARAGRAPH, Block, Document, Outline, Unreadable

MEDIA_TYPE = "application/jsonl"
RECORD = formats.JSONL_RECORD


def record(line: str) -> tuple[str, str, str | None]:
    """One line's (question, answer, horn type or None); ValueError with the reason when it is not a record."""
    try:
        obj = limits.loads_json(line)
    except (limits.JSONTooDeep, limits.NotFinite) as exc:
        raise ValueError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"malformed JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:  # only if the interpreter's stack is smaller than the depth limit
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise ValueError("each line must be a JSON object")
    question = obj.get("question")
    answer = obj.get("answer", obj.get("text"))
    if not isinstance(question, str) or not question.strip():
        raise ValueError('missing "question" (a non-empty string)')
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError('missing "answer" (a non-empty string)')
    for name, value, what, limit in (("question", question, "a question", limits.QUESTION),
                                     ("answer", answer, "an answer", limits.ANSWER)):
        why = limits.refused_character(value)  # "\u0000" and lone "\ud800" are valid JSON
        if why:
            raise ValueError(f'"{name}" {why}')
        why = limits.too_long(what, limit, len(value.strip()))
        if why:
            raise ValueError(why)
    horn = obj.get("horn_type")
    if horn is not None and (not isinstance(horn, str) or horn.upper() not in HORN_TYPES):
        raise ValueError(f"unknown horn_type {horn!r}: expected one of {', '.join(HORN_TYPES)}")
    return question.strip(), answer.strip(), horn.upper() if horn else None


def read(content: str, title: str) -> Document:
    doc = Document(title=title, media_type=MEDIA_TYPE, content="")
    outline = Outline(doc, title_from_heading=False)
    parts: list[str] = []
    offset = 0
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            question, answer, horn = record(line)
        except ValueError as exc:
            doc.skipped.append((number, str(exc)))
            continue
        start = offset + len(question) + 1
        outline.add(Block(PARAGRAPH, answer, start, start + len(answer), number, question=question,
                          horn_type=horn or ""))
        parts.append(f"{question}\n{answer}")
        offset += len(parts[-1]) + 2
    if not parts:
        if doc.skipped:
            line, reason = doc.skipped[0]
            raise Unreadable(reason, line)
        raise Unreadable("no records: expected one JSON object per line")
    doc.content = "\n\n".join(parts)
    return outline.finish()
