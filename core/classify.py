"""The deterministic Horn-type classifier: reads a passage's logical form.

First match wins, in an order that respects logic: an unsettled question is an OPEN_ISSUE whatever
else it says; ordered steps are a PROCEDURE; a prohibition is a CONSTRAINT (a clause with no head),
even when it has conditions ("never X when Y" forbids X∧Y); a condition makes a RULE; the rest
holds unconditionally, a FACT.
"""
from __future__ import annotations

import re

_OPEN = re.compile(
    r"\?\s*$|\b(unclear|unresolved|open question|tbd|to be decided|not yet decided|undecided|"
    r"it is not known whether|not yet known|remains to be (?:seen|decided|settled))\b", re.I | re.M)
# Leading blanks of one line only: `^\s*` would rescan every following blank line from each line
# start (quadratic in a text of blank lines).
_STEP_LINE = re.compile(r"^[^\S\n]*(?:\d+[.)]|step\s+\d+[:.)]?)\s+\S", re.I | re.M)
# "first … then … finally", searched word after word: as one pattern (`first.*then.*finally`) it
# backtracks cubically through a text of many "first then" without a "finally".
_FIRST, _THEN, _FINALLY = (re.compile(rf"\b({words})\b", re.I) for words in ("first", "then", "finally|lastly"))
_PROHIBITION = re.compile(
    r"\b(must not|mustn't|must never|never|may not|shall not|cannot|can not|can't|is prohibited|are prohibited|"
    r"is forbidden|are forbidden|do not|don't|does not permit|not allowed|not permitted|no one may|nobody may)\b",
    re.I)
_CONDITION = re.compile(
    r"\b(if|when|whenever|unless|provided that|as long as|in case|only after)\b", re.I)


def classify(text: str) -> str:
    if _OPEN.search(text.strip()):
        return "OPEN_ISSUE"
    if len(_STEP_LINE.findall(text)) >= 2 or _sequence(text):
        return "PROCEDURE"
    if _PROHIBITION.search(text):
        return "CONSTRAINT"
    if _CONDITION.search(text):
        return "RULE"
    return "FACT"


def _sequence(text: str) -> bool:
    first = _FIRST.search(text)
    then = first and _THEN.search(text, first.end())
    return bool(then and _FINALLY.search(text, then.end()))


def open_question(text: str) -> str | None:
    """The sentence of an OPEN_ISSUE passage that asks the question, when it has one."""
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        if sentence.endswith("?"):
            return sentence.strip()
    return None
