"""Obligations and negation (docs/architecture.md, "Conflicts"): the *modal* rule (must / must not,
may / may not, always / never on one statement), the *negation* rule (one statement affirmed and
denied), and the *attribute* rule (one attribute of one thing with two named values); the
comparators that must agree for a polarity rule to fire. Pure.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .alignment import own_names
from .words import FUNCTION, MODAL_WORDS, NEGATIONS, Finding, stem

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


@lru_cache(maxsize=4096)
def _modal(sentence: str) -> tuple[str | None, str]:
    # "is not prohibited" reads as permitted: try the patterns in the order above, but the
    # negated-prohibition one before plain prohibition
    order = [_MODALS_RE[2], _MODALS_RE[0], _MODALS_RE[1], _MODALS_RE[3], _MODALS_RE[4]]
    for pattern, value in order:
        m = pattern.search(sentence)
        if m:
            return value, m.group(0)
    return None, ""


@lru_cache(maxsize=4096)
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
        if low in FUNCTION or low in NEGATIONS or low in MODAL_WORDS or low.endswith("n't"):
            continue
        if low in ("need", "needs", "required", "allowed", "permitted", "ever", "times", "time", "one"):
            continue
        out.append(stem(low))
    return tuple(out)


# a trailing clause that qualifies the statement ("..., less if the kernel cannot support it"): its
# negation is the qualification's, not the statement's
QUALIFYING = re.compile(r",\s*(?:less|more|or|and)?\s*(?:if|unless|when|because|though|although|except|where)\b.*$",
                         re.IGNORECASE)
# "is off", "are disabled": a setting stated as not on is a denial ("Agent forwarding is off by default" says
# what "ssh does not forward the agent" says)
_OFF_STATED = re.compile(r"\b(?:is|are|stays?|remains?)\s+(?:off|disabled|turned off|switched off)\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def negated(sentence: str) -> str | None:
    main = _ALWAYS.sub(" ", QUALIFYING.sub("", sentence))
    m = _NEG_RE.search(main) or _OFF_STATED.search(main)
    return m.group(0) if m else None


_COMPARATORS = [(re.compile(r"\b(?:no more than|not more than|up to|at most|maximum of|a maximum|within|no longer than|"
                             r"less than|fewer than|under|below)\b", re.IGNORECASE), "<="),
                (re.compile(r"\b(?:more than|over|longer than|exceeds?|exceeding|above|beyond)\b", re.IGNORECASE), ">"),
                (re.compile(r"\b(?:at least|a minimum of|minimum|no less than|not less than)\b", re.IGNORECASE), ">=")]


@lru_cache(maxsize=4096)
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


# An exception a sentence names ("..., except those kept on the test server"): the words of the case
_EXCEPTED = re.compile(r"\b(?:except|excepting|other than|apart from|unless)\b(?P<case>[^.;]*)", re.IGNORECASE)


def _states_the_exception(sa: str, sb: str) -> bool:
    """One sentence names an exception and the other is about that case ("Backups must be encrypted, except
    those on the test server" / "Backups on the test server need not be encrypted"): a rule beside its
    exception, not a reversal. The case's own words (not the rule's) are mostly said by the other."""
    for x, y in ((sa, sb), (sb, sa)):
        m = _EXCEPTED.search(x)
        if not m or _EXCEPTED.search(y):
            continue
        case = set(_core(m.group("case"))) - set(_core(x[:m.start()]))
        if case and len(case & set(_core(y))) * 2 >= len(case):
            return True
    return False


def polarity_rules(sa: str, sb: str) -> Finding | None:
    ca, cb = _core(sa), _core(sb)
    if not _same_statement(ca, cb) or _bounds(sa) != _bounds(sb) or own_names(sa, sb):
        return None
    if _states_the_exception(sa, sb):
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
        na, nb = negated(sa), negated(sb)
        if bool(na) != bool(nb) and "NOT_OBLIGED" not in (ma, mb):
            return Finding("negation", f"{(wa or na or '').lower()} vs {(wb or nb or '').lower()}",
                           tuple(w for w in (wa, na) if w), tuple(w for w in (wb, nb) if w))
        return None
    if ma == mb:
        # the negation inside a modal phrase ("not permitted") is the modal's, not the statement's
        na, nb = negated(_unmodal(sa)), negated(_unmodal(sb))
        if bool(na) != bool(nb) and _same_statement(_core(QUALIFYING.sub("", sa)), _core(QUALIFYING.sub("", sb))):
            # the statements' own words alike, not a qualifying clause's ("..., except for X, where the
            # timeout is disabled" / "X has no timeout")
            said_a = na or _verb(sa)
            said_b = nb or _verb(sb)
            return Finding("negation", f"{said_a.lower()} vs {said_b.lower()}",
                           (na,) if na else (), (nb,) if nb else ())
    return None


# One word turned into its opposite, the rest of the statement the same ("evicts the oldest entry first" /
# "evicts the newest entry first"): pairs of opposite words that pick one end of a range or a direction,
# and the prefixes that negate an adjective ("synchronous" / "asynchronous", "case-sensitive" /
# "case-insensitive"). Words that name two kinds of one thing ("local" / "remote copy", "public" /
# "private key") are not opposites here: both kinds may hold the same.
_ANTONYMS = [("oldest", "newest"), ("earliest", "latest"), ("lowest", "highest"), ("smallest", "largest"),
             ("ascending", "descending"), ("increases", "decreases"), ("read-only", "read-write")]
_ANTONYM_STEMS = {frozenset({stem(x), stem(y)}) for x, y in _ANTONYMS}
_NEGATING_PREFIXES = ("un", "non-", "non", "dis", "in", "im", "a")
_ADJECTIVE = re.compile(r"(?:ous|ive|ible|able|al|ent|ant|ic|ed|ful)$", re.IGNORECASE)  # not a verb: "uninstall"


def _opposite_words(x: str, y: str, written: str) -> bool:
    """Stems `x` and `y` are opposites (`written`: the longer word as the sentence writes it)."""
    if frozenset({x, y}) in _ANTONYM_STEMS:
        return True
    *head_x, last_x = x.split("-")
    *head_y, last_y = y.split("-")
    if head_x != head_y or not _ADJECTIVE.search(written):
        return False
    short, long = sorted((last_x, last_y), key=len)
    return len(short) >= 4 and any(long == p + short for p in _NEGATING_PREFIXES
                                   if len(short) >= 5 or p not in ("a", "in", "im"))


def antonym_rule(sa: str, sb: str) -> Finding | None:
    """The same statement with one word turned into its opposite (a table of opposite words, and
    negating prefixes), neither side denied more than the other, the same modal."""
    ca, cb = set(_core(sa)), set(_core(sb))
    only_a, only_b = ca - cb, cb - ca
    if len(only_a) != 1 or len(only_b) != 1 or len(ca & cb) < 2:
        return None
    (x,), (y,) = only_a, only_b
    wa = next((w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", sa) if stem(w.lower()) == x), x)
    wb = next((w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", sb) if stem(w.lower()) == y), y)
    if not _opposite_words(x, y, max(wa, wb, key=len)) or bool(negated(sa)) != bool(negated(sb)) or \
            _modal(sa)[0] != _modal(sb)[0]:
        return None
    return Finding("attribute", f"{wa} vs {wb}", (wa,), (wb,))


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


@lru_cache(maxsize=4096)
def _attribute(sentence: str) -> tuple[frozenset[str], str, frozenset[str], frozenset[str], str] | None:
    m = _RELATION.match(sentence.strip())
    if not m:
        return None
    subject = frozenset(stem(w) for w in re.findall(r"[A-Za-z][\w'-]*", m.group("subject"))
                        if w.lower() not in FUNCTION)
    rel = " ".join(stem(w) for w in m.group("rel").lower().split() if w not in ("the", "a", "an"))
    value_text = m.group("value").strip()
    value_words = re.findall(r"[A-Za-z][\w'-]*|\d[\w.,:-]*", value_text)
    value = frozenset(stem(w) for w in value_words if w.lower() not in FUNCTION)
    names = frozenset(w.lower() for w in value_words if w[0].isupper() or re.search(r"\d", w))
    return subject, rel, value, names, value_text


def attribute_rule(sa: str, sb: str) -> Finding | None:
    pa, pb = _attribute(sa), _attribute(sb)
    if not pa or not pb:
        return None
    if negated(sa) or negated(sb) or _modal(sa)[0] != _modal(sb)[0]:
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
