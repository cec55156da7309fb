"""Values of sentences worded independently (docs/architecture.md, "Conflicts"): the *aligned
quantity* rule (one dimension, values that differ, a word near both values shared; plain numbers,
values after a name, file modes, releases and shares read too; values chosen or of a condition are
not the ones that hold) and the *unbounded* rule (no limit against an upper bound). Pure.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .alignment import GENERIC, IDENT, SYNONYMS, aligned, ident_parts, name_parts, same_thing, topic_stems, words_of
from .values import LABELS, UNITS, Quantity, quantities, same
from .words import FUNCTION, MODAL_WORDS, NEGATIONS, Finding, capitalised_names, stem

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
        if "." in m.group(0) and label not in FUNCTION and _ARRIVED.search(sentence):
            # "added in pip 22.3" / "gained it in version 23.1": the release something arrived in
            out.append(Quantity("release", float(m.group(0).split(".")[0]) * 1000 + float(m.group(0).split(".")[1]),
                                m.group(0), frozenset(), frozenset(), False, sentence))
            continue
        if label in LABELS or label.rstrip("s") in LABELS:
            continue  # "severity 1", "zone 4", "version 2": names of classes, not values (as above)
        if before and re.fullmatch(r"[A-Z][\w-]*", before.group(1)) and \
                re.search(r"\b(?:in|under|for)\s+$", sentence[:before.start(1)], re.IGNORECASE):
            continue  # "in PostgreSQL 9.6": which release a statement is about ("supports CPython 3.7": a value)
        if label in FUNCTION or label in GENERIC or label in MODAL_WORDS or label in NEGATIONS or \
                label.endswith("s") and label[:-1] in FUNCTION:
            label = ""
        dim = f"label:{stem(label)}" if label else "number"
        if re.fullmatch(r"0?\.\d+", m.group(0)) and not label:
            dim = "fraction"  # "defaults to 0.1": a share, as "half of them" is
        if re.fullmatch(r"0[0-7]{3}", m.group(0)):
            dim = "octal mode"  # 0600, 0640: a file's permissions however they are named ("mode", "permissions")
        out.append(Quantity(dim, float(m.group(0)), m.group(0), frozenset(), frozenset(), False, sentence))
    return out


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
        return stem(noun_a) in words_of(qb.text) or stem(noun_b) in words_of(qa.text)
    noun = noun_a or noun_b  # "three password prompts" / "NumberOfPasswordPrompts defaults to 5"
    plain = qb if noun_a else qa
    if noun and plain.dimension == "number" and not _stated(plain):
        return False  # "roughly 410 in the warehouses, ... 45 in IT": a count of something else in a list
    return not noun or stem(noun) in _local(plain, plain.sentence)


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


@lru_cache(maxsize=4096)
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
        if low in FUNCTION or low in MODAL_WORDS or low in NEGATIONS:
            break
        out.append(stem(low))
    return tuple(out)


def _other_kinds(sa: str, sb: str) -> bool:
    """Two sentences about other kinds or times of one thing: leading phrases with one head and
    modifiers of their own that the other sentence never says ("cold-chain deliveries" / "ambient
    deliveries"), or other days or seasons named."""
    la, lb = _lead(sa), _lead(sb)
    if len(la) >= 2 and len(lb) >= 2 and la[-1] == lb[-1]:
        own_a, own_b = set(la[:-1]) - set(lb), set(lb[:-1]) - set(la)
        if own_a and own_b and not own_a & words_of(sb) and not own_b & words_of(sa):
            return True
    wa = {m.group(0).lower() for m in _WHEN.finditer(sa)}
    wb = {m.group(0).lower() for m in _WHEN.finditer(sb)}
    return bool(wa and wb and not wa & wb)


def aligned_quantity_rule(sa: str, sb: str) -> Finding | None:
    """One thing's quantity given two values by sentences worded differently: aligned by what they
    are about, values of one dimension that differ, and neither sentence also giving the other's."""
    sense_a, sense_b = _sense(sa), _sense(sb)
    if sense_a and sense_b and sense_a != sense_b:
        return None  # "at least 8" / "at most 16" bound one range from both ends
    qas, qbs = quantities(sa), quantities(sb)
    qas, qbs = _asserted(qas + _scalars(sa, qas), sa), _asserted(qbs + _scalars(sb, qbs), sb)
    if not qas or not qbs or not same_thing(sa, sb) or _other_kinds(sa, sb):
        return None
    words_a, words_b = words_of(sa), words_of(sb)
    names = {stem(n) for n in (capitalised_names(sa) | capitalised_names(sb)) - topic_stems(sa)[1] - topic_stems(sb)[1]}
    parts_a = set().union(*ident_parts(sa).values())  # configuration names' words
    parts_b = set().union(*ident_parts(sb).values())
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
                (shared - _named_by(qa) - _named_by(qb) and qa.dimension == qb.dimension == "octal mode")
            # (the value says it is a file's mode: a word shared besides "mode" itself says whose)
            if len(shared) < 2 and not strong:
                continue  # one word in common near two values ("in the cold room") is not one thing
            if qa.every != qb.every and not shared & (parts_a | parts_b):
                continue  # how often ("every 90 days") and how long ("for 12 months"): two measures, unless
                # a configuration name ties them ("every five minutes" / "checkpoint_timeout 15 minutes")  # the values measure other things of one subject ("a 45-minute break" / "11 hours' rest")
            dim = qa.dimension if qa.dimension == qb.dimension else "count:"
            if same(qa.value, qb.value, dim):
                continue
            if any(_comparable(qa, o, words_a, words_b) and same(qa.value, o.value, dim) for o in qbs) or \
                    any(_comparable(o, qb, words_a, words_b) and same(o.value, qb.value, dim) for o in qas):
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


def unbounded_rule(sa: str, sb: str) -> Finding | None:
    """One thing said to have no limit and to have an upper bound, on aligned sentences (a denial of
    the unlimited, "is not unlimited", agrees with the bound)."""
    for x, y, flip in ((sa, sb, False), (sb, sa, True)):
        free, bound = _UNBOUNDED.search(x), _BOUNDED.search(y)
        if not free or not bound or _UNBOUNDED.search(y) or _BOUNDED.search(x):
            continue
        if re.search(r"\b(?:not|never|n't)\s+(?:\w+\s+)?$", x[:free.start()], re.IGNORECASE) or not aligned(x, y):
            continue
        wa, wb = free.group(0), bound.group(0)
        if flip:
            wa, wb = wb, wa
        return Finding("quantity", f"{wa.lower()} vs {wb.lower()}", (wa,), (wb,))
    return None


def _named_by(q: Quantity) -> frozenset[str]:
    """The stem of the word just before a value ("mode 0600": mode), what names the value, not whose it is."""
    before = _LABEL_BEFORE.search(q.sentence[:max(q.sentence.find(q.text), 0)])
    return frozenset({stem(before.group(1).lower())}) if before else frozenset()


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
            if t.lower().rstrip("=") in FUNCTION | MODAL_WORDS | NEGATIONS | GENERIC or t[0].isdigit():
                continue
            got.append(t.rstrip("="))
            if len(got) >= window:
                break
        return got

    stems = set()
    for w in side(reversed(tokens[:at])) + side(tokens[at + width:]):
        if not w[0].isalpha():
            continue
        stems.add(stem(SYNONYMS.get(w.lower(), w.lower())))
        if IDENT.fullmatch(w):
            stems |= {stem(p) for p in name_parts(w)}
    own = {stem(w.lower()) for w in re.findall(r"[A-Za-z][\w'-]*", q.text)}  # "working days": the unit's
    return frozenset(stems - own - {stem(g) for g in GENERIC} - set(UNITS))
