"""Orders and defaults on aligned sentences (docs/architecture.md, "Conflicts"): the *order* rule (what
one sentence puts before, or lets override, the other puts after), the *precedence* rule (the first
match holds against the last), and the *default* rule (one setting on and off by default). Pure.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .alignment import GENERIC, IDENT, aligned, name_parts, pinned
from .polarity import QUALIFYING
from .scope import restriction
from .words import FUNCTION, MODAL_WORDS, NEGATIONS, Finding, stem

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


@lru_cache(maxsize=4096)
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
                 if w.lower() not in FUNCTION | MODAL_WORDS | NEGATIONS | GENERIC]
        words = words[-3:] if last else words[:3]
        out = set()
        for w in words:
            out.add(stem(w.lower()))
            if IDENT.fullmatch(w):
                out |= {stem(p) for p in name_parts(w)}
        return frozenset(out)

    if then and (not m or m.start() >= then.start("y")):
        x = re.sub(r"^.*\b(?:put|place|list|write|keep|so|then)\s+", "", then.group("x"), flags=re.IGNORECASE)
        return stems(x, True), stems(then.group("y"), False), "first"
    left, right = stems(sentence[:m.start()], True), stems(sentence[m.end():], False)
    word = m.group(1).lower()
    return (left, right, m.group(1)) if word in _ORDER_FORWARD else (right, left, m.group(1))


def order_rule(sa: str, sb: str) -> Finding | None:
    """Two sentences putting the same two things in opposite orders ("ExecStartPre= runs before
    ExecStart=" / "... after ExecStart="): what one puts first the other puts second, and the other
    way round, with nothing put in the same place by both."""
    oa, ob = _order(sa), _order(sb)
    # one configuration name both say pins what they are about: the same two things put in opposite
    # places then need no more words in common ("With SendSIGHUP= ..., SIGHUP after SIGTERM" / "If
    # SendSIGHUP= is on, ... SIGHUP before SIGTERM")
    if not oa or not ob or not (pinned(sa, sb) or aligned(sa, sb)):
        return None
    (first_a, second_a, wa), (first_b, second_b, wb) = oa, ob
    crossed = (first_a & second_b) | (second_a & first_b)
    agreed = (first_a & first_b) | (second_a & second_b)
    if first_a & second_b and second_a & first_b and len(crossed) > len(agreed):
        return Finding("order", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))
    return None


@lru_cache(maxsize=4096)
def _which_holds(sentence: str) -> tuple[str, str] | None:
    """("first" | "last", the word) of a sentence saying which of several matches holds, or None."""
    if not _HOLDS.search(sentence):
        return None
    said = [(where, m.group(0)) for pattern, where in _WHICH if (m := pattern.search(sentence))]
    return said[0] if len(said) == 1 else None


def precedence_rule(sa: str, sb: str) -> Finding | None:
    """The first match said to hold against the last ("the first record that matches is used" / "the last
    one wins"), on sentences about the same thing."""
    wa, wb = _which_holds(sa), _which_holds(sb)
    if not wa or not wb or wa[0] == wb[0] or not (pinned(sa, sb) or aligned(sa, sb)):
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


@lru_cache(maxsize=4096)
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
    main = QUALIFYING.sub("", main)  # "..., less if the kernel cannot support it"
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


def default_rule(sa: str, sb: str) -> Finding | None:
    """One setting's default given as on and as off ("Compression is disabled by default" / "by
    default the session is compressed"), on sentences aligned as for a dropped exception."""
    da, db = _default_state(sa), _default_state(sb)
    if not da or not db or da[0] == db[0] or not (pinned(sa, sb) or aligned(sa, sb)):
        return None
    if restriction(_LIFT.sub(" ", sa)) or restriction(_LIFT.sub(" ", sb)):
        return None  # a default for some cases only is the exception rule's
    return Finding("default", f"{da[0]} by default vs {db[0]} by default",
                   (da[1],) if da[1] != "affirmed" else (), (db[1],) if db[1] != "affirmed" else ())
