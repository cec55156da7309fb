"""What an answer is about: its subjects, taken from its key terms (docs/architecture.md, "Conflicts").

Pure, rule-based, no I/O and no language model: two answers about one thing share a subject however
their questions are worded ("How long are backups kept?" and "What is established about backup
retention?" both reach "backup"), so contradiction detection compares them.

A subject is a normalised key term, lowercase, plural nouns singularised lightly ("docks" → "dock",
"batteries" → "battery", "boxes" → "box"):

- the topic of a templated question (the phrase after "What is established about", …);
- named things: runs of capitalised words that are not merely the first word of a sentence
  ("Quay WMS", "Rotterdam warehouse" gives "rotterdam"), and codes such as "RTM-1";
- noun phrases: runs of content words (no stopwords, verbs, numbers or adverbs), read as their
  head noun and, when the run has one, the head with the word before it ("cold room", "room").

Terms are scored (a name or the question's topic counts more than a word of the text, a term used
in both the question and the text more than one used once) and the best `LIMIT` are returned,
best first, ties in order of first appearance: the same input always gives the same list.
"""
from __future__ import annotations

import re

from .questions import QUESTION_FOR

LIMIT = 6

# The openings of the questions extraction writes ("What is established about {topic}?", …)
_TEMPLATES = [t.split("{topic}")[0].strip().lower() for t in QUESTION_FOR.values()]

# Function words, question words, and the verbs, adjectives and adverbs a handbook sentence uses
# around its nouns: none of them is what an answer is about.
_STOP = frozenset("""
a an the this that these those there here it its it's they them their theirs we us our you your he she
his her him i me my of in on at by for from to into onto over under with without within about after
before between during through across per via than then as and or nor but if so not no yes do does did
done be is are was were been being am has have had having can could may might must shall should will
would need needs needed ought what which who whom whose when where why how whether all any each every
some most more less least few many much other another such same own only also just very too still yet
again ever never always often sometimes usually once twice up down out off away back first second third
last next new old one two three four five six seven eight nine ten twelve hundred thousand half
keep keeps kept held hold holds take takes taken took make makes made run runs ran give gives given get
gets got use uses used using go goes went come comes came see seen show shows shown say says said tell
put puts set sets report reports reported follow follows followed check checks checked record records
recorded approve approves approved publish publishes published require requires required allow allows
allowed permit permits permitted prohibit prohibits prohibited forbid forbids forbidden apply applies
applied regarding established unsettled steps step rule rules answer answers question questions
wear wears worn store stores stored send sends sent receive receives received call calls called review
reviews reviewed escalate escalates escalated start starts started stop stops stopped open opens close
closes closed leave leaves left reach reaches reached add adds added remove removes removed assign
assigns assigned sign signs signed list lists listed include includes included contain contains
exceed exceeds last lasts lasted stay stays stayed remain remains remained become becomes became
decide decides decided agree agrees known unknown clear unclear possible available responsible
able unable least usual every daily weekly monthly yearly annual annually nightly hourly long short
high low large small big full empty good bad due else whenever wherever however therefore
fast slow quick quickly soon late early often
second seconds minute minutes hour hours day days week weeks month months year years time times percent
per cent degree degrees metre metres meter meters kilometre kilometres mile miles kilogram kilograms
employ employs manage manages operate operates own owns
staff people person everyone anyone someone thing things way ways part parts kind number numbers
""".split())

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*[A-Za-z0-9]|[A-Za-z]|\d[\w.,:-]*")  # "SEV1", "RTM-1" whole
_BREAK = re.compile(r"[.;:!?()\[\]\"“”,\n]")
_CODE = re.compile(r"^[A-Z]{2,}(?:-?\d+)?$|^[A-Z]+-?\d+$")


def singular(word: str) -> str:
    """A plural noun's singular, lightly: docks → dock, batteries → battery, boxes → box, glass stays."""
    w = word.lower()
    if len(w) <= 3 or w.endswith(("ss", "us", "is", "ics")):
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "xes", "zes", "sses")):
        return w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


def _content(word: str) -> bool:
    w = word.lower()
    if w in _STOP or not w[0].isalpha() or len(w) < 3:
        return False
    if w.endswith("ly") and len(w) > 4:  # adverbs
        return False
    if w.endswith("ed") and len(w) > 4 and not w.endswith("eed"):  # past participles: "retained"
        return False
    return True


def topic_of(question: str) -> str | None:
    """The topic of a question an older r2k wrote from a template (core/knowledge/questions.py), as written; else None."""
    q = question.strip().rstrip("?").strip()
    low = q.lower()
    for template in _TEMPLATES:
        if low.startswith(template + " "):
            return q[len(template) + 1:].strip()
    return None


def _segments(text: str):
    """Yield lists of (word, sentence_initial) between punctuation breaks."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        first = True
        for piece in _BREAK.split(sentence):
            words = _WORD.findall(piece)
            if words:
                yield [(w, first and i == 0) for i, w in enumerate(words)]
                first = False


def _terms(text: str, lower_words: set[str]):
    """Yield (term, weight) in order of appearance: names first within their run, then noun phrases."""
    for segment in _segments(text):
        # Named things: capitalised runs, a sentence's first word only when the text never writes it in
        # lower case or it starts a longer run.
        i = 0
        while i < len(segment):
            word, initial = segment[i]
            if word[0].isupper() and (word.lower() not in _STOP or _CODE.match(word)):
                j = i
                while j < len(segment) and segment[j][0][0].isupper():
                    j += 1
                run = [w for w, _ in segment[i:j]]
                while run and run[-1].lower() in _STOP:
                    run.pop()
                if run and (len(run) > 1 or not initial or run[0].lower() not in lower_words) \
                        and (len(run) > 1 or _CODE.match(run[0]) or run[0].lower() not in lower_words):
                    yield " ".join(singular(w) if k == len(run) - 1 and not _CODE.match(w) else w.lower()
                                   for k, w in enumerate(run)), 3
                i = max(j, i + 1)
            else:
                i += 1
        # Noun phrases: runs of content words, their head and the head with its modifier.
        run: list[str] = []
        for word, _ in segment + [("", False)]:
            if word and _content(word):
                run.append(word)
                continue
            if run:
                head = singular(run[-1])
                if len(run) > 1:
                    yield f"{run[-2].lower()} {head}", 1
                yield head, 1
            run = []


def subjects_of(question: str, text: str) -> list[str]:
    """An answer's subjects, best first, at most `LIMIT`, lowercase, stable for the same input."""
    question = question or ""
    text = text or ""
    lower_words = {w.lower() for w in _WORD.findall(question + " " + text) if w[0].islower()}
    score: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    in_question: set[str] = set()
    in_text: set[str] = set()
    order = 0

    def add(term: str, weight: float, where: set[str]) -> None:
        nonlocal order
        term = re.sub(r"\s+", " ", term.strip().lower().replace("’", "'"))
        if not term or term in _STOP or len(term) < 3:
            return
        score[term] = score.get(term, 0) + weight
        where.add(term)
        if term not in first_seen:
            first_seen[term] = order
            order += 1

    topic = topic_of(question)
    if topic:
        words = [w for w in _WORD.findall(topic) if _content(w) or _CODE.match(w)]
        if words:
            add(" ".join(w.lower() for w in words[:-1]) + (" " if len(words) > 1 else "") + singular(words[-1]),
                4, in_question)
        asked = topic
    else:
        asked = question
    for term, weight in _terms(asked, lower_words):
        add(term, weight + 1, in_question)
    for term, weight in _terms(text, lower_words):
        add(term, weight, in_text)
    for term in in_question & in_text:  # said in both: what the answer is about
        score[term] += 2
    ranked = sorted(score, key=lambda t: (-score[t], first_seen[t]))
    return ranked[:LIMIT]
