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
from functools import lru_cache

from .claims import Claim, sentences
from .documents import squeeze
from .horn import action
from .verbs import VERBS, base as verb_base

MAX_WORDS = 30  # a question longer than this is cut at a clause boundary
CLAUSE_SLACK = 10  # a clause up to this many words over its limit is kept whole: a question cut mid-phrase is garbled
_TYPES = frozenset("boolean integer string enum real floating numeric bool int float text".split())

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
_ADVERBS = frozenset("also only always usually normally generally typically still already just then "
                     "automatically explicitly simply now often probably perhaps possibly".split())
_CONDITION = re.compile(r"^(if|when|whenever|unless|once|in case|every time|each time)\b\s*(.+?),\s+(.+)$",
                        re.I | re.S)
_CONDITION_BARE = re.compile(r"^(if|when|whenever|unless)\b\s*(.+?)\s+((?:you|we|one|users?) (?:need|must|should|can|"
                             r"have to|will|may|might)\b.+)$", re.I | re.S)
_CONDITION_THEN = re.compile(r"^(if|when|whenever)\b\s*(.+?)\s+then\s+(.+)$", re.I | re.S)  # "If X is empty then …"
_INSTRUCTION = re.compile(r"^(?:in order )?to ((?:[a-z]+ )?[a-z]+\b[^,:.]{2,120}):$", re.I)
_PURPOSE = re.compile(r"^(?:in order )?to ([^,]{3,160}),\s+(.+)$", re.I | re.S)
# A phrase before the main clause that is context for it ("For non-anonymous binds, …", "By default, …"): asked
# after the main clause's question.
_CONTEXT = re.compile(r"^((?:for|in|on|at|during|by default|by|with|without|after|before|within|under|over|through|"
                      r"throughout|across|from|upon|via|per|as part of|as of|apart from|except for|beyond|outside|"
                      r"inside|in general|in practice|by convention|currently|prior to|starting with|as of|until|"
                      r"up to|beginning with|in releases|except|depending on|on \w+)\b[^,]{0,120}),\s+(.+)$", re.I | re.S)
# A phrase that only links the sentence to what it argues: dropped from the question.
_LINK = re.compile(r"^(?:(?:as|like|unlike|similar(?:ly)? to|in contrast to|compared (?:to|with)|as with)\b[^,]{0,40},\s+|(?:even if|even when|even though|assuming|given|besides|accordingly|indeed|since|because|although|though|while|whereas|despite|however|also|so|"
                   r"thus|therefore|generally|usually|typically|often|finally|first|then|next|now|today|again|"
                   r"alternatively|instead|furthermore|moreover|similarly|likewise|additionally|fortunately|"
                   r"unfortunately|of course|in fact|in short|in particular|for example|for instance)\b[^,]{0,120},"
                   r"\s+|note(?: that|:)\s+|remember that\s+|keep in mind that\s+|(?:in practice|in general|by default|"
                   r"in most cases|in many cases|in some cases|usually|normally|typically|generally|currently|today|previously|"
                   r"formerly|originally|historically|nowadays|sometimes|occasionally) "
                   r"(?=[a-z`])|(?:say|suppose|assume|imagine)(?: that)?\s+(?=[A-Z`]))", re.I)
_IT_IS = re.compile(r"^it is (?:also |often |usually |sometimes |still |extremely |very |quite |generally |"
                    r"relatively )?"
                    r"(possible|not possible|impossible|recommended|"
                    r"not recommended|a good idea|best|advisable|important|necessary|safe|unsafe|required|useful|"
                    r"common|easy|hard|difficult|convenient|customary|sufficient|enough|unnecessary|"
                    r"not necessary|wise|preferable) (?:to|that) (.+)$", re.I | re.S)
_LABEL = re.compile(r"^(?:[A-Z][\w.-]*(?: [\w.-]+){0,2}:\s+(?=[A-Z])|(?:a )?[\w .-]{0,30}\b(?:note|detail|warning|tip|"
                    r"hint|caution|important):\s+|(?:changed|new|deprecated|added|removed) in version [\d.]+:\s+|"
                    r"note,?(?: also| however| though| too)?,?(?: that|:)\s+|it is (?:important|useful) to "
                    r"(?:note|remember|realize|understand|know) that\s+|it is worth (?:noting|remembering) that\s+|"
                    r"it (?:should|must) be noted that\s+)",
                    re.I)  # "CPython implementation detail: …", "Note: …"
_IT_IS_ANY = re.compile(r"^it is (?:also |often |usually |sometimes |generally |still |extremely |very |quite |"
                        r"relatively )?(not )?((?:an? )?[A-Za-z]+) (to|that) (.+)$",
                        re.I | re.S)
_THERE = re.compile(r"^there (is|are) (.+)$", re.I | re.S)
_SUPERLATIVE = re.compile(r"^the (?:\w+ )?(?:purpose|goal|aim|reason|idea|advantage|disadvantage|point|job|role|effect|"
                          r"result|meaning|rationale|intent|benefit|drawback|difference|cost|price|limit)\b|"
                          r"^(?:a|the) (?:better|faster|simpler|easier|safer|cleaner) |^the (?:\w+est|best|only|usual|main|primary|recommended|preferred|simplest|default|"
                          r"first|last|most \w+|standard|common|typical|normal|supported|available|allowed|valid|"
                          r"possible|accepted|permitted|required) ", re.I)
_FOLLOWING = re.compile(r"^the following ([\w\s-]{2,60}?) ((?:can|must|should|may|will|are|is|have|has)\b.*|\w+)$",
                        re.I | re.S)
_DANGLING = frozenset("to of in on at for with by from the a an and or but more most than as into that like "
                      "whose whether such so very if when unless because while".split())
_DETERMINED = frozenset("the a an of for to in on and or with by from all any".split())
_SUBORDINATE = frozenset("since because although though while whereas as if when unless once until before after "
                         "where whether so and but or".split())
_FUNCTION_FIRST = frozenset("a an the this that these those some many most any each every all no only other several "
                            "both such one two three".split())
_ASKS = re.compile(r"[^.!?]*\?")
_WHETHER = re.compile(r"\bwhether\s+(.+?)[.?!]*$", re.I | re.S)
_GOAL = re.compile(r"^(?:in order )?to ([^,:]{3,120})[,:]", re.I)
_HOW_TO = re.compile(r"\bhow to ([^,:.]{3,120})", re.I)
_PRONOUN_SUBJECT = frozenset("it this that these those they he she its their them such there which".split())
_OBJECT_START = frozenset("a an the all any each every its their his her one two three four several some no "
                          "this that these those your our my".split())
_TIME = frozenset("at from until till before after every each daily weekly monthly yearly on by within during".split())
_ARTICLES = frozenset("the a each every".split())
# What "at the", "by the" or "before each" is followed by when it says when: "at the end of the day".
_TIME_NOUNS = frozenset("""end start beginning time moment hour minute second day night week month year close top
turn same next last first latest earliest""".split())
_CLOCK = frozenset("the a each every night day noon midnight dawn dusk one two three four five six seven eight nine "
                   "ten eleven twelve".split())
_PLACE = frozenset("in into at on under inside outside near".split())
_MANNER = frozenset("through using via".split())
_SUBJECT_BREAK = frozenset("if when unless because although while whereas since but that which who whose".split())
_FUNCTION = frozenset("a an the of in on at to for by with from as and or but if when this that these those it its "
                      "is are be was were".split())


def _lower_first(text: str, names: frozenset[str]) -> str:
    """A sentence's first word as it reads inside a question: lower case, unless it is a name, an
    acronym or a code ("Debian", "HTTP", "RTM-1")."""
    words = text.split(" ", 1)
    first = words[0]
    if first.lower() in _FUNCTION_FIRST and first[:1].isupper():
        return first.lower() + (" " + words[1] if len(words) > 1 else "")
    if not first or not first[:1].isupper() or not first[1:].islower() or first in names:
        return text
    return first[:1].lower() + first[1:] + (" " + words[1] if len(words) > 1 else "")


_CUT = re.compile(r"(?<!\d),|,(?!\d{3}(?!\d))|[;()\[\]{}]|\.\s|:(?!\d|//)| - | — | – |(?<!\bto )(?<!\bin )(?<!\bof )"
                  r"(?<!\bby )\bwhich\b|\bunless\b|\bexcept\b|\bso that\b|\bbecause\b")  # "the degree to which …" goes on


def _clause(text: str, limit: int = 14, slack: int = CLAUSE_SLACK, one_verb: bool = True) -> str:
    """The words up to the first clause boundary (a comma (not a number's thousands comma), a semicolon, a bracket), at most `limit`
    (or the whole clause, when it is at most `slack` words longer: a question cut open is garbled)."""
    cut = text
    for boundary in _CUT.finditer(text):
        if boundary.group(0) == "which" and text[:boundary.start()].split()[-1:] and \
                text[:boundary.start()].split()[-1].lower() in VERBS:
            continue  # "you can specify which part …": the verb's object, not a clause of its own
        cut = text[:boundary.start()]
        break
    whole = cut.strip().rstrip(".!?") == text.strip().rstrip(".!?")  # the sentence to its end: nothing dangles
    words = cut.strip().rstrip(".!?").split()
    if len(words) <= limit + slack:
        limit = len(words)
    cut_short = len(words) > limit
    words = words[:limit]
    if cut_short:  # "… backtracking excessively during dependency": the phrase cut open is left out
        back = max((k for k, w in enumerate(words) if k >= 4 and w.lower() in _PHRASE_START - {"and", "or", "but"}),
                   default=0)
        if back and len(words) - back <= 3:
            words = words[:back]
    after_cut = text[len(cut):].lstrip(",;: ").split(" ", 1)[0].lower()
    if not whole and not cut_short and after_cut not in _SUBORDINATE | {"then", "etc"}:
        # "be aware that if they hit issues, they may …" cut at its comma: the "if" clause is left open
        opened = max((k for k, w in enumerate(words) if k >= 3 and w.lower() in _OPENS_CLAUSE), default=0)
        if opened and len(words) - opened <= 8:
            words = words[:opened]
    second = one_verb and next((k for k, w in enumerate(words) if k >= 3 and w.lower() in ("and", "but") and
                                k + 1 < len(words) and verb_base(words[k + 1]) is not None and
                                words[k + 1].lower() not in _FUNCTION and not words[k + 1][:1].isupper()), None)
    if second:  # "… any checks against tampering and involves running code": the second verb is a claim of its own
        words, whole = words[:second], False
    negated = one_verb and next((k for k in range(3, len(words) - 1) if words[k].lower() in ("and", "but") and
                                 (words[k + 1].lower() in ("don't", "don’t", "never") or
                                  " ".join(words[k + 1:k + 3]).lower() == "do not")), None)
    if negated:  # "provide the token as the username and do not provide a password": one order per question
        words, whole = words[:negated], False
    while len(words) > 2 and " ".join(words[-2:]).lower().rstrip(":") in ("as follows", "like so", "like this",
                                                                          "as shown", "shown below"):
        words = words[:-2]  # "… to proceed as follows": what follows is the answer, not the question's
    while len(words) > 1 and not whole and (words[-1].lower() in _DANGLING or cut_short and len(words) > 2 and
                              words[-1].lower() in ("you", "we", "it", "they") and words[-2].lower() in _DANGLING):
        words.pop()  # "… in order to more", "… working as you": not where a question ends
    return " ".join(words)


_OPENS_CLAUSE = frozenset("if when whenever unless because".split())
_ASIDE = frozenset("however therefore though thus indeed still also".split())  # "Python is, however, aggressive"
_PHRASE_START = frozenset("and or but with without to of for in on at by from into than as that which who whose "
                          "where when while if using via through about between".split())


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
    return verb_base(word.strip(",;:")) is not None and word.lower() not in _FUNCTION


def _subject_verb(words: list[str]) -> tuple[int, str] | None:
    """Where the verb of a sentence starts and what kind it is ("modal", "be", "have", "do", "verb"),
    with a subject of one to fifteen words before it. A modal is looked for first, past a relative
    clause ("Numbers that can be written … cannot be expressed": its own modal is the clause's); then
    a form of "be", "have" or "do"; a plural noun ("headphones") reads like a verb of the third person."""
    head = " ".join(words[:16])
    listed = bool(re.match(r"^(?:[\w'-]+(?: [\w'-]+){0,4}, )+[\w'-]+(?: [\w'-]+){0,3},? (?:and|or) ", head))

    def reach(breaks: frozenset[str]) -> int:
        for k, word in enumerate(words[:16]):
            if k and (word.lower() in breaks or words[k - 1].endswith((";", ":")) or
                      words[k - 1].endswith(",") and not listed):  # "A, B and C are …": a subject of several
                return k
        return min(len(words), 16)

    relative = frozenset({"that", "which", "who", "whose", "whom"})
    for k, word in enumerate(words[1:reach(_SUBJECT_BREAK - relative)], start=1):
        low = word.lower().strip(",;:")
        if low in _BE and words[k - 1].lower() not in relative and k > 1 and \
                not any(w.lower() in relative for w in words[max(0, k - 4):k]):
            break  # "Parameters after * are keyword-only and may only …": the sentence's verb is "are"
        if low == "that" and (_third_person(words[k - 1]) or any(
                _third_person(w) and words[j - 1].lower() not in _DETERMINED for j, w in enumerate(words[1:k - 1], 1))):
            break  # "The snippet assumes that a must have …": the modal is the clause's
        if (low in _MODALS or low in _MODALS_NOT) and \
                words[k - 1].lower() not in relative:
            return k, "modal"
    limit = reach(_SUBJECT_BREAK)
    for k, word in enumerate(words[1:limit], start=1):
        low = word.lower().strip(",;:")
        if low in _BE:
            return k, "be"
        if low in _HAVE and k + 1 < len(words):
            return (k, "have") if words[k + 1].lower() not in ("been", "to") else None
        if low in ("do", "does", "did") and k + 1 < len(words) and (words[k + 1].lower() in ("not", "never", "n't") or
                                                                   words[k + 1].lower() in VERBS):
            return k, "do"  # "Keyring does have an API": asked with its "does"
        after = words[k + 1].lower() if k + 1 < len(words) else ""
        if _third_person(word) and (after in _NOUN_THEN_VERB or after.endswith("ed") and len(after) > 4 and
                                    after not in _SUBJECT_BREAK):
            if after in _NOUN_THEN_VERB:  # "Relative imports use …": a plural noun, then its verb
                return k + 1, "verb"
            continue  # "Previous releases supported …": no verb of the present to ask with
        if _third_person(word) and after in ("of", "to") and _ADJECTIVE.search(words[k - 1]) and \
                (k == 1 or words[k - 2].lower() in _DETERMINED | {"most", "more", "many", "some"}):
            continue  # "Typical uses of context managers include …": a noun after its adjective, then "of"
        if _third_person(word) and words[k - 1].lower() not in _DETERMINED and after not in _BE + _MODALS + _HAVE:
            plural = _plural_verb(words, k)
            return (plural, "verb") if plural else (k, "verb")  # "backups are kept": a noun before its verb
    found = _plural_verb(words, limit)
    if found:
        return found, "verb"
    if limit < len(words) and words[limit].lower() in relative:  # "Statements that contain errors are not logged"
        for k in range(limit + 2, min(len(words), 16)):
            if words[k - 1].endswith((",", ";", ":")) or words[k - 1].lower() in relative:
                break  # "…, which is renewed": the relative clause goes on; no verb of the subject's
            if words[k].lower() in _BE:
                return k, "be"
    return None


# What an adjective ends with (a list, not a tagger): "typical", "significant", "common", "various".
_ADJECTIVE = re.compile(r"(?:al|ant|ent|ic|ive|ous|ful|able|ible|ar|ary|less|est)$|^(?:common|main|major|minor|key|new|"
                        r"recent|usual|frequent|notable|big|small|further)$", re.I)


def _plural_verb(words: list[str], limit: int) -> int | None:
    """Where a plural subject's verb is, before `limit`: "Some tools emit warnings"."""
    for k, word in enumerate(words[1:limit], start=1):
        before = words[k - 1].lower()
        if k >= 2 and (before in _ADVERBS or before.endswith("ly") and len(before) > 4):
            before = words[k - 2].lower()  # "Some finders only support …", "Tools frequently call …"
        if k + 1 < len(words) and _third_person(words[k + 1]):
            continue  # "… in the requirements file protects you": a noun, then the verb
        if any(w.lower() in ("that", "which", "who", "whose") for w in words[:k]):
            break  # the verb of a relative clause ("standbys whose names appear …")
        if before not in _DETERMINED and word.lower() in VERBS and word.lower() not in ("have", "be", "do") and \
                before.endswith("s") and before.isalpha() and k + 1 < len(words) and \
                words[k + 1].lower() not in ("of", "to"):  # "support top level imports": "top" is no "to"
            return k
    return None


# "This reference manual …", "this guide": the document speaking of itself, which is there to read.
_SELF_SUBJECT = re.compile(r"^this (?:\w+ )?(?:handbook|policy|document|manual|guide|chapter|section|page|tutorial|faq|"
                           r"article|appendix|reference|specification|book)$", re.I)
# A subject never opens with one of these: "For negative indices -1 is the last index" has a phrase of
# context before its subject, with no comma to tell where the subject starts.
_PREPOSITIONS = frozenset("for in on at with within without from by under over after before during".split())
_PEOPLE = frozenset("user superuser administrator admin owner member role maintainer developer author caller person "
                    "people staff".split())
_POINTER = re.compile(r"^(?:see|refer to|for (?:more |further )?(?:details|information),)\b", re.I)
_MODALS_NOT = frozenset("cannot can't won't mustn't shouldn't wouldn't couldn't mightn't can’t won’t mustn’t shouldn’t "
                        "wouldn’t couldn’t".split())
_NOUN_THEN_VERB = frozenset("use need provide require allow make take support contain run get become offer "
                            "define accept return follow include".split())

_BRACKETED = re.compile(r"\s*\([^()]*\)|\s*\[[^\[\]]*\]|,\s+(?:which|who|whose|where)\b[^,]*,|"
                        # an aside between commas: a name ("…, CPython, uses"), a participle's phrase ("…, coupled
                        # with num_sync, specifies")
                        r"(?<=[a-z]),\s+[A-Z][\w.+-]*(?: [A-Z][\w.+-]*)?,(?= [a-z])(?! (?:and|or|nor)\b)|"
                        r"(?<=\w),\s+[a-z]+(?:ed|en) (?:with|by|in|to|from|for|as|on|into)\b[^,;.]{0,60},(?= [a-z])(?! (?:and|or|nor)\b)")
_MARKS = re.compile(r"`+|\s+—\s+.*$|\s+-\s+.*$")
_EMPHASIS = re.compile(r"(?<![\w*])(\*\*?)(\S[^*]*?\S|\S)\1(?![\w*])")  # *word*, **words**: not "*identifier"


_SUPERSCRIPT = re.compile(r"\{su[pb]\}`[^`]*`\s*")  # MyST's {sup}`1`: a footnote's mark, not a word
_ROLE = re.compile(r"\{[\w:.-]+\}")  # MyST's {file}, {ref}
_NAMED_ROLES = {"pep": "PEP", "rfc": "RFC"}  # roles whose name is part of what they cite: {pep}`440` is "PEP 440"
_NAMED_ROLE = re.compile(r"\{(pep|rfc)\}`?(?=\d)", re.I)
_MARKER = re.compile(r"^(?:\(?\d+[.)]|\(?[a-z][.)]|[-*\u2022])\s+")


@lru_cache(maxsize=4096)  # a sentence is tidied three times on its way to a question: pure
def tidy(sentence: str) -> str:
    """A sentence as a question is made of it: no remark in brackets, no emphasis marks, no trailing stop."""
    sentence = re.sub(r"\{[\w:.-]+\}([^<{}]*?)\s*<[^<>]*>", r"\1", squeeze(sentence))  # {ref}`title <target>`
    sentence = _NAMED_ROLE.sub(lambda m: _NAMED_ROLES[m.group(1).lower()] + " ", sentence)
    sentence = _MARKER.sub("", _ROLE.sub("", _SUPERSCRIPT.sub("", sentence)))
    if sentence.startswith("(") and sentence.rstrip(".").endswith(")"):  # a whole sentence in brackets
        sentence = sentence.rstrip(".")[1:-1]
    elif sentence.startswith("(") and ")" not in sentence:  # the first of a remark's sentences in brackets
        sentence = sentence[1:]
    sentence = re.sub(r"\b(may|might|can|could) or \1 not\b", r"\1", sentence)  # "may or may not": asked as "may"
    for _ in range(2):
        sentence = _BRACKETED.sub("", sentence)
    sentence = re.sub(r",(?:\s*,)+", ",", _MARKS.sub("", _EMPHASIS.sub(r"\2", sentence)))  # a remark taken out between two commas
    cut = min((i for i in (sentence.find("("), sentence.find("[")) if i >= 0), default=-1)
    if cut > 0:  # a bracket left open: cut there rather than ask half of it
        sentence = sentence[:cut]
    return sentence.strip().rstrip(".!:;,")


_LIKENED = re.compile(r"^(.{3,120}?),? (is|are) ((?:roughly |exactly )?(?:equivalent|similar|identical|analogous|"
                      r"equal)) to$", re.I)
_VERSIONED = re.compile(r"^(changed|new|added|deprecated|removed)(?: in| since) version ([\d.]+)\b", re.I)


def _from_sentence(sentence: str, names: frozenset[str]) -> str | None:
    asked = _turned(sentence, names)
    versioned = _VERSIONED.match(tidy(sentence))
    rest = tidy(sentence)[versioned.end():].lstrip(": ").split(" ", 1)[0] if versioned else ""
    if versioned and (asked is None or rest.endswith("ed")):  # "Changed in version 3.7: Added hash-based .pyc files."
        what = {"changed": "changed", "new": "is new", "added": "was added", "deprecated": "is deprecated",
                "removed": "was removed"}[versioned.group(1).lower()]
        return f"What {what} in version {versioned.group(2)}?"
    return asked


def _turned(sentence: str, names: frozenset[str]) -> str | None:
    sentence = _LABEL.sub("", tidy(sentence), count=1)
    likened = _LIKENED.match(sentence)
    if likened:  # "The short form, x, is equivalent to" and the code that completes it
        return f"What {likened.group(2).lower()} {_lower_first(likened.group(1), names)} {likened.group(3)} to?"
    for _ in range(2):
        linked = _LINK.match(sentence)
        if linked and len(sentence) > linked.end() + 10:
            sentence = sentence[linked.end():]
            sentence = sentence[:1].upper() + sentence[1:]
    one_way = _ONE_WAY.match(sentence)
    if one_way and not _LEANING_WORDS.search(one_way.group(3)):  # "One way to ensure X is to …": "What is one way to …?"
        goal = _clause(one_way.group(3), 14)
        if goal:
            return f"What is {one_way.group(1).lower()} {one_way.group(2).lower()} to {goal}?"
    condition = _CONDITION.match(sentence) or _CONDITION_THEN.match(sentence) or _CONDITION_BARE.match(sentence)
    if condition:
        word, main = condition.group(1).lower(), condition.group(3)
        clause = _clause(condition.group(2), 16, one_verb=False)
        wants = re.match(r"^you (?:want|wish|would like|need|'d like) to (.+)$", clause, re.I)
        if wants and word in ("if", "when") and len(wants.group(1).split()) >= 2:
            return f"How do you {wants.group(1)}?"  # "If you want to decrease the timeout, …"
        ordered = action(main) or bool(re.search(r"\b(must|should|shall|has to|have to|needs? to|desirable|"
                                                 r"recommended|a good idea|advisable|one way|one option|another option|the best option|"
                                                 r"can help|make sure)\b",
                                                 main, re.I))
        able = re.match(r"^(?:then,? )?(you|one|we) (?:can|could)\b", main, re.I)
        if clause and (clause.split()[0].lower() not in _PRONOUN_SUBJECT - {"there"} or
                       re.match(r"^it is \w+ (?:to|that)\b", clause, re.I)):
            if able and not ordered:  # "If more flexibility is required, you can also …": what you can do then
                return f"What can {able.group(1).lower()} do {word} {clause}?"
            return f"What {'should be done' if ordered else 'happens'} {word} {clause}?"
        return None
    purpose = _PURPOSE.match(sentence)
    instruction = None if purpose else _INSTRUCTION.match(sentence + ":" if not sentence.endswith(":") else sentence)
    if instruction and not re.search(r"\b(this|these|those|it|them|above)\b", instruction.group(1), re.I):
        return f"How do you {instruction.group(1)}?"  # "To install directly from a wheel archive:" and the command
    if purpose:
        goal = _clause(purpose.group(1), 16)
        if len(goal.split()) == 1:  # "To specify which server pg_dump should contact, …"
            goal = " ".join(purpose.group(1).split()[:12])
        if goal and not re.search(r"\b(this|these|those|it|them|above)\b", goal, re.I):
            if re.match(r"^(?:you|one) (?:will |would |first |also )?need\b(?! to (?:do|make sure)\b)", purpose.group(2), re.I):
                return f"What do you need to {goal}?"  # "In order to use trust stores, you need Python 3.10": a prerequisite
            main = purpose.group(2).split()
            found = None if action(purpose.group(2)) or main[:1] and main[0].lower() in ("you", "we", "one") or \
                re.match(r"^(?:it is|it's|there)\b", purpose.group(2), re.I) else _subject_verb(main)
            if found and found[1] == "verb" and found[0] <= 6:  # a modal's ("must be added") is yours to do
                # "To indicate …, the path entry finder sets …": how the finder does it, not how you do
                k, kind = found
                subject = _lower_first(" ".join(main[:k]), names)
                if subject.split()[0].lower() not in _PRONOUN_SUBJECT:
                    aux = "does" if main[k].lower().endswith("s") and not main[k].lower().endswith("ss") else "do"
                    return f"How {aux} {subject} {goal}?"
            return f"How do you {goal}?"
        return None
    context = _CONTEXT.match(sentence)
    if context:
        main = _from_sentence(context.group(2)[:1].upper() + context.group(2)[1:], names)
        lead = context.group(1)
        if main and len(lead.split()) <= 12 and not re.search(r"\b(this|these|that|those|it|above|former|latter)\b",
                                                            lead, re.I):
            lead = lead[:1].lower() + lead[1:] if lead.split()[0] not in names else lead
            if main[:-1].split()[-1].lower() in _PHRASE_START or \
                    main.startswith(("What happens ", "What should be done ", "What can ")):
                # "What is linkage declared in?" and "In a DLL"; "By definition, what happens if …?"
                return f"{lead[:1].upper() + lead[1:]}, {main[:1].lower() + main[1:]}"
            return main[:-1] + f" {lead}?"
        return main
    sentence = re.sub(r"^it['’]s (?:simply |just |also |often |usually )?", "it is ", sentence, flags=re.I)
    able = re.match(r"^it is (not possible|impossible|possible) for (.{3,80}?) to (.+)$", sentence, re.I | re.S)
    if able and able.group(2).split()[0].lower() not in _PRONOUN_SUBJECT:  # "It is possible for a cycle to …"
        body = _clause(able.group(3), 14)
        return f"Can {_lower_first(able.group(2), names)} {body}?" if body else None
    careful = re.match(r"^(?:be careful|take care) not to (.+)$", sentence, re.I | re.S)
    if careful:  # "Be careful not to commit the secrets": asked as the order it forbids, like "Do not …"
        body = _clause(careful.group(1), 12)
        return f"Should you {body}?" if body and not _LEANING_WORDS.search(body) else None
    it_is = _IT_IS.match(sentence)
    adjective = None if it_is else _IT_IS_ANY.match(sentence)
    if adjective:  # "It is often expected that a function call creates …": asked as it is said
        body = _clause(adjective.group(4), 14)
        if body and body.split()[0].lower() not in _PRONOUN_SUBJECT:
            return f"Is it {adjective.group(1) or ''}{adjective.group(2)} {adjective.group(3).lower()} {body}?"
    if it_is:
        how, rest = it_is.group(1).lower(), _clause(it_is.group(2), 14)
        if len(rest.split()) < 6 and re.match(r"^\S+(?: \S+){0,4} which\b", it_is.group(2)):
            rest = " ".join(re.split(r"[,;]", it_is.group(2))[0].split()[:14]).rstrip(".")
        if how in ("possible",):
            return f"Can you {rest}?"
        if how in ("not possible", "impossible"):
            return f"Is it possible to {rest}?"
        that = bool(re.match(r"^it is (?:\w+ )?[\w ]+? that ", sentence, re.I))
        if how in ("a good idea", "best", "advisable", "recommended", "not recommended", "required", "necessary",
                   "important") and that:
            rest = _clause(it_is.group(2), 16)
            head = rest.split()
            if head and head[0].lower() not in _PRONOUN_SUBJECT:
                return f"Should {_lower_first(rest, names)}?"  # "It is recommended that mappings provide …"
            return None
        if how in ("a good idea", "best", "advisable", "recommended", "not recommended"):
            return f"Should you {rest}?"
        return f"Is it {how} to {rest}?"
    there = _THERE.match(sentence)
    if there:
        rest = _clause(there.group(2), 12)
        if rest:
            return f"{there.group(1).capitalize()} there {rest}?"
    announced = re.match(r"^the following (is|are) (.{8,})$", sentence, re.I)
    if announced and not _LEANING_WORDS.search(announced.group(2)):
        body = _clause(announced.group(2), 16)
        if len(body.split()) >= 2:
            return f"What {announced.group(1).lower()} {body}?"  # "The following is the logical flow for …"
    following = _FOLLOWING.match(sentence)
    if following:
        return f"Which {following.group(1).strip()} {following.group(2).strip()}?"
    words = sentence.split()
    if not words:
        return None
    if len(words) > 3 and words[0].lower() == "not" and words[1].lower() in ("all", "every", "each"):
        asked = _turned(" ".join([words[1].capitalize(), *words[2:]]), names)
        if asked and not asked.lower().startswith(("is it true", "what does “")):
            return asked  # "Not all releases are bugfix releases": "Are all releases bugfix releases?"
    if len(words) > 2 and words[0].lower() in ("you", "we") and \
            words[1].lower() in _MODALS + ("have", "are", "were", "cannot", "can't", "won't"):
        aux = {"cannot": "can", "can't": "can", "won't": "will"}.get(words[1].lower(), words[1].lower())
        negated = words[1].lower() in ("cannot", "can't", "won't") or words[2].lower() in _NEGATION
        rest = words[3:] if words[2].lower() in _NEGATION else words[2:]
        if aux == "have" and rest and rest[0].lower() not in ("been", "not", "never") and \
                not rest[0].lower().endswith("ed") and rest[0].lower() not in _PARTICIPLE:
            aux, rest = "do", ["have", *rest]  # "We have to use …": "Do we have to use …?", not "Have we to use …?"
        body = _clause(" ".join(rest), 14)
        if not body or re.search(r"\b(this|these|those|it|them|above)\b", " ".join(body.split()[:4]), re.I):
            return None
        vague = re.match(r"^(\w+) (?:something|anything)(?: like)?$", body)
        if vague and vague.group(1).lower() in VERBS and not negated:  # "You could try something like:" and its code
            return f"What {aux} {words[0].lower()} {vague.group(1)}?"
        return f"{aux.capitalize()} {words[0].lower()} {'not ' if negated and aux in ('have', 'are') else ''}{body}?"
    if len(words) > 2 and words[0].lower() in ("you", "we") and words[1].lower() in VERBS:
        return f"Do {words[0].lower()} {_clause(' '.join(words[1:]), 14)}?"  # "You need to make sure …"
    # "--force skips …": an option opening the sentence, no order
    if not sentence.startswith("-") and action(sentence) and not (
            re.search(r"\b(?:is|are|was|were)\b", " ".join(words[1:8]), re.I) and
            len(words) > 1 and words[1].lower() not in _ORDER_OBJECT):
        # "Support for most databases is available": a noun, not an order
        if words[0].lower() in ("never", "don't", "don’t") or words[0].lower() == "do" and words[1:2] == ["not"]:
            words = words[2:] if words[0].lower() == "do" else words[1:]  # "Do not omit zeroes": "Should you omit …?"
            if not words:
                return None
        trailer = _SHOWN_AFTER.search(" ".join(words))
        if trailer and len(words[:len(" ".join(words)[:trailer.start()].split())]) >= 2:
            # "Upgrade your pip by running:" and its command: how you do it, the command the answer
            goal = _clause(" ".join(words)[:trailer.start()], 12)
            if goal and not re.search(r"\b(this|these|those|it|them|above)\b", goal, re.I):
                return f"How do you {goal[:1].lower() + goal[1:]}?"
        rest = _clause(" ".join(words[1:]), 12)
        if re.search(r"\b(this|these|those|it|them|above)\b", rest, re.I):
            return None
        if not rest and len(words) == 1:
            return f"What should you {words[0].lower()}?"  # "Install:" and the list of what: what to install
        return f"Should you {words[0].lower()}{' ' + rest if rest else ''}?"
    if words[0].lower() == "only" and len(words) > 3:
        found = _subject_verb(words[1:])
        if found:
            k, kind = found
            k += 1
            head = words[1] if words[1].lower() not in _OBJECT_START else words[2]
            if kind == "modal":  # "Only strings should be present on sys.path": what should be, not which strings
                who = f"Which {head if head in names else head.lower()}" if head.lower().rstrip("s") in _PEOPLE \
                    else "What"  # "Only staff with a licence may drive": which staff
                return f"{who} {words[k].lower()} {_clause(' '.join(words[k + 1:]), 12)}?"
    found = _subject_verb(words)
    if not found:
        return None
    k, kind = found
    kept = words[:k]
    never = kind == "verb" and len(kept) > 1 and kept[-1].lower() == "never"
    if never:  # "An object's identity never changes once …": "Does an object's identity ever change once …?"
        kept = kept[:-1]
    while len(kept) > 1 and (kept[-1].lower() in _ADVERBS or kept[-1].lower().endswith("ly")) and \
            not kept[-2].lower().endswith("ed"):  # "each command typed interactively": the subject's own
        kept = kept[:-1]  # "the daemon actually consists": the adverb is not the subject's
    subject = _lower_first(" ".join(kept), names)
    verb = words[k].lower().strip(",;:")
    rest = [w for w in words[k + 1:k + 3] if w.lower().rstrip(",") not in _ASIDE or not w.endswith(",")] + words[k + 3:]
    if subject.split()[0].lower() in _PRONOUN_SUBJECT | _SUBORDINATE and not _SELF_SUBJECT.match(subject) or \
            subject.split()[0].lower() in _PREPOSITIONS and kind in ("be", "verb") or \
            re.search(r"\b(above|former|latter)\b", subject, re.I):
        return None  # "It must …", "The above …": not a question a reader could ask of the statement alone
    if never:
        stem = verb_base(verb) or _base(verb)
        body = _clause(" ".join(rest), 12)
        return f"{'Do' if stem == verb else 'Does'} {subject} ever {stem}{' ' + body if body else ''}?"
    if kind == "modal":
        negated = bool(rest) and rest[0].lower() in _NEGATION or verb.endswith(("n't", "n’t")) or verb == "cannot"
        if negated and rest and rest[0].lower() in _NEGATION:
            rest = rest[1:]
        verb = {"won't": "will", "won’t": "will", "can't": "can", "can’t": "can"}.get(verb, verb)
        while rest and rest[0].lower() in _ADVERBS:
            rest = rest[1:]
        if not rest:
            return None
        body = _clause(" ".join(rest), 14)
        modal = verb.replace("n't", "").replace("n’t", "").replace("cannot", "can")
        if len(body.split()) == 1 and body.lower() in VERBS and sentence.rstrip().endswith(":"):
            # "you could consider:" and the list that follows
            return f"What {modal} {subject} {body}?"
        vague = re.match(r"^(\w+) (?:something|anything)(?: like)?$", body)
        if vague and vague.group(1).lower() in VERBS:  # "You could try something like:" and its command
            return f"What {modal} {subject} {vague.group(1)}?"
        following = re.match(r"^(\w+) the following ([\w-]+(?: [\w-]+)?)$", body)
        if following and following.group(1).lower() in VERBS and not negated:
            return f"What {following.group(2)} {modal} {subject} {following.group(1)}?"  # "… satisfy the following:"
        if negated and modal in ("must", "should", "shall", "may"):
            modal = "may"  # asked as a permission: "May drivers …?" (the answer forbids it)
        return f"{modal.capitalize()} {subject} {body}?"
    if kind == "be":
        negated = bool(rest) and rest[0].lower() in _NEGATION
        if negated:
            rest = rest[1:]
        while rest and rest[0].lower() in _ADVERBS:
            rest = rest[1:]
        if not rest:  # "The top-level syntax for patterns is:" and the code that says it
            return f"What {verb} {subject}?"
        first = rest[0].lower().strip(",;:.")
        if first in ("prohibited", "forbidden", "banned", "disallowed") or negated and first in ("allowed", "permitted"):
            return f"{verb.capitalize()} {subject} allowed?"
        way = re.match(r"^the (preferred|best|recommended|easiest|simplest|usual|standard|correct|right|proper|"
                       r"fastest|safest) (way|method|approach|idiom|means) (to|of) (.+)$", " ".join(rest), re.I)
        if way and not negated:  # "an identity test is the preferred way to check for None": ask for the way
            goal = _clause(way.group(4), 12)
            if goal:
                return f"What {verb} the {way.group(1).lower()} {way.group(2).lower()} {way.group(3).lower()} {goal}?"
        error = re.match(r"^an? (?:\w+ )?(?:error|\w+Error) (?:when|if)\b", " ".join(rest))
        if error and not negated:  # "X is a syntax error when used in …": when it is one
            return f"When {verb} {subject} {' '.join(rest[:error.group(0).count(' ')])}?"
        if _SUPERLATIVE.match(subject) and not (first.endswith("ed") or first in _PARTICIPLE) or \
                first in ("a", "an", "the") and not negated or \
                first == "that" and not negated:  # "One implication of X is that …": what it is
            return f"What {verb} {subject}?"
        if first.endswith("ed") or first in _PARTICIPLE:
            after = [w.lower().strip(",;:.") for w in rest[1:3]]
            if rest[0].endswith((",", ";", ":")):
                after = []  # "destroyed; however, …": the clause ends with the participle
            elif len(rest) > 1 and rest[1].endswith((",", ";", ":")):
                after = after[:1]
            nxt = after[0] if after else ""
            if nxt in ("up", "out", "down", "off", "back", "over") and len(rest) > 1:
                first, rest = f"{first} {nxt}", [f"{rest[0]} {rest[1]}"] + rest[2:]  # "looked up"
                after = [w.lower().strip(",;:.") for w in rest[1:3]]
                nxt = after[0] if after else ""
            if negated or nxt in ("and", "or"):  # "… are not formed by …", "… recognized and treated …": yes or no
                tail = "" if rest[0].endswith((",", ";", ":")) else _clause(" ".join(rest[1:]), 10)
                if re.search(r"\b(?:is|are|was|were|has|have)\b", tail):  # "enabled and the parameters are set"
                    tail = re.split(r"\b(?:and|or)\b", tail)[0].strip()
                return f"{verb.capitalize()} {subject} {first}{' ' + tail if tail else ''}?"
            if not nxt:
                return f"{verb.capitalize()} {subject} {first}?"
            if nxt == "to" and len(after) > 1 and first in _FOR_A_PURPOSE and after[1] not in VERBS and \
                    after[1].isalpha() and after[1] not in _DANGLING:
                return f"What {verb} {subject} {first} to do?"  # "were designed to ease …": a verb the list lacks
            if nxt == "to" and len(after) > 1 and after[1] in VERBS:
                if first in _FOR_A_PURPOSE:
                    return f"Why {verb} {subject} {first}?"  # "is used to …", "is designed to …"
                tail = _clause(" ".join(rest[1:]), 10)  # "are allowed to run at the same time": asked whole
                return f"{verb.capitalize()} {subject} {'not ' if negated else ''}{first} {tail}?"
            if nxt in ("in", "since", "until") and len(after) > 1 and re.fullmatch(r"1[5-9]\d\d|20\d\d", after[1]):
                return f"When {verb} {subject} {first}?"  # "was written in 1991"
            if nxt == "for" and len(after) > 1 and after[1][:1].isdigit():
                return f"How long {verb} {subject} {first}?"
            if nxt in ("every", "each", "daily", "weekly", "monthly", "yearly", "annually"):
                return f"How often {verb} {subject} {first}?"
            if nxt in ("if", "when", "whenever", "unless", "only", "once", "before", "after", "until"):
                return f"When {verb} {subject} {first}?"
            if nxt in ("in", "into", "at", "on", "under") and len(rest) > 2 and rest[2][:1].isupper():
                return f"Where {verb} {subject} {first}?"
            if nxt == "by" and len(after) > 1 and after[1].endswith("ing") or nxt in ("using", "through", "via"):
                return f"How {verb} {subject} {first}?"
            if first in _PLACED and nxt in ("in", "at", "on", "under", "inside", "within") and len(rest) > 2 and \
                    not rest[2][:1].isdigit():
                return f"Where {verb} {subject} {first}?"  # "are located in fairly standard locations"
            if nxt in ("here", "there", "below", "above"):
                return f"Where {verb} {subject} {first}?"
            if first in _GIVEN and nxt not in _PHRASE_START:  # "are given higher priority"
                return f"What {verb} {subject} {first}?"
            if nxt == "as" and len(after) > 1 and after[1] == "part":
                return f"When {verb} {subject} {first}?"  # "are called as part of sys.path processing"
            if nxt in ("by", "on", "upon", "to", "from", "with", "in", "at", "as", "into", "for"):
                return f"What {verb} {subject} {first} {nxt}?"
            if len(after) > 1 and after[1] in ("if", "when", "unless", "whenever") and nxt not in _DANGLING:
                return f"When {verb} {subject} {first} {nxt}?"  # "considered irrefutable if …"
            if len(after) > 1 and after[1] in ("if", "when", "unless", "whenever") and nxt not in _DANGLING:
                return f"When {verb} {subject} {first} {nxt}?"  # "considered irrefutable if …"
            return f"How {verb} {subject} {first}?"
        return f"{verb.capitalize()} {subject} {'not ' if negated else ''}{_clause(' '.join(rest), 16)}?"
    if kind == "do":
        rest = rest[1:] if rest and rest[0].lower() in _NEGATION else rest
        while rest and rest[0].lower() in _ADVERBS:
            rest = rest[1:]
        if not rest:
            return None
        return f"{verb.capitalize()} {subject} {_clause(' '.join(rest), 16)}?"
    if kind == "have":
        if rest and rest[0][:1].isdigit():
            # the first thing counted, whole or not at all: "14 loading docks and a cold room …"
            thing = _clause(re.split(r"\s(?:and|or)\s", " ".join(rest[1:]), maxsplit=1)[0], 4, slack=0)
            if thing:
                return f"How many {thing} {'does' if verb == 'has' else 'do'} {subject} have?"
        return f"What {'does' if verb == 'has' else 'do'} {subject} have?"
    base = verb_base(words[k].strip(",;:")) or _base(words[k])
    after = rest[0].lower() if rest else ""
    nxt = rest[1] if len(rest) > 1 else ""
    if after in _TIME and (nxt[:1].isdigit() or nxt.lower() in _CLOCK) and \
            (nxt.lower() not in _ARTICLES or len(rest) > 2 and rest[2].lower().strip(",.;:") in _TIME_NOUNS):
        wh = "When"
    elif after in _PLACE and nxt[:1].isupper():
        wh = "Where"
    elif after in _MANNER or after == "by" and nxt.lower().endswith("ing"):
        wh = "How"  # "pg_dumpall works by emitting …": "How does pg_dumpall work?"
    elif after in ("when", "whenever", "if", "unless") and not rest[1:2] == ["it"] or \
            base.lower() in ("occur", "happen", "start", "end", "begin", "finish") and after in ("at", "during", "before",
                                                                                         "after", "once", "on"):
        wh = "When"  # "No escaping occurs when the string is read", "Name resolution occurs at runtime"
    else:
        wh = "What"
    plural = verb == base.lower()
    made = re.match(r"^it (?:\w+ )?(clear|easy|easier|possible|hard|harder|difficult|obvious|simple|simpler|"
                    r"impossible) (?:that|to|for)\b", " ".join(rest), re.I)
    if base.lower() == "make" and made:  # "Reading self.x makes it absolutely clear that …"
        return f"What {'do' if plural else 'does'} {subject} make {made.group(1).lower()}?"
    if wh == "What" and (after == "like" or after in ("much", "very", "a", "more", "rather") and nxt.lower() == "like"
                         or after == "just" and nxt.lower() == "like"):
        return f"What {'do' if plural else 'does'} {subject} {base.lower()} like?"  # "works much like checkpointing"
    if base.lower() in ("make", "let", "help") and len(rest) > 1 and rest[1].lower() in VERBS and \
            rest[0].lower() not in _FUNCTION:
        return f"What {'do' if plural else 'does'} {subject} {base.lower()} {rest[0]} do?"  # "makes pip communicate"
    preposition = f" {after}" if wh == "What" and after in ("of", "on", "with", "for", "from", "about", "into",
                                                             "upon", "as", "at") else ""
    purpose = re.match(r"^(?:\S+ ){1,5}?to ([a-z]+ .+)$", " ".join(rest))
    if wh == "What" and not preposition and purpose and purpose.group(1).split()[0] in VERBS and \
            (rest[0][:1].isdigit() or rest[0].lower() in _NUMBERS):  # "provides three commands to establish …"
        return f"What {'do' if plural else 'does'} {subject} {base.lower()} to {_clause(purpose.group(1), 8)}?"
    if wh == "What" and after == "to":
        if nxt.lower() == "be" and len(rest) > 2:  # "keyring needs to be installed separately": asked whole
            return f"{'Do' if plural else 'Does'} {subject} {base.lower()} to be {_clause(' '.join(rest[2:]), 12)}?"
        if nxt.lower() in VERBS:  # "pip tries to use its cache"
            preposition = " to do"
        elif base.lower() in ("go", "come", "move", "lead", "point", "belong", "return", "forward", "send", "switch"):
            wh = "Where"
        else:
            preposition = " to"  # "refers to": "What does it refer to?"
    return f"{wh} {'do' if plural else 'does'} {subject} {base.lower()}{preposition}?"


# Words an order ends on when what it says comes next: "Use a constraints file like so:" and the code.
_SHOWN_AFTER = re.compile(r"\s+(?:like so|like this|as follows|as shown|as below|by running|by typing|by executing|"
                          r"with the command|with)\s*:?$", re.I)
# "One way to ensure X is to Y": the way is what is asked.
_ONE_WAY = re.compile(r"^(one|another|a|an|the (?:only|best|easiest|simplest|usual|recommended|preferred|quickest|"
                      r"safest)) (way|approach|method|option|solution) (?:to|of) ([a-z].{3,160}?) (?:is|would be) "
                      r"(?:to|by)\b", re.I)
_DONE_IN_STEPS = re.compile(r"^(.{3,80}?) (is|are) (executed|performed|done|carried out|processed|handled|evaluated|"
                            r"resolved|built|run|made) in (?:\w+ )?(?:steps|stages|phases)\b", re.I)
_PLACED = frozenset("located stored kept placed saved installed found put cached".split())
_FOR_A_PURPOSE = frozenset("used designed intended meant needed required made written added introduced provided".split())
# What an order's verb is followed by ("Notice how …", "Check that …"); any other word after it and a "be"
# soon after make its first word a noun ("Support for most databases is available").
_ORDER_OBJECT = _OBJECT_START | frozenset("how that what whether which why when where out up it them you him "
                                          "yourself".split())
_GIVEN = frozenset("given assigned granted offered sent shown told awarded allotted".split())
_NUMBERS = frozenset("a an one two three four five six seven eight nine ten several many some".split())
_PARTICIPLE = frozenset("""given taken done made used set put run shown written sent built kept found left held read
seen known chosen drawn driven hidden laid lost met paid sold spent bound brought caught dealt fed felt hung heard led
meant proven shut split spread understood withdrawn overridden""".split())


_LEANING_WORDS = re.compile(r"\b(this|these|those|it|its|they|them|their|such|above|former|latter|here)\b", re.I)


def _is_it_true(sentence: str, names: frozenset[str]) -> str | None:
    """A statement no form above turns, asked whole: "Is it true that …?", when it names what it is
    about (no "it", "this", "the above" left to resolve) and is short enough to read as a question."""
    sentence = _LABEL.sub("", tidy(sentence), count=1)
    for _ in range(2):
        linked = _LINK.match(sentence)
        if linked and len(sentence) > linked.end() + 10:
            sentence = sentence[linked.end():]
    words = sentence.split()
    if not 4 <= len(words) <= 28 or _LEANING_WORDS.search(" ".join(words[:6])) or sentence.endswith(":"):
        return None
    return f"Is it true that {_lower_first(sentence, names)}?"


_FINITE = frozenset("""is are was were has have had do does did can could may might must shall should will would
cannot isn't aren't wasn't weren't doesn't don't didn't won't can't hasn't haven't shouldn't mustn't""".split())
_RELATIVE_TAIL = re.compile(r"\b(?:that|which|who|whom|whose|where|when|while)\b[^,;]*", re.I)
_PHRASE_FIRST = re.compile(r"^(?:from|for|in|on|at|with|within|without|as well as|by|under|after|before|during|"
                           r"like|unlike)\b[^,]*,\s*", re.I)


def verbless(sentence: str) -> bool:
    """Whether a list's intro has no verb of its own, outside a leading phrase and its relative
    clauses: a noun phrase ("Some unacceptable solutions that have been proposed:"), not a statement.
    (A list, not a tagger: a verb missing from verbs.py is not seen.)"""
    core = _RELATIVE_TAIL.sub("", _PHRASE_FIRST.sub("", _BRACKETED.sub("", sentence), count=1))
    words = [w.lower() for w in _WORD.findall(core)]
    if len(words) < 2:
        return False
    return not any(w in _FINITE or w.replace("’", "'") in _FINITE or k and verb_base(w) or
                   k and w in VERBS and words[k - 1] in ("you", "we", "they", "i", "to", "and", "or") or
                   k and w.endswith("ed") and len(w) > 4
                   for k, w in enumerate(words))


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
    known = [v for v in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else "") if v in VERBS]
    if known:
        stem = known[0]  # making → make, running → run, installing → install
    elif len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        stem = stem[:-1]
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
        typed = re.match(r"^([\w.$-]+) \(([\w\s-]+)\)$", term)  # "enable_material (boolean)": a setting
        if typed:
            return f"What does the {typed.group(1)} setting do?" if typed.group(2).split()[0].lower() in _TYPES \
                else f"What is {typed.group(1)}?"
        if re.match(r"^[\w.]+\(", term) or re.match(r"^(?:\w+ )?[\w.]+\(", term):
            name = term.split("(")[0].strip().split()[-1]
            return f"What does {name}() do?"
        term = term.rstrip(":").strip()
        if re.search(r"\s\([^()]*\)$", term) and not typed:
            term = re.sub(r"\s\([^()]*\)$", "", term)  # "I/O objects (also known as file objects)"
        if " - " in term and len(term.split(" - ")[0].split()) <= 4:
            term = term.split(" - ")[0]  # "PEP 3104 - Access to Names in Outer Scopes"
        if term.startswith("-"):
            return f"What does the {term.split(',')[0].split('=')[0].strip()} option do?"
        if len(term.split()) <= 8:
            if not term[:1].isalpha() and term[:1] not in "\"“'`":
                return f"What is meant by {term}?"
            plural = term.lower().endswith("s") and not term.lower().endswith(("ss", "us", "is")) and (
                " " in term or bool(re.search(rf"\b{re.escape(term)} are\b", plain, re.I)))
            if term[:1].isupper() and term[1:2].islower() and term.split()[0] not in names and \
                    not any(w[:1].isupper() for w in term.split()[1:]):  # "Harbor Logistics": a name
                term = term[0].lower() + term[1:]  # "Callable types" → "callable types"
            return f"What {'are' if plural else 'is'} {term}?"
        return f"What does “{' '.join(term.split()[:8])}…” mean?"
    topic = _topic(claim.heading, title, names)
    if horn_type == "PROCEDURE":
        intro = claim.intro or plain.split("\n")[0]
        done = _DONE_IN_STEPS.match(tidy(intro))
        if done:  # "The basic import statement is executed in two steps:": how it is executed
            return f"How {done.group(2).lower()} {_lower_first(done.group(1), names)} {done.group(3).lower()}?"
        goal = _GOAL.match(intro) or _HOW_TO.search(intro)
        if goal:
            return f"How do you {goal.group(1).strip()}?"
        how_to = re.match(r"^how to (.{3,120}?)\??$", topic, re.I)
        if how_to:
            return f"How do you {how_to.group(1)}?"
        gerund = _gerund_goal(topic)
        if gerund:
            return f"How do you {gerund}?"
        if topic.endswith("?"):  # under "How can I …?": the intro's own question, else the heading's
            own = _from_sentence(tidy(intro), names)
            return own if own and not _LEANING_WORDS.search(own) else topic
        return f"What are the steps for {phrase(topic, names)}?"
    if claim.kind == "list" and claim.intro and len(claim.intro.rstrip(": ").split()) <= 2 and \
            claim.intro.rstrip().endswith(":"):
        label = claim.intro.rstrip(": ").lower()  # "Notes:", "Examples:" and the list they head
        if label.split()[-1] not in VERBS or label.endswith("s"):
            return f"What {'are the' if label.endswith('s') else 'is the'} {label} on {phrase(topic, names)}?"
    if claim.kind == "list" and claim.intro:
        spans = sentences(claim.intro)  # an intro of several sentences is asked by its first
        sentence = (claim.intro[spans[0][0]:spans[0][1]] if spans else claim.intro).rstrip(": ")
    else:
        spans = sentences(plain)
        sentence = plain[spans[0][0]:spans[0][1]] if spans else plain
        if len(spans) > 1 and _POINTER.match(sentence):  # "See section 8 for the syntax. Note that …"
            sentence = plain[spans[1][0]:spans[1][1]]
    question = _from_sentence(sentence, names)
    if question is None and claim.kind == "list" and claim.intro and verbless(sentence) and \
            re.match(r"^(?:some|several|many|the|a few|two|three|four|other|various)\s+\S+", sentence, re.I) and \
            re.search(r"\b\w{3,}s\b", " ".join(sentence.split()[:5])) and not _LEANING_WORDS.search(sentence):
        question = f"What are {_lower_first(_clause(sentence, 16), names)}?"  # "Some unacceptable solutions …:"
    question = question or _is_it_true(sentence, names)
    if question is None:
        subject = _lower_first(_clause(sentence, 8, slack=0), names)
        return f"What does “{topic}” say about {subject}?" if subject else f"What does “{topic}” say?"
    words = question.rstrip("?").split()
    if len(words) > MAX_WORDS:
        words = words[:MAX_WORDS]
        back = max((k for k, w in enumerate(words) if k >= 6 and words[k - 1].endswith(",")), default=0) or \
            max((k for k, w in enumerate(words) if k >= 6 and w.lower() in _PHRASE_START), default=0)
        words = words[:back] if back else words
        while len(words) > 1 and words[-1].lower() in _DANGLING:
            words.pop()
        question = " ".join(words).rstrip(",;:") + "?"
    return question[0].upper() + question[1:]


_MID_SENTENCE = re.compile(r"(?<=[a-z0-9,;] )[A-Z][\w'’-]*")  # not after "2) ": a list's marker


def names_of(text: str) -> frozenset[str]:
    """The words a document writes with a capital in mid-sentence and never in lower case (names:
    "Harbor", "Debian"), which keep it inside a question; "Pedestrians" opening a sentence does not."""
    lower = {w for w in _WORD.findall(text) if w[:1].islower()}
    # The first word of a name of two ("Harbor Logistics runs …") opening a sentence, never written in lower case.
    paired = {m.group(1) for m in _NAME_PAIR.finditer(text)}
    return frozenset(w for w in [*_MID_SENTENCE.findall(text), *paired] if w.lower() not in lower)


_NAME_PAIR = re.compile(r"\b([A-Z][a-z][\w'’-]*) (?:(?:van|von|de|der|den|da|di|du|le|la) )?[A-Z][a-z]")


def phrase(text: str, names: frozenset[str]) -> str:
    """A heading as it reads inside a question: "End Of Shift" → "end of shift"; names, acronyms and
    codes kept as written."""
    return " ".join(w if w in names or not w[:1].isupper() or not w[1:].islower() else w.lower()
                    for w in text.split())


def distinct(questions: list[str], claims: list[Claim], title: str) -> list[str]:
    """Questions that would be the same for claims saying different things, or the same thing in
    different sections ("Gate 1", "Gate 2"), are told apart by their section ("Gate 1: …"), its
    path if need be, else the document's title; the same statement in one section keeps one question."""
    out = list(questions)
    for depth in (1, 2, 3, None):
        groups: dict[str, list[int]] = {}
        for i, question in enumerate(out):
            groups.setdefault(question.lower(), []).append(i)
        clashing = [members for members in groups.values()
                    if len({(claims[i].plain, claims[i].heading) for i in members}) > 1]
        if not clashing:
            break
        for members in clashing:
            for i in members:
                if claims[i].question:
                    continue  # the document's own question stays as it asked it
                heading = claims[i].heading
                where = " › ".join(re.sub(r"^[\d.]+\s+", "", h) for h in heading[-depth:]) if depth and heading else title
                asked = questions[i]
                out[i] = f"{where}: {asked[0].lower() + asked[1:] if asked[1:2].islower() else asked}"
    return out
