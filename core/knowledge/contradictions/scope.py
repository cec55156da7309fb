"""Scope and stance on aligned sentences (docs/architecture.md, "Conflicts"): the *exception* rule (a
rule with its exception, restriction or condition against the same rule said of everything), the
*stance* rule (advised or ruled against, or not needed, against advised or required), the *opposite*
rule (let in against turned away: accept / refuse, enable / disable ...), *once or each time*, and
*one or many*. Each rule's words are a table with the reason. Pure.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .alignment import GENERIC, aligned, same_thing
from .polarity import QUALIFYING, negated
from .values import UNITS
from .words import FUNCTION, MODAL_WORDS, NEGATIONS, Finding, stem

# A dropped exception: one sentence states a rule with its exception or restriction, the other the
# same rule for everything (rows: the words that say so, and why).
_RESTRICTED = [
    ((r"\bexcept\b|\bexcepting\b|\bexcluding\b|\bexcluded\b|\bother than\b|\bapart from\b|\bexempt\b|"
      r"\b(?:is|are|do|does)\s+not\s+(?:be\s+)?(?:applied|apply)\s+to\b|\b(?:doesn't|don't)\s+apply\s+to\b"),
     "an exception named"),
    (r"\bunless\b", "a condition that lifts the rule"),
    (r"(?<!-)\bonly\b", "the rule limited to some cases (not \"read-only\")"),
    (r"\bnot always\b|\bnot all\b|\bnot every\b|\bnot any\b", "a rule that does not hold everywhere"),
    (r"\b(?:is|are)\s+ignored\s+(?:on|in|for|when|under)\b|\bhas no effect\s+(?:on|in|for|when)\b",
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


@lru_cache(maxsize=4096)
def restriction(sentence: str) -> str | None:
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
    r"\ball\s+(?:\d[\d.,]*|two|three|four|five|six|seven|eight|nine|ten|twelve)\b|"
    r"\b(?:defaults? to|set to|is set to|=)\s*(?:always|never|all|any|every)\b",  # a value: "defaults to always"
    re.IGNORECASE)


@lru_cache(maxsize=4096)
def _universal(sentence: str) -> str | None:
    s = _NOT_UNIVERSAL.sub(" ", sentence)
    for pattern, _ in _UNIVERSAL_RE:
        m = pattern.search(s)
        if m:
            return m.group(0)
    return None


def clause_case(sentence: str, start: int) -> str:
    """The stem of the last content word of the clause starting at `start` (up to a comma, a semicolon or
    the end): the case or event the clause names ("when the process exits": exit)."""
    clause = re.split(r"[,;.]", sentence[start:], maxsplit=1)[0]
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", clause)
             if w.lower() not in FUNCTION | NEGATIONS | MODAL_WORDS and w.lower() != "it"]
    return stem(words[-1].lower()) if words else ""


def _says(sentence: str, word: str) -> bool:
    return bool(word) and word in {stem(w.lower()) for w in re.findall(r"[A-Za-z][A-Za-z'-]*", sentence)}


def exception_rule(sa: str, sb: str) -> Finding | None:
    """A rule stated with its exception ("does not return space, except when ...") against the same
    rule said of everything ("never gives any space back"): aligned sentences, one restricted and not
    universal, the other universal and not restricted, sharing at least two words of their subject."""
    ra, rb = restriction(sa), restriction(sb)
    ua, ub = _universal(sa), _universal(sb)
    if not ra and not rb:  # a condition against "always": "removed when run with -O" / "always executed"
        ca, cb = _CONDITIONED.search(sa), _CONDITIONED.search(sb)
        wa, wb = _UNCONDITIONAL.search(sa), _UNCONDITIONAL.search(sb)
        # ... unless the other sentence names the condition's case too ("flushed when the process exits" /
        # "always flushed at exit"): the same rule for that case
        if ca and not cb and wb and not wa and not _says(sb, clause_case(sa, ca.end())):
            ra, ub, ua = ca.group(0), wb.group(0), None
        elif cb and not ca and wa and not wb and not _says(sa, clause_case(sb, cb.end())):
            rb, ua, ub = cb.group(0), wa.group(0), None
    if ra and not rb and ub and not (ua and ua.lower() == ub.lower()):
        said_a, said_b = ra, ub
    elif rb and not ra and ua and not (ub and ub.lower() == ua.lower()):
        said_a, said_b = ua, rb
    else:
        return None
    for x, y in ((sa, sb), (sb, sa)):  # "also" widens an "only" when it says the same act ("also match")
        also = re.search(r"\balso\s+([A-Za-z][\w'-]*)", x, re.IGNORECASE)
        if also and (_universal(x) or "").lower() == "also" and not _says(y, stem(also.group(1).lower())):
            return None
    if not aligned(sa, sb, cases=True):  # the restriction and the widening name cases of one thing
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


@lru_cache(maxsize=4096)
def _stance(sentence: str) -> tuple[str | None, str]:
    for pattern, stance in _STANCES_RE:
        m = pattern.search(sentence)
        if m:
            return stance, m.group(0)
    return None, ""


_PLACE = re.compile(r"\b(?:in|at|on|inside|within)\s+(?:the\s+|a\s+|an\s+)?([A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?)",
                    re.IGNORECASE)


@lru_cache(maxsize=4096)
def _places(sentence: str) -> frozenset[str]:
    """The stems of the places or cases a sentence restricts itself to ("in the cold room")."""
    out = set()
    for m in _PLACE.finditer(sentence):
        for w in m.group(1).split():
            if w.lower() not in FUNCTION and w.lower() not in UNITS and not w.lower() in GENERIC:
                out.add(stem(w.lower()))
    return frozenset(out)


def stance_rule(sa: str, sb: str) -> Finding | None:
    """Opposite stances on one thing, worded independently ("should be avoided" / "is the recommended
    way"; "has to be vacuumed" / "never need vacuuming"): aligned by at least two words of what they
    are about, with no restriction on either side (a rule beside its exception is not a reversal)."""
    ta, wa = _stance(sa)
    tb, wb = _stance(sb)
    if not ta or not tb or frozenset({ta, tb}) not in _STANCE_OPPOSED:
        return None
    # "refuses to start unless it is given X" requires X: its "unless" is the requirement, not an exception
    if restriction(sa.replace(wa, " ")) or restriction(sb.replace(wb, " ")) or not aligned(sa, sb):
        return None
    pa, pb = _places(sa), _places(sb)
    if pa and pb and not pa & pb:
        return None  # "in the cold room" / "in the office": a stance for each place

    return Finding("modal", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))


# One and many: "exactly one ExecStart= command" against "several ExecStart= commands" (rows: the words
# that say one and no more, the words that say more than one).
_JUST_ONE = re.compile(r"\b(?:(?:exactly|only|just|at most|no more than)\s+(?:one|1)|a single)\s+"
                       r"((?:[\w=-]+\s+){0,2}[A-Za-z][\w=-]*)", re.IGNORECASE)
_MANY = re.compile(r"\b(?:several|multiple|more than one|any number of)\s+((?:[\w=-]+\s+){0,2}[A-Za-z][\w=-]*)",
                   re.IGNORECASE)


@lru_cache(maxsize=4096)
def _heads(pattern: re.Pattern, sentence: str) -> dict[str, str]:
    """The stem of each noun a pattern's number is said of (the last word of the phrase after it,
    up to a function word: "exactly one ExecStart= command" counts commands) -> the words as written."""
    out = {}
    for m in pattern.finditer(sentence):
        words = []
        for w in m.group(1).split():
            if w.lower() in FUNCTION or w.lower() in MODAL_WORDS or w.lower() in NEGATIONS:
                break
            words.append(w)
        if words and not words[-1].endswith("="):
            shown = m.group(0)[:m.group(0).find(words[-1]) + len(words[-1])]
            out[stem(words[-1])] = shown
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
    (("grant", "grants", "granted"), ("revoke", "revokes", "revoked"), "given or taken back"),
]
_OPPOSITES_STEMS = [(frozenset(stem(w) for w in yes), frozenset(stem(w) for w in no), why)
                    for yes, no, why in _OPPOSITES]


@lru_cache(maxsize=4096)
def _acts(sentence: str) -> dict[str, str]:
    """The stems of a sentence's main clause (a qualifying clause's are its own) -> the words as written."""
    main = QUALIFYING.sub("", sentence)
    return {stem(w.lower()): w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", main)}


def opposite_rule(sa: str, sb: str) -> Finding | None:
    """One thing let in by one sentence and turned away by the other ("a standby accepts read-only queries"
    / "a standby refuses every client connection"): aligned sentences, neither denied, neither restricted."""
    acts_a, acts_b = _acts(sa), _acts(sb)
    for yes, no, _ in _OPPOSITES_STEMS:
        for x, y in ((acts_a, acts_b), (acts_b, acts_a)):
            wx, wy = yes & x.keys(), no & y.keys()
            if not wx or not wy or no & x.keys() or yes & y.keys():
                continue
            if negated(sa) or negated(sb) or restriction(sa) or restriction(sb) or not aligned(sa, sb):
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


@lru_cache(maxsize=4096)
def _how_often(sentence: str) -> tuple[str, str] | None:
    once, each = _ONCE.search(sentence), _EACH_TIME.search(sentence)
    if each and re.search(r"\b(?:not|never|rather than|instead of)\s+$", sentence[:each.start()], re.IGNORECASE):
        return ("once", each.group(0)) if not once else None  # "not at each call" says once
    if bool(once) == bool(each):
        return None  # neither, or both ("once, at definition time, not at each call")
    return ("once", once.group(0)) if once else ("each time", each.group(0))


def once_rule(sa: str, sb: str) -> Finding | None:
    """One thing done once and done each time, on aligned sentences, the once not per the event the
    each time names."""
    ha, hb = _how_often(sa), _how_often(sb)
    if not ha or not hb or ha[0] == hb[0] or not aligned(sa, sb):
        return None
    # once per the event "each time" names ("each time the database is upgraded" / "the upgrade takes a
    # backup once"): the same rule
    each, other = (sa, sb) if ha[0] == "each time" else (sb, sa)
    at = _EACH_TIME.search(each)
    if at and _says(other, clause_case(each, at.end())):
        return None
    return Finding("quantity", f"{ha[1].lower()} vs {hb[1].lower()}", (ha[1],), (hb[1],))


def one_or_many_rule(sa: str, sb: str) -> Finding | None:
    """One thing said to come exactly once and more than once, on sentences about the same thing; a
    denial of the many ("must not list several") agrees with the one."""
    for x, y, flip in ((sa, sb, False), (sb, sa, True)):
        one, many = _heads(_JUST_ONE, x), _heads(_MANY, y)
        common = sorted(set(one) & set(many))
        if not common or negated(y) or not same_thing(x, y):
            continue
        wa, wb = one[common[0]], many[common[0]]
        if flip:
            wa, wb = wb, wa
        return Finding("quantity", f"{wa} vs {wb}", (wa,), (wb,))
    return None
