"""The question a claim answers: one a person would ask, specific to its statement, with no LLM
(docs/architecture.md, "Documents and extraction").

In order: the document's own question (a `Q:` line, a heading that asks, a JSON Lines record); an
open issue's own asking sentence; a definition's "What is TERM?"; a procedure's goal ("How do you
upgrade the server?", from its intro or its heading); else the claim's first sentence turned into
a question: a leading condition asks what happens then ("What happens if the cold room passes
8 °C?"), a modal or a form of "be" or "have" is moved to the front ("May drivers stand behind a
reversing truck?", "How are nightly backups kept?"), a verb of the third person is asked with
"does", an order with "Should you …?". A sentence it cannot turn asks what the section says about
its subject. Questions that would be the same for different claims of one document are told apart
by their section (`distinct`).
"""
from __future__ import annotations

import re

from .claims import Claim, sentences
from .documents import squeeze
from .horn import action

MAX_WORDS = 24  # a question longer than this is cut at a clause boundary

# Templates an older r2k wrote over headings: kept so that the subjects of questions stored then are still read.
QUESTION_FOR = {
    "FACT": "What is established about {topic}?",
    "RULE": "What rule applies to {topic}?",
    "CONSTRAINT": "What is forbidden regarding {topic}?",
    "PROCEDURE": "What are the steps for {topic}?",
    "OPEN_ISSUE": "What is still unsettled about {topic}?",
}

_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_MODALS = ("must", "shall", "should", "may", "can", "will", "would", "could", "might")
_BE = ("is", "are", "was", "were")
_HAVE = ("has", "have")
_NEGATION = ("not", "never", "n't")
_ADVERBS = frozenset("also only always usually normally generally typically still already just then first "
                     "automatically explicitly simply now often".split())
_CONDITION = re.compile(r"^(if|when|whenever|unless|once|after|before|while|where|in case)\b\s*(.+?),\s+(.+)$",
                        re.I | re.S)
_ASKS = re.compile(r"[^.!?]*\?")
_WHETHER = re.compile(r"\bwhether\s+(.+?)[.?!]*$", re.I | re.S)
_GOAL = re.compile(r"^(?:in order )?to ([^,:]{3,120})[,:]", re.I)
_HOW_TO = re.compile(r"\bhow to ([^,:.]{3,120})", re.I)
_PRONOUN_SUBJECT = frozenset("it this that these those they he she its their them such there which".split())
_OBJECT_START = frozenset("a an the all any each every its their his her one two three four several some no "
                          "this that these those your our my".split())
_TIME = frozenset("at from until till before after every each daily weekly monthly yearly on by within during".split())
_PLACE = frozenset("in into at on under inside outside near".split())
_MANNER = frozenset("through using with via by".split())
_SUBJECT_BREAK = frozenset("if when unless because although while whereas since but that which who".split())
_FUNCTION = frozenset("a an the of in on at to for by with from as and or but if when this that these those it its "
                      "is are be was were".split())


def _lower_first(text: str, names: frozenset[str]) -> str:
    """A sentence's first word as it reads inside a question: lower case, unless it is a name, an
    acronym or a code ("Debian", "HTTP", "RTM-1")."""
    words = text.split(" ", 1)
    first = words[0]
    if not first or not first[:1].isupper() or not first[1:].islower() or first in names:
        return text
    return first[:1].lower() + first[1:] + (" " + words[1] if len(words) > 1 else "")


def _clause(text: str, limit: int = 14) -> str:
    """The words up to the first clause boundary (a comma, a semicolon, a bracket), at most `limit`."""
    cut = re.split(r"[,;()\[\]]|:(?!\d)| - | — | – |\bwhich\b|\bunless\b|\bexcept\b|\bso that\b|\bbecause\b", text, maxsplit=1)[0]
    words = cut.strip().rstrip(".!?").split()
    return " ".join(words[:limit])


def _base(verb: str) -> str:
    """A verb of the third person in its base form: runs → run, empties → empty, passes → pass."""
    v = verb
    low = v.lower()
    if low in ("has",):
        return "have"
    if low in ("does", "goes"):
        return v[:-2]
    if low.endswith("ies") and len(low) > 4:
        return v[:-3] + "y"
    if low.endswith(("sses", "shes", "ches", "xes", "zes")):
        return v[:-2]
    if low.endswith("s") and not low.endswith(("ss", "us", "is")):
        return v[:-1]
    return v


def _third_person(word: str) -> bool:
    low = word.lower()
    return (len(low) > 3 and low.endswith("s") and not low.endswith(("ss", "us", "is", "ous")) and low.isalpha()
            and low not in _FUNCTION)


def _subject_verb(words: list[str]) -> tuple[int, str] | None:
    """Where the verb of a sentence starts and what kind it is ("modal", "be", "have", "verb"),
    with a subject of one to twelve words before it. A modal or a form of "be" or "have" is looked
    for first: a plural noun ("headphones") reads like a verb of the third person."""
    reach = 13
    for k, word in enumerate(words[:13]):
        if k and (word.lower() in _SUBJECT_BREAK or words[k - 1].endswith((",", ";", ":"))):
            reach = k
            break
    for k, word in enumerate(words[1:reach], start=1):
        low = word.lower()
        if low in _MODALS or low in ("cannot", "can't", "won't", "mustn't", "shouldn't"):
            return k, "modal"
        if low in _BE:
            return k, "be"
        if low in _HAVE and k + 1 < len(words) and words[k + 1].lower() not in ("been", "to"):
            return k, "have"
    for k, word in enumerate(words[1:reach], start=1):
        if _third_person(word) and words[k - 1].lower() not in ("the", "a", "an", "of", "for", "to", "in", "on",
                                                                  "and", "or", "with", "by", "from", "all", "any"):
            return k, "verb"
    return None


def _from_sentence(sentence: str, names: frozenset[str]) -> str | None:
    sentence = squeeze(sentence).rstrip(".!:;")
    condition = _CONDITION.match(sentence)
    if condition:
        word, clause, main = condition.group(1).lower(), _clause(condition.group(2), 16), condition.group(3)
        ordered = action(main) or bool(re.search(r"\b(must|should|shall|has to|have to|needs? to)\b", main, re.I))
        if clause:
            return f"What {'should be done' if ordered else 'happens'} {word} {clause}?"
    words = sentence.split()
    if not words:
        return None
    if action(sentence):
        rest = _clause(" ".join(words[1:]), 12)
        return f"Should you {words[0].lower()}{' ' + rest if rest else ''}?"
    if words[0].lower() == "only" and len(words) > 3:
        found = _subject_verb(words[1:])
        if found:
            k, kind = found
            k += 1
            head = words[1] if words[1].lower() not in _OBJECT_START else words[2]
            if kind == "modal":
                return f"Which {head.lower() if head not in names else head} {words[k].lower()} {_clause(' '.join(words[k + 1:]), 12)}?"
    found = _subject_verb(words)
    if not found:
        return None
    k, kind = found
    subject = _lower_first(" ".join(words[:k]), names)
    verb = words[k].lower()
    rest = words[k + 1:]
    if subject.split()[0].lower() in _PRONOUN_SUBJECT:
        return None  # "It must …": not a question a reader could ask of the statement alone
    if kind == "modal":
        negated = bool(rest) and rest[0].lower() in _NEGATION or verb.endswith("n't") or verb == "cannot"
        if negated and rest and rest[0].lower() in _NEGATION:
            rest = rest[1:]
        while rest and rest[0].lower() in _ADVERBS:
            rest = rest[1:]
        if not rest:
            return None
        body = _clause(" ".join(rest), 14)
        modal = verb.replace("n't", "").replace("cannot", "can")
        if negated and modal in ("must", "should", "shall", "may"):
            modal = "may"  # asked as a permission: "May drivers …?" (the answer forbids it)
        return f"{modal.capitalize()} {subject} {body}?"
    if kind == "be":
        negated = bool(rest) and rest[0].lower() in _NEGATION
        if negated:
            rest = rest[1:]
        while rest and rest[0].lower() in _ADVERBS:
            rest = rest[1:]
        if not rest:
            return None
        first = rest[0].lower().strip(",;:.")
        if first in ("prohibited", "forbidden", "banned", "disallowed") or negated and first in ("allowed", "permitted"):
            return f"{verb.capitalize()} {subject} allowed?"
        if first in ("a", "an", "the") and not negated:
            return f"What {verb} {subject}?"
        if first.endswith("ed") or first in _PARTICIPLE:
            after = rest[1].lower() if len(rest) > 1 else ""
            wh = "How long" if after == "for" and len(rest) > 2 and rest[2][:1].isdigit() else \
                "How often" if after in ("every", "each", "daily", "weekly", "monthly", "yearly", "annually") else \
                "When" if after in ("at", "before", "after", "until", "within", "on") and len(rest) > 2 and \
                rest[2][:1].isdigit() else \
                "Where" if after in ("in", "into", "at", "on", "under") and len(rest) > 2 and rest[2][:1].isupper() \
                else "How"
            return f"{wh} {verb} {subject} {first}?"
        return f"{verb.capitalize()} {subject} {_clause(' '.join(rest), 12)}?"
    if kind == "have":
        if rest and rest[0][:1].isdigit():
            thing = _clause(" ".join(rest[1:]), 4)
            if thing:
                return f"How many {thing} {'does' if verb == 'has' else 'do'} {subject} have?"
        return f"What {'does' if verb == 'has' else 'do'} {subject} have?"
    base = _base(words[k])
    after = rest[0].lower() if rest else ""
    nxt = rest[1] if len(rest) > 1 else ""
    if after in _TIME and (nxt[:1].isdigit() or nxt.lower() in ("the", "a", "each", "every", "night", "day")):
        wh = "When"
    elif after in _PLACE and nxt[:1].isupper():
        wh = "Where"
    elif after in _MANNER:
        wh = "How"
    else:
        wh = "What"
    return f"{wh} {'do' if verb == base.lower() else 'does'} {subject} {base.lower()}?"


_PARTICIPLE = frozenset("""given taken done made used set put run shown written sent built kept found left held read
seen known chosen drawn driven hidden laid lost met paid sold spent bound brought caught dealt fed felt hung heard led
meant proven shut split spread understood withdrawn overridden""".split())


def _topic(heading: tuple[str, ...], title: str, names: frozenset[str]) -> str:
    topic = heading[-1] if heading else title
    topic = re.sub(r"^[\d.]+\s+", "", topic).strip().rstrip(":")  # "3.1 Scope" → "Scope"
    return topic


def _gerund_goal(topic: str) -> str | None:
    """"Upgrading the server" → "upgrade the server"; "Installing" → "install"."""
    words = topic.split()
    if not words or not words[0].lower().endswith("ing") or len(words[0]) < 6:
        return None
    stem = words[0][:-3].lower()
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":  # running → run
        stem = stem[:-1]
    elif stem.endswith(("at", "ov", "ur", "iz", "ag", "id", "ar", "as", "in", "ul", "ot", "ut", "rv", "lv", "rc", "uc",
                        "ng", "dg", "pl", "bl", "rg")) and not stem.endswith(("ain", "ing")):
        stem += "e"  # creating → create, removing → remove, configuring → configure
    return " ".join([stem] + [w.lower() if w[1:].islower() else w for w in words[1:]])


def ask(claim: Claim, title: str, horn_type: str, names: frozenset[str]) -> str:
    if claim.question:
        return claim.question
    plain = claim.plain
    if horn_type == "OPEN_ISSUE":
        asked = next((m.group(0).strip() for m in _ASKS.finditer(plain) if len(m.group(0).split()) >= 3), None)
        if asked:
            return asked
        whether = _WHETHER.search(plain)
        if whether:
            return f"Is it settled whether {_clause(whether.group(1), 20)}?"
    if claim.kind == "definition" and claim.term:
        term = claim.term.split(" / ")[0].strip()
        if "(" in term:
            return f"What does {term.split('(')[0].strip()}() do?"
        if term.startswith("-"):
            return f"What does the {term.split(',')[0].split('=')[0].strip()} option do?"
        if len(term.split()) <= 8:
            return f"What is {term}?" if term[:1].isalpha() or term[:1] in "\"“'`" else f"What is meant by {term}?"
        return f"What does “{' '.join(term.split()[:8])}…” mean?"
    topic = _topic(claim.heading, title, names)
    if horn_type == "PROCEDURE":
        intro = claim.intro or plain.split("\n")[0]
        goal = _GOAL.match(intro) or _HOW_TO.search(intro)
        if goal:
            return f"How do you {goal.group(1).strip()}?"
        gerund = _gerund_goal(topic)
        if gerund:
            return f"How do you {gerund}?"
        return f"What are the steps for {phrase(topic, names)}?"
    if claim.kind == "list" and claim.intro:
        sentence = claim.intro
    else:
        spans = sentences(plain)
        sentence = plain[spans[0][0]:spans[0][1]] if spans else plain
    question = _from_sentence(sentence, names)
    if question is None:
        subject = _lower_first(_clause(sentence, 8), names)
        return f"What does “{topic}” say about {subject}?" if subject else f"What does “{topic}” say?"
    words = question.split()
    if len(words) > MAX_WORDS:
        question = " ".join(words[:MAX_WORDS]).rstrip(",;:") + "…?"
    return question[0].upper() + question[1:]


_MID_SENTENCE = re.compile(r"(?<=[a-z0-9,;)] )[A-Z][\w'’-]*")


def names_of(text: str) -> frozenset[str]:
    """The words a document writes with a capital in mid-sentence and never in lower case (names:
    "Harbor", "Debian"), which keep it inside a question; "Pedestrians" opening a sentence does not."""
    lower = {w for w in _WORD.findall(text) if w[:1].islower()}
    return frozenset(w for w in _MID_SENTENCE.findall(text) if w.lower() not in lower)


def phrase(text: str, names: frozenset[str]) -> str:
    """A heading as it reads inside a question: "End Of Shift" → "end of shift"; names, acronyms and
    codes kept as written."""
    return " ".join(w if w in names or not w[:1].isupper() or not w[1:].islower() else w.lower()
                    for w in text.split())


def distinct(questions: list[str], claims: list[Claim], title: str) -> list[str]:
    """Questions that would be the same for claims saying different things are told apart by the
    section they come from ("Backups: …"); the same statement twice keeps one question."""
    seen: dict[str, str] = {}
    out: list[str] = []
    for question, claim in zip(questions, claims):
        key = question.lower()
        if key in seen and seen[key] != claim.plain and not claim.question:
            for depth in range(1, len(claim.heading) + 2):
                where = " › ".join(claim.heading[-depth:]) if depth <= len(claim.heading) else title
                candidate = f"{where}: {question[0].lower() + question[1:] if question[1:2].islower() else question}"
                if candidate.lower() not in seen:
                    question, key = candidate, candidate.lower()
                    break
        seen.setdefault(key, claim.plain)
        out.append(question)
    return out
