"""The built-in extractive generator: with no LLM configured, an answer is composed of the sentences
that answer the question, picked across the sources retrieval found, each cited by its source's
number (docs/architecture.md, "Retrieval and generation"). Pure logic: the sentences' nearness in
meaning to the question, when the caller has an embedder, comes in as a function.

- **Units.** Each source (never one marked `related`: context near another, not an answer) is cut
  into units: its sentences, its list items (each with the sentence that introduces its list), and
  its definitions ("term: what it is"), each later sentence of a definition kept with its term.
- **Support.** A unit is scored by the question's telling words it has (each weighed by how rare it
  is among the sources' units, the section's heading counting half), plus its nearness in meaning
  to the question when given, plus a little for a better ranked source. A sentence that refers back
  ("Currently that includes…", "This protects against…") scores most of what the one before it does:
  it is about the same thing.
- **Choice.** The best unit, then the others scoring at least `KEEP` of it, at most `max_sentences`,
  from any source and from anywhere in a section; quoted in source order, then in their order
  within it. A unit that repeats one already chosen (a list item never repeats its intro, whose words
  it is scored with), or that leaves its matter undecided ("It is not yet decided whether…"), is
  never quoted: it restates a question, it answers none.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

from ...adapters.llm import Generation
from ...knowledge.classify import classify

_WORD = re.compile(r"[a-z0-9_]+")
# Function words, and the words of asking (r2k's question templates among them): not a topic.
_STOP = set("a an and are as at be by for from has have how in is it its of on or that the this to was what when "
            "which who whom why will with does do did about can could should would may might must shall there their "
            "they them any all each many much long often get got need needs happen happens allowed allow "
            "established rule rules applies apply forbidden regarding steps step still unsettled exactly "
            "i me my we our you your if into than then so not no yes".split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(“\"'_])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# "shared_buffers (integer): Sets …", "hostssl: This record …": a term (a few words, no sentence
# of its own) and what it is.
_DEFINITION = re.compile(r"^\s*((?:[^\s:]+\s+){0,5}?[^\s:]+):\s+(?=\S)")
# A question after a figure, and a sentence that gives one.
_QUANTITY_ASKED = re.compile(r"\bhow (?:much|many|long|often|large|big|fast|soon)\b|\bdefaults?\b|\bout of the box\b|"
                             r"\bunless (?:configured|told|set)\b|\bwhich (?:port|version)\b|\bminimum\b|\bmaximum\b|"
                             r"\blimit\b|\bat (?:least|most)\b", re.IGNORECASE)
_QUANTITY = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred|thousand|"
                       r"million|billion|twice|half|default)\b", re.IGNORECASE)
MAX_SENTENCES = 6
QUANTITY_BONUS = 0.3  # what stating a figure adds to a unit's score, for a question after one
KEEP = 0.3           # share of the best unit's score another must reach to be quoted beside it
HEADING_SHARE = 1.0  # a question word in the section's heading counts as one in the unit: the section is about it
# What the unit's cosine with the question adds to its word score. 0 with the shipped static model: its
# sentence vectors cost the real sets' answers (bench/retrieval.py's composition rows); an endpoint's
# better model may earn a weight there. At 0 the sentences are not embedded at all.
MEANING_WEIGHT = 0.0
RANK_STEP = 0.03     # what each step down the sources' ranking costs a unit
CONTEXT_WEIGHT = 0.5  # what the best score in a unit's paragraph adds to its own
HEADING_NAMES = 0.5  # share of the question's telling words a heading must have to name the question
NAMED_OTHERS = 0.75  # share of them another source's sentence must have, beside a section so named
ON_TOPIC = 0.3       # share of the best paragraph's hold on the question another must have to be quoted
# A sentence that refers back ("Currently that includes Linux…", "This protects against…", "Therefore, …")
# is about what the sentence before it is about: that one's word score counts for it, times this.
REFERS_BACK = 0.8
INTRO_NOT_REPEATED = True  # a list item is never a repeat of the sentence that introduces its list
_REFERS_BACK = re.compile(r"^\W*(?:(?:currently|therefore|thus|hence|so|also|however|otherwise|instead|"
                          r"consequently|in (?:this|that|which) case|for (?:this|that) reason),?\s+)?"
                          r"(?:this|that|these|those|it|they|such|therefore|thus|hence|consequently)\b",
                          re.IGNORECASE)


def stem(word: str) -> str:
    """A crude stem, enough to match "protective" with "protection" and "backups" with "backup"."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ive", "ion", "ions", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4 and not (suffix == "s" and word.endswith("ss")) \
                and not (suffix == "ed" and word.endswith("eed")):  # "exceed" is no past
            return _final_e(word[: -len(suffix)])
    if word.endswith("ed") and not word.endswith("eed") and len(word) >= 5:
        return word[:-2]  # a short past: "saved" is "sav", as "save" is
    if word.endswith("s") and not word.endswith("ss") and len(word) >= 4:
        return _final_e(word[:-1])  # a short plural: "maps" is "map", "ends" is "end"
    return _final_e(word)


def _final_e(word: str) -> str:
    """"save" as "sav", "exclude" as "exclud": the forms that drop it ("saving", "excluded") meet it."""
    return word[:-1] if word.endswith("e") and len(word) >= 4 else word


def terms(text: str) -> set[str]:
    """The telling words of a text, stemmed; a name like shared_buffers also as its words."""
    out = set()
    for w in _WORD.findall(text.lower()):
        for part in ([w, *w.split("_")] if "_" in w.strip("_") else [w]):
            if part not in _STOP and len(part) > 1:
                out.add(stem(part))
    return out


def asks_quantity(question: str) -> bool:
    """A question after an amount, a limit, a default or a version: a sentence that states one
    (a figure, a number word) answers it better than one that only names the matter."""
    return bool(_QUANTITY_ASKED.search(question))


def lines(text: str) -> list[str]:
    """A passage's logical lines: its paragraphs (a hard-wrapped paragraph joined again) and its list
    items (each with its indented continuation), in order."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        current = ""
        for raw in block.splitlines():
            line = raw.strip()
            if not line:
                continue
            if _LIST_ITEM.match(raw) or not current or (_LIST_ITEM.match(current) and not raw[:1].isspace()) \
                    or _DEFINITION.match(raw) and not raw[:1].isspace() and current.rstrip().endswith((".", ":")):
                if current:
                    out.append(current)
                current = line
            else:
                current += " " + line
        if current:
            out.append(current)
    return out


def sentences(text: str) -> list[str]:
    """A passage's sentences; each list item counts as one."""
    out = []
    for line in lines(text):
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


@dataclass
class Unit:
    """One quotable piece of a source: a sentence, a list item, or a definition's sentence."""
    number: int         # the source's number, 1 the best ranked
    position: int       # its order within the source
    text: str           # what is quoted
    lead: str = ""      # what it is quoted with: its list's intro, or its definition's term
    paragraph: int = 0  # which of the source's logical lines (a paragraph, a definition, a list) it is of
    score: float = 0.0

    @property
    def said(self) -> str:
        return f"{self.lead} {self.text}".strip()


def units(number: int, text: str) -> list[Unit]:
    """A source's units, in order: sentences; list items led by the sentence (or the item) that
    introduces their list; a definition's sentences after its first led by its term."""
    out: list[Unit] = []
    intro, paragraph = "", 0
    for line in lines(text):
        if _LIST_ITEM.match(line):
            item = line.strip()
            out.append(Unit(number, len(out), item, lead=intro, paragraph=paragraph))
            if item.endswith(":"):
                intro = item  # an item that opens a list of its own
            continue
        paragraph += 1
        defined = _DEFINITION.match(line)
        if defined and re.search(r"[.!?]\s", defined.group(1) + " "):
            defined = None  # a sentence before the colon, not a term
        parts = [p.strip() for p in _SENTENCE.split(line.strip()) if p.strip()]
        term = defined.group(1).strip() if defined else ""
        for i, part in enumerate(parts):
            out.append(Unit(number, len(out), part, lead=f"{term}:" if term and i else "", paragraph=paragraph))
        intro = parts[-1] if parts and parts[-1].endswith(":") else ""
    return out


def select(question: str, sources: list[dict], max_sentences: int = MAX_SENTENCES,
           meaning: Callable[[str, list[str]], list[float] | None] | None = None) -> list[tuple[int, str]]:
    """The (source number, text) pairs the answer quotes, in source order: the units that best answer
    `question` across the sources (a list item with its intro, a definition's sentence with its term
    before it, once). `meaning(question, texts)` gives each text's cosine with the question, or None."""
    wanted = terms(question)
    pool: list[Unit] = []
    headings: dict[int, set[str]] = {}
    for number, source in enumerate(sources, start=1):
        if source.get("related"):
            continue  # context near another source, not an answer to the question
        headings[number] = terms(source.get("heading") or "")
        pool += [u for u in units(number, source.get("text") or "") if not undecided(u.text)]
    if not pool:
        return []
    own = [terms(u.said) for u in pool]
    df: dict[str, int] = {}
    for words in own:
        for w in words & wanted:
            df[w] = df.get(w, 0) + 1
    weight = {w: math.log(1 + len(pool) / (1 + df.get(w, 0))) for w in wanted}
    total = sum(weight.values()) or 1.0
    near = meaning(question, [u.said for u in pool]) if meaning and wanted and MEANING_WEIGHT else None
    figure = asks_quantity(question)
    lexical, topic = [], []
    for i, u in enumerate(pool):
        heading = headings[u.number] - own[i]
        lexical.append((sum(weight[w] for w in wanted & own[i])
                        + HEADING_SHARE * sum(weight[w] for w in wanted & heading)) / total)
        topic.append(sum(weight[w] for w in wanted & (own[i] | heading)) / total)
        before = i - 1  # the sentence just before, in the same paragraph
        if REFERS_BACK and before >= 0 and pool[before].number == u.number and pool[before].paragraph == u.paragraph \
                and not _LIST_ITEM.match(u.text) and _REFERS_BACK.match(u.text):
            lexical[i] = max(lexical[i], REFERS_BACK * lexical[before])
            topic[i] = max(topic[i], topic[before])
    # A sentence is borne out by its paragraph: the best of its paragraph's words counts for it too.
    context: dict[tuple[int, int], float] = {}
    on_topic: dict[tuple[int, int], float] = {}
    for i, u in enumerate(pool):
        key = (u.number, u.paragraph)
        context[key] = max(context.get(key, 0.0), lexical[i])
        on_topic[key] = max(on_topic.get(key, 0.0), topic[i])
    for i, u in enumerate(pool):
        u.score = lexical[i] + CONTEXT_WEIGHT * context[(u.number, u.paragraph)] \
            + (MEANING_WEIGHT * max(near[i], 0.0) if near else 0.0) - RANK_STEP * (u.number - 1) \
            + (QUANTITY_BONUS if figure and _QUANTITY.search(u.text) else 0.0)
    ranked = sorted(range(len(pool)), key=lambda i: (-pool[i].score, pool[i].number, pool[i].position))
    best = pool[ranked[0]].score
    lead_topic = on_topic[(pool[ranked[0]].number, pool[ranked[0]].paragraph)]
    # The best unit's section named for the question (its heading has half its telling words): that
    # section answers it, and another source adds only a sentence that has most of the question itself.
    first = pool[ranked[0]].number
    named = bool(wanted) and len(wanted & headings[first]) >= math.ceil(HEADING_NAMES * len(wanted))
    chosen: list[int] = []
    for i in ranked:
        if len(chosen) >= max_sentences or (chosen and pool[i].score < KEEP * best):
            break
        if chosen and _repeats(own[i], [own[j] for j in chosen if not _parallel(pool[i], pool[j])]):
            continue
        if chosen and on_topic[(pool[i].number, pool[i].paragraph)] < ON_TOPIC * lead_topic:
            continue  # a stray word of the question, in a paragraph about something else
        if chosen and named and pool[i].number != first and len(wanted & own[i]) < NAMED_OTHERS * len(wanted):
            continue  # a stray word beside the section the question names
        chosen.append(i)
    chosen.sort(key=lambda i: (pool[i].number, pool[i].position))
    out: list[tuple[int, str]] = []
    said: set[tuple[int, str]] = set()
    for i in chosen:
        u = pool[i]
        if u.lead and not _LIST_ITEM.match(u.text):
            quoted = [f"{u.lead} {u.text}"]  # a definition's sentence with its term
        elif u.lead:
            quoted = [u.lead, u.text]  # the list's intro (once), then the item
        else:
            quoted = [u.text]
        for text in quoted:
            if (u.number, text) not in said:
                said.add((u.number, text))
                out.append((u.number, text))
    return out


def _parallel(a: Unit, b: Unit) -> bool:
    """Two items of one list, or an item and the sentence that introduces its list: alike by design
    (an item is quoted with its intro's words), neither repeats the other."""
    if a.number != b.number:
        return False
    if INTRO_NOT_REPEATED and ((a.lead and a.lead == b.text) or (b.lead and b.lead == a.text)):
        return True
    return a.lead == b.lead and bool(_LIST_ITEM.match(a.text)) and bool(_LIST_ITEM.match(b.text))


def _repeats(words: set[str], seen: list[set[str]]) -> bool:
    return any(len(words & other) >= 0.8 * max(len(words), 1) for other in seen)


def extractive(question: str, sources: list[dict], max_sentences: int = MAX_SENTENCES,
               meaning: Callable[[str, list[str]], list[float] | None] | None = None) -> Generation:
    """Compose an answer from the sentences that answer `question`, across the sources, each cited."""
    chosen = select(question, sources, max_sentences, meaning)
    lines: list[str] = []
    for i, (number, sentence) in enumerate(chosen):
        last_of_source = i + 1 == len(chosen) or chosen[i + 1][0] != number
        if _LIST_ITEM.match(sentence):
            lines.append(sentence + (f" [{number}]" if last_of_source or not _LIST_ITEM.match(chosen[i + 1][1])
                                     else ""))
        elif sentence.rstrip().endswith(":") and i + 1 < len(chosen) and chosen[i + 1][0] == number \
                and _LIST_ITEM.match(chosen[i + 1][1]):
            lines.append(sentence.rstrip())  # a list's intro: cited with its items
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


def grounding(asked: str, retrieved: list[dict]) -> list[dict]:
    """The retrieved sources that may ground an answer: those that support one (`supports`). A
    passage retrieval added only because it is near another (`related`) is context, never a source:
    it neither counts toward the two an answer needs nor reaches the prompt or the extractive answer.
    Generation and the grey queue's automation count sources by it alike."""
    return [s for s in retrieved if not s.get("related") and supports(asked, s)]
