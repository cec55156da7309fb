"""The built-in extractive generator: with no LLM configured, an answer is quoted from the best
source (the first: retrieval ranks them), cited by its number, and kept on the question's topic.
Pure logic.

The best source is a section. When its heading names what the question asks about (half of the
question's telling words or more), the section is the answer and is quoted whole, up to
`max_sentences`. Otherwise its sentences that share a telling word with the question (or with
nothing to go on, its first) are. Another source adds one sentence at most, and only one that
shares most of the question's telling words itself: a sentence that merely has one of them (a
question on personal protective equipment, a rule on personal headphones and hearing protection) is off topic.
A sentence that leaves its matter undecided ("It is not yet decided whether…") is never quoted: it
restates a question, it does not answer one.
"""
from __future__ import annotations

import math
import re

from ..adapters.llm import Generation
from ..classify import classify

_WORD = re.compile(r"[a-z0-9]+")
# Function words, and the words of asking (r2k's question templates among them): not a topic.
_STOP = set("a an and are as at be by for from has have how in is it its of on or that the this to was what when "
            "which who whom why will with does do did about can could should would may might must shall there their "
            "they them any all each many much long often get got need needs happen happens allowed allow "
            "established rule rules applies apply forbidden regarding steps step still unsettled exactly".split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
ON_TOPIC = 0.75    # share of the question's telling words another source's sentence must have
HEADING_NAMES = 0.5  # share of them the best source's heading must have to be quoted whole


def stem(word: str) -> str:
    """A crude stem, enough to match "protective" with "protection" and "backups" with "backup"."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ive", "ion", "ions", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def sentences(text: str) -> list[str]:
    """A passage's sentences; each list item counts as one."""
    out = []
    for line in text.strip().splitlines():
        parts = [line] if _LIST_ITEM.match(line) else _SENTENCE.split(line)  # "1. Stop …" is one item
        out += [part.strip() for part in parts if part.strip()]
    return out


def undecided(sentence: str) -> bool:
    """A sentence that leaves its matter open ("It is not yet decided whether…", a question): it
    restates what is asked, it answers nothing."""
    return classify(sentence) == "OPEN_ISSUE"


def supports(question: str, source: dict) -> bool:
    """Whether a source can ground an answer to `question`: some sentence of it that bears on the
    question (it, or its section's heading, shares a telling word) settles something. A source whose
    sentences on it only say the matter is undecided restates the question; it supports no answer."""
    wanted = terms(question)
    heading = terms(source.get("heading") or "")
    return any(not undecided(p) and (not wanted or wanted & (terms(p) | heading)) for p in sentences(source["text"]))


def select(question: str, sources: list[dict], max_sentences: int = 6) -> list[tuple[int, str]]:
    """The (source number, sentence) pairs the answer quotes, in source order; never a sentence that
    leaves its matter undecided."""
    wanted = terms(question)
    if not sources:
        return []
    best = sources[0]
    parts = [p for p in sentences(best["text"]) if not undecided(p)]
    if not parts:
        return []
    heading = terms(best.get("heading") or "")
    if not wanted or len(wanted & heading) >= math.ceil(HEADING_NAMES * len(wanted)):
        chosen = [(1, p) for p in parts[:max_sentences]]
    else:
        # A sentence is kept when it, or its section's heading, has a telling word of the question.
        sharing = [(len(wanted & (terms(p) | heading)), i) for i, p in enumerate(parts)]
        keep = sorted(i for n, i in sorted(sharing, key=lambda s: (-s[0], s[1]))[:max_sentences] if n > 0)
        chosen = [(1, parts[i]) for i in keep] or [(1, parts[0])]
    seen = [terms(p) for _, p in chosen]
    need = max(2, math.ceil(ON_TOPIC * len(wanted)))
    for number, source in enumerate(sources[1:], start=2):
        if source.get("related"):
            continue  # context near the best source, not an answer to the question
        extra = next((p for p in sentences(source["text"]) if len(wanted & terms(p)) >= need
                      and not _repeats(terms(p), seen) and not undecided(p)), None)
        if extra:
            return chosen + [(number, extra)]  # one sentence from the other sources, in all
    return chosen


def _repeats(words: set[str], seen: list[set[str]]) -> bool:
    return any(len(words & other) >= 0.8 * max(len(words), 1) for other in seen)


def extractive(question: str, sources: list[dict], max_sentences: int = 6) -> Generation:
    """Compose an answer from the best source, on the question's topic, each sentence cited."""
    chosen = select(question, sources, max_sentences)
    lines: list[str] = []
    for i, (number, sentence) in enumerate(chosen):
        last_of_source = i + 1 == len(chosen) or chosen[i + 1][0] != number
        if _LIST_ITEM.match(sentence):
            lines.append(sentence + (f" [{number}]" if last_of_source else ""))
        else:
            lines.append(f"{sentence.rstrip()} [{number}]")
    text = ""
    for line in lines:  # list items one a line, sentences run on
        if not text:
            text = line
        elif _LIST_ITEM.match(line) or _LIST_ITEM.match(text.rsplit("\n", 1)[-1]):
            text += "\n" + line
        else:
            text += " " + line
    return Generation(text=text, model="extractive")
