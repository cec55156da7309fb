"""A document's blocks as candidate claims: one self-contained statement each
(docs/architecture.md, "Documents and extraction").

- An intro line keeps the list it introduces; a list is one claim (a list of steps one PROCEDURE,
  loose or tight), and so is an intro line with the code block or table it introduces.
- A paragraph broken by a code block is one paragraph: the text that continues it (starting in
  lower case) joins it, with the code between as context.
- A definition keeps its term. A footnote goes with the claim that cites it; alone it is dropped.
- A long paragraph of several claims is split where a sentence stands alone; a sentence that
  leans on the one before ("This …", "It …", lower case) stays with it.
- Code, tables, footnotes and front matter are context, never claims; a two-column table's row
  that reads as one statement ("term | what it is") is a claim.
- `Q:`/`A:` lines pair explicitly; a heading that asks is the question of the first claim under it.
- What states nothing is sorted out: markup, navigation, lone symbols and labels are dropped and
  counted; a sentence too short to answer (fewer than MIN_WORDS words) is a fragment, for the
  grey queue; a claim over a limit is skipped with its line and reason.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..domain import limits
from .documents import (
    CODE,
    DEFINITION,
    LABEL,
    LEANING,
    LIST,
    MARKUP,
    NAVIGATION,
    PARAGRAPH,
    SYMBOLS,
    TABLE,
    Block,
    Document,
    squeeze,
)
from .verbs import VERBS, base as verb_base

MIN_WORDS = 5
SPLIT_CHARS = 400     # a paragraph longer than this, or of SPLIT_SENTENCES sentences or more, is split
SPLIT_SENTENCES = 3
MERGE_CHARS = 1_600   # a paragraph that leans on the claim before it joins it while both stay under this


@dataclass
class Claim:
    text: str                    # the candidate's answer as stored: its span's text, with its footnotes
    plain: str                   # its words without markup: what its question and type are read from
    start: int
    end: int
    line: int
    kind: str
    heading: tuple[str, ...]
    items: tuple[str, ...] = ()
    ordered: bool = False
    intro: str = ""
    term: str = ""
    question: str = ""           # asked by the document itself
    horn_type: str = ""          # given by the document


@dataclass
class Claims:
    claims: list[Claim]
    fragments: list[Claim]
    dropped: Counter
    skipped: list[tuple[int | None, str]]


_Q = re.compile(r"^\s*(?:\*\*)?Q(?:uestion)?:(?:\*\*)?\s*(.+)$", re.I)
_A = re.compile(r"^\s*(?:\*\*)?A(?:nswer)?:(?:\*\*)?\s*(.*)$", re.I)
_ABBREVIATIONS = frozenset("""e.g i.e etc cf vs al fig figs no nos sec secs ch approx dr mr mrs ms st jr sr inc ltd
co corp resp ca viz ex eq vol pp p ed""".split())
_SENTENCE_END = re.compile(r"[.!?][)\"”’']*\s+(?=[A-Z\"“(\[`*_]|[a-z]+_[a-z_]+\s)")  # "… as needed. log_x can …"
# A relational noun as the definite subject, its complement lost: "The most common cause is …" leans
# on what it is the cause of, unless the heading above asks it ("Why does X fail?").
_RELATIONAL = re.compile(r"^(?:[\"“(*_`]*)the (?:[\w-]+ ){0,2}(?:cause|reason|solution|answer|fix|difference|catch|trick|"
                         r"workaround|remedy|culprit|explanation|exception|problem|consequence|downside|drawback|"
                         r"upshot)s? (?:is|are|was|were|will|would|lies|depends)\b", re.I)
_LEANS = re.compile(r"^(?:[\"“(*_`]*)(?:this|that|these|those|it(?!\s+is\s+(?:also\s+|not\s+|often\s+|usually\s+)?(?:possible|"
                    r"impossible|recommended|important|necessary|advisable|a good idea|best|common|useful|"
                    r"easy|hard|safe|unsafe|required|allowed|permitted|likely|unlikely)\b)|its|it's|it’s|"
                    r"they|their|them|such|then|otherwise|however|another|or|in (?:the|both|either|each|"
                    r"all|most|many|some|these|those|such) (?:former|latter|first|second|third|other|above|"
                    r"following|cases?|examples?)\b|in both|the above|the following|the latter|the former|"
                    r"if so|if not|if that|if this|here|similarly|also|thus|therefore|hence|so|instead|"
                    r"similarly|likewise|alternatively|furthermore|moreover|in addition|in this case|in that case|"
                    r"in such cases?|for example|for instance|e\.g\.|the latter|the former|he|she|both|"
                    r"either|neither|each of these|in particular|but|and|or|nor|yet|still|again|conversely|"
                    r"consequently|as a result|as such|finally|next|here|there it|because|if so|if not|"
                    r"only then|even so|besides|meanwhile|afterwards|after that|before that|above|below|"
                    r"the same|same|elsewhere|an exception\b(?! to\b)|(?:in )?our (?:first|second|third|previous|"
                    r"last|earlier|next) example\b|on the other hand|fortunately|unfortunately|answer \d+|one (?:is|"
                    r"way is|option is|approach is|solution is)|i(?= (?:had|have|was|am|think|believe|wanted|"
                    r"liked|know|thought|wrote|decided|read)\b)|let[’']s say|let us say|suppose|imagine|"
                    r"the (?:first|second|third|last|latter|former)(?: one)? (?:is|are|was|can|will|may|has|does)\b|"
                    r"any other\b|all (?:of )?(?:these|those|the above)|the first one|in such a case|in this situation|in that situation|in either case|the result\b(?! of)|"
                    r"in fact|indeed|in other words|that is|that said|as with|as (?:before|above|mentioned|"
                    r"noted|described|shown|discussed|explained|seen)|the other|the others|the rest|the remaining|"
                    r"the next|the previous|the (?:dis)?advantages?|(?:a|an|the) (?:\S+ )?alternative|the second|"
                    r"the third|either way|in any case|even then|at this point|at that point|by then|to do (?:so|"
                    r"this|that)|in doing so|doing so|apart from that|other than that|"
                    # "Worse, …", "Many other aspects …", "If instead you …", "(Actually, …)", "(In earlier versions …)"
                    r"(?:even )?worse|better still|more importantly|(?:many|several|some|a few|most) other|"
                    r"(?:if|when) instead|actually|i\.e\.|in (?:earlier|older|previous|later|newer) "
                    r"(?:versions|releases))(?![\w.])|^\([a-z]\)\s|^(?:second|"
                    r"secondly|third|thirdly|lastly),|^\(?(?:yes|no)\s*[.,!;:]", re.I)
# A first sentence that points at what came before it, anywhere in it ("The first time you call this
# function, …", "… reasons for this.", "the above list"): it cannot be judged alone.
# "This policy …", "this handbook": the document speaking of itself, which is there to read.
_SELF = (r"(?:handbook|policy|policies|document|manual|guide|chapter|section|page|process|standard|"
         r"specification|book|tutorial|faq|article|appendix|part|reference|release|version)\b")
_THIS_SELF = re.compile(rf"^(?:[\"“(*_`]*)this {_SELF}", re.I)
_POINTS_BACK = re.compile(rf"(?<!\band )(?<!\bbut )(?<!\bso )\b(?:(?:this|these|those)(?! {_SELF})|the above|above-mentioned|"
                          rf"aforementioned|the (?:preceding|foregoing|previous)|such (?:cases?|situations?|a case)|"
                          rf"do(?:es)? the same|(?<!\bso )(?<!\bsuch )(?<!\bin )(?<!\bat )\bthat (?:fact|case|behaviou?r|problem|issue|approach|technique|"
                          rf"example|situation|scenario|change|restriction|limitation|iterable|function|directory|file|command)\b(?=\s*(?:[.,;:)]|$)|\s+(?:is|are|was|were|has|"
                          rf"have|can|will|may|must|should|would|could|does|do|in|on|of|for|to|with|from|by|at|and|or|as)\b)|the desired (?:effect|result|behaviou?r)|(?:more|less) easily|"
                          rf"\bof that(?= is\b|[.,;:]|$)|^(?!(?:if|when|once|after|before|first)\b)[^,.]{{0,40}}\b(?:can|"
                          rf"will|may|is|are|must|should) then\b|^(?!(?:if|when|once|after|before|first)\b)(?:the|"
                          rf"its|their) [\w’']+(?: [\w’']+)? then\b|(?:no|a|the) similar|^(?:if|when|unless|once|"
                          rf"since|because|although|while) (?:it|they|this|these|that|those|he|she|its|their)\b(?! is \w+ (?:to|"
                          rf"that)\b)|the latter|the former|said (?:function|method|file|option))\b|\b(?:as|just as|"
                          rf"equally) (?:easy|simple|fast|slow)\b(?! as)|\byour (?:error|problem|issue|situation|mistake)\b|\babove\s*[.:]?$|,\s*however\s*[.!]?$", re.I)
# An intro line announcing an example ("Here is a simple example that …:", "For example:"): the code after
# it illustrates the claim before it; it is no claim of its own.
_EXAMPLE_INTRO = re.compile(r"^(?:[\"“(*_`]*)(?:here(?:’s|'s| is| are)\b[^:]{0,160}\bexamples?\b|for (?:example|instance)\b|"
                            r"(?:an?|another|one|the|some|a few|two|three) (?:\w+ ){0,3}?examples?\b(?! of how to\b)[^:]{0,80}:?$|"
                            r"examples?\b|e\.g\.)", re.I)
# An intro line that is only the setting of the example after it, no statement: "From within a real
# python, where SomePackage is installed globally:", "On Windows:".
_SETTING_INTRO = re.compile(r"^(?:from within|from|within|inside|on|in|under|using)\b[^,:;]{1,80}"
                            r"(?:,\s*(?:where|which|when|with|if)\b[^:]{0,160})?:$", re.I)
_FORWARD = re.compile(r"^(?:[\"“(*_`]*)(the following|here|consider|as follows)\b", re.I)
# "It is not yet decided whether …", "It is possible to …": an "it" that refers to nothing before it.
_EXTRAPOSED = re.compile(r"^it\s+(?:is|was|seems|appears|remains|has been|would be|will be|may be|might be)\b[^.,;]{0,60}?"
                         r"\b(?:that|whether|to|if|how|what|why|when|who|which)\b", re.I)
_MARKUP_TEXT = re.compile(r"^(?:</?[A-Za-z][^>]*>\s*)+$|^\{[{%].*[}%]\}$|^\[(?:toc|TOC)\]$|^[-=*_~#|:+ ]{3,}$")
_CAPTION = re.compile(r"^(?:table|figure|fig\.|example|listing|illustration)\s+[\dA-Z][\d.]*[.:]?\s", re.I)
_NAV_TEXT = re.compile(r"^(?:next|previous|prev|up|home|top|back to top|table of contents|contents|index|"
                       r"skip to (?:main )?content|go to top|print|edit (?:this|on \w+)|view source|show source)"
                       r"[\s:.»«›‹>|-]*$", re.I)
# A paragraph that only points elsewhere: navigation, not a claim.
_CROSS_REFERENCE = re.compile(r"^(?:see(?: also)?|refer to|(?:for|on|under) [^,.]{1,40}, (?:see|refer to)\b|this (?:is now|has been) (?:covered|moved|documented)|"
                              r"see the (?:next|previous|following) (?:question|section|chapter)|(?:for|more) (?:more |further |full )?(?:information|details|examples|discussion)[^.]*?(?:see|refer|"
                              r"can be found|is available)|.{0,80}\b(?:is|are) (?:described|covered|documented|explained) "
                              r"(?:(?:in )?(?:more|further|greater|full) detail |more fully |further )?"
                              r"(?:in|at|under) (?:section|chapter|the|\S+$)|"
                              r"(?:more |further |full )?(?:information|details|documentation)(?: about| on| of)?"
                              r"(?:[^.]|\.(?=\S))*?\b(?:can|may) be found (?:in|at|on)\b|"
                              r".{0,80}\b(?:is|are) (?:(?:given|listed|shown|described|provided|"
                              r"summarized|collected) )?(?:here|below|above)\s*(?:[:.]|:\s*[\w./#-]+\.?)?$|"
                              r"this (?:article|section|chapter|page|document|guide|tutorial|part|appendix)\b|"
                              r".{0,160}\b(?:is|are) shown in (?:example|table|figure|section|listing)\s+[\d.]+\.?$|"
                              # "Check out the Tk documentation for …", "For more …, consult the guide.", "Read below
                              # for …", "… are listed earlier in section X."
                              r"(?:check out|consult|read|see) the [^.;]{0,60}\b(?:documentation|docs|guide|manual|"
                              r"wiki page)\b(?: for [^.;]{0,80})?\.?$|(?:for|more) (?:more |further |full )?"
                              r"(?:information|details|examples|discussion)[^.]*?(?:consult|read|check out)\b|"
                              r"read (?:below|above|on)\b|"
                              r".{0,80}\b(?:is|are) (?:listed|described|given|explained|discussed) (?:earlier|later|"
                              r"above|below)(?: in\b|\.))", re.I)
_SEE_ALSO = re.compile(r"^(?:see also|related (?:topics|pages|reading)|further reading|more reading)\s*:?$", re.I)
# A paragraph's words that stop mid-sentence, before a code block that goes on with it: a word, not a stop.
_UNFINISHED = re.compile(r"(?:\b(?:to|of|is|are|as|like|with|by|from|the|a|an|and|or|be|run|use|type|enter)|[\w`])$")
_INTRO_ALONE = re.compile(r"(?::|\bas follows\.?|\bthe following\.?)$", re.I)
# Inline Markdown marks, for the words of a piece of a paragraph (a whole block's words come from the parser).
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]")
_MARKS = re.compile(r"(\*\*|__|\*|`+|~~)")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]]+\]")


def asks(text: str) -> bool:
    """Whether a block is a `Q:`/`A:` pair or part of one: it answers its own question."""
    first = text.split("\n", 1)[0]
    return bool(_Q.match(first) or _A.match(first))


_ROLE = re.compile(r"\{[\w:.-]+\}`([^`<]*?)\s*(?:<[^>]*>)?`")  # MyST's {ref}`title <target>`


def markdown_words(text: str) -> str:
    text = _ROLE.sub(r"\1", text)
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2) or "", text)
    text = _FOOTNOTE_REF.sub("", text)
    return squeeze(_MARKS.sub("", text))


def sentences(text: str) -> list[tuple[int, int]]:
    """The spans of a text's sentences: a stop, then a blank, then a capital; not after an
    abbreviation ("e.g.", "Fig.") or an initial ("J. Smith")."""
    spans: list[tuple[int, int]] = []
    start = 0
    for found in _SENTENCE_END.finditer(text):
        before = text[start:found.start() + 1]
        word = re.search(r"([A-Za-z][A-Za-z.]*)\.$", before)
        if word and (word.group(1).lower().rstrip(".") in _ABBREVIATIONS or len(word.group(1)) == 1):
            continue
        end = found.end()
        piece = text[start:end].rstrip()
        if piece:
            spans.append((start, start + len(piece)))
        start = end
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def _leans(sentence: str) -> bool:
    stripped = sentence.lstrip("\"“(*_`[ ")
    return not stripped[:1].isupper() and not stripped[:1].isdigit() or bool(_LEANS.match(sentence))


# What may stand before a sentence's subject: a label or "only", then a phrase of context.
_NOTE_FIRST = re.compile(r"^(?:note(?: also| however)?(?: that)?[:,]?\s+|only\s+)", re.I)
_CONTEXT_FIRST = re.compile(r"^(?:in|on|within|for|with|under|at|during|from|by default|by|after|before|in practice|"
                            r"in general)\b[^,.;:]{0,60},\s+", re.I)
_PRONOUN_FIRST = re.compile(r"^(?:it|its|it['’]s|they|their|them|such|this|these|those)\b(?!\s+(?:is|are)\s+(?:also\s+|"
                            r"not\s+)?(?:possible|impossible|recommended|important|necessary|advisable|a good idea|best|"
                            r"common|useful|easy|hard|safe|unsafe|required|allowed|permitted|likely|unlikely)\b)", re.I)


_DO_THIS = re.compile(r"\b(?:to )?do (?:this|that|so)\s*:$", re.I)
_REMARK_FIRST = re.compile(r"^\([^()]{3,400}[.!?]\)\s+\S", re.S)


def _pronoun_past_opener(plain: str) -> bool:
    core = _CONTEXT_FIRST.sub("", _NOTE_FIRST.sub("", plain, count=1), count=1)
    return core != plain and bool(_PRONOUN_FIRST.match(core)) and not _EXTRAPOSED.match(core) and \
        not _THIS_SELF.match(core)


def leans_back(plain: str, introduces: bool = False) -> bool:
    """Whether a paragraph cannot be judged alone: it opens on what came before it ("It …", "Another
    is …", "On the other hand, …") or its first sentence points back ("… this function …", "the
    above list"); "It is possible to …" refers to nothing before it. An intro line (`introduces`: a
    list, code or a table follows its colon) points forward with "the following", "this", "here"."""
    introduces = introduces and len(sentences(plain)) == 1  # one line introducing what follows it, alone
    if introduces and (_EXAMPLE_INTRO.match(plain) or _SETTING_INTRO.match(plain.strip())):
        return True  # "Here is a simple example …:", "From within a virtualenv:" and its code: an example
    if _EXTRAPOSED.match(plain) or introduces and _FORWARD.match(plain) or _THIS_SELF.match(plain):
        return False
    if _LEANS.match(plain):
        return True
    if _REMARK_FIRST.match(plain.strip()):
        return True  # "(The maximum delay is three times wal_writer_delay.) Unlike fsync, …": a remark on the text before
    if _pronoun_past_opener(plain):
        return True  # "Note that on NTFS volumes, it does not copy …", "Only their relative values matter": leans
    if introduces and _DO_THIS.search(plain.rstrip()):
        return True  # "With pip, there are two ways to do this:": the "this" is what came before
    if introduces:  # "All of these classes have a signature of their own:": back; "… like this:": forward
        head = plain.rstrip(": ").split()
        return len(head) > 6 and bool(_POINTS_BACK.search(" ".join(head[:-4])))
    spans = sentences(plain)
    first = plain[spans[0][0]:spans[0][1]] if spans else plain
    return bool(_POINTS_BACK.search(first)) or _such_back(first)


_SUCH = re.compile(r"\bsuch (?!as\b|that\b)([a-z]{3,}?)(?:e?s)\b(?! as\b)", re.I)


def _such_back(sentence: str) -> bool:
    """"… to detect such cycles": the cycles are those of a sentence before, unless this one named
    them earlier ("Files that start with a dot are ignored, since such files are hidden")."""
    found = _SUCH.search(sentence)
    return bool(found) and not re.search(rf"\b{re.escape(found.group(1))}", sentence[:found.start()], re.I)


# "The students are …" after a paragraph about students: a definite subject whose noun the block
# before it names is that block's, and the sentence continues it (docs/architecture.md, "Documents
# and extraction"). The subject: "the" and one noun before its verb ("The modulo operation …" names
# a thing of its own).
_DEFINITE = re.compile(r"^(?:[\"“(*_`]*)the ()([a-z][\w-]*?)(?:s|es)?"
                       r"(?=\s+(?:is|are|was|were|has|have|can|will|may|must|should|would|could|might|does|do|"
                       r"measures?|means?|uses?|contains?|takes?|returns?|becomes?|gives?|shows?|depends?|"
                       r"of|in|for|at|on|from|to)\b)", re.I)
_NOT_HEAD = frozenset("default same following first last only main best next other rest result end "
                      "number way case".split())


def names_the_before(plain: str, before: str) -> bool:
    """Whether a paragraph's definite subject ("The query will be used …", "The delay occurs …") is
    a thing the block before it named ("… the query …", "recovery_min_apply_delay"): then it
    continues that block and cannot be judged alone."""
    found = _DEFINITE.match(plain) or _DEFINITE_ANY_VERB.match(plain)
    if found and found.re is _DEFINITE_ANY_VERB and not verb_base(found.group(3)):
        found = None
    if not found or not before:
        return False
    head = found.group(2).lower()
    if head in _NOT_HEAD or len(head) < 3:
        return False
    return bool(re.search(rf"(?<![^\W_]){re.escape(head)}(?:s|es)?(?![^\W_])", before, re.I))


# "The delay occurs …": "the", one noun and a verb of the third person.
_DEFINITE_ANY_VERB = re.compile(r"^(?:[\"“(*_`]*)the ()([a-z][\w-]*?)(?:s|es)? ([a-z]+s)\b", re.I)


# A leading phrase of context before a sentence's subject: "In CPython, the value was …".
_LEAD_PHRASE = re.compile(r"^(?:in|on|for|with|under|by default|at|from|since|as of|before|after) [^,.;:]{1,40},\s+(?=the )",
                          re.I)


# A sentence's definite subject, "the", at most one modifier and its noun, then its verb: "The numeric
# arguments are …".
_SENTENCE_SUBJECTS = tuple(re.compile(rf"^(?:[\"“(*_`]*)the {modifier}([a-z][\w-]*?)(?:s|es)? ([a-z]+)\b", re.I)
                           for modifier in ("", r"[a-z][\w-]* "))
_BE_OR_MODAL = frozenset("is are was were has have can will may must should would could might does do".split())


def _names_the_sentence_before(sentence: str, before: str) -> bool:
    """Whether a sentence of a paragraph opens on a definite subject the sentence before it names
    ("… the quotient of their arguments. The numeric arguments are first converted …", "… the order
    of key and value … In CPython, the value was evaluated before the key."): it continues that
    sentence, and is no claim alone."""
    sentence = _LEAD_PHRASE.sub("", sentence, count=1)
    for subject in _SENTENCE_SUBJECTS:  # "the value was …", else "the numeric arguments are …"
        found = subject.match(sentence)
        if not found:
            continue
        head, verb = found.group(1).lower(), found.group(2).lower()
        if head in _NOT_HEAD or len(head) < 3 or not (verb in _BE_OR_MODAL or verb_base(verb) or verb in VERBS):
            continue
        return bool(re.search(rf"(?<![^\W_]){re.escape(head)}(?:s|es)?(?![^\W_])", before, re.I))
    return False


# A paragraph that sets a question up rather than answers it: a scenario ("Sometimes you want to …",
# "You probably tried …", "If you wrote code like:", "Let's say …").
_SCENARIO = re.compile(r"^(?:sometimes|often|occasionally)?,?\s*(?:you|one)\s+(?:(?:may|might|probably|often|sometimes)\s+)?"
                       r"(?:want|wish|need|tried|try|wrote|write|run into|come across)\b|^if you (?:wrote|write|"
                       r"tried|try|run|ran|have written)\b[^,.]*(?:like|this)\b|^(?:suppose|imagine|let['’]s say|say you)\b|"
                       r"(?:^|[.!?]\s+)let['’]s say\b[^.]*\.?$", re.I)
_REASON = re.compile(r"\b(?:because|since|so|therefore|thus|hence|as a result|due to|in order to|so that|reason|why|"
                     r"to (?!the\b|a\b|an\b)[a-z]+)\b", re.I)


def premise(plain: str, asked: str) -> bool:
    """Whether the first paragraph under a heading that asks only sets it up: a scenario, or under
    "Why …?" one sentence that gives no reason."""
    if _SCENARIO.search(plain.strip()):
        return True
    return asked.lower().startswith("why ") and len(sentences(plain)) == 1 and not _REASON.search(plain)


def split_claims(text: str) -> list[tuple[int, int]]:
    """A paragraph's claims: its sentences, a sentence that leans on the one before kept with it.
    A paragraph short enough, or of fewer than SPLIT_SENTENCES sentences, is one claim."""
    spans = sentences(text)
    if len(spans) < SPLIT_SENTENCES and len(text) <= SPLIT_CHARS or len(spans) < 2:
        return [(0, len(text))]
    groups: list[list[int]] = []
    for start, end in spans:
        piece = text[start:end]
        before = text[groups[-1][0]:groups[-1][1]] if groups else ""
        if groups and (_leans(piece) or _POINTS_BACK.search(piece) or _pronoun_past_opener(piece) or _such_back(piece) or
                       before.count("(") > before.count(")") or
                       _names_the_sentence_before(piece, text[groups[-1][0]:groups[-1][1]]) or
                       text[groups[-1][0]:groups[-1][1]].rstrip().endswith(":")):
            groups[-1][1] = end
        else:
            groups.append([start, end])
    return [(a, b) for a, b in groups]


class _Reader:
    def __init__(self, doc: Document):
        self.doc = doc
        self.markdown = doc.media_type == "text/markdown"
        self.out = Claims([], [], Counter(), [])

    def words(self, text: str) -> str:
        return markdown_words(text) if self.markdown else squeeze(text)

    def run(self) -> Claims:
        for section in self.doc.sections:
            self.section(section.heading, section.blocks)
        return self.out

    def section(self, heading: tuple[str, ...], blocks: list[Block]) -> None:
        first = len(self.out.claims)
        self._section(heading, blocks)
        self.faq_answer(heading, self.out.claims[first:])

    def faq_answer(self, heading: tuple[str, ...], claims: list[Claim]) -> None:
        """Under a heading that asks, a first paragraph that only sets the question up (a premise) is
        kept with the paragraph after it, which answers: "Sometimes you want to …" (a scenario), or,
        under "Why …?", one sentence that gives no reason ("Python file objects are a layer over C file
        descriptors."). Else the first claim stands as it is."""
        if len(claims) < 2 or not heading or claims[0].question != heading[-1] or not claims[0].question or \
                claims[0].kind != PARAGRAPH or claims[1].heading != heading or \
                claims[1].end - claims[0].start > MERGE_CHARS or \
                any(c.text != self.doc.content[c.start:c.end] for c in claims[:2]):  # a footnote appended: apart
            return
        head, answer = claims[0], claims[1]
        if not premise(head.plain, heading[-1]):
            return
        head.text = self.doc.content[head.start:answer.end]
        head.plain = f"{head.plain} {answer.plain}"
        head.end = answer.end
        self.out.claims.remove(answer)

    def _section(self, heading: tuple[str, ...], blocks: list[Block]) -> None:
        asked = heading[-1] if heading and heading[-1].rstrip().endswith("?") else ""
        pending_q: tuple[str, Block] | None = None
        i = 0
        while i < len(blocks):
            block = blocks[i]
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            if block.kind == PARAGRAPH and not block.question and self.doc.media_type in ("text/markdown",
                                                                                           "text/plain"):
                paired = self.pair(block, pending_q, heading)
                if paired is not None:
                    pending_q = paired if isinstance(paired, tuple) else None
                    i += 1
                    continue
            pending_q = None
            if block.kind == PARAGRAPH and block.plain.rstrip().endswith(":") and nxt is not None and \
                    nxt.kind == DEFINITION:
                self.out.dropped[LABEL] += 1  # "The following methods can be defined:": the definitions say it
                i += 1
                continue
            if block.kind == PARAGRAPH and asked and block.plain.rstrip().endswith("?") and nxt is not None:
                self.out.dropped[LABEL] += 1  # a FAQ's question said again in words of its own: its heading asks it
                i += 1
                continue
            introduces = block.plain.rstrip().endswith(":") and nxt is not None and \
                nxt.kind in (CODE, TABLE, LIST, DEFINITION)
            if block.kind == PARAGRAPH and not block.question and (leans_back(block.plain, introduces) or
                                                                   not asked and _RELATIONAL.match(block.plain)) and \
                    not _NAV_TEXT.match(block.plain) and not _CROSS_REFERENCE.match(block.plain):
                upto = i + 1 if block.plain.rstrip().endswith(":") and nxt is not None and \
                    nxt.kind in (CODE, TABLE, LIST) else i  # an intro line goes with what it introduces
                if upto == i and block.plain.rstrip().endswith(":"):
                    self.out.dropped[LABEL] += 1  # an intro whose list or code is not here: it adds nothing
                elif not self.leaning(block, blocks[upto], heading):
                    self.out.dropped[LEANING] += 1  # nothing to lean on in this section: no claim alone
                asked = ""
                i = upto + 1
                continue
            before = blocks[i - 1] if i else None
            if block.kind == PARAGRAPH and not block.question and before is not None and \
                    not _CROSS_REFERENCE.match(block.plain) and names_the_before(block.plain, before.plain):
                upto = i + 1 if block.plain.rstrip().endswith(":") and nxt is not None and \
                    nxt.kind in (CODE, TABLE, LIST) else i
                if self.leaning(block, blocks[upto], heading):  # else it stays a claim of its own
                    asked = ""
                    i = upto + 1
                    continue
            if block.kind == LIST and not block.intro and not block.ordered and before is not None and \
                    before.kind == PARAGRAPH and self.introduced(before, block, heading):  # numbered steps stand alone
                i += 1  # "In this example, pip cannot …" and the list of what conflicts: its intro is the paragraph
                continue
            if block.kind == PARAGRAPH and nxt is not None and nxt.kind == LIST and block.plain.rstrip().endswith(":"):
                self.add(Claim(self.span(block, nxt), "", block.start, nxt.end, block.line, LIST, heading,
                               nxt.items, nxt.ordered, block.plain, question=asked), block.notes + nxt.notes)
                asked = ""
                i += 2
                continue
            if block.kind == PARAGRAPH:
                last, plain, notes = block, block.plain, block.notes
                j = i + 1
                while j < len(blocks) and blocks[j].kind in (CODE, TABLE):
                    after = blocks[j + 1] if j + 1 < len(blocks) else None
                    if after is not None and after.kind == PARAGRAPH and after.plain[:1].islower():
                        last, plain, notes = after, f"{plain} {after.plain}", notes + after.notes
                        j += 2  # the paragraph goes on after the code: one paragraph, the code its context
                    elif last.plain.rstrip().endswith(":") or last.kind == PARAGRAPH and \
                            _UNFINISHED.search(last.plain.rstrip()):
                        # "The simple form is equivalent to" and the code: the code ends the sentence
                        last = blocks[j]  # the code or table the line introduces goes with it
                        j += 1
                    else:
                        break
                if last is not block:
                    self.add(Claim(self.span(block, last), plain, block.start, last.end, block.line, PARAGRAPH,
                                   heading, question=asked), notes)
                    asked = ""
                    i = j
                    continue
                asked = self.paragraph(block, heading, asked)
                i += 1
                continue
            if block.kind in (LIST, DEFINITION):
                self.add(Claim(block.text, block.plain, block.start, block.end, block.line, block.kind, heading,
                               block.items, block.ordered, block.intro, block.term, question=block.question or asked,
                               horn_type=block.horn_type), block.notes)
                asked = ""
            elif block.kind == TABLE:
                self.table(block, heading)
            i += 1

    def leaning(self, block: Block, upto: Block, heading) -> bool:
        """A paragraph that leans on the claim before it ("It can be restored with zcat.", "In the
        former case, …") goes on that claim (with the code or list it introduces, `upto`), when the
        claim is of the same section and not long. False when it cannot: it is then no claim."""
        last = self.out.claims[-1] if self.out.claims else None
        if last is None or last.heading != heading or last.kind not in (PARAGRAPH, LIST, DEFINITION) or \
                last.question and \
                last.question != (heading[-1] if heading else "") or \
                len(last.text) + (upto.end - block.start) > MERGE_CHARS or block.start < last.end:
            return False
        last.text = self.doc.content[last.start:upto.end]
        last.plain = f"{last.plain} {block.plain}"
        last.end = upto.end
        if block.notes:
            last.text += "".join(f"\n\n[{note}]" for note in block.notes)
        return True

    def introduced(self, before: Block, block: Block, heading) -> bool:
        """A bulleted list with no intro of its own right after a paragraph that is a claim: the
        paragraph is its intro, and the two are one claim, while under MERGE_CHARS. A numbered list
        stands alone: steps of their own, a PROCEDURE."""
        last = self.out.claims[-1] if self.out.claims else None
        if last is None or last.heading != heading or last.kind != PARAGRAPH or last.end != before.end or \
                last.start != before.start or last.question and last.question != (heading[-1] if heading else "") or \
                block.end - last.start > MERGE_CHARS:
            return False
        last.text = self.doc.content[last.start:block.end] + "".join(f"\n\n[{note}]" for note in block.notes)
        last.end, last.kind, last.items, last.ordered, last.intro = block.end, LIST, block.items, block.ordered, \
            last.plain
        last.plain = ""
        last.plain = f"{last.intro} " + " ".join(block.items)
        return True

    def span(self, first: Block, last: Block) -> str:
        return self.doc.content[first.start:last.end]

    def pair(self, block: Block, pending: tuple[str, Block] | None, heading):
        """`Q:`/`A:` lines: a claim with its own question. True when the block was a pair's part."""
        lines = block.text.splitlines()
        question = _Q.match(lines[0]) if lines else None
        if question:
            answer_at = next((k for k, line in enumerate(lines) if _A.match(line)), None)
            if answer_at is None:
                return (question.group(1).strip(), block)
            offset = block.start + sum(len(line) + 1 for line in lines[:answer_at])
            offset += len(lines[answer_at]) - len(lines[answer_at].lstrip())
            text = "\n".join([_A.match(lines[answer_at]).group(1)] + lines[answer_at + 1:]).strip()
            self.add(Claim(text, self.words(text), offset, block.end, block.line + answer_at, PARAGRAPH, heading,
                           question=question.group(1).strip()), ())
            return True
        answer = _A.match(lines[0]) if lines else None
        if answer and pending:
            text = "\n".join([answer.group(1)] + lines[1:]).strip()
            self.add(Claim(text, self.words(text), block.start, block.end, block.line, PARAGRAPH, heading,
                           question=pending[0]), ())
            return True
        return None

    def paragraph(self, block: Block, heading, asked: str) -> str:
        if block.question:  # a JSON Lines record: one claim, as given
            self.add(Claim(block.text, block.plain, block.start, block.end, block.line, PARAGRAPH, heading,
                           question=block.question, horn_type=block.horn_type), ())
            return asked
        if _INTRO_ALONE.search(block.plain.strip()) and len(sentences(block.plain)) == 1 and not asked and \
                not _CROSS_REFERENCE.match(block.plain):
            self.out.dropped[LABEL] += 1  # "The semantics are as follows.", "… here are some examples:" and nothing
            return ""
        parts = split_claims(block.text)
        for n, (a, b) in enumerate(parts):
            text = block.text[a:b]
            plain = block.plain if len(parts) == 1 else self.words(text)
            notes = block.notes if n == 0 else ()
            self.add(Claim(text, plain, block.start + a, block.start + b,
                           block.line + block.text.count("\n", 0, a), PARAGRAPH, heading,
                           question=asked if n == 0 else ""), notes)
        return ""

    def table(self, block: Block, heading) -> None:
        """A two-column table's rows that read as a statement each: "term | what it is"."""
        rows = [row.split(" | ") for row in block.items]
        if len(rows) < 2 or any(len(row) != 2 for row in rows):
            return
        lines = block.text.split("\n")
        for term, words in rows[1:]:
            if term and len(term.split()) <= 6 and len(words.split()) >= 4:
                text = f"{term}: {words}"
                at = next((k for k, line in enumerate(lines) if term in line and words[:20] in line), None)
                start = block.start + sum(len(line) + 1 for line in lines[:at]) if at is not None else block.start
                end = start + len(lines[at]) if at is not None else block.end
                self.add(Claim(text, text, start, end, block.line + (at or 0), DEFINITION, heading, term=term), ())

    def add(self, claim: Claim, notes: tuple[str, ...]) -> None:
        if not claim.plain:
            claim.plain = self.words(claim.text)
        if claim.kind in (PARAGRAPH, DEFINITION) and not claim.items and not notes and not claim.question and \
                claim.text.rstrip().endswith(":"):
            # It ends on an intro whose list, code or quotation is not here ("An example is shown here:"):
            # the intro is cut off, and a claim that is nothing but the intro is no claim.
            spans, words = sentences(claim.text.rstrip()), sentences(claim.plain.rstrip())
            if len(spans) < 2 or len(words) < 2:
                self.out.dropped[NAVIGATION if _CROSS_REFERENCE.match(claim.plain.strip()) else LABEL] += 1
                return
            claim.text = claim.text[:spans[-1][0]].rstrip()
            claim.plain = claim.plain[:words[-1][0]].rstrip()
            claim.end = claim.start + len(claim.text)
        if notes:  # the footnotes it cites go with it
            claim.text += "".join(f"\n\n[{note}]" for note in notes)
        why = limits.too_long("an answer", limits.ANSWER, len(claim.text.strip()))
        if why:
            self.out.skipped.append((claim.line, why))
            return
        plain = claim.plain.strip()
        letters = sum(map(str.isalpha, plain))
        if claim.kind == LIST and _SEE_ALSO.match(claim.intro.strip()):
            self.out.dropped[NAVIGATION] += 1  # "See also:" and its links
            return
        if claim.kind == PARAGRAPH and claim.question and not asks(claim.text) and \
                (_NAV_TEXT.match(plain) or _CROSS_REFERENCE.match(plain) and len(sentences(plain)) <= 1):
            self.out.dropped[NAVIGATION] += 1  # "See the next question.": no answer to the heading's question
            return
        if claim.kind == PARAGRAPH and not claim.question:
            if letters < 2:
                self.out.dropped[SYMBOLS] += 1
                return
            if _MARKUP_TEXT.match(plain):
                self.out.dropped[MARKUP] += 1
                return
            if _CAPTION.match(plain) and len(plain.split()) <= 12:
                self.out.dropped[LABEL] += 1
                return
            if _NAV_TEXT.match(plain) or _CROSS_REFERENCE.match(plain) and len(sentences(plain)) <= 1:
                self.out.dropped[NAVIGATION] += 1
                return
            if len(plain.split()) < MIN_WORDS:
                if plain.endswith((".", "!")) and len(plain.split()) >= 2 and not plain.endswith(":"):
                    self.out.fragments.append(claim)  # a sentence too short to answer: an unknown
                else:
                    self.out.dropped[LABEL] += 1
                return
        self.out.claims.append(claim)


def over_limits(doc: Document) -> list[tuple[int | None, str]]:
    """Each block over the limit of an answer taken out of the document (a huge table, a paragraph
    of 20,000 characters): it is neither a claim nor a passage. Its line and why, for the skip."""
    skipped = []
    for section in doc.sections:
        kept = []
        for block in section.blocks:
            why = limits.too_long("an answer", limits.ANSWER, len(block.text.strip()))
            if why:
                skipped.append((block.line or None, why))
            else:
                kept.append(block)
        section.blocks = kept
    return skipped


def claims_of(doc: Document) -> Claims:
    skipped = over_limits(doc)
    out = _Reader(doc).run()
    out.skipped[:0] = skipped
    return out
