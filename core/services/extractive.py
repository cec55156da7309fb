"""The built-in extractive generator: with no LLM configured, an answer is composed from the source
sentences that share most terms with the question, each cited by its source's number. Pure logic.
"""
from __future__ import annotations

import re

from ..adapters.llm import Generation

_WORD = re.compile(r"[a-z0-9]+")
_STOP = set("a an and are as at be by for from has have how in is it its of on or that the this to was what when "
            "which who why will with does do about".split())


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def extractive(question: str, sources: list[dict], max_sentences: int = 3) -> Generation:
    """Compose an answer from the source sentences sharing most terms with the question, cited."""
    wanted = _terms(question)
    scored = []
    for number, source in enumerate(sources, start=1):
        for position, sentence in enumerate(re.split(r"(?<=[.!?])\s+", source["text"].strip())):
            sentence = sentence.strip()
            if len(sentence.split()) < 4:
                continue
            overlap = len(wanted & _terms(sentence))
            scored.append((-overlap, number, position, sentence))
    scored.sort()
    chosen = [s for s in scored if -s[0] > 0][:max_sentences] or scored[:1]
    chosen.sort(key=lambda s: (s[1], s[2]))
    text = " ".join(f"{sentence.rstrip()} [{number}]" for _, number, _, sentence in chosen)
    return Generation(text=text, model="extractive")
