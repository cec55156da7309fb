"""The deterministic Horn-type classifier for a text alone (a candidate added by hand, a resubmitted
or generated answer): the rules of core/knowledge/horn.py, numbered lines read as a numbered list."""
from __future__ import annotations

from .knowledge.horn import of_text


def classify(text: str) -> str:
    return of_text(text)

