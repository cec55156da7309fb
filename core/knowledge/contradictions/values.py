"""Quantities (docs/architecture.md, "Conflicts"): numbers read with their units (durations,
percentages, temperatures, lengths, areas, weights, money, data sizes, clock times, frequencies,
rates, shares, counts of the noun counted), converted to one base unit per dimension, and the
*quantity* rule: one quantity given two values by two sentences whose other words agree. Pure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..subjects import singular
from .words import FUNCTION, MODAL_WORDS, NEGATIONS, TOKEN, Finding, capitalised_names, stem

# ----------------------------------------------------------------------------- quantities

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "dozen": 12, "half": 0.5, "a": 1, "an": 1, "single": 1, "once": 1, "twice": 2,
}
# unit word -> (dimension, factor to the dimension's base unit)
UNITS = {
    **{w: ("duration", 1e-6) for w in ("µs", "us", "microsecond", "microseconds")},
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
    **{w: ("data", 1e-6) for w in ("kb", "kilobyte", "kilobytes", "kib", "kibibyte", "kibibytes")},
    **{w: ("data", 0.001) for w in ("mib", "mebibyte", "mebibytes")},
    **{w: ("data", 1) for w in ("gib", "gibibyte", "gibibytes")},
    **{w: ("data", 1000) for w in ("tib", "tebibyte", "tebibytes")},
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
LABELS = frozenset({"severity", "level", "zone", "priority", "tier", "class", "step", "phase", "version", "line",
                     "gate", "dock", "room", "category", "grade", "stage", "chapter", "section", "page",
                     "floor", "building", "aisle", "bay", "site", "door", "lane", "rule", "article", "iso",
                     "no", "number", "sev", "p", "v", "channel", "platform", "route", "bus", "unit"})
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_NOT_COUNTED = FUNCTION | NEGATIONS | {"more", "less", "fewer", "least", "most", "other", "times", "time",
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
            if phrase in UNITS:
                return phrase, width
    return None


def _context(tokens: list[str], skip: set[int]) -> frozenset[str]:
    out = set()
    for i, t in enumerate(tokens):
        if i in skip or not t[0].isalpha():
            continue
        low = t.lower()
        if low in FUNCTION or low in NEGATIONS or low in MODAL_WORDS or low in UNITS or low in _NUMBER_WORDS:
            continue
        if low in ("least", "most", "more", "less", "than", "up", "maximum", "minimum", "approximately", "about",
                   "roughly", "around", "longer", "shorter", "exceed", "exceeds", "last", "lasts", "take", "takes"):
            continue
        out.add(stem(low))
    return frozenset(out)


def quantities(sentence: str) -> list[Quantity]:
    """Every quantity in one sentence, with what it measures."""
    return list(_quantities(sentence))


@lru_cache(maxsize=4096)
def _quantities(sentence: str) -> tuple[Quantity, ...]:
    """`quantities`, read once per sentence (every rule and every other sentence asks again)."""
    matches = list(TOKEN.finditer(sentence))
    tokens = [m.group(0) for m in matches]
    names = frozenset(capitalised_names(sentence))
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
            if not (following[:1].isalpha() and following not in FUNCTION):  # "nightly backups": a kind, not how often
                found.append(("frequency", _FREQUENCIES[low], i, i + 1, False))
            i += 1
            continue
        value = _number(tok)
        j = i + 1
        if i and tokens[i - 1].lower() in LABELS:  # "severity 1", "zone 4": a name, not a quantity
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
                dim, factor = UNITS[unit[0]]
                found.append((dim, value * factor, start, i + 1, _every(tokens, start)))
            i += 1
            continue
        unit = _unit_at(tokens, unit_end)
        if unit:
            key, width = unit
            dim, factor = UNITS[key]
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
                per = UNITS[_unit_at(tokens, end + 1)[0]]
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
            head = f"count:{singular(words[-1])}"
            # a count per time, "100 requests per minute", "6000 an hour": the denominator is part of the
            # dimension, as for a unit's rate
            if k + 1 < n and tokens[k].lower() in _RATE_WORDS and _unit_at(tokens, k + 1):
                key, width = _unit_at(tokens, k + 1)
                head = f"{head}/{UNITS[key][0]}:{UNITS[key][1]}"
                k += 1 + width
            for v in (value, second):
                if v is not None:
                    found.append((head, v, start, k, _every(tokens, start)))
            i = k
            continue
        if low in ("once", "twice"):
            found.append(("times", value, start, j, False))
        elif unit_end < n and tokens[unit_end].lower() == "times" and low not in ("a", "an", "half") and not (
                unit_end + 1 < n and re.fullmatch(r"as|more|less|fewer|\w+er", tokens[unit_end + 1].lower())):
            found.append(("times", value, start, unit_end + 1, False))  # "3 times", as "twice" (not "3 times faster")
            j = unit_end + 1
        i = max(j, i + 1)
    out = []
    for dim, value, start, end, every in found:
        skip = set(range(start, end))
        written = sentence[matches[start].start():matches[end - 1].end()]  # as written, for highlighting
        out.append(Quantity(dim, float(value), written, _context(tokens, skip), names, every, sentence))
    return tuple(out)


def _every(tokens: list[str], start: int) -> bool:
    return start > 0 and tokens[start - 1].lower() in ("every", "each")


def same(x: float, y: float, dim: str) -> bool:
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


def quantity_rule(sa: str, sb: str) -> Finding | None:
    qas, qbs = quantities(sa), quantities(sb)
    for qa in qas:
        for qb in qbs:
            if not _compatible(qa, qb) or same(qa.value, qb.value, qa.dimension):
                continue
            # a text that also gives the other's value for that thing does not disagree with it
            if any(_compatible(qa, o) and same(qa.value, o.value, qa.dimension) for o in qbs) or \
                    any(_compatible(o, qb) and same(o.value, qb.value, qb.dimension) for o in qas):
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
        if stem(low) in shared and low not in said:
            said.append(low)
    return " ".join(said[:3])
