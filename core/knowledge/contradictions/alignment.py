"""What two sentences worded independently are about (docs/architecture.md, "Conflicts"): their
configuration names and the words those are made of, their subjects (core/knowledge/subjects.py),
whether each names a thing of its own, and whether they are close enough for one statement's
exception, stance, order or default to be compared. Pure.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..subjects import subjects_of
from .values import UNITS
from .words import FUNCTION, MODAL_WORDS, NEGATIONS, capitalised_names, stem

# ----------------------------------------------------------------------------- aligned sentences
#
# Two people describing one setting rarely use the same words: "The default for shared_buffers is
# 128MB" / "Out of the box PostgreSQL sets aside 256MB for shared buffers". The rules above need the
# rest of the two sentences to agree; the rules below first align two sentences by what they are
# about (the same thing named: a shared subject, or a configuration name and the words it is made
# of) and then look for one disagreement between them. Each table row says what it matches and why.

IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+=?|[A-Za-z]+=|[a-z]+(?:[A-Z][a-z0-9]+)+|"
                    r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z]+[A-Za-z]*")
# words that say nothing about which thing a sentence is about (each side of a pair uses them freely)
GENERIC = frozenset({"default", "value", "setting", "set", "option", "parameter", "number", "way", "thing", "use",
                      "used", "case", "time", "unless", "except", "otherwise", "box", "typically", "usually",
                      "normally", "also", "each", "every", "any", "all", "only", "one", "on", "off", "true",
                      "false", "yes", "no", "min", "max", "sec", "enabled", "disabled", "kept", "keep", "run",
                      "runs", "given", "least", "most", "more", "less", "other", "same"})
# small synonym table: words people use for one another when they state a default or a bound
SYNONYMS = {"defaults": "default", "out-of-the-box": "default", "maximum": "max", "minimum": "min",
             "limit": "max", "uids": "uid"}


def name_parts(identifier: str) -> list[str]:
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
def ident_parts(sentence: str) -> dict[str, tuple[str, ...]]:
    """Each configuration name of a sentence (lowercase) -> the stems of the words it is made of, read
    from the name as written: lowercased first, "UserStopDelaySec" would be one word."""
    out: dict[str, tuple[str, ...]] = {}
    for m in IDENT.finditer(sentence):
        if re.fullmatch(r"\d[\d.]*", m.group(0)):
            continue
        name = m.group(0).rstrip("=")
        if re.search(r"[_.]", name) or _CAMEL.fullmatch(name):
            out[name.lower()] = tuple(stem(SYNONYMS.get(w, w)) for w in name_parts(name))
        else:  # "PostgreSQL", "CPython", "APIs": a name, not words joined
            out[name.lower()] = (stem(name.lower()),)
    return out


@lru_cache(maxsize=4096)
def topic_stems(sentence: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the stems naming what a sentence is about, its configuration names). The stems come from its
    subjects (core/knowledge/subjects.py) and from the words its configuration names are made of."""
    parts = ident_parts(sentence)
    idents = frozenset(parts)
    stems = set()
    for term in subjects_of("", sentence):
        for w in re.findall(r"[a-z][a-z0-9'-]*", term):
            stems.add(stem(SYNONYMS.get(w, w)))
    for ident in idents:
        stems |= set(parts[ident])
    for w in re.findall(r"[A-Za-z][A-Za-z0-9'-]*", sentence):  # every noun-like word that names the thing
        low = w.lower()
        if low not in FUNCTION and low not in NEGATIONS and low not in MODAL_WORDS and len(low) > 2:
            stems.add(stem(SYNONYMS.get(low, low)))
    return frozenset(stems - {stem(g) for g in GENERIC}), idents


@lru_cache(maxsize=4096)
def _about(sentence: str) -> frozenset[str]:
    """The stems of the sentence's subjects and configuration names only (not its every word)."""
    stems = set()
    for term in subjects_of("", sentence):
        for w in re.findall(r"[a-z][a-z0-9'-]*", term):
            stems.add(stem(SYNONYMS.get(w, w)))
    for m in IDENT.finditer(sentence):
        for w in name_parts(m.group(0)):
            stems.add(stem(SYNONYMS.get(w, w)))
    return frozenset(stems - {stem(g) for g in GENERIC})


def own_names(sa: str, sb: str) -> bool:
    """Each sentence names a configuration name or program of its own (pg_dump / pg_dumpall,
    maintenance_work_mem / logical_decoding_work_mem): two things, whatever else they share. A name
    the other sentence spells out in words ("shared_buffers" / "shared buffers"), or says every word of
    in any order ("log_checkpoints" / "checkpoints are logged"), is not its own."""
    ids_a, ids_b = topic_stems(sa)[1], topic_stems(sb)[1]
    written = {**ident_parts(sa), **ident_parts(sb)}

    def spelled(ident: str, sentence: str) -> bool:
        parts = " ".join(written[ident])
        words = " ".join(stem(w.lower()) for w in re.findall(r"[A-Za-z][A-Za-z0-9']*", sentence))
        if f" {parts} " in f" {words} ":
            return True
        # in any order, by words of its own (not the parts of another name: pg_dumpall does not spell pg_dump)
        plain = {stem(w.lower()) for w in re.findall(r"[A-Za-z][A-Za-z0-9']*", IDENT.sub(" ", sentence))}
        return len(written[ident]) >= 2 and set(written[ident]) <= plain

    own_a = {i for i in ids_a - ids_b if not spelled(i, sb)}
    own_b = {i for i in ids_b - ids_a if not spelled(i, sa)}
    return bool(own_a and own_b)


def same_thing(sa: str, sb: str, least: int = 1, cases: bool = False) -> bool:
    """Two sentences are about the same thing: at least `least` of the stems naming what one is about
    are said by the other, and they do not each name a configuration name or a capitalised name of
    their own (maintenance_work_mem / logical_decoding_work_mem are two settings). With `cases`, the
    names each gives are cases of the one configuration name both say (for a rule that compares cases:
    "matches only Unix-domain sockets" / "also matches TCP/IP")."""
    words_a, ids_a = topic_stems(sa)
    words_b, ids_b = topic_stems(sb)
    if own_names(sa, sb):
        return False
    # a name is a sentence's own only when the other never says the word ("Port" / "the default port",
    # "ssh" / "SSH" are one thing written in two cases)
    # (a unit written in capitals, "MB", names nothing)
    caps_a, caps_b = capitalised_names(sa) - UNITS.keys(), capitalised_names(sb) - UNITS.keys()
    names_a = {n for n in caps_a - ids_a if stem(n) not in words_of(sb)}
    names_b = {n for n in caps_b - ids_b if stem(n) not in words_of(sa)}
    if names_a and names_b and not (caps_a & caps_b) and not (cases and ids_a & ids_b):
        return False
    shared = (_about(sa) & words_b) | (_about(sb) & words_a)
    return len(shared) >= least


@lru_cache(maxsize=4096)
def words_of(sentence: str) -> frozenset[str]:
    stems = set()
    for w in re.findall(r"[A-Za-z][A-Za-z0-9'-]*", sentence):
        stems.add(stem(w.lower()))
    for m in IDENT.finditer(sentence):
        stems |= {stem(w) for w in name_parts(m.group(0))}
    return frozenset(stems)


def aligned(sa: str, sb: str, cases: bool = False) -> bool:
    """Sentences close enough in what they say for a dropped exception or a reversed stance to be
    one statement's: at least two shared words that are not names (system names are shared by many
    statements), and a fifth of their words shared (real pairs worded independently share 0.2 to
    0.4; unrelated rules about one place, 0.1). `cases` as for `same_thing`."""
    if not same_thing(sa, sb, cases=cases):
        return False
    (a, ids_a), (b, ids_b) = topic_stems(sa), topic_stems(sb)
    # a system's name is one both sentences write as a name (a configuration name is no system's;
    # "Compression" opening one sentence and named in the other is the setting both are about)
    names = {stem(n) for n in (capitalised_names(sa) & capitalised_names(sb)) - ids_a - ids_b}
    shared = (a & b) - names
    return len(shared) >= 2 and len(a & b) / max(len(a | b), 1) >= 0.2


def pinned(sa: str, sb: str) -> bool:
    """Both sentences name one configuration name and are about the same thing: what they are about is
    pinned, and a rule that reads a structure of its own (an order, a default) needs no more words shared."""
    return bool(topic_stems(sa)[1] & topic_stems(sb)[1]) and same_thing(sa, sb)
