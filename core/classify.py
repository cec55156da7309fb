"""The deterministic Horn-type classifier for a text alone (a candidate added by hand, a resubmitted
or generated answer): the rules of core/knowledge/horn.py, numbered lines read as a numbered list."""
from __future__ import annotations

import re

from .knowledge.horn import of_text


def classify(text: str) -> str:
    return of_text(text)


def open_question(text: str) -> str | None:
    """The sentence of an OPEN_ISSUE passage that asks the question, when it has one."""
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        if sentence.endswith("?"):
            return sentence.strip()
    return None
