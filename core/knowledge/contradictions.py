"""Whether two answers contradict each other: deterministic rules, pure, no I/O (docs/architecture.md,
"Conflicts").

The one entry point is `compare(a, b) -> Finding | None`. It is called on two answers that share a
subject (core/knowledge/subjects.py) by contradiction detection (core/services/conflicts.py), and by anything
else that checks a statement against the registry (an article's claim against approved answers):
its signature and the fields of `Finding` are kept stable.

Rules, tried in this order, sentence against sentence:

- **quantity**: one quantity given two values. Numbers are read with their units (durations,
  percentages, temperatures in °C or °F, distances, areas, weights, money, clock times, counts of the
  noun the number counts: "14 loading docks" counts docks) and normalised ("half an hour" is "30
  minutes", 0 °F is about -18 °C); two values disagree when they measure the same thing (the same
  unit kind and, for counts, the same noun; the words around them alike, no other place or name) and
  neither text also gives the other's value.
- **modal**: the same statement under opposite modals: must / must not (or need not), may / may not,
  always / never, required / prohibited, allowed / forbidden.
- **negation**: the same statement, once affirmed and once denied ("is" / "is not", "does not").
- **attribute**: the same attribute of the same thing with other values ("Refunds are approved by
  the Finance Lead" / "… by the Support Manager"): the same subject and relation, values that share
  no word and name someone or something (a capitalised name or code).

A rule finds a contradiction only when the rest of the two sentences agree, so elaborations ("kept
30 days" / "kept 30 days and 2 weeks"), restrictions to another place or thing, and negations that
agree ("must not exceed 9 hours" / "may drive up to 9 hours") are not flagged.

Then, for two sentences worded independently, rules that first align them by what they are about (a
shared subject, or a configuration name and the words it is made of, "shared_buffers" / "shared
buffers"; two sentences each naming a configuration name or program of their own are about two
things) and then look for one disagreement:

- **aligned quantity**: one dimension, values that differ, a word near both values shared (or a
  configuration name's word, or the counted noun); not for other kinds or days of one thing, a
  period beside a duration, two measures differing at once, or bounds pointing opposite ways;
- **exception**: a rule with its exception or restriction ("except", "unless", "only", "is ignored
  on") against the same rule said of everything ("never", "any", "every", "also"), or with a condition
  ("when", "if") against "always" or "whatever";
- **stance**: advised or ruled against ("be avoided", "must not") against advised or required
  ("recommended", "has to"), or not needed ("never need") against required;
- **order**: what one sentence puts before, or lets override, the other puts after ("put X first and Y
  after them", "X takes precedence over Y");
- **precedence**: the first match said to hold against the last ("the first one that matches is used" /
  "the last one wins");
- **default**: one setting on by default and off by default ("unless X is turned off": X is on;
  "unless you enable it", "unless --x is given": off);
- **one or many**: exactly one of a thing against several of it;
- **once or each time**: done once against done each time ("not at each call" says once);
- **unbounded**: no limit against an upper bound ("unlimited in length" / "at most 255 characters");
- **opposite**: one thing let in and turned away (accept / refuse, allow / deny, enable / disable, keep /
  discard, include / exclude, grant / revoke), neither side denied or restricted.

Order and default need no more words shared when both sentences name one configuration name (it
pins what they are about); a configuration name is read as the words it is made of as written
("UserStopDelaySec": user, stop, delay; "PostgreSQL" stays a name).

Each rule's words are a table beside it with the reason. Sentence embeddings were measured as the
alignment and do not separate the pairs (docs/architecture.md, "Conflicts"): the rules stay
lexical.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .subjects import singular, subjects_of

__all__ = ["Finding", "Quantity", "compare", "quantities"]


@dataclass(frozen=True)
class Finding:
    """A contradiction between two texts.

    kind: "quantity", "modal", "negation", "attribute" (or "judged" when an LLM found it);
    detail: a short human line naming the disagreeing words ("15 minutes vs 30 minutes (break)");
    words_a / words_b: the disagreeing words as they are written in each text, for highlighting.
    """

    kind: str
    detail: str
    words_a: tuple[str, ...] = field(default_factory=tuple)
    words_b: tuple[str, ...] = field(default_factory=tuple)


# ----------------------------------------------------------------------------- words

_FUNCTION = frozenset(["a", "an", "the", "this", "that", "these", "those", "it", "its", "they", "them", "their", "there", "here", "of", "in", "on", "at", "by", "for", "from", "to", "into", "onto", "with", "without", "within", "about", "after", "before", "between", "during", "through", "across", "per", "via", "than", "then", "as", "and", "or", "nor", "but", "if", "so", "is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "had", "having", "do", "does", "did", "done", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "also", "just", "very", "too", "all", "any", "each", "every", "some", "such", "same", "own", "only", "which", "who", "whom", "whose", "what", "when", "where", "how", "whether", "while", "our", "your", "we", "you", "he", "she", "his", "her", "i", "me", "my", "us", "up", "out", "off", "over", "under"])
_NEGATIONS = frozenset({"not", "no", "never", "cannot", "can't", "don't", "doesn't", "isn't", "aren't",
                        "won't", "mustn't", "shouldn't", "wasn't", "weren't", "none", "nobody", "nothing",
                        "neither", "nor", "without"})
_MODAL_WORDS = frozenset({"must", "may", "might", "can", "could", "shall", "should", "need", "needs", "needed",
                          "require", "requires", "required", "requirement", "mandatory", "compulsory",
                          "obligatory", "prohibited", "forbidden", "banned", "allowed", "permitted", "optional",
                          "always", "never", "have", "has", "to", "cannot", "mustn't", "not", "no", "ever"})
_TOKEN = re.compile(r"\d{1,2}:\d{2}\b|°[CF]|[A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*|[-−]?\d[\d,]*(?:\.\d+)?|%|€|\$|£|[.;:!?,()]")


@lru_cache(maxsize=16384)
def _stem(word: str) -> str:
    w = word.lower().replace("’", "'")
    if w.endswith(("'s", "s'")) and len(w) > 3:  # "the user's session": the user's
        w = w[:-2] if w.endswith("'s") else w[:-1]
    w = singular(w)
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[:-len(suffix)]
            if len(w) > 3 and w[-1] == w[-2]:  # stopped → stopp → stop
                w = w[:-1]
            break
    if w.endswith(("able", "ible")) and len(w) >= 8:  # "readable" is what "read" says of a file
        w = w[:-4]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?;])\s+|\n+|(?<=:)\s+(?=[A-Z])", text or "")
    return [p.strip() for p in parts if p and p.strip()]


def _names(sentence: str) -> set[str]:
    """Capitalised words not at the start of the sentence, and codes ("RTM-1", "ISO 9001")."""
    words = re.findall(r"[A-Za-z][\w'-]*", sentence)
    return {w.lower() for i, w in enumerate(words) if i > 0 and w[0].isupper() and w.lower() not in _FUNCTION}


# ----------------------------------------------------------------------------- quantities

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "dozen": 12, "half": 0.5, "a": 1, "an": 1, "single": 1, "once": 1, "twice": 2,
}
# unit word -> (dimension, factor to the dimension's base unit)
_UNITS = {
    **{w: ("duration", 0.001) for w in ("ms", "millisecond", "milliseconds")},
    **{w: ("duration", 1) for w in ("second", "seconds", "sec", "secs", "s")},
    **{w: ("duration", 60) for w in ("minute", "minutes", "min", "mins")},
    **{w: ("duration", 3600) for w in ("hour", "hours", "hr", "hrs", "h")},
    **{w: ("duration", 86400) for w in ("day", "days", "night", "nights")},
    **{w: ("working_days", 1) for w in ("working day", "working days", "business day", "business days")},
    **{w: ("duration", 604800) for w in ("week", "weeks")},
    **{w: ("duration", 2629800) for w in ("month", "months")},
    **{w: ("duration", 31557600) for w in ("year", "years")},
    **{w: ("percent", 1) for w in ("%", "percent", "per cent")},
    **{w: ("length", 0.001) for w in ("mm", "millimetre", "millimetres", "millimeter", "millimeters")},
    **{w: ("length", 0.01) for w in ("cm", "centimetre", "centimetres", "centimeter", "centimeters")},
    **{w: ("length", 1) for w in ("m", "metre", "metres", "meter", "meters")},
    **{w: ("length", 1000) for w in ("km", "kilometre", "kilometres", "kilometer", "kilometers")},
    **{w: ("length", 1609.344) for w in ("mile", "miles")},
    **{w: ("area", 1) for w in ("square metre", "square metres", "square meter", "square meters", "m2", "m²",
                                "sq m")},
    **{w: ("mass", 0.001) for w in ("g", "gram", "grams")},
    **{w: ("mass", 1) for w in ("kg", "kilo", "kilos", "kilogram", "kilograms")},
    **{w: ("mass", 1000) for w in ("t", "tonne", "tonnes", "ton", "tons")},
    **{w: ("mass", 0.4536) for w in ("lb", "lbs", "pound", "pounds")},
    **{w: ("speed", 1) for w in ("km/h", "kph")},
    **{w: ("speed", 1.609344) for w in ("mph",)},
    **{w: ("money_eur", 1) for w in ("eur", "euro", "euros", "€")},
    **{w: ("money_usd", 1) for w in ("usd", "dollar", "dollars", "$")},
    **{w: ("money_gbp", 1) for w in ("gbp", "£")},
    **{w: ("temperature", "C") for w in ("°c", "degrees celsius", "degree celsius", "degrees c", "celsius")},
    **{w: ("temperature", "F") for w in ("°f", "degrees fahrenheit", "degree fahrenheit", "degrees f",
                                         "fahrenheit")},
    **{w: ("temperature", "C") for w in ("degrees", "degree")},
    **{w: ("data", 1) for w in ("gb", "gigabyte", "gigabytes")},
    **{w: ("data", 1000) for w in ("tb", "terabyte", "terabytes")},
    **{w: ("data", 0.001) for w in ("mb", "megabyte", "megabytes")},
    **{w: ("data", 1e-6) for w in ("kb", "kilobyte", "kilobytes")},
    **{w: ("data", 1e-9) for w in ("byte", "bytes")},
}
_PREFIX_UNITS = {"€": "eur", "$": "usd", "£": "gbp", "eur": "eur", "usd": "usd", "gbp": "gbp"}
_FREQUENCIES = {"hourly": 3600, "daily": 86400, "nightly": 86400, "weekly": 604800, "fortnightly": 1209600,
                "monthly": 2629800, "quarterly": 7889400, "annually": 31557600, "yearly": 31557600}
_SHARES = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fifth": 0.2, "tenth": 0.1}  # "<share> of" a whole
_RATE_WORDS = {"a", "an", "per", "each", "every"}
# the words a small-number "a"/"an" is a quantity after ("within an hour", "for a week")
_ARTICLE_AFTER = {"within", "for", "after", "in", "than", "about", "under", "over", "least", "most", "to",
                  "of", "once", "every", "takes", "lasts", "last", "up"}
_LABELS = frozenset({"severity", "level", "zone", "priority", "tier", "class", "step", "phase", "version", "line",
                     "gate", "dock", "room", "category", "grade", "stage", "chapter", "section", "page",
                     "floor", "building", "aisle", "bay", "site", "door", "lane", "rule", "article", "iso",
                     "no", "number", "sev", "p", "v", "channel", "platform", "route", "bus", "unit"})
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_NOT_COUNTED = _FUNCTION | _NEGATIONS | {"more", "less", "fewer", "least", "most", "other", "times", "time",
                                         "percent", "approximately", "about", "roughly", "around", "extra",
                                         "additional", "further", "unless", "except", "because", "or",
                                         "otherwise"} | set(_NUMBER_WORDS)


@dataclass(frozen=True)
class Quantity:
    """A number read with what it measures: `dimension` ("duration", "temperature", "count:dock" …),
    `value` in the dimension's base unit, `text` as written, `context` the stems around it."""

    dimension: str
    value: float
    text: str
    context: frozenset[str]
    names: frozenset[str]
    every: bool = False
    sentence: str = ""


def _number(token: str) -> float | None:
    t = token.replace("−", "-")
    if re.fullmatch(r"-?\d[\d,]*(?:\.\d+)?", t):
        t = t.replace(",", "") if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", t) else t.replace(",", ".")
        try:
            return float(t)
        except ValueError:
            return None
    return None


def _unit_at(tokens: list[str], j: int) -> tuple[str, int] | None:
    """The unit written at tokens[j:] (longest first): (unit key, tokens it takes)."""
    for width in (3, 2, 1):
        if j + width <= len(tokens):
            phrase = " ".join(t.lower() for t in tokens[j:j + width])
            if phrase in _UNITS:
                return phrase, width
    return None


def _context(tokens: list[str], skip: set[int]) -> frozenset[str]:
    out = set()
    for i, t in enumerate(tokens):
        if i in skip or not t[0].isalpha():
            continue
        low = t.lower()
        if low in _FUNCTION or low in _NEGATIONS or low in _MODAL_WORDS or low in _UNITS or low in _NUMBER_WORDS:
            continue
        if low in ("least", "most", "more", "less", "than", "up", "maximum", "minimum", "approximately", "about",
                   "roughly", "around", "longer", "shorter", "exceed", "exceeds", "last", "lasts", "take", "takes"):
            continue
        out.add(_stem(low))
    return frozenset(out)


def quantities(sentence: str) -> list[Quantity]:
    """Every quantity in one sentence, with what it measures."""
    return list(_quantities(sentence))


@lru_cache(maxsize=4096)
def _quantities(sentence: str) -> tuple[Quantity, ...]:
    """`quantities`, read once per sentence (every rule and every other sentence asks again)."""
    matches = list(_TOKEN.finditer(sentence))
    tokens = [m.group(0) for m in matches]
    names = frozenset(_names(sentence))
    found: list[tuple[str, float, int, int, bool]] = []  # dimension, value, start, end, every
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        low = tok.lower()
        start = i
        value: float | None = None
        # money written before the number: €500, EUR 500
        if low in _PREFIX_UNITS and i + 1 < n and _number(tokens[i + 1]) is not None:
            found.append((f"money_{_PREFIX_UNITS[low]}", _number(tokens[i + 1]), i, i + 2, False))
            i += 2
            continue
        share = _SHARES.get(low)
        if share and i + 1 < n and tokens[i + 1].lower() == "of" and (low == "half" or i and tokens[i - 1].lower()
                                                                      in ("a", "one")):
            found.append(("fraction", share, i, i + 1, False))  # "half of the rows", "a quarter of them"
            i += 2
            continue
        clock = _CLOCK.match(tok)
        if clock:
            found.append(("clock", int(clock.group(1)) * 60 + int(clock.group(2)), i, i + 1, False))
            i += 1
            continue
        if low in _FREQUENCIES:
            following = tokens[i + 1].lower() if i + 1 < n else ""
            if not (following[:1].isalpha() and following not in _FUNCTION):  # "nightly backups": a kind, not how often
                found.append(("frequency", _FREQUENCIES[low], i, i + 1, False))
            i += 1
            continue
        value = _number(tok)
        j = i + 1
        if i and tokens[i - 1].lower() in _LABELS:  # "severity 1", "zone 4": a name, not a quantity
            i += 1
            continue
        if value is None and low in _NUMBER_WORDS:
            if low in ("a", "an", "once", "twice", "single"):
                prev = tokens[i - 1].lower() if i else ""
                if low in ("a", "an") and prev not in _ARTICLE_AFTER:
                    i += 1
                    continue
            value = float(_NUMBER_WORDS[low])
            # "half an hour", "one and a half hours", "twenty four"
            if low == "half" and j < n and tokens[j].lower() in ("a", "an"):
                j += 1
            elif j + 2 < n and tokens[j].lower() == "and" and tokens[j + 1].lower() == "a" \
                    and tokens[j + 2].lower() == "half":
                value += 0.5
                j += 3
            elif j < n and tokens[j].lower() in _NUMBER_WORDS and tokens[j].lower() not in ("a", "an", "half") \
                    and value >= 20 and _NUMBER_WORDS[tokens[j].lower()] < 10:
                value += _NUMBER_WORDS[tokens[j].lower()]
                j += 1
        if value is None:
            i += 1
            continue
        if j < n and tokens[j].lower() in ("hundred", "thousand"):
            value *= 100 if tokens[j].lower() == "hundred" else 1000
            j += 1
        # a range "2 and 8 °C", "2 to 8 °C", "2-8 °C": the unit after the second number is the first's too
        second = None
        if j + 1 < n and tokens[j].lower() in ("and", "to", "or", "-", "–") and _number(tokens[j + 1]) is not None:
            second = _number(tokens[j + 1])
            unit_end = j + 2
        else:
            unit_end = j
        hyphen = re.fullmatch(r"-?(\d+(?:\.\d+)?)-([a-z]+)", tok.lower())
        if hyphen:  # "15-minute"
            value = float(hyphen.group(1))
            unit = _unit_at([hyphen.group(2)], 0)
            if unit:
                dim, factor = _UNITS[unit[0]]
                found.append((dim, value * factor, start, i + 1, _every(tokens, start)))
            i += 1
            continue
        unit = _unit_at(tokens, unit_end)
        if unit:
            key, width = unit
            dim, factor = _UNITS[key]
            end = unit_end + width
            if dim == "temperature":
                scale = factor
                values = [v for v in (value, second) if v is not None]
                for v in values:
                    c = (v - 32) * 5 / 9 if scale == "F" else v
                    found.append(("temperature", round(c, 1), start, end, False))
                i = end
                continue
            # a rate: "9 hours a day", "3 per week": the denominator is part of the dimension
            if end + 1 < n and tokens[end].lower() in _RATE_WORDS and _unit_at(tokens, end + 1):
                per = _UNITS[_unit_at(tokens, end + 1)[0]]
                dim = f"{dim}/{per[0]}:{per[1]}"
                end += 1 + _unit_at(tokens, end + 1)[1]
            for v in (value, second):
                if v is not None:
                    found.append((dim, v * factor, start, end, _every(tokens, start)))
            i = end
            continue
        if len(tok) == 2 and tok[1] == "-" or tok.startswith("-"):
            i += 1
            continue
        # a count of the noun that follows: "14 loading docks", "three shifts", "12 characters"
        k = unit_end
        words = []
        while k < n and len(words) < 3 and tokens[k][0].isalpha() and tokens[k].lower() not in _NOT_COUNTED \
                and not (words and tokens[k][0].isupper()):
            words.append(tokens[k])
            k += 1
        if words and low not in ("a", "an", "once", "twice", "half"):
            head = singular(words[-1])
            for v in (value, second):
                if v is not None:
                    found.append((f"count:{head}", v, start, k, _every(tokens, start)))
            i = k
            continue
        if low in ("once", "twice"):
            found.append(("times", value, start, j, False))
        i = max(j, i + 1)
    out = []
    for dim, value, start, end, every in found:
        skip = set(range(start, end))
        written = sentence[matches[start].start():matches[end - 1].end()]  # as written, for highlighting
        out.append(Quantity(dim, float(value), written, _context(tokens, skip), names, every, sentence))
    return tuple(out)


def _every(tokens: list[str], start: int) -> bool:
    return start > 0 and tokens[start - 1].lower() in ("every", "each")


def _same(x: float, y: float, dim: str) -> bool:
    if dim == "temperature":
        return abs(x - y) <= 0.6  # 0 °F is -17.8 °C: "-18 °C" says the same
    if dim == "fraction":
        return abs(x - y) <= 0.01  # "a third" is 0.33
    if dim.startswith(("count:", "clock", "times")) or dim in ("percent", "octal mode"):
        return abs(x - y) < 1e-9  # counted, not converted: exact
    if dim == "data":  # a kilobyte is 1000 or 1024 bytes as people write it ("1024 bytes" / "1 kB", "4GB" / "4 GiB")
        return abs(x - y) <= max(abs(x), abs(y)) * 0.075 + 1e-15
    return abs(x - y) <= max(abs(x), abs(y)) * 0.01 + 1e-9  # converted units, rounded as people round


def _alike(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two quantities' surroundings describe the same thing: most words of the smaller one shared,
    and, when each side has words of its own ("cold-chain deliveries" / "ambient deliveries"), most
    words of both."""
    if not a or not b:
        return not a and not b
    shared = len(a & b)
    if a - b and b - a:
        return shared / len(a | b) >= 0.7
    return shared >= 1 and shared / min(len(a), len(b)) >= 0.6


def _compatible(qa: Quantity, qb: Quantity) -> bool:
    if qa.dimension != qb.dimension or qa.every != qb.every:
        return False
    only_a, only_b = qa.names - qb.names, qb.names - qa.names
    if only_a and only_b:  # other places, people or systems: other things
        return False
    return _alike(qa.context, qb.context)


def _quantity_rule(sa: str, sb: str) -> Finding | None:
    qas, qbs = quantities(sa), quantities(sb)
    for qa in qas:
        for qb in qbs:
            if not _compatible(qa, qb) or _same(qa.value, qb.value, qa.dimension):
                continue
            # a text that also gives the other's value for that thing does not disagree with it
            if any(_compatible(qa, o) and _same(qa.value, o.value, qa.dimension) for o in qbs) or \
                    any(_compatible(o, qb) and _same(o.value, qb.value, qb.dimension) for o in qas):
                continue
            what = _what(qa, qb)
            return Finding("quantity", f"{qa.text} vs {qb.text}{f' ({what})' if what else ''}",
                           (qa.text,), (qb.text,))
    return None


def _what(qa: Quantity, qb: Quantity) -> str:
    if qa.dimension.startswith("count:"):
        return ""
    shared = qa.context & qb.context
    said: list[str] = []
    for word in re.findall(r"[A-Za-z][A-Za-z'-]*", qa.sentence):  # as written, in the sentence's order
        low = word.lower()
        if _stem(low) in shared and low not in said:
            said.append(low)
    return " ".join(said[:3])


# ----------------------------------------------------------------------------- modals and negation

# (pattern, the modal value it states, the words shown); longer patterns first.
_MODALS = [
    ((r"\bdoes not need(?: to)?\b|\bdo not need(?: to)?\b|\bdoes not have to\b|\bdo not have to\b|\bneed not\b|"
      r"\bneedn't\b|\bdon't need to\b|\bdoesn't need to\b|\bdon't have to\b|\bdoesn't have to\b|"
      r"\bis not required\b|\bare not required\b|\bnot mandatory\b|\bis optional\b|\bare optional\b|\boptional\b"),
     "NOT_OBLIGED"),
    ((r"\bmust not\b|\bmustn't\b|\bshall not\b|\bmay not\b|\bcannot\b|\bcan not\b|\bcan't\b|\bis not allowed\b|"
      r"\bare not allowed\b|\bis not permitted\b|\bare not permitted\b|\bnot allowed\b|\bnot permitted\b|"
      r"\bprohibited\b|\bforbidden\b|\bbanned\b|\bshould not\b|\bshouldn't\b|\bno one may\b|\bnobody may\b"),
     "FORBIDDEN"),
    (r"\bis not prohibited\b|\bare not prohibited\b|\bis not forbidden\b|\bare not forbidden\b", "PERMITTED"),
    ((r"\bmust\b|\bshall\b|\bhas to\b|\bhave to\b|\bneeds to\b|\bneed to\b|\bis required to\b|\bare required to\b|"
      r"\brequired\b|\bmandatory\b|\bcompulsory\b|\bobligatory\b|\bshould\b"), "OBLIGED"),
    (r"\bmay\b|\bcan\b|\bis allowed\b|\bare allowed\b|\bis permitted\b|\bare permitted\b|\ballowed\b|\bpermitted\b",
     "PERMITTED"),
]
_MODALS_RE = [(re.compile(p, re.IGNORECASE), value) for p, value in _MODALS]
_ALWAYS = re.compile(r"\bnot always\b|\balways\b|\bnever\b|\bat all times\b|\bat no time\b", re.IGNORECASE)
_OPPOSED = {frozenset({"OBLIGED", "FORBIDDEN"}), frozenset({"OBLIGED", "NOT_OBLIGED"}),
            frozenset({"PERMITTED", "FORBIDDEN"})}
_NEG_RE = re.compile(r"\b(?:not|no|never|cannot|none|nobody|nothing|n't)\b|n't\b", re.IGNORECASE)


def _modal(sentence: str) -> tuple[str | None, str]:
    # "is not prohibited" reads as permitted: try the patterns in the order above, but the
    # negated-prohibition one before plain prohibition
    order = [_MODALS_RE[2], _MODALS_RE[0], _MODALS_RE[1], _MODALS_RE[3], _MODALS_RE[4]]
    for pattern, value in order:
        m = pattern.search(sentence)
        if m:
            return value, m.group(0)
    return None, ""


def _frequency(sentence: str) -> tuple[str | None, str]:
    m = _ALWAYS.search(sentence)
    if not m:
        return None, ""
    word = m.group(0).lower()
    return ("NEVER" if word in ("never", "at no time", "not always") else "ALWAYS"), m.group(0)


@lru_cache(maxsize=4096)
def _core(sentence: str) -> tuple[str, ...]:
    """The sentence's content stems without its modals, negations and frequency words."""
    s = _ALWAYS.sub(" ", sentence)
    for pattern, _ in _MODALS_RE:
        s = pattern.sub(" ", s)
    words = re.findall(r"[A-Za-z][A-Za-z'’-]*|\d[\d.,:]*", s)
    out = []
    for w in words:
        low = w.lower().replace("’", "'")
        if low in _FUNCTION or low in _NEGATIONS or low in _MODAL_WORDS or low.endswith("n't"):
            continue
        if low in ("need", "needs", "required", "allowed", "permitted", "ever", "times", "time", "one"):
            continue
        out.append(_stem(low))
    return tuple(out)


# a trailing clause that qualifies the statement ("..., less if the kernel cannot support it"): its
# negation is the qualification's, not the statement's
_QUALIFYING = re.compile(r",\s*(?:less|more|or|and)?\s*(?:if|unless|when|because|though|although|except|where)\b.*$",
                         re.IGNORECASE)
# "is off", "are disabled": a setting stated as not on is a denial ("Agent forwarding is off by default" says
# what "ssh does not forward the agent" says)
_OFF_STATED = re.compile(r"\b(?:is|are|stays?|remains?)\s+(?:off|disabled|turned off|switched off)\b", re.IGNORECASE)


def _negated(sentence: str) -> str | None:
    main = _ALWAYS.sub(" ", _QUALIFYING.sub("", sentence))
    m = _NEG_RE.search(main) or _OFF_STATED.search(main)
    return m.group(0) if m else None


_COMPARATORS = [(re.compile(r"\b(?:no more than|not more than|up to|at most|maximum of|a maximum|within|no longer than|"
                             r"less than|fewer than|under|below)\b", re.IGNORECASE), "<="),
                (re.compile(r"\b(?:more than|over|longer than|exceeds?|exceeding|above|beyond)\b", re.IGNORECASE), ">"),
                (re.compile(r"\b(?:at least|a minimum of|minimum|no less than|not less than)\b", re.IGNORECASE), ">=")]


def _bounds(sentence: str) -> frozenset[str]:
    """The comparators a sentence bounds its numbers with ("at most" and "up to" are one)."""
    found = set()
    for pattern, bound in _COMPARATORS:
        if pattern.search(sentence):
            found.add(bound)
            sentence = pattern.sub(" ", sentence)
    return frozenset(found)


def _same_statement(ca: tuple[str, ...], cb: tuple[str, ...]) -> bool:
    """Two statements say the same thing but for polarity: one's words contain the other's (an
    elaboration of the same statement), or nearly all words are shared."""
    a, b = set(ca), set(cb)
    if min(len(a), len(b)) < 2:
        return False
    if a <= b or b <= a:
        return True
    return len(a & b) / len(a | b) >= 0.75


def _polarity_rules(sa: str, sb: str) -> Finding | None:
    ca, cb = _core(sa), _core(sb)
    if not _same_statement(ca, cb) or _bounds(sa) != _bounds(sb) or _own_names(sa, sb):
        return None
    ma, wa = _modal(sa)
    mb, wb = _modal(sb)
    if ma and mb and frozenset({ma, mb}) in _OPPOSED:
        return Finding("modal", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))
    fa, fwa = _frequency(sa)
    fb, fwb = _frequency(sb)
    if fa and fb and fa != fb:
        return Finding("modal", f"{fwa.lower()} vs {fwb.lower()}", (fwa,), (fwb,))
    if (ma or mb) and ma != mb and not (ma and mb):
        # a modal on one side only: "must be escorted" vs "are not escorted" is a denial
        na, nb = _negated(sa), _negated(sb)
        if bool(na) != bool(nb) and "NOT_OBLIGED" not in (ma, mb):
            return Finding("negation", f"{(wa or na or '').lower()} vs {(wb or nb or '').lower()}",
                           tuple(w for w in (wa, na) if w), tuple(w for w in (wb, nb) if w))
        return None
    if ma == mb:
        # the negation inside a modal phrase ("not permitted") is the modal's, not the statement's
        na, nb = _negated(_unmodal(sa)), _negated(_unmodal(sb))
        if bool(na) != bool(nb) and _same_statement(_core(_QUALIFYING.sub("", sa)), _core(_QUALIFYING.sub("", sb))):
            # the statements' own words alike, not a qualifying clause's ("..., except for X, where the
            # timeout is disabled" / "X has no timeout")
            said_a = na or _verb(sa)
            said_b = nb or _verb(sb)
            return Finding("negation", f"{said_a.lower()} vs {said_b.lower()}",
                           (na,) if na else (), (nb,) if nb else ())
    return None


def _unmodal(sentence: str) -> str:
    for pattern, _ in _MODALS_RE:
        sentence = pattern.sub(" ", sentence)
    return sentence


def _verb(sentence: str) -> str:
    m = re.search(r"\b(is|are|was|were|does|do|has|have|will)\b", sentence, re.IGNORECASE)
    return m.group(0) if m else "affirmed"


# ----------------------------------------------------------------------------- attributes

_RELATION = re.compile(
    r"^(?P<subject>.+?)\s+(?P<rel>(?:is|are|was|were)(?:\s+(?:\w+ed|held|kept|run|done|made|set|sent|shown|"
    r"known|led|owned|paid|built|chosen|given|written|taken))?(?:\s+(?:by|in|at|on|to|from|with|for|through|"
    r"under|via))?|(?:reports|report|belongs|belong|goes|go|rests|rest|sits|sit|lies|lie)\s+(?:to|with|in|at|"
    r"on)|(?:runs|run|happens|happen|starts|start|ends|end|takes place|take place|lives|live|meets|meet)\s+"
    r"(?:in|on|at|from|through)|(?:uses|use|means|mean|equals)|(?:is|are)\s+(?:the|a|an)?)\s+(?P<value>.+?)"
    r"[.!;]?$", re.IGNORECASE)


def _attribute(sentence: str) -> tuple[frozenset[str], str, frozenset[str], frozenset[str], str] | None:
    m = _RELATION.match(sentence.strip())
    if not m:
        return None
    subject = frozenset(_stem(w) for w in re.findall(r"[A-Za-z][\w'-]*", m.group("subject"))
                        if w.lower() not in _FUNCTION)
    rel = " ".join(_stem(w) for w in m.group("rel").lower().split() if w not in ("the", "a", "an"))
    value_text = m.group("value").strip()
    value_words = re.findall(r"[A-Za-z][\w'-]*|\d[\w.,:-]*", value_text)
    value = frozenset(_stem(w) for w in value_words if w.lower() not in _FUNCTION)
    names = frozenset(w.lower() for w in value_words if w[0].isupper() or re.search(r"\d", w))
    return subject, rel, value, names, value_text


def _attribute_rule(sa: str, sb: str) -> Finding | None:
    pa, pb = _attribute(sa), _attribute(sb)
    if not pa or not pb:
        return None
    if _negated(sa) or _negated(sb) or _modal(sa)[0] != _modal(sb)[0]:
        return None
    (suba, rela, vala, namesa, texta), (subb, relb, valb, namesb, textb) = pa, pb
    if not suba or suba != subb or rela != relb or not vala or not valb:
        return None
    if len(vala) > 6 or len(valb) > 6 or vala & valb:
        return None
    if not namesa or not namesb or any(re.search(r"\d", n) and not re.search(r"[a-z]", n) for n in namesa | namesb):
        return None  # values must name someone or something; numbers are the quantity rule's
    wa, wb = _shown(texta), _shown(textb)
    return Finding("attribute", f"{wa} vs {wb}", (wa,), (wb,))


def _shown(value: str) -> str:
    value = re.sub(r"^(?:the|a|an)\s+", "", value.strip().rstrip(".;!"), flags=re.IGNORECASE)
    return value[:60]


# ----------------------------------------------------------------------------- aligned sentences
#
# Two people describing one setting rarely use the same words: "The default for shared_buffers is
# 128MB" / "Out of the box PostgreSQL sets aside 256MB for shared buffers". The rules above need the
# rest of the two sentences to agree; the rules below first align two sentences by what they are
# about (the same thing named: a shared subject, or a configuration name and the words it is made
# of) and then look for one disagreement between them. Each table row says what it matches and why.

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+=?|[A-Za-z]+=|[a-z]+(?:[A-Z][a-z0-9]+)+|"
                    r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z]+[A-Za-z]*")
# words that say nothing about which thing a sentence is about (each side of a pair uses them freely)
_GENERIC = frozenset({"default", "value", "setting", "set", "option", "parameter", "number", "way", "thing", "use",
                      "used", "case", "time", "unless", "except", "otherwise", "box", "typically", "usually",
                      "normally", "also", "each", "every", "any", "all", "only", "one", "on", "off", "true",
                      "false", "yes", "no", "min", "max", "sec", "enabled", "disabled", "kept", "keep", "run",
                      "runs", "given", "least", "most", "more", "less", "other", "same"})
# small synonym table: words people use for one another when they state a default or a bound
_SYNONYMS = {"defaults": "default", "out-of-the-box": "default", "maximum": "max", "minimum": "min",
             "limit": "max", "uids": "uid"}


def _parts(identifier: str) -> list[str]:
    """The words a configuration name is made of: shared_buffers -> shared, buffers;
    NumberOfPasswordPrompts -> number, of, password, prompts; UID_MIN -> uid, min."""
    out = []
    for chunk in re.split(r"[_.=]+", identifier):
        out += re.findall(r"[A-Z]{2,}(?=[A-Z][a-z]|\b|$)|[A-Z]?[a-z0-9]+|[A-Z]+", chunk)
    words = [w.lower() for w in out if w]
    # "autosave", "autovacuum": the word after "auto" is what the setting does
    return words + [w[4:] for w in words if w.startswith("auto") and len(w) >= 8]


# words joined in camel case, each of three letters or more ("UserStopDelaySec", "autosaveInterval")
_CAMEL = re.compile(r"(?:[a-z]{3,}|[A-Z][a-z0-9]{2,})(?:[A-Z][a-z0-9]{2,})+")


@lru_cache(maxsize=4096)
def _ident_parts(sentence: str) -> dict[str, tuple[str, ...]]:
    """Each configuration name of a sentence (lowercase) -> the stems of the words it is made of, read
    from the name as written: lowercased first, "UserStopDelaySec" would be one word."""
    out: dict[str, tuple[str, ...]] = {}
    for m in _IDENT.finditer(sentence):
        if re.fullmatch(r"\d[\d.]*", m.group(0)):
            continue
        name = m.group(0).rstrip("=")
        if re.search(r"[_.]", name) or _CAMEL.fullmatch(name):
            out[name.lower()] = tuple(_stem(_SYNONYMS.get(w, w)) for w in _parts(name))
        else:  # "PostgreSQL", "CPython", "APIs": a name, not words joined
            out[name.lower()] = (_stem(name.lower()),)
    return out


@lru_cache(maxsize=4096)
def _topic_stems(sentence: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the stems naming what a sentence is about, its configuration names). The stems come from its
    subjects (core/knowledge/subjects.py) and from the words its configuration names are made of."""
    parts = _ident_parts(sentence)
    idents = frozenset(parts)
    stems = set()
    for term in subjects_of("", sentence):
        for w in re.findall(r"[a-z][a-z0-9'-]*", term):
            stems.add(_stem(_SYNONYMS.get(w, w)))
    for ident in idents:
        stems |= set(parts[ident])
    for w in re.findall(r"[A-Za-z][A-Za-z0-9'-]*", sentence):  # every noun-like word that names the thing
        low = w.lower()
        if low not in _FUNCTION and low not in _NEGATIONS and low not in _MODAL_WORDS and len(low) > 2:
            stems.add(_stem(_SYNONYMS.get(low, low)))
    return frozenset(stems - {_stem(g) for g in _GENERIC}), idents


@lru_cache(maxsize=4096)
def _about(sentence: str) -> frozenset[str]:
    """The stems of the sentence's subjects and configuration names only (not its every word)."""
    stems = set()
    for term in subjects_of("", sentence):
        for w in re.findall(r"[a-z][a-z0-9'-]*", term):
            stems.add(_stem(_SYNONYMS.get(w, w)))
    for m in _IDENT.finditer(sentence):
        for w in _parts(m.group(0)):
            stems.add(_stem(_SYNONYMS.get(w, w)))
    return frozenset(stems - {_stem(g) for g in _GENERIC})


def _own_names(sa: str, sb: str) -> bool:
    """Each sentence names a configuration name or program of its own (pg_dump / pg_dumpall,
    maintenance_work_mem / logical_decoding_work_mem): two things, whatever else they share. A name
    the other sentence spells out in words ("shared_buffers" / "shared buffers"), or says every word of
    in any order ("log_checkpoints" / "checkpoints are logged"), is not its own."""
    ids_a, ids_b = _topic_stems(sa)[1], _topic_stems(sb)[1]
    written = {**_ident_parts(sa), **_ident_parts(sb)}

    def spelled(ident: str, sentence: str) -> bool:
        parts = " ".join(written[ident])
        words = " ".join(_stem(w.lower()) for w in re.findall(r"[A-Za-z][A-Za-z0-9']*", sentence))
        if f" {parts} " in f" {words} ":
            return True
        # in any order, by words of its own (not the parts of another name: pg_dumpall does not spell pg_dump)
        plain = {_stem(w.lower()) for w in re.findall(r"[A-Za-z][A-Za-z0-9']*", _IDENT.sub(" ", sentence))}
        return len(written[ident]) >= 2 and set(written[ident]) <= plain

    own_a = {i for i in ids_a - ids_b if not spelled(i, sb)}
    own_b = {i for i in ids_b - ids_a if not spelled(i, sa)}
    return bool(own_a and own_b)


def _same_thing(sa: str, sb: str, least: int = 1) -> bool:
    """Two sentences are about the same thing: at least `least` of the stems naming what one is about
    are said by the other, and they do not each name a configuration name or a capitalised name of
    their own (maintenance_work_mem / logical_decoding_work_mem are two settings)."""
    words_a, ids_a = _topic_stems(sa)
    words_b, ids_b = _topic_stems(sb)
    if _own_names(sa, sb):
        return False
    # a name is a sentence's own only when the other never says the word ("Port" / "the default port",
    # "ssh" / "SSH" are one thing written in two cases)
    names_a = {n for n in _names(sa) - ids_a if _stem(n) not in _words_of(sb)}
    names_b = {n for n in _names(sb) - ids_b if _stem(n) not in _words_of(sa)}
    # (unless one configuration name both say pins the thing: "pg_hba.conf ... Unix-domain" / "pg_hba.conf
    # ... TCP/IP" name two cases of it)
    if names_a and names_b and not (_names(sa) & _names(sb)) and not (ids_a & ids_b):
        return False
    shared = (_about(sa) & words_b) | (_about(sb) & words_a)
    return len(shared) >= least


# words saying when something first appeared: a release number beside them is that event's
_ARRIVED = re.compile(r"\b(?:added|introduced|gained|new in|since|first (?:appeared|shipped|available)|"
                      r"available (?:from|since))\b", re.IGNORECASE)
_BARE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\w)")
_LABEL_BEFORE = re.compile(r"([A-Za-z][\w-]*)\s+$")


def _scalars(sentence: str, taken: list[Quantity]) -> list[Quantity]:
    """Numbers that are not read as quantities with a unit or a counted noun: a value after a name
    ("port 5432", "CPython 3.7", "TLS 1.0") is that name's; a value standing alone ("defaults to 5")
    is a plain number."""
    spans = []
    for q in taken:
        at = sentence.find(q.text)
        if at >= 0:
            spans.append((at, at + len(q.text)))
    out = []
    for m in _BARE.finditer(sentence):
        if any(a <= m.start() < b for a, b in spans):
            continue
        before = _LABEL_BEFORE.search(sentence[:m.start()])
        label = before.group(1).lower() if before else ""
        if "." in m.group(0) and label not in _FUNCTION and _ARRIVED.search(sentence):
            # "added in pip 22.3" / "gained it in version 23.1": the release something arrived in
            out.append(Quantity("release", float(m.group(0).split(".")[0]) * 1000 + float(m.group(0).split(".")[1]),
                                m.group(0), frozenset(), frozenset(), False, sentence))
            continue
        if label in _LABELS or label.rstrip("s") in _LABELS:
            continue  # "severity 1", "zone 4", "version 2": names of classes, not values (as above)
        if label in _FUNCTION or label in _GENERIC or label in _MODAL_WORDS or label in _NEGATIONS or \
                label.endswith("s") and label[:-1] in _FUNCTION:
            label = ""
        dim = f"label:{_stem(label)}" if label else "number"
        if re.fullmatch(r"0?\.\d+", m.group(0)) and not label:
            dim = "fraction"  # "defaults to 0.1": a share, as "half of them" is
        if re.fullmatch(r"0[0-7]{3}", m.group(0)):
            dim = "octal mode"  # 0600, 0640: a file's permissions however they are named ("mode", "permissions")
        out.append(Quantity(dim, float(m.group(0)), m.group(0), frozenset(), frozenset(), False, sentence))
    return out


@lru_cache(maxsize=4096)
def _words_of(sentence: str) -> frozenset[str]:
    stems = set()
    for w in re.findall(r"[A-Za-z][A-Za-z0-9'-]*", sentence):
        stems.add(_stem(w.lower()))
    for m in _IDENT.finditer(sentence):
        stems |= {_stem(w) for w in _parts(m.group(0))}
    return frozenset(stems)


def _comparable(qa: Quantity, qb: Quantity, words_a: frozenset[str], words_b: frozenset[str]) -> bool:
    """Two values measure the same thing's same dimension: one unit kind; for counts the same noun, or
    a noun the other sentence says; a plain number beside a count of a noun its sentence names."""
    da, db = qa.dimension, qb.dimension
    if da == db:
        return True
    counted = ("count:", "label:", "number")
    if not (da.startswith(counted) and db.startswith(counted)):
        return False
    noun_a = da.split(":", 1)[1] if ":" in da else ""
    noun_b = db.split(":", 1)[1] if ":" in db else ""
    if da.startswith("label:") and db.startswith("label:"):
        return False  # "port 5432" / "version 3": two names' values
    if noun_a and noun_b:  # "three worker processes" / "five autovacuum workers"
        return _stem(noun_a) in _words_of(qb.text) or _stem(noun_b) in _words_of(qa.text)
    noun = noun_a or noun_b  # "three password prompts" / "NumberOfPasswordPrompts defaults to 5"
    plain = qb if noun_a else qa
    if noun and plain.dimension == "number" and not _stated(plain):
        return False  # "roughly 410 in the warehouses, ... 45 in IT": a count of something else in a list
    return not noun or _stem(noun) in _local(plain, plain.sentence)


_STATED_AFTER = re.compile(r"(?:\b(?:is|are|was|be|to|of|equals|at)|[=:])\s*$", re.IGNORECASE)


def _stated(q: Quantity) -> bool:
    """A plain number stated as something's value: after "is", "to", "=" ("defaults to 5", "SystemMaxFiles=
    is 50"), not one number of a list."""
    at = q.sentence.find(q.text)
    return at >= 0 and bool(_STATED_AFTER.search(q.sentence[:at]))


_CONDITION = re.compile(r"^\s*(?:when|whenever|if|once|while|where)\b[^,;]*,", re.IGNORECASE)


# A value someone may choose, not the one that holds: "set log_file_mode to 0640", "with X at 0600",
# "setting X to zero" (what the value would do, said beside what another value would do)
_CHOSEN = re.compile(r"\b(?:set|setting|sets|with)\s+(?:the\s+|its\s+)?[\w.=-]+\s+(?:to|at)\s*$", re.IGNORECASE)


def _asserted(qs: list[Quantity], sentence: str) -> list[Quantity]:
    """The quantities a sentence states, not those of the condition it opens with ("When two engineers
    swap weeks, ...": two is when, not how many), nor a value chosen ("set X to 0640")."""
    m = _CONDITION.match(sentence)
    if m:
        qs = [q for q in qs if not 0 <= sentence.find(q.text) < m.end()]
    return [q for q in qs if not _CHOSEN.search(sentence[:max(sentence.find(q.text), 0)])]


_LOWER = re.compile(r"\b(?:at least|or more|above|over|more than|exceeding|beyond|a minimum of|no less than|not less than|minimum|and above|and later|"
                    r"or later|or newer|or higher|starting at|from)\b", re.IGNORECASE)
_UPPER = re.compile(r"\b(?:at most|up to|or less|or fewer|no more than|not more than|a maximum of|maximum|"
                    r"within|or earlier|or older|or lower|until)\b", re.IGNORECASE)


def _sense(sentence: str) -> str:
    low, up = bool(_LOWER.search(sentence)), bool(_UPPER.search(sentence))
    return "lower" if low and not up else "upper" if up and not low else ""


# When a value holds: values for other days or seasons are two quantities ("three shifts on weekdays" /
# "two shifts on Saturdays").
_WHEN = re.compile(r"\b(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekdays?|"
                   r"weekends?|nights?|days?time|holidays?|summer|winter|spring|autumn|peak|off-peak)\b", re.IGNORECASE)


def _lead(sentence: str) -> tuple[str, ...]:
    """The sentence's leading noun phrase as stems ("Cold-chain deliveries may wait" -> cold-chain,
    delivery), after an opening article."""
    words = re.findall(r"[A-Za-z][\w'-]*=?", sentence)
    while words and words[0].lower() in ("the", "a", "an", "each", "every", "all", "our", "its"):
        words = words[1:]
    out = []
    for w in words:
        low = w.lower()
        if low in _FUNCTION or low in _MODAL_WORDS or low in _NEGATIONS:
            break
        out.append(_stem(low))
    return tuple(out)


def _other_kinds(sa: str, sb: str) -> bool:
    """Two sentences about other kinds or times of one thing: leading phrases with one head and
    modifiers of their own that the other sentence never says ("cold-chain deliveries" / "ambient
    deliveries"), or other days or seasons named."""
    la, lb = _lead(sa), _lead(sb)
    if len(la) >= 2 and len(lb) >= 2 and la[-1] == lb[-1]:
        own_a, own_b = set(la[:-1]) - set(lb), set(lb[:-1]) - set(la)
        if own_a and own_b and not own_a & _words_of(sb) and not own_b & _words_of(sa):
            return True
    wa = {m.group(0).lower() for m in _WHEN.finditer(sa)}
    wb = {m.group(0).lower() for m in _WHEN.finditer(sb)}
    return bool(wa and wb and not wa & wb)


def _aligned_quantity_rule(sa: str, sb: str) -> Finding | None:
    """One thing's quantity given two values by sentences worded differently: aligned by what they
    are about, values of one dimension that differ, and neither sentence also giving the other's."""
    sense_a, sense_b = _sense(sa), _sense(sb)
    if sense_a and sense_b and sense_a != sense_b:
        return None  # "at least 8" / "at most 16" bound one range from both ends
    qas, qbs = quantities(sa), quantities(sb)
    qas, qbs = _asserted(qas + _scalars(sa, qas), sa), _asserted(qbs + _scalars(sb, qbs), sb)
    if not qas or not qbs or not _same_thing(sa, sb) or _other_kinds(sa, sb):
        return None
    words_a, words_b = _words_of(sa), _words_of(sb)
    names = {_stem(n) for n in (_names(sa) | _names(sb)) - _topic_stems(sa)[1] - _topic_stems(sb)[1]}
    parts_a = set().union(*_ident_parts(sa).values())  # configuration names' words
    parts_b = set().union(*_ident_parts(sb).values())
    found: list[Finding] = []
    dims: set[tuple[str, str]] = set()
    for qa in qas:
        for qb in qbs:
            if not _comparable(qa, qb, words_a, words_b):
                continue
            la, lb = _local(qa, sa), _local(qb, sb)
            shared = (la & lb) - names  # something said of both values, near them (not a system's name)
            # a configuration name's word, or the counted or named noun itself ("100 client connections" /
            # "200 concurrent connections", "port 5432" / "default port is 5433") says which thing
            strong = shared & (parts_a | parts_b) or _noun(qa) or _noun(qb) or \
                (shared and qa.dimension == qb.dimension == "octal mode")  # the value says it is a file's mode
            if len(shared) < 2 and not strong:
                continue  # one word in common near two values ("in the cold room") is not one thing
            if qa.every != qb.every and not shared & (parts_a | parts_b):
                continue  # how often ("every 90 days") and how long ("for 12 months"): two measures, unless
                # a configuration name ties them ("every five minutes" / "checkpoint_timeout 15 minutes")  # the values measure other things of one subject ("a 45-minute break" / "11 hours' rest")
            dim = qa.dimension if qa.dimension == qb.dimension else "count:"
            if _same(qa.value, qb.value, dim):
                continue
            if any(_comparable(qa, o, words_a, words_b) and _same(qa.value, o.value, dim) for o in qbs) or \
                    any(_comparable(o, qb, words_a, words_b) and _same(o.value, qb.value, dim) for o in qas):
                continue
            found.append(Finding("quantity", f"{qa.text} vs {qb.text}", (qa.text,), (qb.text,)))
            dims.add((qa.dimension, qb.dimension))
    if len({a for a, _ in dims}) > 1:
        return None  # two measures differ at once ("80% within a day" / "95% within five days"): other measures
    return found[0] if found else None


# No bound against a bound: "identifiers are unlimited in length" / "at most 255 characters long"
_UNBOUNDED = re.compile(r"\bunlimited\b|\bunbounded\b|\bno (?:upper )?limit\b|\bwithout (?:any |a )?limit\b|"
                        r"\bno maximum\b|\bnot limited\b", re.IGNORECASE)
_BOUNDED = re.compile(r"\b(?:at most|up to|no more than|not more than|a maximum of|maximum|limited to|"
                      r"a limit of|cannot exceed|must not exceed)\s+(?:of\s+)?\S*\d", re.IGNORECASE)


def _unbounded_rule(sa: str, sb: str) -> Finding | None:
    """One thing said to have no limit and to have an upper bound, on aligned sentences (a denial of
    the unlimited, "is not unlimited", agrees with the bound)."""
    for x, y, flip in ((sa, sb, False), (sb, sa, True)):
        free, bound = _UNBOUNDED.search(x), _BOUNDED.search(y)
        if not free or not bound or _UNBOUNDED.search(y) or _BOUNDED.search(x):
            continue
        if re.search(r"\b(?:not|never|n't)\s+(?:\w+\s+)?$", x[:free.start()], re.IGNORECASE) or not _aligned(x, y):
            continue
        wa, wb = free.group(0), bound.group(0)
        if flip:
            wa, wb = wb, wa
        return Finding("quantity", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))
    return None


def _noun(q: Quantity) -> str:
    """The noun a count counts or a bare value is named by ("count:connection", "label:port")."""
    return q.dimension.split(":", 1)[1] if q.dimension.startswith(("count:", "label:")) else ""


def _local(q: Quantity, sentence: str, window: int = 4) -> frozenset[str]:
    """The stems of the `window` content words on each side of a value (configuration names read
    as the words they are made of): what the value is said of."""
    tokens = re.findall(r"[A-Za-z][\w'-]*=?|\d(?:[\d.,:]*\d)?", sentence)
    first = q.text.split()[0] if q.text.split() else q.text
    at = next((i for i, t in enumerate(tokens) if t == first or first.startswith(t)), None)
    if at is None:
        return frozenset()
    width = len(q.text.split())

    def side(seq):
        got = []
        for t in seq:
            if t.lower().rstrip("=") in _FUNCTION | _MODAL_WORDS | _NEGATIONS | _GENERIC or t[0].isdigit():
                continue
            got.append(t.rstrip("="))
            if len(got) >= window:
                break
        return got

    stems = set()
    for w in side(reversed(tokens[:at])) + side(tokens[at + width:]):
        if not w[0].isalpha():
            continue
        stems.add(_stem(_SYNONYMS.get(w.lower(), w.lower())))
        if _IDENT.fullmatch(w):
            stems |= {_stem(p) for p in _parts(w)}
    own = {_stem(w.lower()) for w in re.findall(r"[A-Za-z][\w'-]*", q.text)}  # "working days": the unit's
    return frozenset(stems - own - {_stem(g) for g in _GENERIC} - set(_UNITS))


# A dropped exception: one sentence states a rule with its exception or restriction, the other the
# same rule for everything (rows: the words that say so, and why).
_RESTRICTED = [
    ((r"\bexcept\b|\bexcepting\b|\bexcluding\b|\bexcluded\b|\bother than\b|\bapart from\b|\bexempt\b|"
      r"\b(?:is|are|do|does)\s+not\s+(?:be\s+)?(?:applied|apply)\s+to\b|\b(?:doesn't|don't)\s+apply\s+to\b"),
     "an exception named"),
    (r"\bunless\b", "a condition that lifts the rule"),
    (r"(?<!-)\bonly\b", "the rule limited to some cases (not \"read-only\")"),
    (r"\bnot always\b|\bnot all\b|\bnot every\b|\bnot any\b", "a rule that does not hold everywhere"),
    (r"\b(?:is|are)\s+ignored\s+(?:on|in|for|by|when|under)\b|\bhas no effect\s+(?:on|in|for|when)\b",
     "a place or case the rule does not reach"),
]
# A condition the rule holds under ("assert statements are removed when Python runs with -O"): a
# restriction against "always" or "whatever ..." only (against "every" or "any" it is often the same rule
# said of each case)
_CONDITIONED = re.compile(r"\b(?:when|whenever|if)\b", re.IGNORECASE)
_UNCONDITIONAL = re.compile(r"\balways\b|\bwhatever\b|\bwherever\b|\bregardless\b|\bin every case\b",
                            re.IGNORECASE)
_UNIVERSAL = [
    (r"\bnever\b|\balways\b", "said to hold at all times"),
    (r"\bany\b|\bevery\b|\ball\b|\beverything\b|\banything\b|\bwherever\b|\bwhatever\b", "said of everything"),
    (r"\bno way\b|\bwithout exception\b|\bincluded\b", "no case left out"),
    (r"\balso\b", "said of more than one case (against \"only\")"),
]
_RESTRICTED_RE = [(re.compile(p, re.IGNORECASE), why) for p, why in _RESTRICTED]
_UNIVERSAL_RE = [(re.compile(p, re.IGNORECASE), why) for p, why in _UNIVERSAL]


def _aligned(sa: str, sb: str) -> bool:
    """Sentences close enough in what they say for a dropped exception or a reversed stance to be
    one statement's: at least two shared words that are not names (system names are shared by many
    statements), and a fifth of their words shared (real pairs worded independently share 0.2 to
    0.4; unrelated rules about one place, 0.1)."""
    if not _same_thing(sa, sb):
        return False
    (a, ids_a), (b, ids_b) = _topic_stems(sa), _topic_stems(sb)
    # a system's name is one both sentences write as a name (a configuration name is no system's;
    # "Compression" opening one sentence and named in the other is the setting both are about)
    names = {_stem(n) for n in (_names(sa) & _names(sb)) - ids_a - ids_b}
    shared = (a & b) - names
    return len(shared) >= 2 and len(a & b) / max(len(a | b), 1) >= 0.2


def _restriction(sentence: str) -> str | None:
    for pattern, _ in _RESTRICTED_RE:
        m = pattern.search(sentence)
        if m:
            return m.group(0)
    return None


# "every 36 months", "every Tuesday": how often, not "of everything"; "must not drive any forklift":
# the "any" of a denial, not a universal claim; "all three buildings": a count
_NOT_UNIVERSAL = re.compile(
    r"\bnot (?:always|all|every|any)\b|\b(?:every|each)\s+(?:\d[\d.,]*|other|few|\w+day|week|month|quarter|"
    r"year|hour|minute|second|night|morning|time|shift|one|two|three|four|five|six|ten|twelve)\w*\b|"
    r"\b(?:not|n't|no|without)\s+(?:\w+\s+){0,3}?any\b|"
    r"\ball\s+(?:\d[\d.,]*|two|three|four|five|six|seven|eight|nine|ten|twelve)\b", re.IGNORECASE)


def _universal(sentence: str) -> str | None:
    s = _NOT_UNIVERSAL.sub(" ", sentence)
    for pattern, _ in _UNIVERSAL_RE:
        m = pattern.search(s)
        if m:
            return m.group(0)
    return None


def _exception_rule(sa: str, sb: str) -> Finding | None:
    """A rule stated with its exception ("does not return space, except when ...") against the same
    rule said of everything ("never gives any space back"): aligned sentences, one restricted and not
    universal, the other universal and not restricted, sharing at least two words of their subject."""
    ra, rb = _restriction(sa), _restriction(sb)
    ua, ub = _universal(sa), _universal(sb)
    if not ra and not rb:  # a condition against "always": "removed when run with -O" / "always executed"
        ca, cb = _CONDITIONED.search(sa), _CONDITIONED.search(sb)
        wa, wb = _UNCONDITIONAL.search(sa), _UNCONDITIONAL.search(sb)
        if ca and not cb and wb and not wa:
            ra, ub, ua = ca.group(0), wb.group(0), None
        elif cb and not ca and wa and not wb:
            rb, ua, ub = cb.group(0), wa.group(0), None
    if ra and not rb and ub and not (ua and ua.lower() == ub.lower()):
        said_a, said_b = ra, ub
    elif rb and not ra and ua and not (ub and ub.lower() == ua.lower()):
        said_a, said_b = ua, rb
    else:
        return None
    if not _aligned(sa, sb):
        return None
    return Finding("exception", f"{said_a.lower()} vs {said_b.lower()}", (said_a,), (said_b,))


# A reversed obligation or recommendation, stated in other words: the stance each sentence takes on
# doing the thing (rows: the words, the stance, why).
_STANCES = [
    ((r"\bmust never\b|\bshould never\b|\bbe avoided\b|\bavoid (?:using|it|them|this)\b|\bdiscouraged\b|\bnot recommended\b|\bunsafe\b|\bnot safe\b|"
      r"\bmust not\b|\bmustn't\b|\bshould not\b|\bshouldn't\b|\bmay not\b|\bcannot\b|\bprohibited\b|"
      r"\bforbidden\b"), "AGAINST", "advised or ruled against"),
    ((r"\bdoes not need\b|\bdo not need\b|\bdoesn't need\b|\bdon't need\b|\bneed not\b|\bnever need\b|"
      r"\bis optional\b|\bare optional\b|\bnot required\b|\boptional\b|"
      r"\bwithout (?:being|having to|needing to|the need to)\b"), "NOT_NEEDED", "not needed"),
    ((r"\brefuses? to \w+ (?:unless|without)\b|\bwill not \w+ (?:unless|without)\b|\bwon't \w+ (?:unless|without)\b|"
      r"\brecommended\b|\bencouraged\b|\bsafe to\b|\bis safe\b|\bmust\b|\bhas to\b|\bhave to\b|"
      r"\brequired\b|\bneeds? to\b|\bshould\b|\bneeds?\b"), "FOR", "advised or required"),
]
_STANCES_RE = [(re.compile(p, re.IGNORECASE), stance) for p, stance, _ in _STANCES]
_STANCE_OPPOSED = {frozenset({"AGAINST", "FOR"}), frozenset({"NOT_NEEDED", "FOR"})}


def _stance(sentence: str) -> tuple[str | None, str]:
    for pattern, stance in _STANCES_RE:
        m = pattern.search(sentence)
        if m:
            return stance, m.group(0)
    return None, ""


_PLACE = re.compile(r"\b(?:in|at|on|inside|within)\s+(?:the\s+|a\s+|an\s+)?([A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?)",
                    re.IGNORECASE)


def _places(sentence: str) -> frozenset[str]:
    """The stems of the places or cases a sentence restricts itself to ("in the cold room")."""
    out = set()
    for m in _PLACE.finditer(sentence):
        for w in m.group(1).split():
            if w.lower() not in _FUNCTION and w.lower() not in _UNITS and not w.lower() in _GENERIC:
                out.add(_stem(w.lower()))
    return frozenset(out)


def _stance_rule(sa: str, sb: str) -> Finding | None:
    """Opposite stances on one thing, worded independently ("should be avoided" / "is the recommended
    way"; "has to be vacuumed" / "never need vacuuming"): aligned by at least two words of what they
    are about, with no restriction on either side (a rule beside its exception is not a reversal)."""
    ta, wa = _stance(sa)
    tb, wb = _stance(sb)
    if not ta or not tb or frozenset({ta, tb}) not in _STANCE_OPPOSED:
        return None
    # "refuses to start unless it is given X" requires X: its "unless" is the requirement, not an exception
    if _restriction(sa.replace(wa, " ")) or _restriction(sb.replace(wb, " ")) or not _aligned(sa, sb):
        return None
    pa, pb = _places(sa), _places(sb)
    if pa and pb and not pa & pb:
        return None  # "in the cold room" / "in the office": a stance for each place

    return Finding("modal", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))


# A swapped order: "X before Y" against "X after Y" (or "Y before X") on aligned sentences; precedence is an
# order too ("X overrides Y", "X takes precedence over Y": X comes first).
_ORDER = re.compile(r"\b(before|after|prior to|followed by|preceded by|overrides|override|overridden by|"
                    r"takes? precedence over|wins? over)\b", re.IGNORECASE)
_ORDER_FORWARD = {"before", "prior to", "followed by", "overrides", "override", "take precedence over",
                  "takes precedence over", "win over", "wins over"}  # X <word> Y: X comes first
# Which of several matches holds: "the first one that matches is used" against "the last one wins" (rows: the
# words naming the one that holds, and where it stands)
_HOLDS = re.compile(r"\b(?:wins?|is used|are used|takes? effect|takes? precedence|applies|prevails|counts)\b",
                    re.IGNORECASE)
_WHICH = [(re.compile(r"\b(?:first|earliest)\b", re.IGNORECASE), "first"),
          (re.compile(r"\b(?:last|latest|final)\b", re.IGNORECASE), "last")]


# "put X first and Y after (them)": the order said by "first" and a pronoun
_FIRST_THEN = re.compile(r"\b(?P<x>[^,;]+?)\s+first\b,?\s+(?:and|then)\s+(?P<y>[^,;]+?)\s+"
                         r"(?:after|afterwards|last|later|next|second)\b", re.IGNORECASE)


def _order(sentence: str) -> tuple[frozenset[str], frozenset[str], str] | None:
    """(what comes first, what comes second, the order word) of a sentence's "X before/after Y"."""
    then = _FIRST_THEN.search(sentence)
    found = list(_ORDER.finditer(sentence))
    if len(found) > 1 and not then:
        return None  # a chain ("A overrides B, which overrides C"): more than one order, not read here
    m = found[0] if found else None
    if not m and not then:
        return None
    if m and then and m.group(1).lower() in _ORDER_FORWARD - {"before", "prior to", "followed by"}:
        m = None  # "later entries override earlier ones, so put X first and Y after": the order said is then's

    def stems(text: str, last: bool) -> frozenset[str]:
        words = [w for w in re.findall(r"[A-Za-z][\w'-]*", text)
                 if w.lower() not in _FUNCTION | _MODAL_WORDS | _NEGATIONS | _GENERIC]
        words = words[-3:] if last else words[:3]
        out = set()
        for w in words:
            out.add(_stem(w.lower()))
            if _IDENT.fullmatch(w):
                out |= {_stem(p) for p in _parts(w)}
        return frozenset(out)

    if then and (not m or m.start() >= then.start("y")):
        x = re.sub(r"^.*\b(?:put|place|list|write|keep|so|then)\s+", "", then.group("x"), flags=re.IGNORECASE)
        return stems(x, True), stems(then.group("y"), False), "first"
    left, right = stems(sentence[:m.start()], True), stems(sentence[m.end():], False)
    word = m.group(1).lower()
    return (left, right, m.group(1)) if word in _ORDER_FORWARD else (right, left, m.group(1))


def _pinned(sa: str, sb: str) -> bool:
    """Both sentences name one configuration name and are about the same thing: what they are about is
    pinned, and a rule that reads a structure of its own (an order, a default) needs no more words shared."""
    return bool(_topic_stems(sa)[1] & _topic_stems(sb)[1]) and _same_thing(sa, sb)


def _order_rule(sa: str, sb: str) -> Finding | None:
    """Two sentences putting the same two things in opposite orders ("ExecStartPre= runs before
    ExecStart=" / "... after ExecStart="): what one puts first the other puts second, and the other
    way round, with nothing put in the same place by both."""
    oa, ob = _order(sa), _order(sb)
    # one configuration name both say pins what they are about: the same two things put in opposite
    # places then need no more words in common ("With SendSIGHUP= ..., SIGHUP after SIGTERM" / "If
    # SendSIGHUP= is on, ... SIGHUP before SIGTERM")
    if not oa or not ob or not (_pinned(sa, sb) or _aligned(sa, sb)):
        return None
    (first_a, second_a, wa), (first_b, second_b, wb) = oa, ob
    crossed = (first_a & second_b) | (second_a & first_b)
    agreed = (first_a & first_b) | (second_a & second_b)
    if first_a & second_b and second_a & first_b and len(crossed) > len(agreed):
        return Finding("order", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))
    return None


def _which_holds(sentence: str) -> tuple[str, str] | None:
    """("first" | "last", the word) of a sentence saying which of several matches holds, or None."""
    if not _HOLDS.search(sentence):
        return None
    said = [(where, m.group(0)) for pattern, where in _WHICH if (m := pattern.search(sentence))]
    return said[0] if len(said) == 1 else None


def _precedence_rule(sa: str, sb: str) -> Finding | None:
    """The first match said to hold against the last ("the first record that matches is used" / "the last
    one wins"), on sentences about the same thing."""
    wa, wb = _which_holds(sa), _which_holds(sb)
    if not wa or not wb or wa[0] == wb[0] or not (_pinned(sa, sb) or _aligned(sa, sb)):
        return None
    return Finding("order", f"{wa[1].lower()} vs {wb[1].lower()}", (wa[1],), (wb[1],))


# A changed default: the same setting said to be on by default and off by default (rows: the words
# that state a default, the words that say on or off).
# "unless" with what lifts it ("unless it is turned on", "unless you enable it", "unless --cache-dir is given"):
# the state without it is the default
_DEFAULT = re.compile(r"\bby default\b|\bdefaults? to\b|\bthe default\b|\bdefault is\b|\bout of the box\b|"
                      r"\bunless\b[^.;]*\b(?:turned|switched|set|enabled?|enables|disabled?|disables|on|off|given|"
                      r"passed|specified|provided)\b", re.IGNORECASE)
_LIFT = re.compile(r"\bunless\b(?P<rest>[^.;]*)", re.IGNORECASE)  # "unless it is turned on": off by default
# off: the setting disabled, denied, or set to nothing ("defaults to none, which disables ...")
_OFF = re.compile(r"\b(?:off|disabled|disables|false|no|none|empty|not|never|n't|cannot)\b|n't\b", re.IGNORECASE)
# a version after a name ("in PostgreSQL 15", "Python 3.11") says which release, not a default value
_RELEASE = re.compile(r"\b[A-Z][\w.]*\s+\d+(?:\.\d+)*\b")
_ON = re.compile(r"\b(?:on|enabled|true|yes|active)\b", re.IGNORECASE)


def _default_state(sentence: str) -> tuple[str, str] | None:
    """("on" | "off", the words saying so) of a sentence that states a default, or None."""
    if not _DEFAULT.search(sentence):
        return None
    if re.search(r"\d", _RELEASE.sub(" ", sentence)):
        return None  # a default value ("defaults to 128MB") is the quantity rules'
    lift = _LIFT.search(sentence)
    if lift:  # "... unless Persistent= is turned off": the setting is on by default, whatever the main clause says
        turned = re.search(r"\b(?:is|are|gets?|been)\s+(?:turned|switched|set)\s+(on|off)\b|\b(?:is|are)\s+"
                           r"(enabled|disabled)\b", lift.group("rest"), re.IGNORECASE)
        if turned:
            said = (turned.group(1) or turned.group(2)).lower()
            return ("off" if said in ("on", "enabled") else "on"), lift.group(0).strip()
    main = sentence[:lift.start()] if lift else sentence
    main = _QUALIFYING.sub("", main)  # "..., less if the kernel cannot support it"
    main = re.sub(r",?\s*\bnot (?:the|a|an)\b[^,]*,|\brather than\b.*$", " ", main, flags=re.IGNORECASE)  # a contrast
    main = re.sub(r"\b(?:by default|defaults? to|the default|default is)\b", " ", main, flags=re.IGNORECASE)
    off = _OFF.search(main)
    if off:
        return "off", off.group(0)
    on = _ON.search(main)
    if on:
        return "on", on.group(0)
    if lift:  # "X unless Y is turned on": nothing said of the main clause but its condition
        rest = lift.group("rest")
        if _ON.search(rest) or re.search(r"\b(?:turned|switched|enabled)\b", rest, re.IGNORECASE):
            return "off", lift.group(0).strip()
    return "on", "affirmed"


def _default_rule(sa: str, sb: str) -> Finding | None:
    """One setting's default given as on and as off ("Compression is disabled by default" / "by
    default the session is compressed"), on sentences aligned as for a dropped exception."""
    da, db = _default_state(sa), _default_state(sb)
    if not da or not db or da[0] == db[0] or not (_pinned(sa, sb) or _aligned(sa, sb)):
        return None
    if _restriction(_LIFT.sub(" ", sa)) or _restriction(_LIFT.sub(" ", sb)):
        return None  # a default for some cases only is the exception rule's
    return Finding("default", f"{da[0]} by default vs {db[0]} by default",
                   (da[1],) if da[1] != "affirmed" else (), (db[1],) if db[1] != "affirmed" else ())


# One and many: "exactly one ExecStart= command" against "several ExecStart= commands" (rows: the words
# that say one and no more, the words that say more than one).
_JUST_ONE = re.compile(r"\b(?:(?:exactly|only|just|at most|no more than)\s+(?:one|1)|a single)\s+"
                       r"((?:[\w=-]+\s+){0,2}[A-Za-z][\w=-]*)", re.IGNORECASE)
_MANY = re.compile(r"\b(?:several|multiple|more than one|any number of)\s+((?:[\w=-]+\s+){0,2}[A-Za-z][\w=-]*)",
                   re.IGNORECASE)


def _heads(pattern: re.Pattern, sentence: str) -> dict[str, str]:
    """The stem of each noun a pattern's number is said of (the last word of the phrase after it,
    up to a function word: "exactly one ExecStart= command" counts commands) -> the words as written."""
    out = {}
    for m in pattern.finditer(sentence):
        words = []
        for w in m.group(1).split():
            if w.lower() in _FUNCTION or w.lower() in _MODAL_WORDS or w.lower() in _NEGATIONS:
                break
            words.append(w)
        if words and not words[-1].endswith("="):
            shown = m.group(0)[:m.group(0).find(words[-1]) + len(words[-1])]
            out[_stem(words[-1])] = shown
    return out


# A reversed act in other words: one sentence says the thing is let in, the other that it is turned away
# (rows: the words for, the words against, what they oppose). Read as stems; a denial on one side
# ("does not accept") agrees with the other.
_OPPOSITES = [
    (("accept", "accepts", "accepted", "accepting"), ("refuse", "refuses", "refused", "reject", "rejects", "rejected"),
     "taken in or turned away"),
    (("allow", "allows", "allowed", "permit", "permits"), ("deny", "denies", "denied", "block", "blocks", "blocked"),
     "let through or stopped"),
    (("enable", "enables", "enabled"), ("disable", "disables", "disabled"), "switched on or off"),
    (("include", "includes", "included"), ("exclude", "excludes", "excluded"), "in or out"),
    (("keep", "keeps", "kept", "retain", "retains", "retained", "preserve", "preserves", "preserved"),
     ("discard", "discards", "discarded", "drop", "drops", "dropped", "delete", "deletes", "deleted"),
     "kept or thrown away"),
    (("grant", "grants", "granted"), ("revoke", "revokes", "revoked"), "given or taken back"),
]
_OPPOSITES_STEMS = [(frozenset(_stem(w) for w in yes), frozenset(_stem(w) for w in no), why)
                    for yes, no, why in _OPPOSITES]


def _acts(sentence: str) -> dict[str, str]:
    """The stems of a sentence's main clause (a qualifying clause's are its own) -> the words as written."""
    main = _QUALIFYING.sub("", sentence)
    return {_stem(w.lower()): w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", main)}


def _opposite_rule(sa: str, sb: str) -> Finding | None:
    """One thing let in by one sentence and turned away by the other ("a standby accepts read-only queries"
    / "a standby refuses every client connection"): aligned sentences, neither denied, neither restricted."""
    acts_a, acts_b = _acts(sa), _acts(sb)
    for yes, no, _ in _OPPOSITES_STEMS:
        for x, y in ((acts_a, acts_b), (acts_b, acts_a)):
            wx, wy = yes & x.keys(), no & y.keys()
            if not wx or not wy or no & x.keys() or yes & y.keys():
                continue
            if _negated(sa) or _negated(sb) or _restriction(sa) or _restriction(sb) or not _aligned(sa, sb):
                return None
            said_x, said_y = x[min(wx)], y[min(wy)]
            wa, wb = (said_x, said_y) if x is acts_a else (said_y, said_x)
            return Finding("negation", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))
    return None


# Once against each time: "evaluated once, when the definition runs" / "evaluated each time the function is
# called" ("once" as a conjunction, "once the server starts", is not how often; "once a day" is a frequency)
_ONCE = re.compile(r"\b(?:only |just )?once\b(?=\s*(?:[,.;:]|$|(?:and|when|at|during|only)\b))", re.IGNORECASE)
_EACH_TIME = re.compile(r"\b(?:each|every) time\b|\b(?:on|at|for) (?:each|every) (?:call|use|run)\b|"
                        r"\brepeatedly\b", re.IGNORECASE)


def _how_often(sentence: str) -> tuple[str, str] | None:
    once, each = _ONCE.search(sentence), _EACH_TIME.search(sentence)
    if each and re.search(r"\b(?:not|never|rather than|instead of)\s+$", sentence[:each.start()], re.IGNORECASE):
        return ("once", each.group(0)) if not once else None  # "not at each call" says once
    if bool(once) == bool(each):
        return None  # neither, or both ("once, at definition time, not at each call")
    return ("once", once.group(0)) if once else ("each time", each.group(0))


def _once_rule(sa: str, sb: str) -> Finding | None:
    """One thing done once and done each time, on aligned sentences."""
    ha, hb = _how_often(sa), _how_often(sb)
    if not ha or not hb or ha[0] == hb[0] or not _aligned(sa, sb):
        return None
    return Finding("quantity", f"{ha[1].lower()} vs {hb[1].lower()}", (ha[1],), (hb[1],))


def _one_or_many_rule(sa: str, sb: str) -> Finding | None:
    """One thing said to come exactly once and more than once, on sentences about the same thing; a
    denial of the many ("must not list several") agrees with the one."""
    for x, y, flip in ((sa, sb, False), (sb, sa, True)):
        one, many = _heads(_JUST_ONE, x), _heads(_MANY, y)
        common = sorted(set(one) & set(many))
        if not common or _negated(y) or not _same_thing(x, y):
            continue
        wa, wb = one[common[0]], many[common[0]]
        if flip:
            wa, wb = wb, wa
        return Finding("quantity", f"{wa} vs {wb}", (wa,), (wb,))
    return None


# ----------------------------------------------------------------------------- entry point

def compare(a: str, b: str) -> Finding | None:
    """Whether texts `a` and `b` (two answers on one subject, or a claim and an answer) contradict
    each other: the first rule that finds a contradiction between a sentence of `a` and a sentence
    of `b`, or None. Symmetric in whether it finds one; deterministic; pure."""
    sentences_a, sentences_b = _sentences(a), _sentences(b)
    if not sentences_a or not sentences_b:
        return None
    for rule in (_quantity_rule, _polarity_rules, _attribute_rule, _aligned_quantity_rule,
                 _exception_rule, _stance_rule, _order_rule, _precedence_rule, _default_rule, _one_or_many_rule,
                 _once_rule, _unbounded_rule, _opposite_rule):
        for sa in sentences_a:
            for sb in sentences_b:
                found = rule(sa, sb)
                if found:
                    return found
    return None
